//! Every button sends once (issue 51, defect 3), with a real double click in headless chromium
//! (two pointer presses, as a person's mouse makes them; the hub on localhost answers the first
//! before the second arrives): "Make an invite link" makes one invite, "Make a key" one key, and
//! a detection's "Share" (a button outside any form) one share link. After a key was made, the
//! API keys card lists it instead of saying "No keys yet", and still shows the new key once.

mod common;

use std::time::Duration;

use common::{PASSWORD, browser::Browser, seed};
use fantoccini::actions::{InputSource, MOUSE_BUTTON_LEFT, MouseActions, PointerAction};

/// Two presses of the left button on the element `css`, 60 ms apart: a double click.
async fn double_click(b: &Browser, css: &str) {
    b.client
        .execute(
            "document.querySelector(arguments[0]).scrollIntoView({block: 'center'}); return true;",
            vec![serde_json::json!(css)],
        )
        .await
        .expect("scroll");
    let element = b.find(css).await;
    let press = MouseActions::new("mouse".into())
        .then(PointerAction::MoveToElement { element, duration: None, x: 0.0, y: 0.0 })
        .then(PointerAction::Down { button: MOUSE_BUTTON_LEFT })
        .then(PointerAction::Up { button: MOUSE_BUTTON_LEFT })
        .then(PointerAction::Pause { duration: Duration::from_millis(60) })
        .then(PointerAction::Down { button: MOUSE_BUTTON_LEFT })
        .then(PointerAction::Up { button: MOUSE_BUTTON_LEFT });
    b.client.perform_actions(press).await.expect("double click");
    b.client.release_actions().await.expect("release");
}

fn count(hub: &common::TestHub, table: &'static str) -> i64 {
    hub.sql(|c| c.query_row(&format!("SELECT count(*) FROM {table}"), [], |r| r.get::<_, i64>(0)).expect("count"))
}

/// Waits until nothing is in flight, then a little longer: a second request would have landed.
async fn settled(b: &Browser) {
    b.wait_until("return document.readyState === 'complete' && !document.querySelector('[aria-busy=true]');", 10).await;
    tokio::time::sleep(Duration::from_millis(700)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_double_click_makes_one_invite_one_key_and_one_share_link() {
    let hub = common::spawn_hub().await;
    let owner = hub.user("owner@example.org", false).await;
    let sat = seed::satellite(&hub, owner.tenant, "Garden").await;
    let (_, det) = seed::heard(&hub, owner.tenant, sat, "2026-05-02T05:10:00Z", seed::ROBIN, 0.9).await;
    let b = Browser::start(hub.http_addr.port(), "send-once").await;
    b.sign_in(&owner.email, PASSWORD, None).await;

    // "Make an invite link": one invite, its link shown.
    b.goto("/team").await;
    let invites = count(&hub, "invites");
    double_click(&b, "form[data-api='POST /auth/invites'] button[type=submit]").await;
    assert!(b.wait_until("return !document.getElementById('invite-link').hidden;", 10).await, "the link shows");
    settled(&b).await;
    assert_eq!(count(&hub, "invites"), invites + 1, "a double click makes one invite");

    // "Make a key": one key, shown once, and the card lists it.
    b.goto("/team").await;
    assert!(b.text("main").await.contains("No keys yet."), "a team without keys says so");
    let keys = count(&hub, "api_keys");
    b.fill("form[data-api='POST /api-keys'] input[name=name]", "Home Assistant").await;
    double_click(&b, "form[data-api='POST /api-keys'] button[type=submit]").await;
    assert!(b.wait_until("return !document.getElementById('new-key').hidden;", 10).await, "the key shows");
    settled(&b).await;
    assert_eq!(count(&hub, "api_keys"), keys + 1, "a double click makes one key");
    let shown = b.js("return document.getElementById('new-key-value').value;").await;
    assert!(shown.as_str().is_some_and(|k| k.len() > 10), "the new key is shown once: {shown}");
    assert!(
        b.wait_until("return !document.querySelector('main').textContent.includes('No keys yet');", 10).await,
        "the card no longer says there are no keys"
    );
    assert!(b.text("main").await.contains("Home Assistant"), "the card lists the new key");
    b.shot("team-key").await;

    // A detection's "Share", a button outside any form: one share link.
    b.goto(&format!("/detections/{det}")).await;
    let shares = count(&hub, "share_links");
    double_click(&b, "#share").await;
    assert!(b.wait_until("return !document.getElementById('share-url').hidden;", 10).await, "the link shows");
    settled(&b).await;
    assert_eq!(count(&hub, "share_links"), shares + 1, "a double click makes one share link");
    b.assert_no_js_errors().await;
    b.close().await;
}
