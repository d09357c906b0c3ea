//! Time zones over HTTP (issue 37), on a hub whose machine zone is UTC (CI), with satellites in
//! New York and Berlin:
//! - each satellite reports its effective zone and where it comes from (`time_zone`,
//!   `time_zone_source`, `time_zone_override`): its position's zone, else the team's; an
//!   override wins and clearing it goes back;
//! - a name that is not an IANA zone gets 422 naming `Europe/Berlin`; another team's satellite is
//!   404; a viewer may not change it; the change is audited;
//! - a team zone change moves the satellites without a position, with progress to poll, and the
//!   detections of such a satellite carry its new zone.

mod common;

use std::time::Duration;

use birdhub::domain::Role;
use common::{Api, api::assert_error, sat, seed};
use serde_json::{Value, json};

const NEW_YORK: (f64, f64) = (40.7128, -74.0060);
const BERLIN: (f64, f64) = (52.52, 13.405);

/// Polls the satellite until `ok` holds (the zone mover decides zones in the background).
async fn wait_sat(api: &Api, id: &str, what: &str, ok: impl Fn(&Value) -> bool) -> Value {
    let mut last = Value::Null;
    for _ in 0..150 {
        let (status, v) = api.get(&format!("/satellites/{id}")).await;
        assert_eq!(status, 200, "{v}");
        if ok(&v) {
            return v;
        }
        last = v;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{what} never happened: {last}");
}

fn zone_is(zone: &'static str, source: &'static str) -> impl Fn(&Value) -> bool {
    move |v| v["time_zone"] == zone && v["time_zone_source"] == source
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn satellites_take_their_positions_zone_else_the_teams_and_an_override_wins() {
    let hub = common::spawn_hub().await;
    let owner = hub.user("owner@example.com", false).await;
    let api = hub.login(&owner.email).await;
    let register = |name: &str, at: Option<(f64, f64)>| {
        let mut body = json!({ "name": name });
        if let Some((lat, lon)) = at {
            body["latitude"] = json!(lat);
            body["longitude"] = json!(lon);
        }
        sat::register(&api, body)
    };
    let ny = register("Central Park", Some(NEW_YORK)).await;
    let berlin = register("Tiergarten", Some(BERLIN)).await;
    let bare = register("Attic", None).await;

    let team_zone = api.get("/settings/tenant").await.1["settings"]["time_zone"].as_str().expect("zone").to_owned();
    wait_sat(&api, &ny.id, "New York's zone from its position", zone_is("America/New_York", "position")).await;
    wait_sat(&api, &berlin.id, "Berlin's zone from its position", zone_is("Europe/Berlin", "position")).await;
    let attic = wait_sat(&api, &bare.id, "the team's zone", |v| v["time_zone_source"] == "team").await;
    assert_eq!(attic["time_zone"], team_zone.as_str(), "no position: the team's zone");
    assert_eq!(attic["time_zone_override"], Value::Null);
    let (_, list) = api.get("/satellites").await;
    let listed = list["satellites"].as_array().expect("list").iter().find(|s| s["id"] == ny.id.as_str()).cloned();
    assert_eq!(listed.expect("listed")["time_zone"], "America/New_York", "the list carries the zone too");

    // An override wins over the position; clearing it goes back.
    let path = format!("/satellites/{}/time-zone", ny.id);
    let (status, chosen) = api.put(&path, json!({"timeZone": "Asia/Tokyo"})).await;
    assert_eq!(status, 200, "{chosen}");
    assert_eq!(
        (&chosen["time_zone"], &chosen["time_zone_source"], &chosen["time_zone_override"]),
        (&json!("Asia/Tokyo"), &json!("override"), &json!("Asia/Tokyo"))
    );
    wait_sat(&api, &ny.id, "the override", zone_is("Asia/Tokyo", "override")).await;
    let (status, back) = api.put(&path, json!({"timeZone": null})).await;
    assert_eq!(status, 200, "{back}");
    assert_eq!((&back["time_zone"], &back["time_zone_source"]), (&json!("America/New_York"), &json!("position")));
    assert_eq!(back["time_zone_override"], Value::Null);
    let changes = hub.sql(|c| {
        c.query_row("SELECT count(*) FROM audit_log WHERE action = 'admin.satellite_time_zone_changed'", [], |r| {
            r.get::<_, i64>(0)
        })
        .expect("audit")
    });
    assert_eq!(changes, 2, "both changes are in the audit log");

    // Names that are not IANA zones, in words that name one that is.
    for bad in ["Mars/Olympus", "CET", ""] {
        let got = api.put(&path, json!({"timeZone": bad})).await;
        assert_error(&got, 422, "invalid_time_zone");
        assert!(got.1["message"].as_str().unwrap_or_default().contains("Europe/Berlin"), "{bad}: {}", got.1);
    }
    let wrong_type = api.put(&path, json!({"timeZone": 5})).await;
    assert!(wrong_type.0.is_client_error(), "{wrong_type:?}");

    // Another team's satellite is not there; a viewer looks but does not change.
    let other = hub.user("other@example.com", false).await;
    let other_api = hub.login(&other.email).await;
    let theirs = sat::register(&other_api, json!({"name": "Elsewhere"})).await;
    assert_error(
        &api.put(&format!("/satellites/{}/time-zone", theirs.id), json!({"timeZone": "UTC"})).await,
        404,
        "satellite_not_found",
    );
    hub.member_of("viewer@example.com", owner.tenant, Role::Viewer).await;
    let viewer = hub.login("viewer@example.com").await;
    let refused = viewer.put(&path, json!({"timeZone": "UTC"})).await;
    assert_eq!(refused.0, 403, "{}", refused.1);
    assert_eq!(viewer.get(&format!("/satellites/{}", ny.id)).await.1["time_zone"], "America/New_York");
    // A satellite's own key may not move it either (it is not in the key's list).
    let own = Api::with_bearer(&hub.base_url, &ny.api_key).put(&path, json!({"timeZone": "UTC"})).await;
    assert_eq!(own.0, 403, "{}", own.1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_team_zone_change_moves_the_satellites_without_a_position() {
    let hub = common::spawn_hub().await;
    let owner = hub.user("owner@example.com", false).await;
    let api = hub.login(&owner.email).await;

    let bad = api.put("/settings/tenant", json!({"time_zone": "Not/AZone"})).await;
    assert_error(&bad, 422, "invalid_settings");
    assert!(bad.1["message"].as_str().unwrap_or_default().contains("Europe/Berlin"), "{}", bad.1);

    let ny =
        sat::register(&api, json!({"name": "Central Park", "latitude": NEW_YORK.0, "longitude": NEW_YORK.1})).await;
    let attic = seed::satellite(&hub, owner.tenant, "Attic").await;
    let attic_id = attic.to_string();
    wait_sat(&api, &ny.id, "New York's zone", zone_is("America/New_York", "position")).await;
    for at in ["2026-01-15T12:02:00Z", "2026-01-16T03:30:00Z", "2026-01-16T23:30:00Z"] {
        seed::heard(&hub, owner.tenant, attic, at, seed::ROBIN, 0.9).await;
    }
    wait_sat(&api, &attic_id, "the attic's team zone", |v| v["time_zone_source"] == "team").await;

    let (status, _) = api.put("/settings/tenant", json!({"time_zone": "Asia/Tokyo"})).await;
    assert_eq!(status, 200);
    let mut last = Value::Null;
    let mut finished = false;
    for _ in 0..150 {
        let (status, p) = api.get("/stats/time-zone-moves").await;
        assert_eq!(status, 200, "{p}");
        assert!(p["done"].as_i64() <= p["total"].as_i64(), "{p}");
        if p["running"] == false && api.get(&format!("/satellites/{attic_id}")).await.1["time_zone"] == "Asia/Tokyo" {
            finished = true;
            break;
        }
        last = p;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(finished, "the move never finished: {last}");
    let moved = wait_sat(&api, &attic_id, "the team's new zone", zone_is("Asia/Tokyo", "team")).await;
    assert_eq!(moved["time_zone_override"], Value::Null);
    wait_sat(&api, &ny.id, "New York keeps its position's zone", zone_is("America/New_York", "position")).await;

    // The attic's detections carry the zone the dashboard writes their times in.
    let (_, list) = api.get(&format!("/detections?satelliteId={attic_id}")).await;
    let rows = list["detections"].as_array().expect("detections");
    assert_eq!(rows.len(), 3, "{list}");
    assert!(rows.iter().all(|d| d["time_zone"] == "Asia/Tokyo"), "{list}");
    let id = rows[0]["id"].as_str().expect("id");
    assert_eq!(api.get(&format!("/detections/{id}")).await.1["time_zone"], "Asia/Tokyo");

    // Any member of the team reads the progress; nothing runs now.
    hub.member_of("viewer@example.com", owner.tenant, Role::Viewer).await;
    let viewer = hub.login("viewer@example.com").await;
    let (status, p) = viewer.get("/stats/time-zone-moves").await;
    assert_eq!(status, 200, "{p}");
    assert_eq!((p["running"].clone(), p["satellites"].clone()), (json!(false), json!([])));
}
