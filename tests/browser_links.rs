//! Links that name a host the network may not know (issue 51, defect 16), in a real browser.
//! With no `http.public_url`, invite, share and public-page links start with
//! `http://<hostname>.local:<port>`; the test machine cannot resolve that name, and the hub looks
//! it up itself. The Team page and the share toast say so and offer the address the page was
//! opened with (`http://localhost:<port>` here). A hub with its address set says nothing.

mod common;

use common::{PASSWORD, browser::Browser, seed};
use serde_json::json;

const GREAT_TIT: seed::Species = ("parus_major", "Great Tit", "Parus major");

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_link_name_that_does_not_resolve_is_said_with_the_address_that_works() {
    let hub = common::spawn_hub().await;
    let ada = hub.user("ada@example.org", false).await;
    let host = format!("{}.local", birdhub::links::hostname());
    assert!(
        tokio::net::lookup_host((host.as_str(), 80)).await.map(|mut a| a.next().is_none()).unwrap_or(true),
        "this test needs a machine where {host} does not resolve"
    );
    let api = hub.login(&ada.email).await;
    assert_eq!(api.put("/settings/tenant", json!({"public_page_enabled": true})).await.0, 200);
    let sat = seed::satellite(&hub, ada.tenant, "Garden").await;
    let (_, det) = seed::heard(&hub, ada.tenant, sat, "2026-12-06T09:18:00.000Z", GREAT_TIT, 0.9).await;
    let here = format!("http://localhost:{}", hub.http_addr.port());

    let b = Browser::start(hub.http_addr.port(), "links").await;
    b.sign_in(&ada.email, PASSWORD, None).await;
    b.goto("/team").await;
    let note = b.text("#link-problem").await;
    assert!(note.contains(&host) && note.contains(&here), "names the link's host and this page's address: {note}");
    assert!(note.contains("may not open"), "{note}");
    let alt = b.js("return document.getElementById('public-url-here').value;").await;
    assert_eq!(alt, json!(format!("{here}/public/{}", ada.tenant)), "the public link at this page's address");
    b.shot("team").await;

    // The share toast says it too, and offers the same link at this page's address.
    b.goto(&format!("/detections/{det}")).await;
    b.click("#share").await;
    assert!(b.wait_until("return /\\/share\\//.test(document.getElementById('share-url').value);", 10).await);
    let toast = b.text("#toasts").await;
    assert!(toast.contains(&host) && toast.contains("may not open"), "{toast}");
    let link = b.js("return document.getElementById('share-url').value;").await;
    let link = link.as_str().expect("link");
    let path = &link[link.find("/share/").expect("a share path")..];
    let other =
        b.js("var f = document.getElementById('share-url-here'); return f && !f.hidden ? f.value : null;").await;
    assert_eq!(other, json!(format!("{here}{path}")), "the share link at this page's address");
    b.shot("share").await;
    b.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hub_with_its_address_set_says_nothing_about_links() {
    // A configured address is the one people use: the hub does not second-guess it.
    let hub = common::spawn_hub_with(|s| s.http.public_url = "http://birds.example.org".into()).await;
    let ada = hub.user("ada@example.org", false).await;
    let b = Browser::start(hub.http_addr.port(), "links-set").await;
    b.sign_in(&ada.email, PASSWORD, None).await;
    b.goto("/team").await;
    assert!(!b.has("#link-problem").await, "no warning when the hub's address is set");
    b.assert_no_js_errors().await;
    b.close().await;
}
