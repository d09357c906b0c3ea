//! The logins of an existing mosquitto (`mqtt.external`), kept through its dynamic-security
//! plugin: JSON commands on `$CONTROL/dynamic-security/v1`, answers on `.../v1/response`
//! (`man mosquitto_ctrl_dynsec`). [`DynSec`] holds its own MQTT 5 connection as the hub's admin
//! login, apart from the data connection ([`super::external`]), so the command line can use it
//! for a moment too (`birdhub admin worker-key`).
//!
//! Every satellite gets a client named by its UUID (client id `satellite-<id>` or `mobile-<id>`)
//! with a role of its own, `birdhub-sat-<id>`: publish on its six channels, subscribe under its
//! own prefix. Every worker key gets the client `worker-<id>` with the role `birdhub-worker-<id>`:
//! publish on its four channels, subscribe to its control topic and the one shared job group.
//! The role names are how the hub recognizes its own clients among the broker's others
//! ([`super::logins`] deletes those the database no longer knows).

use std::{
    collections::HashMap,
    sync::{
        Arc, Mutex,
        atomic::{AtomicU64, Ordering},
    },
    time::Duration,
};

use rumqttc::v5::{
    AsyncClient, Event, MqttOptions,
    mqttbytes::{QoS, v5::Packet},
};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::{oneshot, watch};
use tokio_util::sync::CancellationToken;

use super::topics::{self, Channel};
use crate::{
    config::Settings,
    domain::DeviceKind,
    ids::{SatelliteId, TenantId},
    inference::remote::{CLIENT_PREFIX, pool},
    usecases::broker_logins::{BrokerLogins, LoginFuture, LoginSyncError},
};

/// Where commands go.
const COMMAND_TOPIC: &str = "$CONTROL/dynamic-security/v1";
/// Where the plugin answers.
const RESPONSE_TOPIC: &str = "$CONTROL/dynamic-security/v1/response";
/// How long a command may go unanswered.
const ANSWER_WITHIN: Duration = Duration::from_secs(10);
/// The role prefix of satellites' logins.
pub const SATELLITE_ROLE: &str = "birdhub-sat-";
/// The role prefix of workers' logins.
pub const WORKER_ROLE: &str = "birdhub-worker-";
/// The role that lets the hub's own login publish and subscribe in its trees.
pub const HUB_ROLE: &str = "birdhub-hub";

#[derive(Debug, thiserror::Error)]
pub enum DynSecError {
    #[error(
        "no answer from mosquitto's dynamic security within {0:?}: is the plugin loaded, and is the hub's login \
         (mqtt.external_username) a dynamic-security admin?"
    )]
    NoAnswer(Duration),
    #[error("the connection to mosquitto is gone")]
    Gone,
    #[error("dynamic security refused {command}: {error}")]
    Refused { command: String, error: String },
    #[error("unreadable answer from dynamic security: {0}")]
    Unreadable(String),
}

/// One command's answer.
#[derive(Debug, Clone, Deserialize)]
pub struct Answer {
    pub command: String,
    pub error: Option<String>,
    #[serde(default)]
    pub data: Value,
    #[serde(rename = "correlationData", default)]
    correlation: String,
}

#[derive(Deserialize)]
struct Answers {
    responses: Vec<Answer>,
}

/// A client the plugin knows, as `listClients` tells.
#[derive(Debug, Clone, Deserialize)]
pub struct Client {
    pub username: String,
    #[serde(default)]
    pub roles: Vec<RoleRef>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct RoleRef {
    pub rolename: String,
}

struct Inner {
    client: AsyncClient,
    root: String,
    /// Batches waiting for their answers, by correlation id.
    pending: Mutex<HashMap<String, oneshot::Sender<Vec<Answer>>>>,
    next: AtomicU64,
    /// `true` while subscribed to the answers (commands wait for it).
    ready: watch::Receiver<bool>,
}

/// The hub's handle on mosquitto's dynamic security. Cheap to clone.
#[derive(Clone)]
pub struct DynSec(Arc<Inner>);

impl DynSec {
    /// Connects as the hub's admin login (client id `hub-<tag>-dynsec`) and keeps the connection
    /// until `shutdown`, reconnecting with backoff. The task ends only on shutdown.
    pub fn start(
        settings: &Settings,
        tag: &str,
        shutdown: CancellationToken,
    ) -> anyhow::Result<(DynSec, tokio::task::JoinHandle<()>)> {
        let (host, port) = settings.external_broker().ok_or_else(|| anyhow::anyhow!("mqtt.external is not set"))?;
        let mut options = MqttOptions::new(format!("{}{tag}-dynsec", super::auth::HUB_CLIENT_PREFIX), host, port);
        options.set_credentials(&settings.mqtt.external_username, settings.mqtt.external_password.expose());
        options.set_keep_alive(Duration::from_secs(30));
        options.set_clean_start(true);
        let (client, eventloop) = AsyncClient::new(options, 64);
        let (ready_tx, ready) = watch::channel(false);
        let inner = Arc::new(Inner {
            client,
            root: settings.mqtt.topic_root.clone(),
            pending: Mutex::new(HashMap::new()),
            next: AtomicU64::new(1),
            ready,
        });
        let task = tokio::spawn(run(inner.clone(), eventloop, ready_tx, shutdown));
        Ok((DynSec(inner), task))
    }

    /// Sends one batch of commands (each a JSON object with `command`) and returns their answers in
    /// order. An answer with an `error` is returned as it is; the caller decides what it means.
    pub async fn send(&self, mut commands: Vec<Value>) -> Result<Vec<Answer>, DynSecError> {
        let mut ready = self.0.ready.clone();
        tokio::time::timeout(ANSWER_WITHIN, ready.wait_for(|r| *r))
            .await
            .map_err(|_| DynSecError::NoAnswer(ANSWER_WITHIN))?
            .map_err(|_| DynSecError::Gone)?;
        let id = format!("birdhub-{}", self.0.next.fetch_add(1, Ordering::Relaxed));
        for c in &mut commands {
            c["correlationData"] = json!(id);
        }
        let (tx, rx) = oneshot::channel();
        if let Ok(mut p) = self.0.pending.lock() {
            p.insert(id.clone(), tx);
        }
        let body = json!({ "commands": commands }).to_string();
        let sent = self.0.client.publish(COMMAND_TOPIC, QoS::AtLeastOnce, false, body).await;
        let answer = match sent {
            Ok(()) => tokio::time::timeout(ANSWER_WITHIN, rx).await.map_err(|_| DynSecError::NoAnswer(ANSWER_WITHIN)),
            Err(_) => Err(DynSecError::Gone),
        };
        if let Ok(mut p) = self.0.pending.lock() {
            p.remove(&id);
        }
        answer?.map_err(|_| DynSecError::Gone)
    }

    /// Like [`DynSec::send`], failing on the first answer with an error that `tolerated` does not
    /// accept (such as "Client not found" when deleting).
    async fn send_checked(&self, commands: Vec<Value>, tolerated: &[&str]) -> Result<Vec<Answer>, DynSecError> {
        let answers = self.send(commands).await?;
        if let Some(a) =
            answers.iter().find(|a| a.error.as_deref().is_some_and(|e| !tolerated.iter().any(|t| e.contains(t))))
        {
            return Err(DynSecError::Refused {
                command: a.command.clone(),
                error: a.error.clone().unwrap_or_default(),
            });
        }
        Ok(answers)
    }

    /// Gives the hub's own login a role to publish and subscribe under the topic root and the
    /// integrations' trees (its admin role alone may publish nowhere but `$CONTROL`). mosquitto
    /// drops the connections of a client whose roles change, this one included, so each step is
    /// checked by reading the state back once reconnected.
    pub async fn grant_hub(&self, settings: &Settings) -> Result<(), DynSecError> {
        let root = &self.0.root;
        let i = &settings.integrations;
        let mut wanted = Vec::new();
        for tree in [root, &i.home_assistant.discovery_prefix, &i.feed.root] {
            wanted.push(("publishClientSend", format!("{tree}/#")));
            wanted.push(("subscribePattern", format!("{tree}/#")));
        }
        let user = settings.mqtt.external_username.as_str();
        for _ in 0..3 {
            let answers = self
                .send(vec![
                    json!({"command": "getClient", "username": user}),
                    json!({"command": "getRole", "rolename": HUB_ROLE}),
                ])
                .await;
            let answers = match answers {
                Ok(a) => a,
                Err(DynSecError::Gone) => continue,
                Err(e) => return Err(e),
            };
            let (client, role) = match answers.as_slice() {
                [c, r] => (c, r),
                _ => return Err(DynSecError::Unreadable("getClient/getRole".into())),
            };
            if let Some(e) = &client.error {
                return Err(DynSecError::Refused { command: format!("getClient {user}"), error: e.clone() });
            }
            let has_role =
                client.data["client"]["roles"].as_array().is_some_and(|r| r.iter().any(|r| r["rolename"] == HUB_ROLE));
            let present: Vec<(String, String)> = role.data["role"]["acls"]
                .as_array()
                .map(|acls| {
                    acls.iter()
                        .map(|a| {
                            (
                                a["acltype"].as_str().unwrap_or_default().to_owned(),
                                a["topic"].as_str().unwrap_or_default().to_owned(),
                            )
                        })
                        .collect()
                })
                .unwrap_or_default();
            let missing: Vec<Value> = wanted
                .iter()
                .filter(|(kind, topic)| !present.iter().any(|(k, t)| k == kind && t == topic))
                .map(|(kind, topic)| acl(kind, topic))
                .collect();
            if has_role && missing.is_empty() {
                return Ok(());
            }
            let mut commands = Vec::new();
            if role.error.is_some() {
                commands.push(
                    json!({"command": "createRole", "rolename": HUB_ROLE, "textname": "birdhub hub", "acls": missing}),
                );
            } else {
                commands.extend(missing.into_iter().map(|mut a| {
                    a["command"] = json!("addRoleACL");
                    a["rolename"] = json!(HUB_ROLE);
                    a
                }));
            }
            if !has_role {
                commands
                    .push(json!({"command": "addClientRole", "username": user, "rolename": HUB_ROLE, "priority": 10}));
            }
            tracing::info!(login = %user, role = HUB_ROLE, "giving the hub's login its role on mosquitto");
            // Answered, or this connection is dropped for the change: either way, read it back.
            match self.send_checked(commands, &["already"]).await {
                Ok(_) | Err(DynSecError::Gone) => {}
                Err(e) => return Err(e),
            }
        }
        Err(DynSecError::Refused { command: format!("addClientRole {user} {HUB_ROLE}"), error: "did not take".into() })
    }

    /// Creates a satellite's login afresh (dropping any session of its old one).
    pub async fn put_satellite(
        &self,
        tenant: TenantId,
        satellite: SatelliteId,
        kind: DeviceKind,
        password: &str,
    ) -> Result<(), DynSecError> {
        let prefix = topics::prefix(&self.0.root, tenant, satellite);
        let mut acls: Vec<Value> = Channel::ALL
            .into_iter()
            .filter(|c| c.from_satellite())
            .map(|c| acl("publishClientSend", &format!("{prefix}{}", c.as_str())))
            .collect();
        acls.push(acl("subscribePattern", &format!("{prefix}#")));
        let login = Login {
            username: satellite.to_string(),
            role: format!("{SATELLITE_ROLE}{satellite}"),
            client_id: format!("{}-{satellite}", kind.client_prefix()),
            textname: "birdhub satellite",
        };
        self.put(login, acls, password).await
    }

    /// Creates a worker's login afresh.
    pub async fn put_worker(&self, id: uuid::Uuid, secret: &str) -> Result<(), DynSecError> {
        let root = &self.0.root;
        let mut acls: Vec<Value> = ["hello", "result", "release", "status"]
            .iter()
            .map(|c| acl("publishClientSend", &pool::worker_topic(root, id, c)))
            .collect();
        acls.push(acl("subscribePattern", &pool::worker_topic(root, id, "control")));
        // mosquitto 2.0 checks a shared subscription's whole filter, group included: only the
        // hub's one group is allowed (docs/security.md).
        acls.push(acl("subscribePattern", &pool::shared_jobs_filter(root)));
        let name = format!("{CLIENT_PREFIX}{id}");
        let login = Login {
            username: name.clone(),
            role: format!("{WORKER_ROLE}{id}"),
            client_id: name,
            textname: "birdhub worker",
        };
        self.put(login, acls, secret).await
    }

    async fn put(&self, login: Login, acls: Vec<Value>, password: &str) -> Result<(), DynSecError> {
        let Login { username, role, client_id, textname } = login;
        let commands = vec![
            json!({"command": "deleteClient", "username": username}),
            json!({"command": "deleteRole", "rolename": role}),
            json!({"command": "createRole", "rolename": role, "acls": acls}),
            json!({
                "command": "createClient", "username": username, "password": password, "clientid": client_id,
                "textname": textname, "roles": [{"rolename": role}],
            }),
        ];
        self.send_checked(commands, &["not found"]).await.map(|_| ())
    }

    /// Deletes a login and its role; its client is disconnected at once. Deleting one that does not
    /// exist is not an error.
    pub async fn delete(&self, username: &str) -> Result<(), DynSecError> {
        let role = role_of(username);
        let mut commands = vec![json!({"command": "deleteClient", "username": username})];
        if let Some(role) = role {
            commands.push(json!({"command": "deleteRole", "rolename": role}));
        }
        self.send_checked(commands, &["not found"]).await.map(|_| ())
    }

    /// Drops a login's current session (disabling a client disconnects it) and lets it log in again.
    pub async fn kick(&self, username: &str) -> Result<(), DynSecError> {
        let commands = vec![
            json!({"command": "disableClient", "username": username}),
            json!({"command": "enableClient", "username": username}),
        ];
        self.send_checked(commands, &["not found"]).await.map(|_| ())
    }

    /// Every client the plugin knows.
    pub async fn clients(&self) -> Result<Vec<Client>, DynSecError> {
        let answers =
            self.send_checked(vec![json!({"command": "listClients", "verbose": true, "count": -1})], &[]).await?;
        let data = answers.into_iter().next().map(|a| a.data).unwrap_or_default();
        serde_json::from_value(data["clients"].clone()).map_err(|e| DynSecError::Unreadable(e.to_string()))
    }
}

/// A login [`DynSec::put`] creates.
struct Login {
    username: String,
    role: String,
    client_id: String,
    textname: &'static str,
}

/// One allowing ACL entry.
fn acl(kind: &str, topic: &str) -> Value {
    json!({"acltype": kind, "topic": topic, "allow": true})
}

/// The role the hub gave a login it made: by the username's shape (a satellite's UUID or `worker-<id>`).
pub fn role_of(username: &str) -> Option<String> {
    if let Some(id) = username.strip_prefix(CLIENT_PREFIX).and_then(|i| i.parse::<uuid::Uuid>().ok()) {
        return Some(format!("{WORKER_ROLE}{id}"));
    }
    username.parse::<SatelliteId>().ok().map(|id| format!("{SATELLITE_ROLE}{id}"))
}

impl BrokerLogins for DynSec {
    fn satellite<'a>(
        &'a self,
        tenant: TenantId,
        satellite: SatelliteId,
        kind: DeviceKind,
        password: &'a str,
    ) -> LoginFuture<'a> {
        Box::pin(async move {
            self.put_satellite(tenant, satellite, kind, password).await.map_err(|e| LoginSyncError(e.to_string()))
        })
    }

    fn worker<'a>(&'a self, id: uuid::Uuid, secret: &'a str) -> LoginFuture<'a> {
        Box::pin(async move { self.put_worker(id, secret).await.map_err(|e| LoginSyncError(e.to_string())) })
    }
}

/// The connection: subscribes to the answers after every CONNACK and hands them to their batch.
async fn run(
    inner: Arc<Inner>,
    mut eventloop: rumqttc::v5::EventLoop,
    ready: watch::Sender<bool>,
    shutdown: CancellationToken,
) {
    let mut failures = 0u32;
    loop {
        let polled = tokio::select! {
            _ = shutdown.cancelled() => {
                let _ = inner.client.disconnect().await;
                return;
            }
            p = eventloop.poll() => p,
        };
        match polled {
            Ok(Event::Incoming(Packet::ConnAck(_))) => {
                failures = 0;
                if let Err(e) = inner.client.subscribe(RESPONSE_TOPIC, QoS::AtLeastOnce).await {
                    tracing::warn!(error = %e, "could not subscribe to dynamic security's answers");
                }
            }
            Ok(Event::Incoming(Packet::SubAck(ack))) => {
                let granted = ack
                    .return_codes
                    .iter()
                    .all(|c| matches!(c, rumqttc::v5::mqttbytes::v5::SubscribeReasonCode::Success(_)));
                if !granted {
                    tracing::error!(
                        "mosquitto refused the hub's subscription to dynamic security's answers: \
                         mqtt.external_username must be a dynamic-security admin (mosquitto_ctrl dynsec init)"
                    );
                }
                let _ = ready.send(granted);
            }
            Ok(Event::Incoming(Packet::Publish(p))) if p.topic.as_ref() == RESPONSE_TOPIC.as_bytes() => {
                deliver(&inner, &p.payload);
            }
            Ok(_) => {}
            Err(e) => {
                let _ = ready.send(false);
                // Batches in flight get no answer on this connection: they fail at once ("gone").
                if let Ok(mut p) = inner.pending.lock() {
                    p.clear();
                }
                failures += 1;
                let wait = Duration::from_secs(u64::from(failures.min(30)));
                tracing::warn!(error = %e, retry_in_s = wait.as_secs(), "dynamic-security connection to mosquitto lost; reconnecting");
                tokio::select! {
                    _ = shutdown.cancelled() => return,
                    _ = tokio::time::sleep(wait) => {}
                }
            }
        }
    }
}

/// Hands an answer message to the batch it belongs to (by the first answer's correlation id).
fn deliver(inner: &Inner, payload: &[u8]) {
    let answers = match serde_json::from_slice::<Answers>(payload) {
        Ok(a) => a.responses,
        Err(e) => {
            tracing::warn!(error = %e, "unreadable answer from dynamic security");
            return;
        }
    };
    let Some(id) = answers.first().map(|a| a.correlation.clone()) else { return };
    let waiting = inner.pending.lock().ok().and_then(|mut p| p.remove(&id));
    if let Some(tx) = waiting {
        let _ = tx.send(answers);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hub_knows_its_own_logins_by_their_names() {
        let (sat, worker) = (SatelliteId::new(), uuid::Uuid::new_v4());
        assert_eq!(role_of(&sat.to_string()), Some(format!("birdhub-sat-{sat}")));
        assert_eq!(role_of(&format!("worker-{worker}")), Some(format!("birdhub-worker-{worker}")));
        for other in ["admin", "homeassistant", "worker-x", "hub"] {
            assert_eq!(role_of(other), None, "{other}");
        }
    }
}
