//! Absence and trend rules (the one-minute watch, run here on the hub's moved clock): a silence
//! alerts once, and again only after new activity and a new silence; a day's count that rises
//! past the threshold against the days before alerts once for that day.

mod common;

use std::time::Duration;

use common::{receiver::Receiver, seed};
use serde_json::{Value, json};

fn iso(t: chrono::DateTime<chrono::Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

#[tokio::test]
async fn a_silence_alerts_once_per_silence() {
    let hub = common::spawn_hub().await;
    let owner = hub.user("owner@example.org", false).await;
    let api = hub.login(&owner.email).await;
    let s = hub.state();
    let sat = seed::satellite(&hub, owner.tenant, "meadow").await;
    seed::heard(&hub, owner.tenant, sat, &iso(s.clock.now()), seed::ROBIN, 0.9).await;
    let rx = Receiver::start(None).await;
    let hook = api
        .create("/alert-rules/channels", json!({"type": "webhook", "name": "rx", "config": {"url": rx.url("/quiet")}}))
        .await;
    api.create(
        "/alert-rules/rules",
        json!({"name": "Meadow quiet", "trigger": "absence",
        "conditions": {"minutes": 60, "satelliteIds": [sat]}, "channelIds": [hook["id"]]}),
    )
    .await;
    let watch = || birdhub::usecases::alert_watch::watch(&s.store, &s.bus, &s.alerts, s.clock.stamp());

    assert_eq!(watch().await.expect("pass"), 0, "not quiet long enough");
    s.clock.advance(Duration::from_secs(61 * 60));
    assert_eq!(watch().await.expect("pass"), 1);
    assert_eq!(watch().await.expect("pass"), 0, "once per silence, not once per pass");
    s.clock.advance(Duration::from_secs(30 * 60));
    assert_eq!(watch().await.expect("pass"), 0);

    // A bird, then a new silence: a new alert.
    seed::heard(&hub, owner.tenant, sat, &iso(s.clock.now()), seed::WREN, 0.9).await;
    s.clock.advance(Duration::from_secs(59 * 60));
    assert_eq!(watch().await.expect("pass"), 0);
    s.clock.advance(Duration::from_secs(2 * 60));
    assert_eq!(watch().await.expect("pass"), 1);

    let got = rx.wait_for(2, 10).await;
    assert_eq!(got.len(), 2);
    let body = got[0].json();
    assert_eq!(body["event"], "absence");
    assert_eq!(body["data"]["satelliteName"], "meadow");
    assert_eq!(body["data"]["minutes"], 60);
    let (_, alerts) = api.get("/alerts").await;
    assert_eq!(alerts["total"], 2);
    assert!(alerts["alerts"][0]["title"].as_str().is_some_and(|t| t.contains("meadow")), "{alerts}");
}

#[tokio::test]
async fn a_daily_rise_against_the_baseline_alerts_once_that_day() {
    let hub = common::spawn_hub().await;
    let owner = hub.user("owner@example.org", false).await;
    let api = hub.login(&owner.email).await;
    let s = hub.state();
    let sat = seed::satellite(&hub, owner.tenant, "orchard").await;
    let today = s.clock.now().date_naive();
    let noon = |days_ago: i64, minute: u32| {
        let d = today - chrono::Duration::days(days_ago);
        iso(d.and_hms_opt(12, minute, 0).expect("time").and_utc())
    };
    // 10 a day for three days, then 20 yesterday: +100%.
    for days_ago in 2..=4 {
        for m in 0..10 {
            seed::heard(&hub, owner.tenant, sat, &noon(days_ago, m), seed::ROBIN, 0.9).await;
        }
    }
    for m in 0..20 {
        seed::heard(&hub, owner.tenant, sat, &noon(1, m), if m % 2 == 0 { seed::ROBIN } else { seed::WREN }, 0.9).await;
    }
    let rx = Receiver::start(None).await;
    let hook = api
        .create("/alert-rules/channels", json!({"type": "webhook", "name": "rx", "config": {"url": rx.url("/trend")}}))
        .await;
    api.create("/alert-rules/rules", json!({"name": "Busy day", "trigger": "trend",
        "conditions": {"metric": "detections", "direction": "rise", "percent": 50, "baselineDays": 3}, "channelIds": [hook["id"]]})).await;
    api.create("/alert-rules/rules", json!({"name": "Quiet day", "trigger": "trend",
        "conditions": {"metric": "detections", "direction": "fall", "percent": 20, "baselineDays": 3}, "channelIds": [hook["id"]]})).await;
    api.create("/alert-rules/rules", json!({"name": "More species", "trigger": "trend",
        "conditions": {"metric": "species", "direction": "rise", "percent": 100, "baselineDays": 3, "satelliteId": sat}, "channelIds": [hook["id"]]})).await;

    let watch = || birdhub::usecases::alert_watch::watch(&s.store, &s.bus, &s.alerts, s.clock.stamp());
    assert_eq!(watch().await.expect("pass"), 2, "the rise in detections and in species (1 -> 2)");
    assert_eq!(watch().await.expect("pass"), 0, "once per day");
    let got = rx.wait_for(2, 10).await;
    let bodies: Vec<Value> = got.iter().map(|g| g.json()).collect();
    let detections = bodies.iter().find(|b| b["data"]["metric"] == "detections").expect("detections trend");
    assert_eq!(detections["event"], "trend");
    assert_eq!(detections["data"]["value"], 20.0);
    assert_eq!(detections["data"]["baseline"], 10.0);
    assert_eq!(detections["data"]["changePercent"], 100.0);
    let species = bodies.iter().find(|b| b["data"]["metric"] == "species").expect("species trend");
    assert_eq!(species["data"]["value"], 2.0);
}
