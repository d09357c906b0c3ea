//! Counts of one read as one (issue 51, defect 17): a team with one detection today, one chunk
//! waiting in a satellite's outbox and one satellite without a position sees "1 detection",
//! "1 chunk waiting" and "1 satellite without a position is not drawn" on the pages the server
//! renders, never "1 detections" or "satellite(s)"; alert rules of one minute or one day say so.

mod common;

use birdhub::store;
use chrono::SecondsFormat;
use common::{Api, TestHub, seed};
use serde_json::json;

async fn page(hub: &TestHub, api: &Api, path: &str) -> String {
    let resp = api.client.get(format!("{}{path}", hub.base_url)).send().await.expect("page");
    assert_eq!(resp.status(), 200, "{path}");
    resp.text().await.expect("body")
}

#[tokio::test]
async fn counts_of_one_take_the_singular() {
    let hub = common::spawn_hub().await;
    let owner = hub.user("owner@example.com", false).await;
    let tenant = owner.tenant;
    let garden = seed::satellite(&hub, tenant, "Garden Pi").await;
    seed::place(&hub, tenant, garden, 51.5, -0.13).await;
    let _shed = seed::satellite(&hub, tenant, "Shed Pi").await;
    let now = hub.state().clock.stamp();
    hub.state().store.call(move |c| store::satellites::seen(c, tenant, garden, now)).await.expect("seen");
    hub.sql(|c| {
        c.execute(
            "UPDATE satellites SET outbox_stats_json = ?1 WHERE id = ?2",
            [
                r#"{"unackedCount": 1, "ackedBytes": 2048, "unackedBytes": 96000, "diskBytes": 98048}"#.to_owned(),
                garden.to_string(),
            ],
        )
        .expect("outbox")
    });
    let at = (hub.state().clock.now() - chrono::Duration::seconds(5)).to_rfc3339_opts(SecondsFormat::Millis, true);
    seed::heard(&hub, tenant, garden, &at, seed::ROBIN, 0.9).await;
    let api = hub.login("owner@example.com").await;

    let sats = page(&hub, &api, "/satellites").await;
    assert!(sats.contains("1 chunk waiting ·"), "{sats}");

    let live = page(&hub, &api, "/").await;
    assert!(live.contains(r#"<span class="n">1</span><span class="l">detection today"#), "{live}");

    let map = page(&hub, &api, "/stats/part/map?days=30").await;
    assert!(map.contains("1 satellite without a position is not drawn."), "{map}");
    assert!(map.contains("Garden Pi: 1 detection, 1 species"), "{map}");

    let trends = page(&hub, &api, "/stats/part/trends?days=30").await;
    assert!(trends.contains("1 detection in the last 30 days"), "{trends}");

    let catalogue = page(&hub, &api, "/species").await;
    assert!(catalogue.contains("<strong>1</strong> detection · 1 satellite"), "{catalogue}");

    // Alert rules in words: one minute of silence, one day of baseline.
    api.create(
        "/alert-rules/rules",
        json!({"name": "Quiet minute", "trigger": "absence", "conditions": {"minutes": 1}, "channelIds": []}),
    )
    .await;
    api.create(
        "/alert-rules/rules",
        json!({"name": "Busy day", "trigger": "trend", "channelIds": [],
               "conditions": {"metric": "detections", "direction": "rise", "percent": 50, "baselineDays": 1}}),
    )
    .await;
    let alerts = page(&hub, &api, "/alerts").await;
    assert!(alerts.contains("no bird detected for 1 minute · across the whole team"), "{alerts}");
    assert!(alerts.contains("by 50% against the day before"), "{alerts}");

    for (path, html) in [
        ("/satellites", &sats),
        ("/", &live),
        ("map", &map),
        ("trends", &trends),
        ("/species", &catalogue),
        ("/alerts", &alerts),
    ] {
        for wrong in ["1 chunks", "1 detections", "(s)", "1 satellites", "1 minutes", "1 days"] {
            assert!(!html.contains(wrong), "{path} says {wrong:?}");
        }
    }
}
