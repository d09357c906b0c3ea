//! The satellite page's BirdWeather card (issue 38) in a real headless chromium, against a local
//! BirdWeather: a team admin enters the token, the card then says the station shares and names
//! only the token's last 4 characters (the field stays empty); "Test token" answers in words and
//! only reads the station; a confirmed detection shows as sent; a member sees the status but no
//! form; the page fits 360 px and 1280 px without sideways scroll.

mod common;

#[path = "birdweather/fake.rs"]
mod fake;

use birdhub::domain::Role;
use common::{PASSWORD, browser::Browser, seed};
use serde_json::json;

const TOKEN: &str = "bwStationTok3nS3cretXyZ9";

async fn fits(b: &Browser, what: &str) {
    for width in [360, 1280] {
        b.client.set_window_size(width, 900).await.expect("resize");
        let ok = b.wait_until("return document.documentElement.scrollWidth <= window.innerWidth;", 3).await;
        let got = b.js("return [document.documentElement.scrollWidth, window.innerWidth];").await;
        assert!(ok, "{what} scrolls sideways at {width} px: {got}");
    }
    b.client.set_window_size(1280, 900).await.expect("resize");
}

async fn text_has(b: &Browser, css: &str, want: &str) -> bool {
    let script = format!(
        "const e = document.querySelector({}); return !!e && e.textContent.includes({});",
        json!(css),
        json!(want)
    );
    b.wait_until(&script, 10).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_admin_shares_a_satellite_with_birdweather_from_its_page() {
    let bw = fake::BirdWeather::start().await;
    let base = bw.base.clone();
    let hub = common::spawn_hub_with(move |s| {
        s.birdweather.base_url = base;
        s.birdweather.min_interval_secs = 0;
        s.birdweather.retry_initial_secs = 1;
    })
    .await;
    let owner = hub.user("owner@example.com", false).await;
    hub.member_of("mia@example.com", owner.tenant, Role::Member).await;
    let sat = seed::satellite(&hub, owner.tenant, "Garden").await;
    let api = hub.login(&owner.email).await;

    let b = Browser::start(hub.http_addr.port(), "birdweather").await;
    b.sign_in(&owner.email, PASSWORD, None).await;
    b.goto(&format!("/satellites/{sat}")).await;
    assert!(text_has(&b, "#bw-state", "Not shared with BirdWeather").await);

    b.fill("#bw-token", TOKEN).await;
    b.fill("#bw-min", "0.8").await;
    b.click("#bw-form button[type=submit]").await;
    assert!(text_has(&b, "#bw-state", "Confirmed detections are shared").await, "saved and reloaded");
    let field = b.js("const e = document.getElementById('bw-token'); return [e.value, e.placeholder];").await;
    assert_eq!(field[0], "", "the token is never written back into the page");
    assert!(field[1].as_str().is_some_and(|p| p.contains("…XyZ9")), "{field}");
    assert_eq!(b.js("return document.getElementById('bw-min').value;").await, "0.80");
    let html = b.js("return document.documentElement.outerHTML;").await;
    assert!(!html.as_str().unwrap_or_default().contains(TOKEN));

    b.click("#bw-test").await;
    assert!(
        text_has(&b, "#bw-test-result", "BirdWeather knows this station: 12 detections of 4 species today.").await,
        "the test's answer in words"
    );
    let seen = bw.seen();
    assert_eq!(seen.len(), 1, "the test only reads: {seen:?}");
    assert_eq!((seen[0].method.as_str(), seen[0].path.ends_with("/stats")), ("GET", true));

    // A detection the admin confirms goes, and the card says so.
    let (_, d) = seed::heard(&hub, owner.tenant, sat, "2026-05-01T05:00:00.000Z", seed::BLACKBIRD, 0.9).await;
    let (code, body) = api.post(&format!("/detections/{d}/verify"), json!({"vote": "confirm"})).await;
    assert_eq!(code, 200, "{body}");
    assert_eq!(bw.wait_for(3, 30).await.len(), 3, "soundscape and detection");
    let mut sent = false;
    for _ in 0..50 {
        b.goto(&format!("/satellites/{sat}")).await;
        if text_has(&b, "#bw-counts", "1 sent").await {
            sent = true;
            break;
        }
    }
    assert!(sent, "the card shows the upload");
    assert!(text_has(&b, "#bw-recent", "Eurasian Blackbird").await);
    b.js("document.getElementById('sat-birdweather').scrollIntoView();").await;
    fits(&b, "the satellite page with its BirdWeather card").await;
    b.shot_at("birdweather-card", &[360, 1280]).await;
    b.assert_no_js_errors().await;
    b.close().await;

    // A member reads the status, without the form.
    let m = Browser::start(hub.http_addr.port(), "birdweather-member").await;
    m.sign_in("mia@example.com", PASSWORD, None).await;
    m.goto(&format!("/satellites/{sat}")).await;
    assert!(text_has(&m, "#bw-counts", "1 sent").await);
    assert!(!m.has("#bw-form").await && !m.has("#bw-test").await, "only admins change or test it");
    m.close().await;
}
