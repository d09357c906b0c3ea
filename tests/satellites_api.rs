//! Satellites REST (SPEC 4.4, 5.4): registration rules, the device rule matrix, ownership fields.

mod common;

use birdhub::domain::Role;
use common::{assert_error, sat};
use serde_json::json;

#[tokio::test]
async fn registration_returns_credentials_once_and_follows_the_policy() {
    let hub = common::spawn_hub().await;
    let owner = hub.user("owner@example.org", false).await;
    hub.member_of("member@example.org", owner.tenant, Role::Member).await;
    hub.member_of("viewer@example.org", owner.tenant, Role::Viewer).await;
    let admin = hub.login(&owner.email).await;
    let member = hub.login("member@example.org").await;

    let (status, body) = member
        .post("/satellites", json!({"name": "garden", "deviceId": "pi-1", "latitude": 40.8, "longitude": -77.9}))
        .await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["mqtt"]["username"], body["id"]);
    assert_eq!(body["mqtt"]["password"].as_str().map(str::len), Some(64));
    assert_eq!(body["apiKey"].as_str().map(str::len), Some(64));
    // The hub's own address and bound port, never the request's Host (tests/public_links.rs).
    assert_eq!(body["mqtt"]["brokerUrl"], format!("mqtt://{}.local:{}", birdhub::links::hostname(), hub.mqtt_port));
    let id = body["id"].as_str().expect("id").to_owned();
    let (_, detail) = member.get(&format!("/satellites/{id}")).await;
    assert!(!detail.to_string().contains(body["mqtt"]["password"].as_str().expect("pw")), "never shown again");
    assert_eq!((detail["registered_by_me"].clone(), detail["can_manage"].clone()), (json!(true), json!(true)));
    assert_eq!(detail["registered_by_name"], "member");
    let (_, as_admin) = admin.get(&format!("/satellites/{id}")).await;
    assert_eq!((as_admin["registered_by_me"].clone(), as_admin["can_manage"].clone()), (json!(false), json!(true)));
    let (_, as_viewer) = hub.login("viewer@example.org").await.get(&format!("/satellites/{id}")).await;
    assert_eq!(as_viewer["can_manage"], false);

    assert_error(
        &hub.login("viewer@example.org").await.post("/satellites", json!({"name": "x"})).await,
        403,
        "insufficient_role",
    );
    assert_error(&member.post("/satellites", json!({"name": ""})).await, 422, "invalid_name");
    assert_error(
        &member.post("/satellites", json!({"name": "y", "deviceId": "bad id!"})).await,
        422,
        "invalid_device_id",
    );
    assert_error(&member.post("/satellites", json!({"name": "y", "kind": "drone"})).await, 422, "invalid_kind");

    assert_eq!(admin.put("/settings/tenant", json!({"device_policy": "admins"})).await.0, 200);
    assert_error(&member.post("/satellites", json!({"name": "meadow"})).await, 403, "DEVICE_POLICY_ADMINS");
    assert_eq!(admin.post("/satellites", json!({"name": "meadow"})).await.0, 201);
    let (_, again) = member.get(&format!("/satellites/{id}")).await;
    assert_eq!(again["can_manage"], false, "under the admins policy the registrant no longer manages");
}

#[tokio::test]
async fn re_registration_and_adoption_rules() {
    let hub = common::spawn_hub().await;
    let owner = hub.user("owner@example.org", false).await;
    hub.member_of("ann@example.org", owner.tenant, Role::Member).await;
    hub.member_of("bob@example.org", owner.tenant, Role::Member).await;
    let admin = hub.login(&owner.email).await;
    let ann = hub.login("ann@example.org").await;
    let bob = hub.login("bob@example.org").await;

    let first = sat::register(&ann, json!({"name": "pond", "deviceId": "pi-7"})).await;
    assert_error(
        &bob.post("/satellites", json!({"name": "other", "deviceId": "pi-7"})).await,
        403,
        "device_registered_by_another",
    );
    assert_error(&bob.post("/satellites", json!({"name": "pond"})).await, 409, "name_taken");
    let (status, again) = ann.post("/satellites", json!({"name": "pond", "deviceId": "pi-7"})).await;
    assert_eq!((status.as_u16(), again["id"].as_str()), (200, Some(first.id.as_str())), "the registrant re-registers");
    let (status, adopted) = admin.post("/satellites", json!({"name": "pond"})).await;
    assert_eq!((status.as_u16(), adopted["id"].as_str()), (200, Some(first.id.as_str())), "an admin adopts by name");

    // A team-owned device (its registrant left) can be claimed by any member re-registering it.
    let (_, members) = admin.get("/auth/members").await;
    let ann_member =
        members["members"].as_array().expect("m").iter().find(|m| m["email"] == "ann@example.org").expect("ann")["id"]
            .clone();
    hub.user("root@example.org", true).await;
    let root = hub.login("root@example.org").await;
    assert_eq!(root.delete(&format!("/admin/members/{}?devices=keep", ann_member.as_str().expect("id"))).await.0, 204);
    let (status, claimed) = bob.post("/satellites", json!({"name": "pond", "deviceId": "pi-7"})).await;
    assert_eq!(status, 200, "{claimed}");
    let (_, detail) = bob.get(&format!("/satellites/{}", first.id)).await;
    assert_eq!(detail["registered_by_me"], true);
    // Both moves are audited: to the team when Ann was removed, to Bob when he claimed it.
    let (_, log) = root.get("/admin/audit-log?action=admin.satellite_transferred").await;
    let moves: Vec<(String, String)> = log["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .map(|e| (e["details"]["reason"].as_str().unwrap_or("").into(), e["targetId"].as_str().unwrap_or("").into()))
        .collect();
    assert!(moves.contains(&("member_removed".into(), first.id.clone())), "{log}");
    assert!(moves.contains(&("claimed".into(), first.id.clone())), "{log}");
}

#[tokio::test]
async fn the_device_rule_answers_404_for_invisible_and_403_for_unmanageable() {
    let hub = common::spawn_hub().await;
    let owner = hub.user("owner@example.org", false).await;
    let outsider = hub.user("outsider@example.org", false).await;
    hub.member_of("reg@example.org", owner.tenant, Role::Member).await;
    hub.member_of("mate@example.org", owner.tenant, Role::Member).await;
    hub.member_of("viewer@example.org", owner.tenant, Role::Viewer).await;
    hub.user("root@example.org", true).await;
    let reg = hub.login("reg@example.org").await;
    let device = sat::register(&reg, json!({"name": "garden"})).await;
    let id = &device.id;
    let own_key = common::Api::with_bearer(&hub.base_url, &device.api_key);

    let callers = [
        ("outsider", hub.login(&outsider.email).await, 404),
        ("viewer", hub.login("viewer@example.org").await, 403),
        ("other member", hub.login("mate@example.org").await, 403),
    ];
    for (who, api, status) in &callers {
        assert_eq!(
            api.send(reqwest::Method::PATCH, &format!("/satellites/{id}"), Some(json!({"name": "x"}))).await.0.as_u16(),
            *status,
            "{who} rename"
        );
        assert_eq!(api.delete(&format!("/satellites/{id}")).await.0.as_u16(), *status, "{who} delete");
        assert_eq!(
            api.put(&format!("/satellites/{id}/config"), json!({"overrides": {}})).await.0.as_u16(),
            *status,
            "{who} config"
        );
        assert_eq!(
            api.post_empty(&format!("/satellites/{id}/rotate-api-key")).await.0.as_u16(),
            *status,
            "{who} rotate"
        );
    }
    assert_error(&callers[0].1.get(&format!("/satellites/{id}")).await, 404, "satellite_not_found");
    assert_error(&callers[0].1.get(&format!("/satellites/{}", uuid::Uuid::new_v4())).await, 404, "satellite_not_found");

    // The device's own key: rename, rotate, push config; nothing else (its allow-list refuses the
    // rest before the device rule is asked).
    let (status, renamed) =
        own_key.send(reqwest::Method::PATCH, &format!("/satellites/{id}"), Some(json!({"name": "garden-2"}))).await;
    assert_eq!((status.as_u16(), renamed["name"].clone()), (200, json!("garden-2")));
    assert_eq!(
        own_key.put(&format!("/satellites/{id}/config"), json!({"overrides": {"filter_enabled": false}})).await.0,
        200
    );
    assert_error(&own_key.post(&format!("/satellites/{id}/profile"), json!({"type": "x", "schedule": [], "sampleRate": 48000, "chunkDurationMs": 3000, "overlapMs": 0, "gain": 1.0})).await, 403, "satellite_key_not_allowed");
    assert_error(&own_key.delete(&format!("/satellites/{id}")).await, 403, "satellite_key_not_allowed");
    assert_error(
        &own_key.put(&format!("/satellites/{id}/config"), json!({"configLocked": true})).await,
        403,
        "admin_required",
    );
    let (status, rotated) = own_key.post_empty(&format!("/satellites/{id}/rotate-api-key")).await;
    assert_eq!(status, 200);
    assert_eq!(own_key.get(&format!("/satellites/{id}")).await.0, 401, "the previous key expired");
    let new_key = common::Api::with_bearer(&hub.base_url, rotated["apiKey"].as_str().expect("key"));
    assert_eq!(new_key.get(&format!("/satellites/{id}")).await.0, 200);

    // The registrant and admins manage; platform admins too.
    assert_eq!(reg.post(&format!("/satellites/{id}/profile"), json!({"type": "dawn", "schedule": [], "sampleRate": 48000, "chunkDurationMs": 3000, "overlapMs": 0, "gain": 1.0})).await.0, 200);
    assert_error(
        &reg.put(&format!("/satellites/{id}/config"), json!({"configLocked": true})).await,
        403,
        "admin_required",
    );
    let admin = hub.login(&owner.email).await;
    assert_eq!(admin.put(&format!("/satellites/{id}/config"), json!({"configLocked": true})).await.0, 200);
    assert_error(
        &reg.put(&format!("/satellites/{id}/config"), json!({"overrides": {"filter_enabled": true}})).await,
        403,
        "config_locked",
    );
    assert_error(
        &admin.put(&format!("/satellites/{id}/config"), json!({"overrides": {"nope": 1}})).await,
        422,
        "invalid_overrides",
    );
    assert_eq!(hub.login("root@example.org").await.delete(&format!("/satellites/{id}")).await.0, 204);
    assert_error(&admin.get(&format!("/satellites/{id}")).await, 404, "satellite_not_found");
    let audits: Vec<String> = hub.sql(|c| {
        let mut s =
            c.prepare("SELECT action FROM audit_log WHERE action LIKE 'admin.satellite_%' ORDER BY id").expect("q");
        s.query_map([], |r| r.get(0)).expect("rows").map(|r| r.expect("row")).collect()
    });
    assert_eq!(
        audits,
        [
            "admin.satellite_renamed",
            "admin.satellite_config_changed",
            "admin.satellite_api_key_rotated",
            "admin.satellite_profile_changed",
            "admin.satellite_config_changed",
            "admin.satellite_deleted",
        ]
    );
}

#[tokio::test]
async fn the_list_filters_sorts_and_pages() {
    let hub = common::spawn_hub().await;
    let owner = hub.user("owner@example.org", false).await;
    let other = hub.user("other@example.org", false).await;
    let api = hub.login(&owner.email).await;
    for name in ["charlie", "alpha", "bravo"] {
        sat::register(&api, json!({"name": name})).await;
    }
    sat::register(&api, json!({"name": "phone", "kind": "mobile"})).await;
    sat::register(&hub.login(&other.email).await, json!({"name": "elsewhere"})).await;
    let names = |v: &serde_json::Value| -> Vec<String> {
        v["satellites"].as_array().expect("list").iter().map(|s| s["name"].as_str().expect("name").to_owned()).collect()
    };
    let (_, all) = api.get("/satellites").await;
    assert_eq!(names(&all), ["alpha", "bravo", "charlie", "phone"]);
    assert_eq!(all["total"], 4);
    assert_eq!(names(&api.get("/satellites?sortDir=desc&limit=2").await.1), ["phone", "charlie"]);
    assert_eq!(names(&api.get("/satellites?limit=2&offset=2").await.1), ["charlie", "phone"]);
    assert_eq!(names(&api.get("/satellites?kind=mobile").await.1), ["phone"]);
    assert_eq!(names(&api.get("/satellites?search=ra").await.1), ["bravo"]);
    assert_eq!(api.get("/satellites?status=online").await.1["total"], 0);
    assert_eq!(api.get("/satellites?status=offline").await.1["total"], 4);
    assert_error(&api.get("/satellites?sortBy=height").await, 400, "invalid_sort");
    assert_error(&api.get("/satellites?status=sleepy").await, 400, "invalid_status");
    assert_error(&api.get("/satellites?limit=100000").await, 400, "invalid_limit");
}
