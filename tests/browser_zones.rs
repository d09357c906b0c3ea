//! Time zones on the dashboard (issue 37), in a real headless chromium whose zone is UTC (CI's),
//! with a satellite in New York:
//! - a New York detection's time reads in New York time with "EST" on the detection list and
//!   page; a detection of a station in the viewer's own zone reads as before, without a zone;
//! - the satellite page says where its zone comes from, chooses one (a bad name in words) and
//!   goes back to automatic;
//! - the team page sets the team's zone (a bad name in words);
//! - while statistics move to a new zone, the team and stats pages say how far, and the line
//!   goes away by itself when the move is over;
//! - the pages fit 360 px and 1280 px without sideways scroll.

mod common;

use std::time::Duration;

use common::{PASSWORD, browser::Browser, sat, seed};
use serde_json::{Value, json};

async fn fits(b: &Browser, what: &str) {
    for width in [360, 1280] {
        b.client.set_window_size(width, 800).await.expect("resize");
        let ok = b.wait_until("return document.documentElement.scrollWidth <= window.innerWidth;", 3).await;
        let got = b.js("return [document.documentElement.scrollWidth, window.innerWidth];").await;
        assert!(ok, "{what} scrolls sideways at {width} px: {got}");
    }
    b.client.set_window_size(1280, 900).await.expect("resize");
}

async fn wait_sat(api: &common::Api, id: &str, ok: impl Fn(&Value) -> bool) -> Value {
    let mut last = Value::Null;
    for _ in 0..150 {
        let (_, v) = api.get(&format!("/satellites/{id}")).await;
        if ok(&v) {
            return v;
        }
        last = v;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the satellite never got there: {last}");
}

async fn no_moves(api: &common::Api) {
    for _ in 0..150 {
        if api.get("/stats/time-zone-moves").await.1["running"] == false {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("a zone move never finished");
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
async fn zones_show_on_the_team_and_satellite_pages_and_times_read_in_the_stations_zone() {
    let hub = common::spawn_hub().await;
    let owner = hub.user("owner@example.com", false).await;
    let api = hub.login(&owner.email).await;
    let ny = sat::register(&api, json!({"name": "Central Park", "latitude": 40.7128, "longitude": -74.0060})).await;
    let attic = seed::satellite(&hub, owner.tenant, "Attic").await;
    wait_sat(&api, &ny.id, |v| v["time_zone"] == "America/New_York").await;
    wait_sat(&api, &attic.to_string(), |v| v["time_zone_source"] == "team").await;
    let ny_id: birdhub::ids::SatelliteId = ny.id.parse().expect("id");
    // 12:02 UTC on 15 January is 07:02 in New York (EST).
    let (_, in_ny) = seed::heard(&hub, owner.tenant, ny_id, "2026-01-15T12:02:00Z", seed::ROBIN, 0.9).await;
    let (_, in_attic) = seed::heard(&hub, owner.tenant, attic, "2026-01-15T12:05:00Z", seed::WREN, 0.9).await;

    let b = Browser::start(hub.http_addr.port(), "zones").await;
    b.sign_in(&owner.email, PASSWORD, None).await;
    let viewer_zone = b.js("return Intl.DateTimeFormat().resolvedOptions().timeZone;").await;
    assert_eq!(viewer_zone, "UTC", "the browser runs in CI's zone, UTC");

    // A New York detection reads in New York time, with its zone's name; the attic's (in the
    // team's zone, UTC like the viewer) reads as before.
    b.goto(&format!("/detections/{in_ny}")).await;
    assert!(text_has(&b, ".det-when", "EST").await, "{}", b.text(".det-head").await);
    let when = b.text(".det-when").await;
    assert!(when.contains("7:02") && !when.contains("12:02"), "07:02 EST: {when}");
    b.goto("/detections").await;
    let card = format!("#det-{in_ny} time");
    assert!(text_has(&b, &card, "EST").await, "{}", b.text(&format!("#det-{in_ny}")).await);
    let other = b.text(&format!("#det-{in_attic} time")).await;
    assert!(other.contains("12:05") && !other.contains("UTC") && !other.contains("GMT"), "{other}");
    fits(&b, "/detections").await;

    // The satellite page: from its position; chosen here; back to automatic.
    b.goto(&format!("/satellites/{}", ny.id)).await;
    assert!(text_has(&b, "#sat-zone-fact", "America/New_York (from its position)").await, "{}", b.text("#sat").await);
    b.fill("#sat-zone-input", "CET").await;
    b.click("#sat-zone form button[type=submit]").await;
    assert!(text_has(&b, "#sat-zone .form-error", "Europe/Berlin").await, "a bad name in words");
    b.fill("#sat-zone-input", "Europe/Berlin").await;
    b.click("#sat-zone form button[type=submit]").await;
    assert!(text_has(&b, "#sat-zone-words", "Europe/Berlin (chosen here)").await, "{}", b.text("#sat-zone").await);
    assert_eq!(api.get(&format!("/satellites/{}", ny.id)).await.1["time_zone_override"], "Europe/Berlin");
    fits(&b, "the satellite page").await;
    b.shot("satellite").await;
    b.click("#sat-zone-auto").await;
    assert!(
        text_has(&b, "#sat-zone-words", "America/New_York (from its position)").await,
        "{}",
        b.text("#sat-zone").await
    );
    b.goto(&format!("/satellites/{attic}")).await;
    assert!(text_has(&b, "#sat-zone-fact", "the team's zone: this satellite has no position").await);

    // The team page sets the team's zone; a bad one is refused in words.
    no_moves(&api).await;
    b.goto("/team").await;
    let team_zone = api.get("/settings/tenant").await.1["settings"]["time_zone"].clone();
    assert_eq!(b.js("return document.getElementById('f-time_zone').value;").await, team_zone, "the current zone");
    b.fill("#f-time_zone", "Not/AZone").await;
    b.click("form.team-settings button[type=submit]").await;
    // Beside the field since issue 51 (defect 4).
    assert!(text_has(&b, "form.team-settings .field-error", "Europe/Berlin").await, "a bad zone in words");
    b.fill("#f-time_zone", "America/Chicago").await;
    b.click("form.team-settings button[type=submit]").await;
    let saved = "return document.getElementById('f-time_zone').value === 'America/Chicago';";
    assert!(b.wait_until(saved, 10).await, "the page reloads with the new zone");
    assert_eq!(api.get("/settings/tenant").await.1["settings"]["time_zone"], "America/Chicago");
    wait_sat(&api, &attic.to_string(), |v| v["time_zone"] == "America/Chicago").await;
    fits(&b, "/team").await;

    // A move under way: the mover has just gone idle (its next round is a minute away), so the
    // move written here stays until something wakes it.
    no_moves(&api).await;
    hub.sql(|c| {
        c.execute(
            "UPDATE satellites SET zone_move_from = zone_pk, zone_move_det_done = 0, zone_move_det_last = 0,
                 zone_move_chunk_done = 0, zone_move_chunk_last = 0, zone_move_total = 200, zone_move_moved = 90
             WHERE id = ?1",
            [attic.to_string()],
        )
        .expect("a move")
    });
    b.goto("/team").await;
    let line = "[data-zone-moves]";
    assert!(text_has(&b, line, "Statistics are being moved to the new time zone: 45 %").await);
    assert_eq!(b.js("return document.querySelector('[data-zone-moves]').hidden;").await, false);
    b.shot("team-moving").await;
    b.goto("/stats").await;
    assert!(text_has(&b, line, "45 %").await, "the stats page says it too");
    // A satellite's zone saved (here: New York's, unchanged) wakes the mover; the line goes away
    // without a reload.
    b.js("window.__stay = 1; return null;").await;
    let (status, _) = api.put(&format!("/satellites/{}/time-zone", ny.id), json!({"timeZone": null})).await;
    assert_eq!(status, 200);
    let gone = "const l = document.querySelector('[data-zone-moves]'); return l.hidden && window.__stay === 1;";
    let went = b.wait_until(gone, 20).await;
    let (progress, shown) = (api.get("/stats/time-zone-moves").await.1, b.text(line).await);
    assert!(went, "the progress line goes away when the move is over: {progress} {shown} {:?}", b.js_errors().await);
    b.assert_no_js_errors().await;
    b.close().await;
}
