//! Counts the browser writes read as one when there is one (issue 51, defect 17): a satellite
//! that answers "Fetch logs" with a single line shows "Logs · 1 line", not "1 lines", in a real
//! headless chromium with a satellite answering over real MQTT.

mod common;

use common::{PASSWORD, browser::Browser, sat};
use serde_json::json;

#[tokio::test]
async fn one_log_line_is_one_line() {
    let hub = common::spawn_hub().await;
    let owner = hub.user("owner@example.com", false).await;
    let api = hub.login(&owner.email).await;
    let r = sat::register(&api, json!({"name": "Garden Pi", "deviceId": "pi-plurals"})).await;
    let mut c = sat::connect(&hub, &r).await;
    assert!(c.subscribe(&r.topic("log-request")).await, "own log-request channel");

    let b = Browser::start(hub.http_addr.port(), "plurals").await;
    b.sign_in(&owner.email, PASSWORD, None).await;
    b.goto(&format!("/satellites/{}", r.id)).await;
    b.click("#act-logs").await;
    let req = c.message_on(&r.topic("log-request"), 10).await.expect("log-request");
    let id = req["requestId"].as_str().expect("requestId");
    let answer = json!({"requestId": id, "satelliteId": r.id, "tenantId": r.tenant,
                        "text": "recording started\n", "truncated": false});
    c.publish(&r.topic("log-response"), answer.to_string()).await;

    let shown = b.wait_until("return document.getElementById('logs').textContent === 'recording started';", 15).await;
    assert!(shown, "the line is shown: {}", b.text("#logs-box").await);
    assert_eq!(b.text("#logs-state").await, "· 1 line");
    b.assert_no_js_errors().await;
    b.close().await;
}
