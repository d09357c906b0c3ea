//! The embedded broker with real MQTT clients: logins, client ids, the ACL both ways, revocation.

mod common;

use common::sat::{self, Seen};
use serde_json::json;

async fn setup() -> (common::TestHub, common::Api, sat::Registered, sat::Registered) {
    let hub = common::spawn_hub().await;
    let owner = hub.user("owner@example.org", false).await;
    let api = hub.login(&owner.email).await;
    let a = sat::register(&api, json!({"name": "garden"})).await;
    let b = sat::register(&api, json!({"name": "meadow"})).await;
    (hub, api, a, b)
}

#[tokio::test]
async fn logins_need_the_right_password_and_client_id() {
    let (hub, _, a, b) = setup().await;
    let port = hub.mqtt_port;
    let mut ok = sat::connect_as(port, &a.client_id, &a.id, &a.password).await;
    assert!(matches!(ok.next(10).await, Some(Seen::Connected)));

    let mut wrong = sat::connect_as(port, &a.client_id, &a.id, "00ff00ff").await;
    match wrong.next(10).await {
        Some(Seen::Refused(code)) => {
            assert!(code.contains("BadUserNamePassword") || code.contains("NotAuthorized"), "{code}")
        }
        other => panic!("wrong password accepted: {other:?}"),
    }
    let mut swapped = sat::connect_as(port, &format!("satellite-{}", a.id), &a.id, &b.password).await;
    assert!(matches!(swapped.next(10).await, Some(Seen::Refused(_))), "another satellite's password");
    let mut other_id = sat::connect_as(port, &format!("satellite-{}", b.id), &a.id, &a.password).await;
    assert!(matches!(other_id.next(10).await, Some(Seen::Refused(_))), "client id of another satellite");
    let mut hub_id = sat::connect_as(port, "hub-sneaky", &a.id, &a.password).await;
    assert!(matches!(hub_id.next(10).await, Some(Seen::Refused(_))), "hub client ids are reserved");
    let mut as_hub = sat::connect_as(port, "hub-x", "hub", &a.password).await;
    assert!(matches!(as_hub.next(10).await, Some(Seen::Refused(_))), "the hub user needs the internal key");
    let mut mobile = sat::connect_as(port, &format!("mobile-{}", a.id), &a.id, &a.password).await;
    assert!(matches!(mobile.next(10).await, Some(Seen::Connected)), "mobile-{{id}} is allowed too");
}

#[tokio::test]
async fn satellites_cannot_read_or_write_each_others_topics() {
    let (hub, _, a, b) = setup().await;
    let mut ca = sat::connect(&hub, &a).await;
    let mut cb = sat::connect(&hub, &b).await;
    assert!(cb.subscribe(&format!("{}#", b.prefix)).await, "own tree");
    assert!(!ca.subscribe(&format!("{}#", b.prefix)).await, "another satellite's tree");
    assert!(!ca.subscribe("#").await, "everything");
    assert!(!ca.subscribe(&format!("birdhub/{}/+/config", a.tenant)).await, "wildcard across satellites");

    // A publish into b's tree from a is not delivered.
    assert!(ca.subscribe(&a.topic("config")).await, "own config");
    ca.publish(&b.topic("config"), json!({"evil": true}).to_string()).await;
    ca.publish(&b.topic("custom"), b"x".to_vec()).await;
    // The broker handles one connection's publishes in order: once a's own config-request is
    // answered, its two foreign publishes were handled too ...
    ca.publish(&a.topic("config-request"), config_request(&a)).await;
    assert!(ca.message_on(&a.topic("config"), 10).await.is_some(), "a's config push");
    // ... and anything they routed to b is queued ahead of the config b asks for now.
    cb.publish(&b.topic("config-request"), config_request(&b)).await;
    loop {
        match cb.next(10).await {
            Some(Seen::Message { topic, payload }) => {
                let body: serde_json::Value = serde_json::from_slice(&payload).unwrap_or_default();
                assert!(
                    topic == b.topic("config") && body["satelliteId"] == b.id.as_str(),
                    "b received a message from a: {topic} {body}"
                );
                break;
            }
            Some(_) => continue,
            None => panic!("b never got its config push"),
        }
    }
}

fn config_request(r: &sat::Registered) -> String {
    json!({"satelliteId": r.id, "tenantId": r.tenant, "overrides": {}}).to_string()
}

#[tokio::test]
async fn deleting_a_satellite_revokes_its_login_and_drops_its_session() {
    let (hub, api, a, _) = setup().await;
    let mut ca = sat::connect(&hub, &a).await;
    let (status, _) = api.delete(&format!("/satellites/{}", a.id)).await;
    assert_eq!(status, 204);
    let mut dropped = false;
    for _ in 0..20 {
        if let Some(Seen::Disconnected(_)) = ca.next(5).await {
            dropped = true;
            break;
        }
    }
    assert!(dropped, "the live session ends");
    let mut again = sat::connect_as(hub.mqtt_port, &a.client_id, &a.id, &a.password).await;
    assert!(matches!(again.next(10).await, Some(Seen::Refused(_))), "the password no longer works");
}

#[tokio::test]
async fn re_registering_rotates_the_mqtt_password() {
    let hub = common::spawn_hub().await;
    let owner = hub.user("owner@example.org", false).await;
    let api = hub.login(&owner.email).await;
    let first = sat::register(&api, json!({"name": "pi", "deviceId": "pi-serial-1"})).await;
    let second = sat::register(&api, json!({"name": "pi", "deviceId": "pi-serial-1"})).await;
    assert_eq!(first.id, second.id, "same device, same satellite");
    assert_ne!(first.password, second.password);
    let mut old = sat::connect_as(hub.mqtt_port, &first.client_id, &first.id, &first.password).await;
    assert!(matches!(old.next(10).await, Some(Seen::Refused(_))));
    sat::connect(&hub, &second).await;
}
