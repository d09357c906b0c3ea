//! Remote actions on a satellite over real MQTT (SPEC 4.4, 2.8): update requests and their
//! outcome in heartbeats, log requests and their answers.

mod common;

use std::time::Duration;

use common::{Api, TestHub, assert_error, sat};
use serde_json::{Value, json};

/// A hub, its owner's session, a registered satellite and that satellite's MQTT client
/// (subscribed to its own `update` and `log-request` channels).
async fn setup() -> (TestHub, Api, sat::Registered, sat::Client) {
    let hub = common::spawn_hub().await;
    let owner = hub.user("owner@example.org", false).await;
    let api = hub.login(&owner.email).await;
    let r = sat::register(&api, json!({"name": "garden", "deviceId": "pi-remote"})).await;
    let mut c = sat::connect(&hub, &r).await;
    assert!(c.subscribe(&r.topic("update")).await, "own update channel");
    assert!(c.subscribe(&r.topic("log-request")).await, "own log-request channel");
    (hub, api, r, c)
}

fn heartbeat(r: &sat::Registered, version: &str) -> String {
    json!({"satelliteId": r.id, "tenantId": r.tenant, "uptimeSeconds": 60, "state": "recording",
           "version": version, "stream": "satellite", "timestamp": "2026-05-15T06:30:00Z"})
    .to_string()
}

/// Polls `GET path` until `ok` holds (the hub handles MQTT messages asynchronously).
async fn wait_for(api: &Api, path: &str, ok: impl Fn(&Value) -> bool) -> Value {
    for _ in 0..200 {
        let (status, body) = api.get(path).await;
        if status == 200 && ok(&body) {
            return body;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("{path} never reached the expected state: {:?}", api.get(path).await);
}

#[tokio::test]
async fn update_request_reaches_the_satellite_and_heartbeats_settle_it() {
    let (hub, api, r, mut c) = setup().await;
    let path = format!("/satellites/{}/update", r.id);
    let detail = format!("/satellites/{}", r.id);

    assert_error(&api.post(&path, json!({})).await, 422, "no_target_version");
    assert_error(&api.post(&path, json!({"targetVersion": "latest"})).await, 422, "invalid_target_version");
    assert_error(&api.post(&path, json!({"targetVersion": "1.2"})).await, 422, "invalid_target_version");

    let (status, body) = api.post(&path, json!({"targetVersion": "1.2.0"})).await;
    assert_eq!(status, 202, "{body}");
    assert_eq!(body, json!({"satelliteId": r.id, "updateStatus": "updating", "targetVersion": "1.2.0"}));
    let msg = c.message_on(&r.topic("update"), 10).await.expect("update message");
    assert_eq!(msg, json!({"satelliteId": r.id, "tenantId": r.tenant, "targetVersion": "1.2.0"}));
    let (_, shown) = api.get(&detail).await;
    assert_eq!((shown["update_status"].clone(), shown["target_version"].clone()), (json!("updating"), json!("1.2.0")));

    c.publish(&r.topic("heartbeat"), heartbeat(&r, "1.2.0")).await;
    let shown = wait_for(&api, &detail, |v| v["version"] == "1.2.0").await;
    assert_eq!(shown["update_status"], Value::Null, "the target version runs");
    assert_eq!(shown["target_version"], Value::Null);

    // A second update that never arrives: still `updating` before the timeout, `failed` after it.
    assert_eq!(api.post(&path, json!({"targetVersion": "1.3.0"})).await.0, 202);
    assert_eq!(c.message_on(&r.topic("update"), 10).await.expect("update")["targetVersion"], "1.3.0");
    c.publish(&r.topic("heartbeat"), heartbeat(&r, "1.2.0")).await;
    c.publish(&r.topic("heartbeat"), json!({"satelliteId": r.id, "tenantId": r.tenant, "state": "idle"}).to_string())
        .await;
    let shown = wait_for(&api, &detail, |v| v["heartbeat_state"] == "idle").await;
    assert_eq!(shown["update_status"], "updating", "within the update timeout");
    hub.state().clock.advance(Duration::from_secs(16 * 60));
    c.publish(&r.topic("heartbeat"), heartbeat(&r, "1.2.0")).await;
    let shown = wait_for(&api, &detail, |v| v["update_status"] == "failed").await;
    assert_eq!(shown["target_version"], "1.3.0", "the failed target stays visible");

    // Without targetVersion: the latest satellite release the hub knows (here: reported 1.2.0),
    // which this satellite already runs: no "update" to it (issue 36, defect 19).
    assert_error(&api.post(&path, json!({})).await, 409, "already_up_to_date");
    assert_error(&api.post(&path, json!({"targetVersion": "1.2.0"})).await, 409, "already_up_to_date");

    let audits: i64 = hub.sql(|c| {
        c.query_row(
            "SELECT count(*) FROM audit_log WHERE action = 'admin.satellite_update_requested' AND target_id = ?1",
            [&r.id],
            |row| row.get(0),
        )
        .expect("audit")
    });
    assert_eq!(audits, 2, "refused requests are not audited as requested");
}

#[tokio::test]
async fn update_follows_the_device_rule() {
    let (hub, _api, r, _c) = setup().await;
    let stranger = hub.user("stranger@example.org", false).await;
    let other = hub.login(&stranger.email).await;
    assert_error(
        &other.post(&format!("/satellites/{}/update", r.id), json!({"targetVersion": "1.0.0"})).await,
        404,
        "satellite_not_found",
    );
    hub.member_of("viewer@example.org", r.tenant.parse().expect("tenant"), birdhub::domain::Role::Viewer).await;
    let as_viewer = hub.login("viewer@example.org").await;
    let got = as_viewer.post(&format!("/satellites/{}/update", r.id), json!({"targetVersion": "1.0.0"})).await;
    assert_eq!(got.0, 403, "{}", got.1);
}

fn log_response(r: &sat::Registered, request_id: &str, text: &str) -> String {
    json!({"requestId": request_id, "satelliteId": r.id, "tenantId": r.tenant, "text": text, "truncated": false})
        .to_string()
}

#[tokio::test]
async fn log_requests_are_answered_now_or_later_and_only_by_their_satellite() {
    let (hub, api, r, mut c) = setup().await;
    let path = format!("/satellites/{}/logs/request", r.id);

    // A satellite that answers at once: its lines come back in the POST.
    let answering = {
        let api = api.clone();
        let path = path.clone();
        tokio::spawn(async move { api.post(&path, json!({"tail": 2})).await })
    };
    let req = c.message_on(&r.topic("log-request"), 10).await.expect("log-request");
    assert_eq!(req["tail"], 2);
    let id = req["requestId"].as_str().expect("requestId").to_owned();
    c.publish(&r.topic("log-response"), log_response(&r, &id, "one\ntwo\n")).await;
    let (status, body) = answering.await.expect("post");
    assert_eq!(status, 200, "{body}");
    assert_eq!((body["status"].clone(), body["lines"].clone()), (json!("complete"), json!(["one", "two"])));
    assert_eq!(body["truncated"], false);

    // One that answers later.
    let (status, body) = api.post(&format!("{path}?wait=0"), json!({})).await;
    assert_eq!((status.as_u16(), body["status"].clone()), (202, json!("pending")), "{body}");
    let id = body["requestId"].as_str().expect("id").to_owned();
    assert_eq!(c.message_on(&r.topic("log-request"), 10).await.expect("log-request")["tail"], 500);
    let read = format!("/satellites/{}/logs/{id}", r.id);
    assert_eq!(api.get(&read).await.0, 202);

    // Another satellite of the team cannot answer it.
    let other = sat::register(&api, json!({"name": "meadow", "deviceId": "pi-other"})).await;
    let oc = sat::connect(&hub, &other).await;
    oc.publish(&other.topic("log-response"), log_response(&other, &id, "forged\n")).await;
    c.publish(&r.topic("log-response"), log_response(&r, &id, "late\n")).await;
    let done = wait_for(&api, &read, |v| v["status"] == "complete").await;
    assert_eq!(done["lines"], json!(["late"]));

    assert_error(&api.get(&format!("/satellites/{}/logs/nope", r.id)).await, 404, "log_request_not_found");
    assert_error(&api.post(&path, json!({"tail": -1})).await, 422, "invalid_tail");
    assert_error(&api.post(&path, json!({"tail": 100000})).await, 422, "invalid_tail");
    assert_error(&api.post(&path, json!({"tail": "ten"})).await, 422, "invalid_tail");

    let stranger = hub.user("stranger@example.org", false).await;
    let outsider = hub.login(&stranger.email).await;
    assert_error(&outsider.post(&format!("{path}?wait=0"), json!({})).await, 404, "satellite_not_found");
    assert_error(&outsider.get(&read).await, 404, "satellite_not_found");
}
