//! The bridge mode: the hub publishes Home Assistant discovery and the feed to a second,
//! external broker (mosquitto from Debian, started here with a password file), as its client.

mod common;

use std::{
    path::Path,
    process::{Child, Command, Stdio},
    time::Duration,
};

use birdhub::config::Secret;
use common::{mosq, process::free_port, sat};
use serde_json::{Value, json};

/// A mosquitto broker on `port` that knows the users `hub` and `ha`. Killed on drop.
struct Mosquitto {
    child: Child,
    port: u16,
}

impl Drop for Mosquitto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn mosquitto_binary() -> &'static str {
    let path = "/usr/sbin/mosquitto";
    assert!(
        Path::new(path).exists(),
        "the mosquitto broker is missing: `apt-get install mosquitto` (.ci/run does this)"
    );
    path
}

/// Starts mosquitto on `port` and returns once it accepts connections.
async fn start_mosquitto(dir: &Path, port: u16) -> Mosquitto {
    let passwd = dir.join("passwd");
    if !passwd.exists() {
        for (i, (user, password)) in [("hub", "hub-secret"), ("ha", "ha-secret")].iter().enumerate() {
            let create: &[&str] = if i == 0 { &["-c"] } else { &[] };
            let ok = Command::new("mosquitto_passwd")
                .args(create)
                .args(["-b", &passwd.display().to_string(), user, password])
                .status()
                .expect("mosquitto_passwd");
            assert!(ok.success(), "mosquitto_passwd failed");
        }
    }
    let conf = dir.join("mosquitto.conf");
    let text = format!(
        "listener {port} 127.0.0.1\nallow_anonymous false\npassword_file {}\npersistence false\n",
        passwd.display()
    );
    std::fs::write(&conf, text).expect("conf");
    let mut child = Command::new(mosquitto_binary())
        .args(["-c", &conf.display().to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("mosquitto");
    for _ in 0..100 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return Mosquitto { child, port };
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let _ = child.kill();
    let _ = child.wait();
    panic!("mosquitto did not start on port {port}");
}

fn bridged(s: &mut birdhub::config::Settings, port: u16) {
    s.integrations.home_assistant.enabled = true;
    s.integrations.bridge.host = "127.0.0.1".into();
    s.integrations.bridge.port = port;
    s.integrations.bridge.username = "hub".into();
    s.integrations.bridge.password = Secret::new("hub-secret");
}

/// mosquitto_sub on the external broker as Home Assistant's user.
async fn external_sub(m: &Mosquitto, filters: &[&str]) -> mosq::Sub {
    let port = m.port.to_string();
    let mut args = vec!["-h", "127.0.0.1", "-p", &port, "-u", "ha", "-P", "ha-secret", "-v", "-W", "90"];
    for f in filters {
        args.extend(["-t", f]);
    }
    mosq::Sub::start(&args).await
}

async fn external_pub(m: &Mosquitto, args: &[&str]) {
    let port = m.port.to_string();
    let login = ["-h", "127.0.0.1", "-p", &port, "-u", "ha", "-P", "ha-secret"];
    let (ok, out) = mosq::publish(&[&login[..], args].concat()).await;
    assert!(ok, "publish on the external broker: {out}");
}

fn as_json(payload: &str) -> Value {
    serde_json::from_str(payload).unwrap_or_else(|e| panic!("not JSON ({e}): {payload}"))
}

#[tokio::test]
async fn the_bridge_publishes_discovery_to_an_external_mosquitto_and_resends_when_home_assistant_restarts() {
    let dir = tempfile::tempdir().expect("tempdir");
    let external = start_mosquitto(dir.path(), free_port()).await;
    let port = external.port;
    let hub = common::spawn_hub_with(|s| bridged(s, port)).await;
    let owner = hub.user("owner@example.org", false).await;
    let api = hub.login(&owner.email).await;
    let oak = sat::register(&api, json!({"name": "Oak"})).await;
    let node = format!("birdhub_{}", oak.id.replace('-', ""));
    let config_topic = format!("homeassistant/sensor/{node}/last_species/config");

    let mut sub = external_sub(&external, &["homeassistant/#", "birdhub-feed/#"]).await;
    let (_, config) = sub.next_message(&config_topic, 30).await.unwrap_or_else(|| panic!("no config: {:?}", sub.seen));
    let config = as_json(&config);
    assert_eq!(config["device"]["name"], "Oak");
    assert_eq!(config["state_topic"], format!("birdhub-feed/satellites/{}/state", oak.id).as_str());
    assert_eq!(config["json_attributes_topic"], format!("birdhub-feed/satellites/{}/last_detection", oak.id).as_str());
    let (_, online) = sub.next_message("birdhub-feed/hub/availability", 10).await.expect("hub availability");
    assert_eq!(online, "online");
    sub.stop().await;

    // Home Assistant restarted on a broker that lost the config: its birth message brings it back.
    external_pub(&external, &["-r", "-n", "-t", &config_topic]).await;
    let mut watcher = external_sub(&external, &[&config_topic]).await;
    external_pub(&external, &["-t", "homeassistant/status", "-m", "online"]).await;
    let (_, again) =
        watcher.next_message(&config_topic, 20).await.unwrap_or_else(|| panic!("not resent: {:?}", watcher.seen));
    assert_eq!(as_json(&again)["unique_id"], format!("{node}_last_species").as_str());
    watcher.stop().await;

    // A hub that stops says so, retained, so Home Assistant shows its entities unavailable.
    let mut availability = external_sub(&external, &["birdhub-feed/hub/availability"]).await;
    assert_eq!(availability.next_message("birdhub-feed/hub/availability", 10).await.expect("retained").1, "online");
    hub.stop().await.expect("stop");
    let (_, gone) = availability.next_message("birdhub-feed/hub/availability", 60).await.expect("offline");
    assert_eq!(gone, "offline");
    availability.stop().await;
}

#[tokio::test]
async fn a_bridge_to_a_broker_that_is_down_retries_with_backoff_and_ingest_goes_on() {
    let dir = tempfile::tempdir().expect("tempdir");
    let port = free_port();
    // Nothing listens there yet.
    let hub = common::spawn_hub_with(|s| bridged(s, port)).await;
    let owner = hub.user("owner@example.org", false).await;
    let api = hub.login(&owner.email).await;
    let oak = sat::register(&api, json!({"name": "Oak"})).await;
    let mut client = sat::connect(&hub, &oak).await;
    assert!(client.subscribe(&oak.topic("ack")).await);
    for _ in 0..5 {
        let chunk = uuid::Uuid::new_v4().to_string();
        client
            .publish(&oak.topic("audio"), sat::audio_message(&oak, &chunk, &sat::tone_wav(48_000, 3.0), 48_000, 3000))
            .await;
        let ack = client.message_on(&oak.topic("ack"), 10).await.expect("an ack while the bridge is down");
        assert_eq!((ack["status"].as_str(), ack["chunkId"].as_str()), (Some("stored"), Some(chunk.as_str())), "{ack}");
    }

    // The broker comes up: the hub's retries find it and everything retained arrives.
    let external = start_mosquitto(dir.path(), port).await;
    let mut sub = external_sub(&external, &["homeassistant/#", "birdhub-feed/#"]).await;
    let node = format!("birdhub_{}", oak.id.replace('-', ""));
    let (_, config) = sub
        .next_message(&format!("homeassistant/sensor/{node}/last_species/config"), 90)
        .await
        .unwrap_or_else(|| panic!("the bridge never reached the broker: {:?}", sub.seen));
    assert_eq!(as_json(&config)["device"]["name"], "Oak");
    sub.stop().await;
    hub.stop().await.expect("stop");
}
