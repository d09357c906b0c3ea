//! The smaller things of issue 51 (defect 17), in a real headless chromium against a real hub:
//! - Detection quality says what happens to unconfirmed detections as the team's setting says
//!   (discarded, or kept hidden), and its Apply button is in reach at 390 px without scrolling
//!   sideways.

mod common;

use birdhub::ids::{SatelliteId, TenantId};
use common::{Api, PASSWORD, TestHub, browser::Browser, seed};
use serde_json::json;

const CODE: &str = seed::WARBLER.0;

/// Warblers voted on so that a threshold is suggested: ten rejected below 0.76, fifteen
/// confirmed from 0.81.
async fn voted_warblers(hub: &TestHub, api: &Api, team: TenantId, sat: SatelliteId) {
    let rejected = (0..10u32).map(|i| (0.71 + (i / 2) as f32 * 0.01, "reject"));
    let confirmed = (0..15u32).map(|i| (0.81 + i as f32 * 0.01, "confirm"));
    for (minute, (confidence, vote)) in rejected.chain(confirmed).enumerate() {
        let at = format!("2026-05-01T06:{minute:02}:00.000Z");
        let (_, id) = seed::heard(hub, team, sat, &at, seed::WARBLER, confidence).await;
        let (status, body) = api.post(&format!("/detections/{id}/verify"), json!({ "vote": vote })).await;
        assert_eq!(status, 200, "{body}");
    }
}

#[tokio::test]
async fn detection_quality_follows_the_unconfirmed_setting_and_apply_fits_a_phone() {
    let hub = common::spawn_hub().await;
    let owner = hub.user("owner@example.org", false).await;
    let api = hub.login(&owner.email).await;
    let sat = seed::satellite(&hub, owner.tenant, "garden").await;
    voted_warblers(&hub, &api, owner.tenant, sat).await;

    let b = Browser::start(hub.http_addr.port(), "small-quality").await;
    b.sign_in(&owner.email, PASSWORD, None).await;
    b.goto("/quality").await;
    let said = b.text("#unconfirmed").await;
    assert!(said.contains("discards them"), "the default is Discard, and the page says so: {said}");
    assert!(!said.contains("keeps them hidden"), "nothing is kept hidden while the setting is Discard: {said}");

    // At 390 px the Apply button is on screen, and nothing scrolls sideways to reach it.
    let row = format!("tr[data-species='{CODE}']");
    b.client.set_window_size(390, 900).await.expect("resize");
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let reach = b
        .js(&format!(
            "const btn = document.querySelector(\"{row} button[data-api]\"); const r = btn.getBoundingClientRect();
             const box = btn.closest('.table-scroll');
             return [r.left >= 0 && r.right <= document.documentElement.clientWidth, box.scrollWidth - box.clientWidth];"
        ))
        .await;
    assert_eq!(reach[0], true, "the Apply button is within the screen at 390 px: {reach}");
    assert!(reach[1].as_i64().unwrap_or(1) <= 0, "the table needs no sideways scroll: {reach}");
    b.shot("discard").await;

    let (status, body) = api.put("/settings/tenant", json!({"second_look_unconfirmed": "hide"})).await;
    assert_eq!(status, 200, "{body}");
    b.goto("/quality").await;
    let said = b.text("#unconfirmed").await;
    assert!(said.contains("keeps them hidden"), "with Keep hidden, the page says they are kept: {said}");
    b.shot("hide").await;
    b.close().await;
}

#[tokio::test]
async fn alert_rules_show_only_cooldowns_they_have_and_say_whose_hours() {
    let hub = common::spawn_hub().await;
    let owner = hub.user("owner@example.org", false).await;
    let api = hub.login(&owner.email).await;
    let quiet = api
        .create(
            "/alert-rules/rules",
            json!({"name": "Quiet garden", "trigger": "absence",
                                             "conditions": {"minutes": 60, "of": "detection"}}),
        )
        .await;
    let night = api
        .create(
            "/alert-rules/rules",
            json!({"name": "Night birds", "trigger": "detection",
                                             "conditions": {"hours": {"from": 22, "to": 5}}}),
        )
        .await;
    let b = Browser::start(hub.http_addr.port(), "small-alerts").await;
    b.sign_in(&owner.email, PASSWORD, None).await;
    b.goto("/alerts").await;
    let quiet_row = b.text(&format!("#rule-{}", quiet["id"].as_str().expect("id"))).await;
    assert!(!quiet_row.contains("30 min"), "a silence rule has no cooldown to show: {quiet_row}");
    assert!(quiet_row.contains("once per silence"), "it fires once per silence, and says so: {quiet_row}");
    let clock = b.text("#rules tbody tr:nth-child(2)").await;
    assert!(
        clock.contains("Wrong satellite clock") && clock.contains("30 min"),
        "the clock rule keeps its cooldown: {clock}"
    );
    let night_row = b.text(&format!("#rule-{}", night["id"].as_str().expect("id"))).await;
    assert!(night_row.contains("station's local time"), "the hours are the station's own: {night_row}");
    b.click("#rule-summary").await;
    let hours = b.text("#rule-hours-note").await;
    assert!(hours.contains("local time of the station"), "the form says whose hours: {hours}");
    b.shot("rules").await;
    b.close().await;
}

#[tokio::test]
async fn an_undo_link_lands_below_the_sticky_top_bar() {
    let hub = common::spawn_hub().await;
    let owner = hub.user("owner@example.org", false).await;
    let b = Browser::start(hub.http_addr.port(), "small-anchor").await;
    b.sign_in(&owner.email, PASSWORD, None).await;
    for width in [390, 1280] {
        b.client.set_window_size(width, 700).await.expect("resize");
        // Where "To undo it, remove it under the team's detection settings" leads.
        b.goto("/team/detection#exclude_species").await;
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        let gap = b
            .js("const t = document.getElementById('exclude_species').getBoundingClientRect().top;
                 const bar = document.querySelector('header.topbar').getBoundingClientRect().bottom;
                 return [t, bar, window.scrollY];")
            .await;
        assert!(gap[2].as_f64().unwrap_or(0.0) > 0.0, "the page scrolled to the setting at {width} px: {gap}");
        assert!(
            gap[0].as_f64().unwrap_or(0.0) >= gap[1].as_f64().unwrap_or(f64::MAX),
            "the setting is below the top bar, not under it, at {width} px: {gap}"
        );
    }
    b.close().await;
}

/// A dashboard page as the signed-in (or signed-out) browser of `api` gets it.
async fn page(hub: &TestHub, api: &Api, path: &str) -> (u16, String) {
    let resp = api.client.get(format!("{}{path}", hub.base_url)).send().await.expect("page");
    (resp.status().as_u16(), resp.text().await.expect("body"))
}

#[tokio::test]
async fn back_to_automatic_reads_without_brackets_in_brackets() {
    let hub = common::spawn_hub().await;
    let owner = hub.user("owner@example.org", false).await;
    let api = hub.login(&owner.email).await;
    let sat = seed::satellite(&hub, owner.tenant, "attic").await;
    let (status, body) = api.put(&format!("/satellites/{sat}/time-zone"), json!({"timeZone": "Asia/Tokyo"})).await;
    assert_eq!(status, 200, "{body}");
    let (status, html) = page(&hub, &api, &format!("/satellites/{sat}")).await;
    assert_eq!(status, 200);
    let at = html.find("id=\"sat-zone-auto\"").expect("the Back to automatic button");
    let button = &html[at..at + html[at..].find("</button>").expect("end")];
    let text = &button[button.find('>').expect(">") + 1..];
    assert_eq!(text, "Back to automatic (the team's zone, as it has no position)");
}

#[tokio::test]
async fn a_signed_out_error_page_offers_sign_in() {
    let hub = common::spawn_hub().await;
    let owner = hub.user("owner@example.org", false).await;
    let (status, html) = page(&hub, &hub.anon(), "/no-such-page").await;
    assert_eq!(status, 404);
    assert!(html.contains("href=\"/signin\""), "signed out, the way on is to sign in: {html}");
    assert!(!html.contains("Back to the dashboard"), "there is no dashboard to go back to: {html}");
    let signed_in = hub.login(&owner.email).await;
    page(&hub, &signed_in, "/").await; // a browser has been on a page, and holds its CSRF cookie
    let (status, html) = page(&hub, &signed_in, "/no-such-page").await;
    assert_eq!(status, 404);
    assert!(html.contains("Back to the dashboard"), "signed in, the dashboard is the way back");
}

#[tokio::test]
async fn a_new_key_says_shown_once_as_a_notice_not_an_error() {
    let hub = common::spawn_hub().await;
    let owner = hub.user("owner@example.org", true).await;
    let b = Browser::start(hub.http_addr.port(), "small-keys").await;
    b.sign_in(&owner.email, PASSWORD, None).await;
    b.goto("/team").await;
    let once = "return [...document.querySelectorAll('#new-key p, #new-worker p')]
                  .filter(p => p.textContent.includes('Shown once')).map(p => p.className);";
    assert_eq!(b.js(once).await, json!(["notice once"]), "the Team page's key card");
    b.fill("form[data-result='#new-key'] input[name=name]", "export script").await;
    b.click("form[data-result='#new-key'] button[type=submit]").await;
    assert!(b.wait_until("return !document.getElementById('new-key').hidden;", 10).await, "the key is shown");
    b.shot("api-key").await;
    b.goto("/satellites").await;
    assert_eq!(b.js(once).await, json!(["notice once"]), "the worker-key card");
    b.close().await;
}

#[tokio::test]
async fn a_test_send_names_the_bird_only_in_the_teams_languages() {
    let hub = common::spawn_hub().await;
    let owner = hub.user("owner@example.org", false).await;
    let admin = hub.login(&owner.email).await;
    let rx = common::receiver::Receiver::start(None).await;
    let hook = admin
        .create("/alert-rules/channels", json!({"type": "webhook", "name": "Home", "config": {"url": rx.url("/a")}}))
        .await;
    let path = format!("/alert-rules/channels/{}/test", hook["id"].as_str().expect("id"));
    let (status, report) = admin.post_empty(&path).await;
    assert_eq!(status, 200, "{report}");
    let sent = rx.wait_for(1, 10).await[0].json();
    assert_eq!(sent["data"]["commonNames"], json!({"en": "Northern Cardinal"}), "an English-only team: {sent}");
    assert!(!sent.to_string().contains("Rotkardinal"), "no German name: {sent}");

    let (status, body) = admin.put("/settings/tenant", json!({"secondary_language": "de"})).await;
    assert_eq!(status, 200, "{body}");
    admin.post_empty(&path).await;
    let sent = rx.wait_for(2, 10).await[1].json();
    assert_eq!(sent["data"]["commonNames"]["de"], "Rotkardinal", "a team that reads German gets it: {sent}");
}
