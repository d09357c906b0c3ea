//! A satellite's clock as a person sees it (issue 37), in a real headless chromium: a satellite
//! whose heartbeat is stamped 1970 reads "Clock wrong: 56 years behind the hub" on its page (with
//! the "clock wrong" badge and the chunk the hub re-stamped) and on its card, the pages fit 360 and
//! 1280 px without sideways scroll, and no raw ISO time shows. On the Alerts page the system rule
//! "Wrong satellite clock" is listed with its cooldown, which its form lets an admin change.
//! Screenshots: `clock-*`.

mod common;

use std::time::Duration;

use base64::Engine;
use common::{PASSWORD, browser::Browser, sat};
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

async fn no_iso_text(b: &Browser, what: &str) {
    let found = b
        .js(r"const m = document.body.innerText.match(/\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2})?(\.\d+)?(Z|[+-]\d{2}:\d{2})/); return m ? m[0] : null;")
        .await;
    assert_eq!(found, Value::Null, "{what} shows a raw timestamp");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_clock_reads_in_words_on_the_satellite_page_and_card() {
    let hub = common::spawn_hub().await;
    let owner = hub.user("owner@example.com", false).await;
    let api = hub.login(&owner.email).await;
    let r = sat::register(&api, json!({"name": "Berlin Pi", "latitude": 52.52, "longitude": 13.405})).await;
    let mut c = sat::connect(&hub, &r).await;
    assert!(c.subscribe(&r.topic("ack")).await);
    let hb = json!({"satelliteId": r.id, "tenantId": r.tenant, "uptimeSeconds": 40, "state": "recording",
                    "version": "0.1.0", "stream": "satellite", "timestamp": "1970-01-01T00:00:00Z",
                    "outboxStats": {"rowCount": 1, "unackedCount": 1, "diskBytes": 300_000}});
    c.publish(&r.topic("heartbeat"), hb.to_string()).await;
    let chunk = json!({"chunkId": uuid::Uuid::new_v4().to_string(), "satelliteId": r.id, "tenantId": r.tenant,
                       "recordedAt": "1970-01-01T00:00:05Z", "durationMs": 3000, "sampleRate": 48_000,
                       "audio": base64::engine::general_purpose::STANDARD.encode(sat::tone_wav(48_000, 3.0))});
    for _ in 0..100 {
        let (_, v) = api.get(&format!("/satellites/{}", r.id)).await;
        if v["clock_wrong"] == true {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    c.publish(&r.topic("audio"), chunk.to_string()).await;
    assert_eq!(c.message_on(&r.topic("ack"), 10).await.expect("ack")["status"], "stored");

    let b = Browser::start(hub.http_addr.port(), "clock").await;
    b.sign_in(&owner.email, PASSWORD, None).await;
    b.goto(&format!("/satellites/{}", r.id)).await;
    let clock = b.text("#sat-clock").await;
    assert!(clock.contains("Clock wrong: 56 years behind the hub"), "{clock}");
    assert!(clock.contains("1 chunk re-stamped by the hub"), "{clock}");
    assert!(b.text("#sat .sat-state").await.contains("clock wrong"), "the badge beside online");
    fits(&b, "the satellite page").await;
    no_iso_text(&b, "the satellite page").await;
    b.shot("page").await;

    b.goto("/satellites").await;
    let card = b.text(&format!("article.sat-card[data-id='{}']", r.id)).await;
    assert!(card.contains("Clock wrong: 56 years behind the hub") && card.contains("clock wrong"), "{card}");
    fits(&b, "the satellite list").await;
    no_iso_text(&b, "the satellite list").await;
    b.shot("list").await;

    // The alert rule sits beside the offline rule; its cooldown can be changed there.
    let (_, rules) = api.get("/alert-rules/rules").await;
    let rule = rules["rules"]
        .as_array()
        .and_then(|rs| rs.iter().find(|x| x["systemKey"] == "satellite_clock"))
        .cloned()
        .expect("the clock rule");
    let id = rule["id"].as_str().expect("id").to_owned();
    b.goto("/alerts").await;
    let row = b.text(&format!("#rules tbody tr:has([data-edit-rule='{id}'])")).await;
    assert!(row.contains("Wrong satellite clock") && row.contains("30 min") && row.contains("clock"), "{row}");
    b.click(&format!("[data-edit-rule='{id}']")).await;
    assert_eq!(b.js("return document.getElementById('rule-cooldown-box').hidden;").await, json!(false));
    b.fill("#rule-cooldown", "120").await;
    b.click("#rule-submit").await;
    let mut saved = Value::Null;
    for _ in 0..50 {
        let (_, rules) = api.get("/alert-rules/rules").await;
        saved = rules["rules"]
            .as_array()
            .and_then(|rs| rs.iter().find(|x| x["id"] == id.as_str()))
            .cloned()
            .unwrap_or_default();
        if saved["cooldownMinutes"] == 120 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(saved["cooldownMinutes"], 120, "{saved}");
    fits(&b, "the alerts page").await;
    b.shot("alerts").await;
    b.close().await;
}
