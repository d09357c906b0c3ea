//! `GET /satellites/:id/schedule` (SPEC 2.5, 4.4): the stored recording profile resolved to sun
//! times and recording windows for today and tomorrow, Viewer+ of the satellite's team only.

mod common;

use chrono::{DateTime, FixedOffset};
use common::assert_error;
use serde_json::{Value, json};

fn at(v: &Value) -> DateTime<FixedOffset> {
    DateTime::parse_from_rfc3339(v.as_str().unwrap_or_else(|| panic!("a time, got {v}"))).expect("RFC 3339")
}

fn profile(schedule: Value) -> Value {
    json!({"type": "dawn", "schedule": schedule, "sampleRate": 48000, "chunkDurationMs": 3000, "overlapMs": 0, "gain": 1.0})
}

/// The window of `entry` on `day`.
fn window(day: &Value, entry: u64) -> &Value {
    day["windows"]
        .as_array()
        .and_then(|w| w.iter().find(|w| w["entry"] == entry))
        .unwrap_or_else(|| panic!("no window of entry {entry} in {day}"))
}

#[tokio::test]
async fn windows_follow_sunrise_at_the_position_and_absolute_times() {
    let hub = common::spawn_hub().await;
    hub.user("owner@example.org", false).await;
    let owner = hub.login("owner@example.org").await;
    let sat = owner
        .create("/satellites", json!({"name": "garden", "deviceId": "pi-1", "latitude": 40.8, "longitude": -77.9}))
        .await;
    let id = sat["id"].as_str().expect("id").to_owned();
    let schedule = json!([
        {"start": "-30", "end": "90", "reference": "sunrise"},
        {"start": "22:00", "end": "04:00", "reference": "absolute"},
    ]);
    let (status, body) = owner.post(&format!("/satellites/{id}/profile"), profile(schedule)).await;
    assert_eq!(status, 200, "{body}");

    let (status, body) = owner.get(&format!("/satellites/{id}/schedule")).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["satelliteId"], id.as_str());
    assert_eq!((body["latitude"].clone(), body["longitude"].clone()), (json!(40.8), json!(-77.9)));
    assert_eq!(body["profileType"], "dawn");
    assert!(body["recordingNow"].is_boolean());
    let days = body["days"].as_array().expect("days");
    assert_eq!(days.len(), 2, "today and tomorrow");
    let dates: Vec<chrono::NaiveDate> =
        days.iter().map(|d| d["date"].as_str().expect("date").parse().expect("YYYY-MM-DD")).collect();
    assert_eq!(dates[1], dates[0].succ_opt().expect("next day"));
    for day in days {
        let (sunrise, noon, sunset) = (at(&day["sunrise"]), at(&day["solarNoon"]), at(&day["sunset"]));
        assert!(sunrise < noon && noon < sunset, "{day}");
        assert_eq!(day["polar"], Value::Null);
        assert_eq!(day["unresolved"], json!([]));
        let dawn = window(day, 0);
        assert_eq!(dawn["reference"], "sunrise");
        assert_eq!(at(&dawn["start"]), sunrise - chrono::Duration::minutes(30));
        assert_eq!(at(&dawn["end"]), sunrise + chrono::Duration::minutes(90));
        // The absolute window starts at 22:00 local and ends at 04:00 the next morning.
        let night = window(day, 1);
        assert_eq!(night["reference"], "absolute");
        let (start, end) = (at(&night["start"]), at(&night["end"]));
        assert_eq!(start.format("%H:%M").to_string(), "22:00");
        assert_eq!(end.format("%H:%M").to_string(), "04:00");
        assert_eq!(end.date_naive(), start.date_naive().succ_opt().expect("next day"));
    }
}

#[tokio::test]
async fn a_sun_entry_without_a_position_is_unresolved() {
    let hub = common::spawn_hub().await;
    hub.user("owner@example.org", false).await;
    let owner = hub.login("owner@example.org").await;
    let sat = owner.create("/satellites", json!({"name": "shed", "deviceId": "pi-2"})).await;
    let id = sat["id"].as_str().expect("id").to_owned();
    let schedule = json!([{"start": "-60", "end": "0", "reference": "sunset"}]);
    assert_eq!(owner.post(&format!("/satellites/{id}/profile"), profile(schedule)).await.0, 200);

    let (status, body) = owner.get(&format!("/satellites/{id}/schedule")).await;
    assert_eq!(status, 200, "{body}");
    for day in body["days"].as_array().expect("days") {
        assert_eq!(day["sunrise"], Value::Null);
        assert_eq!(day["windows"], json!([]));
        assert_eq!(day["unresolved"][0]["entry"], 0);
        assert!(day["unresolved"][0]["reason"].as_str().is_some_and(|r| r.contains("no position")), "{day}");
    }
    assert_eq!(body["recordingNow"], false, "an unresolved entry never records");
}

#[tokio::test]
async fn without_a_profile_the_satellite_records_all_day() {
    let hub = common::spawn_hub().await;
    hub.user("owner@example.org", false).await;
    let owner = hub.login("owner@example.org").await;
    let sat = owner.create("/satellites", json!({"name": "roof", "deviceId": "pi-3"})).await;
    let (status, body) = owner.get(&format!("/satellites/{}/schedule", sat["id"].as_str().expect("id"))).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["profileType"], "continuous");
    assert_eq!(body["recordingNow"], true);
    let window = &body["days"][0]["windows"][0];
    assert_eq!((window["reference"].clone(), window["entry"].clone()), (json!("allDay"), Value::Null));
}

#[tokio::test]
async fn another_teams_or_an_unknown_satellite_is_not_found() {
    let hub = common::spawn_hub().await;
    hub.user("owner@example.org", false).await;
    hub.user("stranger@example.org", false).await;
    let owner = hub.login("owner@example.org").await;
    let sat = owner.create("/satellites", json!({"name": "garden", "deviceId": "pi-1"})).await;
    let stranger = hub.login("stranger@example.org").await;
    let path = format!("/satellites/{}/schedule", sat["id"].as_str().expect("id"));
    assert_error(&stranger.get(&path).await, 404, "satellite_not_found");
    let unknown = format!("/satellites/{}/schedule", uuid::Uuid::new_v4());
    assert_error(&owner.get(&unknown).await, 404, "satellite_not_found");
}
