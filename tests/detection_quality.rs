//! Thresholds learned from votes and the "Detection quality" page (issue 35), on a real hub:
//!
//! - 25 votes on Tennessee Warblers (the 10 below 0.76 rejected, the 15 from 0.81 confirmed, 4
//!   left open) make a suggestion of 0.78 that would hide 3 open detections; an admin applies
//!   it (the team's settings hold it, the audit log names it), a viewer may not, another team
//!   sees nothing of it; with auto-apply on, one more rejection moves the stored threshold.
//! - A rejected detection counts nowhere: today's numbers of the Live page and the dashboard, the
//!   daily activity grid, the species list, the home feed and the alert rules' daily totals.
//! - In Chromium: the page lists the species, Apply changes its row; screenshots at 390/1280 px.
//! - "Raise this species' threshold" (issue 51) never lowers one: a raise to or below what the
//!   species needs (its own, a learned one applied, the team's or the hub's) is refused with 409
//!   `not_a_raise` in words, and nothing changes.

mod common;

use birdhub::{
    domain::Role,
    ids::{DetectionId, SatelliteId, TenantId},
    store,
};
use chrono::{Duration, Utc};
use common::{Api, PASSWORD, TestHub, assert_error, browser::Browser, seed};
use serde_json::{Value, json};

const CODE: &str = seed::WARBLER.0;

/// One warbler detection per minute from 2026-05-01 06:00 UTC, at `confidence`.
async fn warbler(hub: &TestHub, team: TenantId, sat: SatelliteId, minute: u32, confidence: f32) -> DetectionId {
    let at = format!("2026-05-01T{:02}:{:02}:00.000Z", 6 + minute / 60, minute % 60);
    seed::heard(hub, team, sat, &at, seed::WARBLER, confidence).await.1
}

async fn vote(api: &Api, id: DetectionId, vote: &str) {
    let (status, body) = api.post(&format!("/detections/{id}/verify"), json!({ "vote": vote })).await;
    assert_eq!(status, 200, "{body}");
}

/// The warbler row of `GET /detection-quality`.
async fn warbler_row(api: &Api) -> Value {
    let (status, body) = api.get("/detection-quality").await;
    assert_eq!(status, 200, "{body}");
    body["species"]
        .as_array()
        .and_then(|rows| rows.iter().find(|r| r["speciesCode"] == CODE))
        .cloned()
        .unwrap_or_else(|| panic!("a warbler row: {body}"))
}

fn close(v: &Value, expected: f64) -> bool {
    v.as_f64().is_some_and(|x| (x - expected).abs() < 1e-9)
}

/// The team's stored threshold of the warbler.
async fn stored_threshold(api: &Api) -> Value {
    let (status, s) = api.get("/settings/tenant").await;
    assert_eq!(status, 200, "{s}");
    s["settings"]["species_min_confidence"][CODE].clone()
}

/// (actor user, details) of every settings audit entry of `team`, oldest first.
fn settings_audit(hub: &TestHub, team: TenantId) -> Vec<(Option<String>, Value)> {
    let team = team.to_string();
    hub.sql(move |c| {
        let mut stmt = c
            .prepare(
                "SELECT actor_user_id, details_json FROM audit_log
                 WHERE action = 'admin.tenant_settings_updated' AND tenant_id = ?1 ORDER BY id",
            )
            .expect("prepare");
        stmt.query_map([&team], |r| Ok((r.get(0)?, r.get::<_, String>(1)?)))
            .expect("query")
            .map(|row| {
                let (who, details) = row.expect("row");
                (who, serde_json::from_str(&details).expect("details"))
            })
            .collect()
    })
}

/// A team whose warblers were voted on as the module comment says; (owner, team, satellite).
async fn voted_team(hub: &TestHub) -> (Api, TenantId, SatelliteId) {
    let owner = hub.user("owner@example.org", false).await;
    let sat = seed::satellite(hub, owner.tenant, "garden").await;
    let api = hub.login(&owner.email).await;
    let mut minute = 0;
    for i in 0..10u32 {
        let d = warbler(hub, owner.tenant, sat, minute, 0.71 + (i / 2) as f32 * 0.01).await;
        vote(&api, d, "reject").await;
        minute += 1;
    }
    for i in 0..15u32 {
        let d = warbler(hub, owner.tenant, sat, minute, 0.81 + i as f32 * 0.01).await;
        vote(&api, d, "confirm").await;
        minute += 1;
    }
    for confidence in [0.72, 0.72, 0.72, 0.90] {
        warbler(hub, owner.tenant, sat, minute, confidence).await;
        minute += 1;
    }
    (api, owner.tenant, sat)
}

#[tokio::test]
async fn a_threshold_learned_from_votes_is_suggested_applied_and_audited() {
    let hub = common::spawn_hub().await;
    let (owner, team, sat) = voted_team(&hub).await;
    hub.member_of("viewer@example.org", team, Role::Viewer).await;
    let viewer = hub.login("viewer@example.org").await;
    let stranger = hub.user("stranger@example.org", false).await;
    let stranger = hub.login(&stranger.email).await;

    let (_, overview) = owner.get("/detection-quality").await;
    assert_eq!(
        (&overview["precisionTarget"], &overview["minVotes"], &overview["autoApply"]),
        (&json!(0.95), &json!(20), &json!(false)),
        "{overview}"
    );
    let row = warbler_row(&owner).await;
    assert_eq!((&row["votes"], &row["confirmed"], &row["rejected"]), (&json!(25), &json!(15), &json!(10)), "{row}");
    assert_eq!(row["commonName"], seed::WARBLER.1);
    assert!(close(&row["currentThreshold"], 0.7), "the hub's threshold: {row}");
    assert!(close(&row["suggestedThreshold"], 0.78), "between the rejected and the confirmed: {row}");
    assert_eq!((&row["wouldHide"], &row["applied"]), (&json!(3), &json!(false)), "the three open ones at 0.72");
    assert!(close(&row["precision"], 16.0 / 29.0), "15 confirmed + the open 0.90 of 29 kept: {row}");

    // A viewer sees the same row and may not apply it; another team sees nothing of it.
    assert_eq!(warbler_row(&viewer).await, row);
    assert_error(&viewer.post_empty(&format!("/detection-quality/{CODE}/apply")).await, 403, "insufficient_role");
    let (_, theirs) = stranger.get("/detection-quality").await;
    assert_eq!(theirs["species"], json!([]), "{theirs}");
    assert_error(&stranger.post_empty(&format!("/detection-quality/{CODE}/apply")).await, 404, "species_not_found");
    assert_error(&owner.post_empty("/detection-quality/no-such-bird/apply").await, 404, "species_not_found");
    // Three robin votes are too few for a suggestion.
    for minute in 0..3 {
        let at = format!("2026-05-02T06:0{minute}:00.000Z");
        let (_, d) = seed::heard(&hub, team, sat, &at, seed::ROBIN, 0.9).await;
        vote(&owner, d, "confirm").await;
    }
    assert_error(&owner.post_empty(&format!("/detection-quality/{}/apply", seed::ROBIN.0)).await, 409, "no_suggestion");
    assert_eq!(stored_threshold(&owner).await, Value::Null, "nothing stored by the refusals");

    let (status, applied) = owner.post_empty(&format!("/detection-quality/{CODE}/apply")).await;
    assert_eq!(status, 200, "{applied}");
    assert_eq!(
        (&applied["applied"], &applied["speciesThreshold"], &applied["wouldHide"]),
        (&json!(true), &json!(true), &json!(0))
    );
    assert!(close(&applied["currentThreshold"], 0.78), "{applied}");
    assert!(close(&stored_threshold(&owner).await, 0.78), "GET /settings/tenant holds it");
    assert_eq!(warbler_row(&owner).await, applied, "the overview agrees");
    let audit = settings_audit(&hub, team);
    assert_eq!(audit.len(), 1, "{audit:?}");
    let (actor, details) = &audit[0];
    assert!(actor.is_some(), "the admin who applied it");
    assert_eq!((&details["speciesCode"], &details["automatic"]), (&json!(CODE), &json!(false)), "{details}");
    assert!(close(&details["threshold"], 0.78), "{details}");

    // Auto-apply: one more rejection, at 0.79, moves the threshold to 0.80 by itself.
    let (status, body) = owner.put("/settings/tenant", json!({ "learned_threshold_auto_apply": true })).await;
    assert_eq!(status, 200, "{body}");
    let d = warbler(&hub, team, sat, 100, 0.79).await;
    vote(&owner, d, "reject").await;
    assert!(close(&stored_threshold(&owner).await, 0.8), "{}", stored_threshold(&owner).await);
    let row = warbler_row(&owner).await;
    assert_eq!((&row["votes"], &row["applied"]), (&json!(26), &json!(true)), "{row}");
    let audit = settings_audit(&hub, team);
    let (actor, details) = audit.last().expect("an entry");
    assert_eq!(
        (actor, &details["automatic"], &details["speciesCode"]),
        (&None, &json!(true), &json!(CODE)),
        "{audit:?}"
    );
    assert!(close(&details["previous"], 0.78) && close(&details["threshold"], 0.8), "{details}");
    // A confirmation that leaves the suggestion where it is changes nothing.
    let d = warbler(&hub, team, sat, 101, 0.93).await;
    vote(&owner, d, "confirm").await;
    assert_eq!(settings_audit(&hub, team).len(), audit.len(), "no new entry");
    hub.stop().await.expect("stop");
}

/// The `detections` of a species in `GET /stats/species` (0 when it is not listed).
fn listed(catalogue: &Value, code: &str) -> i64 {
    catalogue["species"]
        .as_array()
        .and_then(|l| l.iter().find(|e| e["speciesCode"] == code || e["species"]["speciesCode"] == code))
        .map_or(0, |e| e["detections"].as_i64().unwrap_or(-1))
}

/// The team's sessions summed: (detections, species, whether a warbler is among the top species).
async fn session_counts(api: &Api) -> (i64, i64, bool) {
    let (status, body) = api.get("/sessions").await;
    assert_eq!(status, 200, "{body}");
    let sessions = body["sessions"].as_array().expect("sessions").clone();
    let sum = |k: &str| sessions.iter().map(|s| s[k].as_i64().unwrap_or(0)).sum::<i64>();
    let warbler = sessions
        .iter()
        .flat_map(|s| s["top_species"].as_array().cloned().unwrap_or_default())
        .any(|t| t["species_code"] == CODE);
    (sum("detection_count"), sum("species_count"), warbler)
}

#[tokio::test]
async fn a_rejected_detection_counts_nowhere() {
    let hub = common::spawn_hub().await;
    let owner = hub.user("owner@example.org", false).await;
    let team = owner.tenant;
    let sat = seed::satellite(&hub, team, "garden").await;
    let api = hub.login(&owner.email).await;
    let now = Utc::now();
    let at = |secs: i64| (now - Duration::seconds(secs)).to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    let (robin_at, wren_at) = (at(30), at(20));
    seed::heard(&hub, team, sat, &robin_at, seed::ROBIN, 0.9).await;
    seed::heard(&hub, team, sat, &wren_at, seed::WREN, 0.8).await;
    let (_, false_warbler) = seed::heard(&hub, team, sat, &at(10), seed::WARBLER, 0.85).await;
    vote(&api, false_warbler, "reject").await;

    let (_, dash) = api.get("/stats/dashboard").await;
    assert_eq!((&dash["today"]["detections"], &dash["today"]["species"]), (&json!(2), &json!(2)), "{dash}");
    let (_, dash) = api.get("/stats/dashboard?includeRejected=true").await;
    assert_eq!(dash["today"]["detections"], 3, "asked for, it counts: {dash}");
    let (_, grid) = api.get("/stats/daily-activity").await;
    let codes: Vec<&str> =
        grid["species"].as_array().expect("rows").iter().filter_map(|r| r["speciesCode"].as_str()).collect();
    assert!(!codes.contains(&CODE) && codes.len() == 2, "the Live grid: {codes:?}");
    let (_, catalogue) = api.get("/stats/species").await;
    assert_eq!((listed(&catalogue, seed::ROBIN.0), listed(&catalogue, CODE)), (1, 0), "{catalogue}");

    // The Live page shows the same "today" numbers.
    let live = api.client.get(format!("{}/", hub.base_url)).send().await.expect("GET /").text().await.expect("page");
    let today = live.split("id=\"today\"").nth(1).and_then(|s| s.split("</section>").next()).expect("today's row");
    assert!(today.contains("<span class=\"n\">2</span><span class=\"l\">detections today"), "{today}");
    assert!(today.contains("<span class=\"n\">2</span><span class=\"l\">species today"), "{today}");

    // The home feed (Home Assistant) and the alert rules' daily totals and last detection.
    let stamp = hub.state().clock.stamp();
    let feed = hub.state().store.call(move |c| store::home_feed::team_today(c, team, stamp)).await.expect("feed");
    assert_eq!((feed.detections, feed.species), (2, 2));
    let sats = hub.state().store.call(move |c| store::home_feed::satellites(c, team, stamp)).await.expect("sats");
    assert_eq!((sats[0].detections_today, sats[0].species_today), (2, 2));
    assert_eq!(sats[0].last.as_ref().map(|l| l.species_code.as_str()), Some(seed::WREN.0), "not the rejected warbler");
    let (from, to): (birdhub::time::Timestamp, birdhub::time::Timestamp) =
        ((now - Duration::days(2)).into(), (now + Duration::days(1)).into());
    let totals = hub
        .state()
        .store
        .call(move |c| store::activity::daily_totals(c, team, None, false, from, to))
        .await
        .expect("totals");
    assert_eq!(totals.iter().map(|(_, n)| n).sum::<f64>(), 2.0, "{totals:?}");
    let last = hub.state().store.call(move |c| store::activity::last_detection(c, team, None)).await.expect("last");
    assert_eq!(last.map(|t| t.to_string()), Some(wren_at.parse::<birdhub::time::Timestamp>().expect("t").to_string()));

    // Recording sessions: the summary leaves it out, and takes it back when the vote is undone.
    assert_eq!(session_counts(&api).await, (2, 2, false));
    vote(&api, false_warbler, "confirm").await;
    assert_eq!(session_counts(&api).await, (3, 3, true));
    let (_, dash) = api.get("/stats/dashboard").await;
    assert_eq!(dash["today"]["detections"], 3, "confirmed, it counts: {dash}");
    vote(&api, false_warbler, "reject").await;
    assert_eq!(session_counts(&api).await, (2, 2, false));

    // The public page has no page for a species heard only as rejected detections.
    let (status, _) = api.put("/settings/tenant", json!({"public_page_enabled": true})).await;
    assert_eq!(status, 200);
    let anon = hub.anon();
    let (status, _) = anon.get(&format!("/public/{team}/species/{}", seed::ROBIN.0)).await;
    assert_eq!(status, 200, "a species heard for sure has its public page");
    assert_error(&anon.get(&format!("/public/{team}/species/{CODE}")).await, 404, "species_not_found");
    hub.stop().await.expect("stop");
}

#[tokio::test]
async fn the_detection_quality_page_applies_a_suggestion() {
    let hub = common::spawn_hub().await;
    let (_owner, _team, _sat) = voted_team(&hub).await;
    let b = Browser::start(hub.http_addr.port(), "quality").await;
    b.sign_in("owner@example.org", PASSWORD, None).await;
    b.goto("/").await;
    b.click("details.account summary").await;
    b.click("a[href='/quality']").await;
    let row = format!("tr[data-species='{CODE}']");
    b.find(&row).await;
    assert_eq!(b.text(&format!("{row} td.current")).await.trim(), "0.7 team");
    let suggested = b.text(&format!("{row} td.suggested")).await;
    assert!(suggested.contains("0.78") && suggested.contains("would hide 3"), "{suggested}");
    b.shot("before").await;

    b.click(&format!("{row} button[data-api]")).await;
    assert!(
        b.wait_until(
            &format!(
                "const r = document.querySelector(\"{row} .badge\"); return !!r && r.textContent.includes('Applied');"
            ),
            15
        )
        .await,
        "the row shows the threshold applied"
    );
    assert_eq!(b.text(&format!("{row} td.current")).await.trim(), "0.78");
    assert!(!b.has(&format!("{row} button[data-api]")).await, "no Apply button any more");
    // The table scrolls inside its card on a phone; the page itself does not.
    b.client.set_window_size(390, 900).await.expect("resize");
    let overflow = b.js("return document.documentElement.scrollWidth - document.documentElement.clientWidth;").await;
    assert!(overflow.as_i64().unwrap_or(1) <= 0, "no sideways scroll at 390 px: {overflow}");
    b.shot("applied").await;
    b.close().await;
    hub.stop().await.expect("stop");
}

#[tokio::test]
async fn a_raise_to_or_below_the_species_threshold_is_refused_in_words() {
    let hub = common::spawn_hub().await;
    let owner = hub.user("owner@example.org", false).await;
    hub.member_of("viewer@example.org", owner.tenant, Role::Viewer).await;
    let sat = seed::satellite(&hub, owner.tenant, "garden").await;
    warbler(&hub, owner.tenant, sat, 0, 0.85).await;
    let api = hub.login(&owner.email).await;
    let raise = format!("/detection-quality/{CODE}/raise");

    // Nothing of its own: the hub's 0.70.
    let (status, now) = api.get(&format!("/detection-quality/{CODE}/threshold")).await;
    assert_eq!(status, 200, "{now}");
    assert!(close(&now["threshold"], 0.7) && now["source"] == "hub", "{now}");

    // Its own 0.90: a "raise" to 0.85 or to 0.90 is refused, and the 0.90 stays.
    let (status, body) = api.put("/settings/tenant", json!({ "species_min_confidence": { CODE: 0.9 } })).await;
    assert_eq!(status, 200, "{body}");
    for lower in [0.85, 0.9] {
        let got = api.post(&raise, json!({ "threshold": lower })).await;
        assert_error(&got, 409, "not_a_raise");
        let message = got.1["message"].as_str().unwrap_or_default();
        assert!(message.contains("Tennessee Warbler already needs a confidence of 0.90"), "{message}");
        assert!(close(&stored_threshold(&api).await, 0.9), "unchanged after {lower}");
    }

    // A real raise: stored, with the old value in the answer and the audit log.
    let (status, body) = api.post(&raise, json!({ "threshold": 0.95 })).await;
    assert_eq!(status, 200, "{body}");
    assert!(close(&body["previous"], 0.9) && body["previousSource"] == "species", "{body}");
    assert!(close(&body["threshold"], 0.95), "{body}");
    assert!(close(&stored_threshold(&api).await, 0.95));
    let audit = settings_audit(&hub, owner.tenant);
    let (_, details) = audit.last().expect("an audit entry");
    assert!(close(&details["previous"], 0.9) && close(&details["threshold"], 0.95), "{details}");

    // Bad input is a clear 4xx, and a viewer may not.
    assert_error(&api.post(&raise, json!({ "threshold": 1.5 })).await, 422, "invalid_threshold");
    let got = api.post(&raise, json!({ "threshold": "high" })).await;
    assert!(got.0.is_client_error() && got.1["message"].is_string(), "{got:?}");
    let viewer = hub.login("viewer@example.org").await;
    let got = viewer.post(&raise, json!({ "threshold": 0.97 })).await;
    assert_eq!(got.0.as_u16(), 403, "{}", got.1);
    assert!(close(&stored_threshold(&api).await, 0.95));
}
