//! The 12-hour preference on times the hub writes in words (issue 51, 8), in a real headless
//! chromium: an alert's text on the Alerts page and "Busiest around" on a species page follow the
//! viewer's clock, while the text sent out (a webhook here) keeps its documented 24-hour form.

mod common;

use chrono::{Duration, Utc};
use common::{PASSWORD, browser::Browser, receiver::Receiver, seed};
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn alert_texts_and_the_busiest_hour_follow_the_viewers_clock_and_sent_texts_keep_theirs() {
    let hub = common::spawn_hub_with(common::with_model).await;
    let owner = hub.user("owner@example.org", false).await;
    let api = hub.login(&owner.email).await;
    let (status, body) = api.put("/auth/me/preferences", json!({ "timeFormat": "12h" })).await;
    assert_eq!(status, 200, "{body}");

    // A New York station whose bird alert goes to a webhook.
    let sat = seed::satellite(&hub, owner.tenant, "Backyard").await;
    seed::place(&hub, owner.tenant, sat, 40.71, -74.0).await;
    seed::zone_settles(&hub, sat, "America/New_York").await;
    let rx = Receiver::start(None).await;
    let hook = api
        .create("/alert-rules/channels", json!({"type": "webhook", "name": "Home", "config": {"url": rx.url("/a")}}))
        .await;
    api.create("/alert-rules/rules", json!({"name": "Every bird", "trigger": "detection", "channelIds": [hook["id"]]}))
        .await;
    let heard = seed::bird_alert(&hub, owner.tenant, sat).await;
    let stored = birdhub::time::readable_in(heard, chrono_tz::America::New_York);
    assert_eq!(stored, "23:10 EST on 26 Nov", "as alert texts are written and sent");
    let twelve = "11:10 PM EST on 26 Nov";

    // Sent out: the documented 24-hour form, whoever reads the dashboard on 12 hours.
    let sent = rx.wait_for(1, 20).await[0].json();
    let message = sent["message"].as_str().unwrap_or_default();
    assert!(message.contains(&stored), "the webhook keeps the 24-hour time: {message}");

    // A recent blackbird too, so the species page's range has a busiest hour.
    let recent = (Utc::now() - Duration::hours(1)).to_rfc3339();
    seed::heard(&hub, owner.tenant, sat, &recent, seed::BLACKBIRD, 0.88).await;

    let b = Browser::start(hub.http_addr.port(), "hour-format").await;
    b.sign_in(&owner.email, PASSWORD, None).await;
    b.goto("/alerts").await;
    let list = b.text("#alert-list").await;
    assert!(list.contains(twelve), "the alert on the viewer's 12-hour clock ({twelve}):\n{list}");
    assert!(!list.contains("23:10"), "no 24-hour time:\n{list}");
    b.shot("alerts").await;

    b.goto(&format!("/species/{}", seed::BLACKBIRD.0)).await;
    let busiest = b
        .js("const p = Array.from(document.querySelectorAll('p')).find((p) => /Busiest around/.test(p.textContent));
             return p ? p.textContent.trim() : '';")
        .await;
    let busiest = busiest.as_str().unwrap_or_default().to_owned();
    let twelve_hour = busiest.strip_prefix("Busiest around ").and_then(|h| h.strip_suffix('.')).is_some_and(|h| {
        h.split_once(' ').is_some_and(|(n, half)| {
            n.parse::<u32>().is_ok_and(|n| (1..=12).contains(&n)) && (half == "AM" || half == "PM")
        })
    });
    assert!(twelve_hour, "the busiest hour on the 12-hour clock: {busiest:?}");
    b.shot("species").await;
    b.close().await;
}
