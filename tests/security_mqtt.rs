//! Issue 34, findings 1, 10 and 11, against a real hub with real MQTT clients (rumqttc speaks
//! MQTT 3.1.1, mosquitto_sub reads as the read-only login): no will of the read-only login ever
//! reaches a satellite, satellites cannot fill the broker with retained messages, and the Home
//! Assistant feed keeps the team it resolved at start.

mod common;

use std::time::Duration;

use birdhub::config::{Secret, Settings};
use common::{mosq, sat};
use rumqttc::{AsyncClient, ConnectionError, Event, LastWill, MqttOptions, Packet, QoS};
use serde_json::{Value, json};
use tokio::{sync::mpsc, task::JoinHandle};

const READONLY_PASSWORD: &str = "ro-password-for-security-tests";

fn home_assistant_on(s: &mut Settings) {
    s.integrations.home_assistant.enabled = true;
    s.integrations.readonly_password = Secret::new(READONLY_PASSWORD);
}

/// What one raw client saw, in order.
#[derive(Debug)]
enum Seen {
    Connected,
    Refused(String),
    Message { topic: String, payload: Vec<u8>, retain: bool },
    SubAck(bool),
    PubAck,
    Closed,
}

/// An MQTT 3.1.1 client (rumqttc's protocol) whose event loop runs on its own task. Dropping it
/// aborts that task: the socket closes without a DISCONNECT, as when a device loses power, and
/// the broker then publishes the client's will.
struct Client {
    client: AsyncClient,
    events: mpsc::UnboundedReceiver<Seen>,
    task: JoinHandle<()>,
}

impl Drop for Client {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Client {
    async fn connect(port: u16, client_id: &str, user: &str, password: &str, will: Option<LastWill>) -> Client {
        let mut options = MqttOptions::new(client_id, "127.0.0.1", port);
        options.set_credentials(user, password);
        options.set_keep_alive(Duration::from_secs(30));
        options.set_max_packet_size(1 << 20, 1 << 20);
        if let Some(will) = will {
            options.set_last_will(will);
        }
        let (client, mut eventloop) = AsyncClient::new(options, 64);
        let (tx, events) = mpsc::unbounded_channel();
        let task = tokio::spawn(async move {
            loop {
                let seen = match eventloop.poll().await {
                    Ok(Event::Incoming(Packet::ConnAck(_))) => Seen::Connected,
                    Ok(Event::Incoming(Packet::Publish(p))) => {
                        Seen::Message { topic: p.topic, payload: p.payload.to_vec(), retain: p.retain }
                    }
                    Ok(Event::Incoming(Packet::SubAck(s))) => {
                        Seen::SubAck(s.return_codes.iter().all(|c| !matches!(c, rumqttc::SubscribeReasonCode::Failure)))
                    }
                    Ok(Event::Incoming(Packet::PubAck(_))) => Seen::PubAck,
                    Ok(_) => continue,
                    Err(ConnectionError::ConnectionRefused(code)) => {
                        let _ = tx.send(Seen::Refused(format!("{code:?}")));
                        return;
                    }
                    Err(_) => {
                        let _ = tx.send(Seen::Closed);
                        return;
                    }
                };
                if tx.send(seen).is_err() {
                    return;
                }
            }
        });
        Client { client, events, task }
    }

    async fn next(&mut self) -> Option<Seen> {
        tokio::time::timeout(Duration::from_secs(15), self.events.recv()).await.ok().flatten()
    }

    /// The broker's answer to CONNECT: `Ok` when accepted, the refusal otherwise.
    async fn connack(&mut self) -> Result<(), String> {
        match self.next().await {
            Some(Seen::Connected) => Ok(()),
            Some(Seen::Refused(code)) => Err(code),
            other => panic!("no CONNACK: {other:?}"),
        }
    }

    async fn subscribe(&mut self, filter: &str) -> Vec<Seen> {
        self.client.subscribe(filter, QoS::AtLeastOnce).await.expect("subscribe");
        let mut before = Vec::new();
        loop {
            match self.next().await {
                Some(Seen::SubAck(granted)) => {
                    assert!(granted, "{filter} refused");
                    return before;
                }
                Some(other) => before.push(other),
                None => panic!("no SUBACK for {filter}"),
            }
        }
    }

    /// Publishes at QoS 1 and waits for the PUBACK; returns what arrived meanwhile.
    async fn publish_acked(&mut self, topic: &str, payload: Vec<u8>, retain: bool) -> Vec<Seen> {
        self.client.publish(topic, QoS::AtLeastOnce, retain, payload).await.expect("publish");
        let mut before = Vec::new();
        loop {
            match self.next().await {
                Some(Seen::PubAck) => return before,
                Some(other) => before.push(other),
                None => panic!("no PUBACK for {topic}"),
            }
        }
    }

    /// Every message until one on `topic` (included); panics if it never comes.
    async fn until_message_on(&mut self, topic: &str) -> Vec<Seen> {
        let mut seen = Vec::new();
        loop {
            match self.next().await {
                Some(Seen::Message { topic: t, payload, retain }) => {
                    let done = t == topic;
                    seen.push(Seen::Message { topic: t, payload, retain });
                    if done {
                        return seen;
                    }
                }
                Some(other) => seen.push(other),
                None => panic!("nothing on {topic}; saw {seen:?}"),
            }
        }
    }

    /// A clean DISCONNECT (no will), then the end of the event loop.
    async fn disconnect(mut self) {
        let _ = self.client.disconnect().await;
        while self.next().await.is_some() {}
    }
}

/// The retained messages the broker holds under `under`, read as the hub's own login: a fresh
/// subscription gets every retained message first, then the hub's own marker, published after it.
async fn retained_under(hub: &common::TestHub, under: &str) -> Vec<(String, Vec<u8>)> {
    let key = hub.state().settings.security.internal_api_key.expose().to_owned();
    let mut counter =
        Client::connect(hub.mqtt_port, &format!("hub-count-{}", uuid::Uuid::new_v4()), "hub", &key, None).await;
    counter.connack().await.expect("the hub's login");
    let mut seen = counter.subscribe("birdhub/#").await;
    let marker = format!("birdhub/_hub/marker-{}", uuid::Uuid::new_v4());
    counter.client.publish(&marker, QoS::AtLeastOnce, false, b"m".to_vec()).await.expect("marker");
    seen.extend(counter.until_message_on(&marker).await);
    counter.disconnect().await;
    seen.into_iter()
        .filter_map(|s| match s {
            Seen::Message { topic, payload, retain: true } if topic.starts_with(under) => Some((topic, payload)),
            _ => None,
        })
        .collect()
}

fn config_request(r: &sat::Registered) -> Vec<u8> {
    json!({"satelliteId": r.id, "tenantId": r.tenant, "overrides": {}}).to_string().into_bytes()
}

/// Finding 1: CONNECT as `homeassistant` (3.1.1) with a retained will on a satellite's command
/// topic, CONNECT again with the same client id. Before the fix the second login replaced the
/// hub's record of the first will, the broker took the session over and published that will,
/// retained: the satellite ran its update, or took a forged config.
#[tokio::test]
async fn the_read_only_login_cannot_leave_a_will_for_a_satellite_by_taking_over_its_own_session() {
    let hub = common::spawn_hub_with(home_assistant_on).await;
    let owner = hub.user("owner@example.org", false).await;
    let api = hub.login(&owner.email).await;
    let oak = sat::register(&api, json!({"name": "Oak"})).await;
    let port = hub.mqtt_port;

    // The satellite itself listens on its whole tree, as a real one does.
    let mut satellite = Client::connect(port, &oak.client_id, &oak.id, &oak.password, None).await;
    satellite.connack().await.expect("the satellite logs in");
    let mut heard = satellite.subscribe(&format!("{}#", oak.prefix)).await;

    for channel in ["update", "config", "live-start"] {
        let forged = json!({"forged": channel, "satelliteId": oak.id, "tenantId": oak.tenant}).to_string();
        let client_id = format!("ha-takeover-{channel}");
        let will = LastWill::new(oak.topic(channel), forged.clone(), QoS::AtLeastOnce, true);
        let mut first = Client::connect(port, &client_id, "homeassistant", READONLY_PASSWORD, Some(will)).await;
        let refused = first.connack().await.expect_err("a read-only login with a will on a satellite's topic");
        assert!(refused.contains("NotAuthorized"), "{channel}: {refused}");
        // The second half of the attack: the same client id, no will. It logs in (it is a valid
        // read-only login), and whatever it does must not publish anything for the first one.
        let mut second = Client::connect(port, &client_id, "homeassistant", READONLY_PASSWORD, None).await;
        second.connack().await.expect("the read-only login without a will");
        // Its own retained publish there is acknowledged (3.1.1) and thrown away.
        second.publish_acked(&oak.topic(channel), forged.into_bytes(), true).await;
        drop(second); // gone without DISCONNECT
        drop(first);
    }

    // Home Assistant's own will (unretained `offline` on its status topic) still logs in, and a
    // takeover of that session publishes it nowhere either.
    let mut status = mosq::Sub::start(&[
        "-h",
        "127.0.0.1",
        "-p",
        &port.to_string(),
        "-V",
        "mqttv311",
        "-u",
        "homeassistant",
        "-P",
        READONLY_PASSWORD,
        "-v",
        "-t",
        "homeassistant/#",
    ])
    .await;
    let will = LastWill::new("homeassistant/status", "offline", QoS::AtLeastOnce, false);
    let mut ha = Client::connect(port, "home-assistant", "homeassistant", READONLY_PASSWORD, Some(will)).await;
    ha.connack().await.expect("Home Assistant's default will is accepted");
    let mut again = Client::connect(port, "home-assistant", "homeassistant", READONLY_PASSWORD, None).await;
    again.connack().await.expect("the same client id again");
    again.publish_acked("homeassistant/status", b"online".to_vec(), false).await;
    drop(again);
    drop(ha);
    // A new satellite's discovery configs come after anything the takeovers could have sent.
    let marker = sat::register(&api, json!({"name": "Marker"})).await;
    let marker_node = format!("birdhub_{}", marker.id.replace('-', ""));
    status.next_message(&format!("homeassistant/sensor/{marker_node}/"), 30).await.expect("the marker's config");
    let transcript = status.seen.join("\n");
    assert!(!transcript.contains("homeassistant/status"), "a read-only will or publish was delivered:\n{transcript}");
    status.stop().await;

    // The satellite's own config request is answered after anything published on its tree so far.
    heard.extend(satellite.publish_acked(&oak.topic("config-request"), config_request(&oak), false).await);
    let answered = |seen: &Seen| matches!(seen, Seen::Message { topic, .. } if *topic == oak.topic("config"));
    if !heard.iter().any(answered) {
        heard.extend(satellite.until_message_on(&oak.topic("config")).await);
    }
    for seen in &heard {
        if let Seen::Message { topic, payload, .. } = seen {
            let body = String::from_utf8_lossy(payload);
            assert!(!body.contains("forged"), "the satellite received a read-only login's message on {topic}: {body}");
            assert!(!topic.ends_with("/update") && !topic.ends_with("/live-start"), "{topic}: {body}");
        }
    }
    let retained = retained_under(&hub, &oak.prefix).await;
    assert!(retained.is_empty(), "retained on the satellite's tree: {retained:?}");
    satellite.disconnect().await;
    hub.stop().await.expect("stop");
}

/// Finding 10: a satellite that reconnects again and again, each time with a retained will in its
/// own tree and a retained publish, leaves nothing retained (before the fix: one more retained
/// will per reconnect, without bound). The hub's own retained messages are capped in size.
#[tokio::test]
async fn a_satellite_reconnecting_with_retained_wills_leaves_nothing_retained() {
    let hub = common::spawn_hub().await;
    let owner = hub.user("owner@example.org", false).await;
    let api = hub.login(&owner.email).await;
    let pi = sat::register(&api, json!({"name": "Pi"})).await;
    let port = hub.mqtt_port;

    for i in 0..60 {
        let will = LastWill::new(pi.topic(&format!("status-{i}")), vec![b'x'; 1024], QoS::AtLeastOnce, true);
        let mut with_will = Client::connect(port, &pi.client_id, &pi.id, &pi.password, Some(will)).await;
        let refused = with_will.connack().await.expect_err("a satellite's login with a will");
        assert!(refused.contains("NotAuthorized"), "reconnect {i}: {refused}");
        drop(with_will); // gone without DISCONNECT: a will, had there been one, would go out now
        // The same satellite without a will is welcome, but what it retains is not kept.
        let mut plain = Client::connect(port, &pi.client_id, &pi.id, &pi.password, None).await;
        plain.connack().await.expect("the satellite without a will");
        plain.publish_acked(&pi.topic(&format!("note-{i}")), vec![b'y'; 1024], true).await;
        plain.publish_acked(&pi.topic("heartbeat"), b"{}".to_vec(), true).await;
        drop(plain);
    }
    let retained = retained_under(&hub, "birdhub/").await;
    let topics: Vec<&str> = retained.iter().map(|(t, _)| t.as_str()).collect();
    assert!(retained.is_empty(), "{} retained messages: {topics:?}", retained.len());

    // The hub's own login may retain, within the size limit only.
    let key = hub.state().settings.security.internal_api_key.expose().to_owned();
    let mut hub_client = Client::connect(port, "hub-retainer", "hub", &key, None).await;
    hub_client.connack().await.expect("the hub's login");
    let (small, big) = ("birdhub/_hub/probe-small", "birdhub/_hub/probe-big");
    hub_client.client.publish(big, QoS::AtMostOnce, true, vec![b'z'; 64 << 10]).await.expect("publish");
    hub_client.publish_acked(small, vec![b'z'; 512], true).await;
    let retained = retained_under(&hub, "birdhub/_hub/probe-").await;
    let topics: Vec<&str> = retained.iter().map(|(t, _)| t.as_str()).collect();
    assert_eq!(topics, [small], "only the small retained message is kept");
    hub_client.disconnect().await;
    hub.stop().await.expect("stop");
}

/// The read-only login's view of the feed's `hub/state` and every satellite id in it.
async fn feed_until(hub: &common::TestHub, satellite: &str) -> (Value, String) {
    let port = hub.mqtt_port.to_string();
    let mut feed = mosq::Sub::start(&[
        "-h",
        "127.0.0.1",
        "-p",
        &port,
        "-u",
        "homeassistant",
        "-P",
        READONLY_PASSWORD,
        "-v",
        "-t",
        "birdhub-feed/#",
    ])
    .await;
    let wanted = format!("birdhub-feed/satellites/{satellite}/state");
    let (mut state, mut found) = (None, false);
    while state.is_none() || !found {
        let (topic, payload) =
            feed.next_message("birdhub-feed/", 30).await.unwrap_or_else(|| panic!("no {wanted}: {:?}", feed.seen));
        if topic == "birdhub-feed/hub/state" {
            state = Some(serde_json::from_str(&payload).expect("JSON"));
        }
        found |= topic == wanted;
    }
    let transcript = feed.seen.join("\n");
    feed.stop().await;
    (state.unwrap_or_default(), transcript)
}

async fn create_team(api: &common::Api, name: &str) -> String {
    let (status, team) = api.post("/auth/create-tenant", json!({"name": name})).await;
    assert_eq!(status, 201, "{team}");
    team["id"].as_str().expect("id").to_owned()
}

/// Finding 11: `integrations.team` by name. Another user's "PROBE GARDEN" made at run time does
/// not change the team published; on the next start the name is ambiguous, yet the hub starts
/// (issue 48, finding 7: no team admin may stop it) and publishes the team it resolved before, kept
/// by id. A team *named* like the configured id does not take it over either.
#[tokio::test]
async fn the_feed_team_cannot_be_taken_over_by_a_same_named_team() {
    let hub = common::spawn_hub().await;
    hub.allow_team_creation().await;
    let gardener = hub.user("gardener@example.org", false).await;
    let garden_api = hub.login(&gardener.email).await;
    let garden = create_team(&garden_api, "Probe Garden").await;
    let oak = sat::register(&garden_api, json!({"name": "Oak", "tenantId": garden})).await;
    let dir = hub.stop_keeping_data().await;

    let hub = common::spawn_hub_in(dir, |s| {
        home_assistant_on(s);
        s.integrations.team = "probe garden".into();
    })
    .await;
    let garden_api = hub.login(&gardener.email).await;
    let (state, _) = feed_until(&hub, &oak.id).await;
    assert_eq!(state["team"], "Probe Garden", "{state}");
    // Any user may make a team: one with the same name in other case, with a satellite of its own.
    let intruder = hub.user("intruder@example.org", false).await;
    let intruder_api = hub.login(&intruder.email).await;
    let shadow = create_team(&intruder_api, "PROBE GARDEN").await;
    let decoy = sat::register(&intruder_api, json!({"name": "Decoy", "tenantId": shadow})).await;
    // A new satellite of the garden reports: the feed shows it after the intruder's team exists.
    let elm = sat::register(&garden_api, json!({"name": "Elm", "tenantId": garden})).await;
    let mut elm_client = Client::connect(hub.mqtt_port, &elm.client_id, &elm.id, &elm.password, None).await;
    elm_client.connack().await.expect("Elm logs in");
    let heartbeat = json!({"satelliteId": elm.id, "tenantId": elm.tenant, "state": "recording"});
    elm_client.publish_acked(&elm.topic("heartbeat"), heartbeat.to_string().into_bytes(), false).await;
    let (state, transcript) = feed_until(&hub, &elm.id).await;
    assert_eq!(state["team"], "Probe Garden", "{state}");
    for secret in [decoy.id.as_str(), shadow.as_str(), "Decoy"] {
        assert!(!transcript.contains(secret), "the intruder's {secret} reached the feed:\n{transcript}");
    }
    elm_client.disconnect().await;
    let dir = hub.stop_keeping_data().await;

    // Restarting with the name: it starts, serves, and still publishes the garden (kept by id).
    let hub = common::spawn_hub_in(dir, |s| {
        home_assistant_on(s);
        s.integrations.team = "Probe Garden".into();
    })
    .await;
    let (state, transcript) = feed_until(&hub, &oak.id).await;
    assert_eq!(state["team"], "Probe Garden", "{state}");
    for secret in [decoy.id.as_str(), shadow.as_str(), "Decoy"] {
        assert!(!transcript.contains(secret), "the intruder's {secret} reached the feed:\n{transcript}");
    }
    let dir = hub.stop_keeping_data().await;
    // `birdhub integrations` (resolving the name afresh) names both ids, and shows the id once the
    // team is named by it.
    let cli = |team: &str| {
        let config = dir.path().join("empty.toml");
        std::fs::write(&config, "").expect("config");
        std::process::Command::new(env!("CARGO_BIN_EXE_birdhub"))
            .args(["integrations", "--config"])
            .arg(&config)
            .arg("--data-dir")
            .arg(dir.path())
            .env("BIRDHUB_INTEGRATIONS__HOME_ASSISTANT__ENABLED", "true")
            .env("BIRDHUB_INTEGRATIONS__READONLY_PASSWORD", READONLY_PASSWORD)
            .env("BIRDHUB_INTEGRATIONS__TEAM", team)
            .output()
            .expect("birdhub integrations")
    };
    let out = cli("Probe Garden");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && stderr.contains(&garden) && stderr.contains(&shadow), "{stderr}");
    let out = cli(&garden);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && stdout.contains(&format!("Probe Garden (id {garden})")), "{stdout}");

    // The intruder names a team after the garden's id (upper case: it sorts first by name).
    let hub = common::spawn_hub_in(dir, |_| {}).await;
    let intruder_api = hub.login(&intruder.email).await;
    let lookalike = create_team(&intruder_api, &garden.to_uppercase()).await;
    sat::register(&intruder_api, json!({"name": "Lookalike", "tenantId": lookalike})).await;
    let dir = hub.stop_keeping_data().await;
    let hub = common::spawn_hub_in(dir, |s| {
        home_assistant_on(s);
        s.integrations.team = garden.clone();
    })
    .await;
    let (state, transcript) = feed_until(&hub, &oak.id).await;
    assert_eq!(state["team"], "Probe Garden", "{state}");
    assert!(!transcript.contains(&lookalike) && !transcript.contains("Lookalike"), "{transcript}");
    hub.stop().await.expect("stop");
}

async fn system_status(hub: &common::TestHub) -> Value {
    let admin = hub.user("root@example.org", true).await;
    let (status, body) = hub.login(&admin.email).await.get("/system/status").await;
    assert_eq!(status, 200, "{body}");
    body
}

/// Issue 48, finding 7: a hub publishing "Garden" by name starts again after another account
/// renamed its own team to "garden", and publishes the team it resolved the first time.
#[tokio::test]
async fn a_team_renamed_to_the_feed_teams_name_does_not_stop_the_next_start() {
    let hub = common::spawn_hub().await;
    hub.allow_team_creation().await;
    let gardener = hub.user("gardener@example.org", false).await;
    let garden_api = hub.login(&gardener.email).await;
    let garden = create_team(&garden_api, "Garden").await;
    let oak = sat::register(&garden_api, json!({"name": "Oak", "tenantId": garden})).await;
    let intruder = hub.user("intruder@example.org", false).await;
    let shed = create_team(&hub.login(&intruder.email).await, "Shed").await;
    let dir = hub.stop_keeping_data().await;
    let feed_on = |s: &mut Settings| {
        home_assistant_on(s);
        s.integrations.team = "Garden".into();
    };

    let hub = common::spawn_hub_in(dir, feed_on).await;
    let (state, _) = feed_until(&hub, &oak.id).await;
    assert_eq!(state["team"], "Garden", "{state}");
    let intruder_api = hub.login(&intruder.email).await;
    let (status, body) = intruder_api.put(&format!("/tenants/{shed}/name"), json!({"name": "garden"})).await;
    assert_eq!(status, 200, "{body}");
    let decoy = sat::register(&intruder_api, json!({"name": "Decoy", "tenantId": shed})).await;
    let dir = hub.stop_keeping_data().await;

    let hub = common::spawn_hub_in(dir, feed_on).await;
    assert_eq!(hub.anon().get("/health").await.0, 200, "the hub serves");
    let (state, transcript) = feed_until(&hub, &oak.id).await;
    assert_eq!(state["team"], "Garden", "{state}");
    assert!(!transcript.contains(&decoy.id) && !transcript.contains(&shed), "{transcript}");
    let status = system_status(&hub).await;
    assert_eq!(status["integrations"]["status"], "publishing", "{status}");
    assert_eq!(status["integrations"]["teamId"], garden.as_str());
    hub.stop().await.expect("stop");
}

/// Issue 48, finding 7: a hub whose `integrations.team` is ambiguous from its first start serves
/// on with the integrations off, and the status page says why.
#[tokio::test]
async fn an_ambiguous_feed_team_on_a_fresh_hub_turns_the_integrations_off_not_the_hub() {
    let hub = common::spawn_hub().await;
    hub.allow_team_creation().await;
    let a = hub.user("a@example.org", false).await;
    let b = hub.user("b@example.org", false).await;
    let one = create_team(&hub.login(&a.email).await, "Garden").await;
    let two = create_team(&hub.login(&b.email).await, "GARDEN").await;
    let dir = hub.stop_keeping_data().await;

    let hub = common::spawn_hub_in(dir, |s| {
        home_assistant_on(s);
        s.integrations.team = "garden".into();
    })
    .await;
    assert_eq!(hub.anon().get("/health").await.0, 200, "the hub serves");
    assert_eq!(hub.login(&a.email).await.get("/auth/me").await.0, 200);
    let status = system_status(&hub).await;
    let integrations = &status["integrations"];
    assert_eq!(integrations["status"], "off", "{status}");
    let reason = integrations["reason"].as_str().unwrap_or_default();
    for needed in [one.as_str(), two.as_str(), "integrations.team"] {
        assert!(reason.contains(needed), "{needed:?} missing from: {reason}");
    }
    hub.stop().await.expect("stop");
}
