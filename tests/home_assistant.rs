//! Home Assistant discovery and the MQTT feed on the embedded broker, read by Debian's
//! mosquitto_sub as the read-only `homeassistant` login; the real classifier makes the detection.

mod common;

use std::collections::BTreeMap;

use birdhub::config::Secret;
use common::{mosq, sat};
use serde_json::{Value, json};

const READONLY_PASSWORD: &str = "ro-password-for-tests";

fn home_assistant_on(s: &mut birdhub::config::Settings) {
    common::with_model(s);
    s.integrations.home_assistant.enabled = true;
    s.integrations.readonly_password = Secret::new(READONLY_PASSWORD);
}

/// mosquitto_sub as the read-only login, with `-v` so each line names its topic.
async fn readonly_sub(hub: &common::TestHub, version: &str, filters: &[&str]) -> mosq::Sub {
    let port = hub.mqtt_port.to_string();
    let mut args = vec!["-h", "127.0.0.1", "-p", &port, "-V", version, "-u", "homeassistant", "-P", READONLY_PASSWORD];
    args.extend(["-v", "-W", "90"]);
    for f in filters {
        args.extend(["-t", f]);
    }
    mosq::Sub::start(&args).await
}

fn as_json(payload: &str) -> Value {
    serde_json::from_str(payload).unwrap_or_else(|e| panic!("not JSON ({e}): {payload}"))
}

/// A non-empty string field.
fn text<'a>(body: &'a Value, key: &str, topic: &str) -> &'a str {
    body[key].as_str().filter(|s| !s.is_empty()).unwrap_or_else(|| panic!("{topic}: {key} missing in {body}"))
}

#[tokio::test]
async fn discovery_configs_follow_home_assistants_schema_and_a_real_bird_updates_the_last_species() {
    let hub = common::spawn_hub_with(home_assistant_on).await;
    let owner = hub.user("owner@example.org", false).await;
    let api = hub.login(&owner.email).await;
    let oak = sat::register(&api, json!({"name": "Oak"})).await;
    let mut sub = readonly_sub(&hub, "mqttv311", &["homeassistant/#", "birdhub-feed/#"]).await;

    // The hub's device comes first (the team is found within seconds of being created).
    let mut retained: BTreeMap<String, String> = BTreeMap::new();
    let last_species_topic = format!("homeassistant/sensor/birdhub_{}/last_species/config", oak.id.replace('-', ""));
    while !retained.contains_key(&last_species_topic) {
        let (topic, payload) = sub.next_message("", 30).await.unwrap_or_else(|| {
            panic!("no discovery config for the satellite; got {:?}", retained.keys().collect::<Vec<_>>())
        });
        if topic.starts_with("homeassistant/") || topic.starts_with("birdhub-feed/") {
            retained.insert(topic, payload);
        }
    }

    // An alert rule for the warbler, so the bird raises an alert too.
    let rule =
        json!({"name": "Warblers", "trigger": "detection", "conditions": {"species": ["leiothlypis_peregrina"]}});
    let (status, body) = api.post("/alert-rules/rules", rule).await;
    assert_eq!(status, 201, "{body}");

    // A real detection: the fixture's Tennessee Warbler, through the broker and the model.
    let client = sat::connect(&hub, &oak).await;
    client.publish(&oak.topic("audio"), sat::warbler_message_now(&oak)).await;
    let state_topic = format!("birdhub-feed/satellites/{}/state", oak.id);
    let (mut detection_seen, mut alert_seen) = (None, None);
    let state = loop {
        let (topic, payload) =
            sub.next_message("", 60).await.unwrap_or_else(|| panic!("no last species: {:?}", sub.seen));
        if topic == "birdhub-feed/detections" {
            detection_seen = Some(as_json(&payload));
            continue;
        }
        if topic == "birdhub-feed/alerts" {
            alert_seen = Some(as_json(&payload));
            continue;
        }
        if !(topic.starts_with("homeassistant/") || topic.starts_with("birdhub-feed/")) {
            continue;
        }
        retained.insert(topic.clone(), payload.clone());
        if topic == state_topic && as_json(&payload)["last_species"] == "Tennessee Warbler" {
            break as_json(&payload);
        }
    };
    assert_eq!(state["name"], "Oak");
    assert!(state["detections_today"].as_u64().is_some_and(|n| n >= 1), "{state}");
    assert!(state["species_today"].as_u64().is_some_and(|n| n >= 1), "{state}");

    // Every config of the satellite's device, field by field (Home Assistant's discovery schema).
    let node = format!("birdhub_{}", oak.id.replace('-', ""));
    let expected = [
        ("sensor", "last_species"),
        ("sensor", "detections_today"),
        ("sensor", "species_today"),
        ("sensor", "cpu_temperature"),
        ("sensor", "free_storage"),
        ("binary_sensor", "online"),
    ];
    let hub_availability = "birdhub-feed/hub/availability";
    let sat_availability = format!("birdhub-feed/satellites/{}/availability", oak.id);
    let mut unique_ids = std::collections::HashSet::new();
    for (component, object) in expected {
        let topic = format!("homeassistant/{component}/{node}/{object}/config");
        let body = as_json(retained.get(&topic).unwrap_or_else(|| panic!("no {topic}")));
        text(&body, "name", &topic);
        assert!(unique_ids.insert(text(&body, "unique_id", &topic).to_owned()), "{topic}: unique_id repeats");
        let state_topic_of = text(&body, "state_topic", &topic);
        assert!(retained.contains_key(state_topic_of), "{topic}: nothing retained on {state_topic_of}");
        let availability = body["availability"].as_array().unwrap_or_else(|| panic!("{topic}: availability"));
        let availability_topics: Vec<&str> = availability.iter().filter_map(|a| a["topic"].as_str()).collect();
        assert!(availability_topics.contains(&hub_availability), "{topic}: {availability_topics:?}");
        for t in &availability_topics {
            let payload = retained.get(*t).unwrap_or_else(|| panic!("{topic}: nothing on {t}"));
            assert_eq!(payload, "online", "{t}");
        }
        let device = &body["device"];
        assert_eq!(device["identifiers"], json!([node]), "{topic}");
        assert_eq!(device["name"], "Oak", "{topic}");
        assert_eq!(device["manufacturer"], "birdhub", "{topic}");
        assert!(device["via_device"].as_str().is_some_and(|v| v.starts_with("birdhub_hub_")), "{topic}");
        if component == "binary_sensor" {
            assert_eq!(state_topic_of, sat_availability);
            assert_eq!((body["payload_on"].as_str(), body["payload_off"].as_str()), (Some("online"), Some("offline")));
            assert_eq!(body["device_class"], "connectivity");
        } else {
            assert_eq!(state_topic_of, state_topic, "{topic}");
            assert_eq!(availability_topics, [sat_availability.as_str(), hub_availability], "{topic}");
            assert_eq!(body["availability_mode"], "all", "{topic}");
            let template = text(&body, "value_template", &topic);
            assert!(template.starts_with("{{ value_json.") && template.ends_with(" }}"), "{topic}: {template}");
        }
    }
    let last_species = as_json(&retained[&format!("homeassistant/sensor/{node}/last_species/config")]);
    let attributes_topic = format!("birdhub-feed/satellites/{}/last_detection", oak.id);
    assert_eq!(last_species["json_attributes_topic"], attributes_topic.as_str());
    let attributes = as_json(&retained[&attributes_topic]);
    assert_eq!(attributes["common_name"], "Tennessee Warbler");
    assert!(text(&attributes, "scientific_name", &attributes_topic).contains("peregrina"), "{attributes}");
    assert!(attributes["confidence"].as_f64().is_some_and(|c| c >= 0.7), "{attributes}");
    // The team's public page is off, so there is no picture link a stranger could open.
    assert_eq!(attributes["image_url"], Value::Null);
    assert_eq!(retained[&sat_availability], "online");

    // The hub's device: detections today, queue length, version.
    let hub_node = format!("birdhub_hub_{}", oak.tenant.replace('-', ""));
    for object in ["detections_today", "species_today", "queue_length", "version"] {
        let topic = format!("homeassistant/sensor/{hub_node}/{object}/config");
        let body = as_json(retained.get(&topic).unwrap_or_else(|| panic!("no {topic}")));
        assert_eq!(body["state_topic"], "birdhub-feed/hub/state", "{topic}");
        assert_eq!(body["device"]["identifiers"], json!([hub_node]), "{topic}");
        assert_eq!(body["device"]["model"], "Hub", "{topic}");
    }
    let hub_state = as_json(&retained["birdhub-feed/hub/state"]);
    assert_eq!(hub_state["version"], env!("CARGO_PKG_VERSION"));
    assert!(hub_state["queue_length"].is_u64(), "{hub_state}");

    // The feed carried the detection itself too.
    let detection = match detection_seen {
        Some(d) => d,
        None => {
            let (_, payload) = sub.next_message("birdhub-feed/detections", 10).await.expect("a detection on the feed");
            as_json(&payload)
        }
    };
    assert_eq!(detection["common_name"], "Tennessee Warbler");
    assert_eq!(detection["satellite_id"], oak.id.as_str());
    assert_eq!(detection["satellite_name"], "Oak");
    // And the alert it raised, as GET /alerts shows it.
    let alert = match alert_seen {
        Some(a) => a,
        None => {
            let (_, payload) = sub.next_message("birdhub-feed/alerts", 30).await.expect("an alert on the feed");
            as_json(&payload)
        }
    };
    let (status, listed) = api.get("/alerts").await;
    assert_eq!(status, 200, "{listed}");
    let listed = listed["alerts"].as_array().and_then(|a| a.first()).cloned().unwrap_or_else(|| panic!("{listed}"));
    assert_eq!(alert["id"], listed["id"], "{alert}");
    assert!(alert.to_string().contains("Tennessee Warbler"), "{alert}");
    sub.stop().await;

    // A deleted satellite's device leaves Home Assistant: its configs are cleared.
    let mut watcher = readonly_sub(&hub, "mqttv5", &[&format!("homeassistant/+/{node}/#")]).await;
    let (status, body) = api.delete(&format!("/satellites/{}", oak.id)).await;
    assert!(status == 200 || status == 204, "delete: {status} {body}");
    let mut cleared = std::collections::HashSet::new();
    while cleared.len() < expected.len() {
        let Some((topic, payload)) = watcher.next_message("homeassistant/", 20).await else {
            panic!("configs not cleared after delete: {cleared:?} {:?}", watcher.seen)
        };
        // mosquitto_sub prints an empty payload as "(null)".
        if payload.is_empty() || payload == "(null)" {
            cleared.insert(topic);
        }
    }
    watcher.stop().await;
    hub.stop().await.expect("stop");
}

#[tokio::test]
async fn the_read_only_login_publishes_nowhere_sees_no_satellite_topic_and_no_other_team() {
    let hub = common::spawn_hub_with(home_assistant_on).await;
    let garden = hub.user("garden@example.org", false).await;
    let garden_api = hub.login(&garden.email).await;
    let oak = sat::register(&garden_api, json!({"name": "Oak"})).await;
    let port = hub.mqtt_port.to_string();
    let mut feed = readonly_sub(&hub, "mqttv5", &["homeassistant/#", "birdhub-feed/#"]).await;
    // The hub has one team, so that is the one published; a second team comes after.
    let (_, hub_state) = feed.next_message("birdhub-feed/hub/state", 30).await.expect("hub state");
    assert_eq!(as_json(&hub_state)["team"], "team");
    let neighbour = hub.user("neighbour@example.org", false).await;
    let neighbour_api = hub.login(&neighbour.email).await;
    let elm = sat::register(&neighbour_api, json!({"name": "Elm"})).await;

    // No satellite topic, and no wildcard above the readable trees.
    for filter in ["birdhub/#", "#", "+/hub/state", &format!("birdhub/{}/{}/audio", oak.tenant, oak.id), "$SYS/#"] {
        for version in ["mqttv311", "mqttv5"] {
            let mut denied = readonly_sub(&hub, version, &[filter]).await;
            let _ = denied.wait_exit(10).await;
            let seen = denied.seen.join("\n");
            // SUBACK's return code: 128 (3.1.1 failure) or 135 (MQTT 5 "not authorized").
            let code = seen
                .lines()
                .find_map(|l| l.strip_prefix("Subscribed (mid: 1): "))
                .and_then(|c| c.trim().parse::<u8>().ok())
                .unwrap_or_else(|| panic!("{version} {filter}: no SUBACK code: {seen}"));
            assert!(code >= 128, "{version} {filter}: the subscription was granted ({code}): {seen}");
        }
    }

    // It may not publish: not into the discovery tree, not into a satellite's tree.
    let forged_config = "homeassistant/sensor/forged/config";
    let satellite_audio = oak.topic("audio");
    let dir = tempfile::tempdir().expect("tempdir");
    let audio_file = dir.path().join("audio.json");
    std::fs::write(&audio_file, sat::warbler_message_now(&oak)).expect("write");
    let audio_file = audio_file.display().to_string();
    let forged_file = dir.path().join("forged.json");
    std::fs::write(&forged_file, r#"{"name":"forged"}"#).expect("write");
    let forged_file = forged_file.display().to_string();
    for version in ["mqttv311", "mqttv5"] {
        for (topic, file) in [(forged_config, &forged_file), (satellite_audio.as_str(), &audio_file)] {
            let login = ["-h", "127.0.0.1", "-p", &port, "-V", version, "-u", "homeassistant", "-P", READONLY_PASSWORD];
            let (_, out) = mosq::publish(&[&login[..], &["-q", "1", "-t", topic, "-f", file]].concat()).await;
            if version == "mqttv5" {
                assert!(out.to_lowercase().contains("not authorized"), "{version} {topic}: {out}");
            }
        }
    }
    // Its will is a publish too, and is never delivered.
    let mut with_will = mosq::Sub::start(&[
        "-h",
        "127.0.0.1",
        "-p",
        &port,
        "-u",
        "homeassistant",
        "-P",
        READONLY_PASSWORD,
        "-t",
        "birdhub-feed/hub/state",
        "--will-topic",
        "homeassistant/status",
        "--will-payload",
        "offline",
        "--will-qos",
        "1",
    ])
    .await;
    let _ = std::process::Command::new("pkill").args(["-KILL", "-f", "--will-payload offline"]).status();
    let _ = with_will.wait_exit(5).await;

    // The neighbour's bird is stored but stays out of the feed; the garden's own comes through.
    let elm_client = sat::connect(&hub, &elm).await;
    elm_client.publish(&elm.topic("audio"), sat::warbler_message_now(&elm)).await;
    let neighbour_tenant = neighbour.tenant.to_string();
    for _ in 0..120 {
        let stored: i64 = hub.sql(|c| {
            c.query_row(
                "SELECT count(*) FROM detections WHERE tenant_pk = (SELECT pk FROM tenants WHERE id = ?1)",
                [&neighbour_tenant],
                |r| r.get(0),
            )
            .expect("count")
        });
        if stored > 0 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    }
    let oak_client = sat::connect(&hub, &oak).await;
    oak_client.publish(&oak.topic("audio"), sat::warbler_message_now(&oak)).await;
    let (_, detection) = feed.next_message("birdhub-feed/detections", 60).await.expect("the garden's detection");
    assert_eq!(as_json(&detection)["satellite_id"], oak.id.as_str());
    // Let anything else in flight arrive before reading the whole transcript.
    let _ = feed.next_message("never/", 2).await;
    let transcript = feed.seen.join("\n");
    for secret in [elm.id.as_str(), neighbour_tenant.as_str(), "Elm"] {
        assert!(!transcript.contains(secret), "the neighbour's {secret} reached the feed:\n{transcript}");
    }
    assert!(!transcript.contains("forged"), "a read-only publish was delivered:\n{transcript}");
    assert!(!transcript.contains("homeassistant/status"), "a read-only will was delivered:\n{transcript}");
    // Only the satellite's own message was stored: one chunk in the garden, not two.
    let garden_tenant = garden.tenant.to_string();
    let chunks: i64 = hub.sql(|c| {
        c.query_row(
            "SELECT count(*) FROM audio_chunks WHERE tenant_pk = (SELECT pk FROM tenants WHERE id = ?1)",
            [&garden_tenant],
            |r| r.get(0),
        )
        .expect("count")
    });
    assert_eq!(chunks, 1, "the read-only login's audio was ingested");
    feed.stop().await;

    // A wrong password, or a satellite's client id, gets no read-only session.
    for (password, client_id) in
        [("wrong-password", "ha-wrong"), (READONLY_PASSWORD, &*format!("satellite-{}", oak.id))]
    {
        let (ok, out) = mosq::publish(&[
            "-h",
            "127.0.0.1",
            "-p",
            &port,
            "-u",
            "homeassistant",
            "-P",
            password,
            "-i",
            client_id,
            "-t",
            "birdhub-feed/x",
            "-m",
            "x",
        ])
        .await;
        assert!(!ok, "{client_id}: connected: {out}");
    }
    hub.stop().await.expect("stop");
}

#[tokio::test]
async fn without_an_integration_the_read_only_login_is_closed() {
    let hub = common::spawn_hub_with(|s| s.integrations.readonly_password = Secret::new(READONLY_PASSWORD)).await;
    let port = hub.mqtt_port.to_string();
    let (ok, out) = mosq::publish(&[
        "-h",
        "127.0.0.1",
        "-p",
        &port,
        "-u",
        "homeassistant",
        "-P",
        READONLY_PASSWORD,
        "-t",
        "birdhub-feed/x",
        "-m",
        "x",
    ])
    .await;
    assert!(!ok && out.contains("bad user name or password"), "{out}");
    hub.stop().await.expect("stop");
}
