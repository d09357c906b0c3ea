//! Debian's mosquitto clients (installed by `.ci/run`) against the embedded broker, MQTT 3.1.1 and 5.

mod common;

use tokio::process::Command;

use common::{
    mosq::{self, tool},
    sat,
};
use serde_json::json;

#[tokio::test]
async fn mosquitto_pub_and_sub_speak_to_the_hub_with_the_acl_enforced() {
    let hub = common::spawn_hub().await;
    let owner = hub.user("owner@example.org", false).await;
    let api = hub.login(&owner.email).await;
    let r = sat::register(&api, json!({"name": "mosquitto"})).await;
    let port = hub.mqtt_port.to_string();
    let dir = tempfile::tempdir().expect("tempdir");

    for version in ["mqttv311", "mqttv5"] {
        let chunk = uuid::Uuid::new_v4().to_string();
        let file = dir.path().join(format!("{chunk}.json"));
        std::fs::write(&file, sat::audio_message(&r, &chunk, &sat::tone_wav(48_000, 3.0), 48_000, 3000))
            .expect("write");
        let mobile = format!("mobile-{}", r.id);
        let ack_topic = r.topic("ack");
        // Returns once the broker has answered the SUBSCRIBE, so the ack cannot be missed.
        let mut sub = mosq::Sub::start(&[
            "-h",
            "127.0.0.1",
            "-p",
            &port,
            "-V",
            version,
            "-u",
            &r.id,
            "-P",
            &r.password,
            "-i",
            &mobile,
            "-t",
            &ack_topic,
            "-C",
            "1",
            "-W",
            "20",
        ])
        .await;
        let publish = Command::new(tool("mosquitto_pub"))
            .args(["-h", "127.0.0.1", "-p", &port, "-V", version, "-u", &r.id, "-P", &r.password])
            .args(["-i", &r.client_id, "-q", "1", "-t", &r.topic("audio"), "-f"])
            .arg(&file)
            .output()
            .await
            .expect("mosquitto_pub");
        assert!(publish.status.success(), "{version}: {}", String::from_utf8_lossy(&publish.stderr));
        let ack = sub.next_json(20).await.unwrap_or_else(|| panic!("{version}: no ack: {:?}", sub.seen));
        sub.stop().await;
        assert_eq!(ack, json!({"chunkId": chunk, "status": "stored"}), "{version}");
    }

    let wrong = Command::new(tool("mosquitto_pub"))
        .args([
            "-h",
            "127.0.0.1",
            "-p",
            &port,
            "-V",
            "mqttv5",
            "-u",
            &r.id,
            "-P",
            "wrong",
            "-i",
            &r.client_id,
            "-t",
            &r.topic("heartbeat"),
            "-m",
            "{}",
        ])
        .output()
        .await
        .expect("mosquitto_pub");
    assert!(!wrong.status.success(), "a wrong password is refused");
    let stderr = String::from_utf8_lossy(&wrong.stderr).to_lowercase();
    assert!(
        stderr.contains("bad user name or password")
            || stderr.contains("not authorised")
            || stderr.contains("not authorized"),
        "{stderr}"
    );

    let everything = Command::new(tool("mosquitto_sub"))
        .args([
            "-h",
            "127.0.0.1",
            "-p",
            &port,
            "-V",
            "mqttv5",
            "-u",
            &r.id,
            "-P",
            &r.password,
            "-i",
            &r.client_id,
            "-t",
            "#",
            "-C",
            "1",
            "-W",
            "3",
        ])
        .output()
        .await
        .expect("mosquitto_sub");
    let said = String::from_utf8_lossy(&everything.stderr);
    assert!(said.contains("All subscription requests were denied"), "subscribing to # is denied: {said}");
    assert!(everything.stdout.is_empty(), "and nothing is delivered");
}
