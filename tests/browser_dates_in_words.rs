//! Issue 51, defect 15, in a real headless chromium: dates and places read as words. The
//! export range's error names its days ("5 Dec 2025"); the stats map's caption, its markers and
//! table, and a satellite's page write positions with hemisphere letters and no minus sign; the
//! public species page's "first heard here" is a day in words. Screenshots at 390 and 1280 px.

mod common;

use common::{PASSWORD, browser::Browser, seed};
use serde_json::json;

/// `2026-05-01` and the like, anywhere in `text`.
fn has_iso_date(text: &str) -> bool {
    text.as_bytes()
        .windows(10)
        .any(|w| w.iter().enumerate().all(|(i, c)| if i == 4 || i == 7 { *c == b'-' } else { c.is_ascii_digit() }))
}

/// A day written in words: a month's name, and no raw date.
fn in_words(text: &str) -> bool {
    let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
    months.iter().any(|m| text.contains(m)) && !has_iso_date(text)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dates_and_places_read_as_words() {
    let hub = common::spawn_hub().await;
    let owner = hub.user("owner@example.org", false).await;
    let t = owner.tenant;
    let ny = seed::satellite(&hub, t, "Central Park").await;
    let london = seed::satellite(&hub, t, "Garden").await;
    seed::place(&hub, t, ny, 40.7812, -73.9665).await;
    seed::place(&hub, t, london, 51.5072, -0.1276).await;
    let recent =
        (hub.state().clock.now() - chrono::Duration::hours(2)).to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    seed::heard(&hub, t, ny, "2026-05-01T10:00:00.000Z", seed::ROBIN, 0.9).await;
    seed::heard(&hub, t, ny, &recent, seed::ROBIN, 0.9).await;
    seed::heard(&hub, t, london, &recent, seed::ROBIN, 0.9).await;
    let api = hub.login(&owner.email).await;
    let (status, _) = api.put("/settings/tenant", json!({ "public_page_enabled": true })).await;
    assert_eq!(status, 200);

    let b = Browser::start(hub.http_addr.port(), "words").await;
    b.sign_in(&owner.email, PASSWORD, None).await;

    // The stats map: a caption across the meridian names both hemispheres, without minus signs.
    b.goto("/stats?days=7").await;
    assert!(b.wait_until("return document.querySelectorAll('.stats-part .loading').length === 0", 15).await);
    let caption = b.text("#map text.map-note").await;
    assert!(caption.contains("° W") && caption.contains("° E") && caption.contains("° N"), "{caption:?}");
    assert!(!caption.contains('-'), "no minus sign: {caption:?}");
    let marker = b.js("return document.querySelector('#map .map-marker title').textContent;").await;
    let marker = marker.as_str().unwrap_or_default();
    assert!(marker.contains("° N") && marker.contains("° W") && !marker.contains('-'), "{marker:?}");
    let listed = b.text("#map").await;
    assert!(
        listed.contains("40.7812° N, 73.9665° W") && !listed.contains("-73.9665"),
        "the table's positions: {listed:?}"
    );
    b.shot_at("stats-map", &[390, 1280]).await;

    // A satellite's page: its position in words too.
    b.goto(&format!("/satellites/{ny}")).await;
    let facts = b.text("main").await;
    assert!(facts.contains("40.7812° N, 73.9665° W") && !facts.contains("-73.9665"), "{facts:?}");

    // The export range's error names the days in words.
    b.goto("/exports?from=2025-12-05&to=2025-12-01").await;
    let error = b.text("#range-error").await;
    assert!(error.contains("(5 Dec 2025) is after the last day (1 Dec 2025)"), "{error:?}");
    b.shot_at("exports-range", &[390, 1280]).await;
    b.assert_no_js_errors().await;

    // The public species page: "first heard here" is a day in words.
    b.goto(&format!("/public/{t}/species/{}", seed::ROBIN.0)).await;
    let numbers = b.text(".species-numbers").await;
    assert!(numbers.contains("first heard here") && in_words(&numbers), "no raw date on the public page: {numbers:?}");
    b.shot_at("public-species", &[390, 1280]).await;
    b.assert_no_js_errors().await;
    b.close().await;
}
