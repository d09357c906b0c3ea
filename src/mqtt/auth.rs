//! Who may connect to the embedded broker and where they may publish and subscribe (SPEC 5.5).
//!
//! Satellites log in with their UUID as username and the 32-byte hex password minted at
//! registration (stored as SHA-256, checked against the database on every connect, so deletion or
//! rotation takes effect at once). Their client id must be `satellite-{id}` or `mobile-{id}`.
//! They are confined to `{root}/{tenant}/{satellite}/` and may leave no will. The hub's own
//! clients (split mode) log in as `hub` with the internal API key and a `hub-` client id; no
//! satellite can take those. Home Assistant and other tools log in as `homeassistant`
//! ([`ReadOnlyLogin`], only while an integration is on): they may subscribe under the discovery
//! prefix and the feed root, and publish nowhere.
//!
//! Remote inference workers log in as `worker-<key id>` (client id the same) with their key's
//! secret, checked against `worker_keys` on every connect. They may publish only on their own
//! `{root}/_work/<id>/{hello,result,release,status}`, subscribe only to their own `control` topic
//! and, once the hub accepted their join, to the one shared job subscription; never a satellite's
//! topic, and no will.
//!
//! Everything the broker must remember about a connection is in its user id ([`Login`]), which
//! mqtt5 keeps per connection and hands back on every publish, will and subscribe: never in a map
//! keyed by client id, which another connection can take over.
//! Where a client may publish is decided in one place, [`super::acl`]; this module only answers
//! the broker with it.

use std::{future::Future, net::SocketAddr, pin::Pin, sync::Arc};

use mqtt5::{
    broker::{AuthProvider, AuthResult},
    packet::connect::ConnectPacket,
    protocol::v5::reason_codes::ReasonCode,
};
use subtle::ConstantTimeEq;

use super::{
    acl::{self, Decision},
    topics,
};
use crate::{auth::tokens::sha256_hex, config::Secret, ids::SatelliteId, store::Store};

/// The broker username of the hub's own clients.
pub const HUB_USER: &str = "hub";
/// Client ids starting with this are reserved for the hub.
pub const HUB_CLIENT_PREFIX: &str = "hub-";
/// The broker username of the read-only login (Home Assistant, Node-RED, scripts).
pub const READONLY_USER: &str = "homeassistant";
/// The broker user id of a read-only client (a satellite's is its topic prefix, never this).
const READONLY_USER_ID: &str = "$readonly";
/// The largest will payload the read-only login may name (Home Assistant's is `offline`).
const MAX_READONLY_WILL_BYTES: usize = 64;

/// The read-only login: its password and the topic trees it may subscribe to.
#[derive(Clone)]
pub struct ReadOnlyLogin {
    password: Secret,
    /// Each ends in `/`: `homeassistant/`, `birdhub-feed/`.
    prefixes: Vec<String>,
    /// Where Home Assistant names its birth and will (`homeassistant/status` by default, and
    /// `<discovery prefix>/status`). The only topics a read-only will may name: the broker
    /// refuses to publish there for a connection that named one (see [`acl`]).
    status_topics: Vec<String>,
}

impl ReadOnlyLogin {
    /// The login while an integration is on; `None` (no such login) otherwise.
    pub fn from_settings(settings: &crate::config::Settings) -> Option<Self> {
        let i = &settings.integrations;
        if !i.active() || !i.readonly_password.is_set() {
            return None;
        }
        let discovery = &i.home_assistant.discovery_prefix;
        let prefixes = vec![format!("{discovery}/"), format!("{}/", i.feed.root)];
        let mut status_topics = vec!["homeassistant/status".to_owned(), format!("{discovery}/status")];
        status_topics.dedup();
        Some(Self { password: i.readonly_password.clone(), prefixes, status_topics })
    }

    /// A filter inside one of the trees, with no wildcard before the tree's own level.
    pub fn may_subscribe(&self, filter: &str) -> bool {
        self.prefixes.iter().any(|p| filter.starts_with(p.as_str()))
    }

    /// Whether `topic` is where Home Assistant names its birth and will.
    pub fn is_status_topic(&self, topic: &str) -> bool {
        self.status_topics.iter().any(|t| t == topic)
    }

    /// The one will a read-only client may name at CONNECT: Home Assistant's default (a short,
    /// unretained message on its status topic), so that it can connect unchanged. The broker
    /// never publishes it. Any other will is refused, and the login with it.
    fn accepts_will(&self, topic: &str, payload_len: usize, retain: bool) -> bool {
        self.is_status_topic(topic) && !retain && payload_len <= MAX_READONLY_WILL_BYTES
    }
}

/// What the broker remembers about a logged-in client, encoded in its user id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Identity {
    Hub,
    /// The read-only login: subscribes in [`ReadOnlyLogin`]'s trees, publishes nowhere.
    ReadOnly,
    /// A satellite and the topic prefix it is confined to.
    Satellite {
        satellite: SatelliteId,
        prefix: String,
    },
    /// A remote inference worker (its key's id).
    Worker(uuid::Uuid),
}

/// The user id prefix of a worker (never a satellite's, which starts with the topic root).
const WORKER_USER_ID: &str = "$worker/";
/// The channels a worker publishes on, under `{root}/_work/<id>/`.
const WORKER_CHANNELS: [&str; 4] = ["hello", "result", "release", "status"];

impl Identity {
    /// The identity's part of the user id: `hub`, `$readonly`, or the satellite's own prefix.
    fn user_id(&self) -> String {
        match self {
            Identity::Hub => HUB_USER.into(),
            Identity::ReadOnly => READONLY_USER_ID.into(),
            Identity::Satellite { prefix, .. } => prefix.clone(),
            Identity::Worker(id) => format!("{WORKER_USER_ID}{id}"),
        }
    }

    fn from_user_id(user_id: &str) -> Option<Identity> {
        match user_id {
            HUB_USER => Some(Identity::Hub),
            READONLY_USER_ID => Some(Identity::ReadOnly),
            worker if worker.starts_with(WORKER_USER_ID) => {
                Some(Identity::Worker(worker[WORKER_USER_ID.len()..].parse().ok()?))
            }
            prefix => {
                let sat = prefix.trim_end_matches('/').rsplit('/').next()?.parse().ok()?;
                Some(Identity::Satellite { satellite: sat, prefix: prefix.to_owned() })
            }
        }
    }

    /// Whether this identity may publish to `topic` (no wildcards ever).
    pub fn may_publish(&self, root: &str, topic: &str) -> bool {
        if topic.contains(['+', '#']) {
            return false;
        }
        match self {
            Identity::Hub => topic.starts_with(&format!("{root}/")),
            Identity::ReadOnly => false,
            Identity::Satellite { prefix, .. } => topic.starts_with(prefix.as_str()) && topic.len() > prefix.len(),
            Identity::Worker(id) => {
                WORKER_CHANNELS.iter().any(|c| topic == crate::inference::remote::pool::worker_topic(root, *id, c))
            }
        }
    }

    /// Whether this identity may subscribe to `filter`: its own tree only, wildcards inside it.
    /// The read-only login's trees are [`ReadOnlyLogin::may_subscribe`]'s to answer; here, none.
    pub fn may_subscribe(&self, root: &str, filter: &str) -> bool {
        match self {
            Identity::Hub => filter.starts_with(&format!("{root}/")),
            Identity::ReadOnly => false,
            Identity::Satellite { prefix, .. } => {
                filter.starts_with(prefix.as_str()) && !filter[..prefix.len()].contains(['+', '#'])
            }
            // The shared job subscription is the broker's to allow, once the worker joined.
            Identity::Worker(id) => filter == crate::inference::remote::pool::worker_topic(root, *id, "control"),
        }
    }
}

/// One connection's login, as the broker keeps it: the identity, the MQTT protocol level of its
/// CONNECT, and whether it named a will. Encoded in the broker's user id (`v4w|$readonly`,
/// `v5|hub`, `v4|birdhub/<team>/<satellite>/`), which mqtt5 stores per connection, so a second
/// connection with the same client id never changes what the first one may do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Login {
    pub identity: Identity,
    /// CONNECT's protocol level: 4 is MQTT 3.1.1, 5 is MQTT 5 (see [`acl`] for why it matters).
    pub protocol: u8,
    /// Whether this connection named a will (only the read-only login's status will gets here).
    pub will: bool,
}

impl Login {
    /// The user id handed to the broker at login.
    fn user_id(&self) -> String {
        let will = if self.will { "w" } else { "" };
        format!("v{}{will}|{}", self.protocol, self.identity.user_id())
    }

    /// The login behind a broker user id; `None` for anything this module did not write.
    pub fn from_user_id(user_id: Option<&str>) -> Option<Login> {
        let (tag, identity) = user_id?.strip_prefix('v')?.split_once('|')?;
        let (protocol, will) = match tag.strip_suffix('w') {
            Some(protocol) => (protocol, true),
            None => (tag, false),
        };
        Some(Login { identity: Identity::from_user_id(identity)?, protocol: protocol.parse().ok()?, will })
    }
}

pub struct BrokerAuth {
    store: Store,
    root: String,
    internal_key: Secret,
    readonly: Option<ReadOnlyLogin>,
    /// Whose joins were accepted: only they may take the shared job subscription.
    workers: crate::inference::remote::RemotePool,
}

impl BrokerAuth {
    /// `workers`: the remote pool, whose joined workers may take the shared job subscription.
    pub fn new(
        store: Store,
        root: &str,
        internal_key: Secret,
        readonly: Option<ReadOnlyLogin>,
        workers: crate::inference::remote::RemotePool,
    ) -> Arc<Self> {
        Arc::new(Self { store, root: root.into(), internal_key, readonly, workers })
    }

    fn may_subscribe(&self, user_id: Option<&str>, filter: &str) -> bool {
        match Login::from_user_id(user_id).map(|l| l.identity) {
            Some(Identity::ReadOnly) => self.readonly.as_ref().is_some_and(|r| r.may_subscribe(filter)),
            Some(Identity::Worker(id)) if filter == crate::inference::remote::pool::shared_jobs_filter(&self.root) => {
                self.workers.is_joined(id)
            }
            Some(identity) => identity.may_subscribe(&self.root, filter),
            None => false,
        }
    }

    /// The publish ACL for the connection behind `user_id`, asked by both the broker (for
    /// publishes and wills) and the consumer (see [`acl`]).
    pub fn publish_decision(&self, user_id: Option<&str>, topic: &str) -> Decision {
        let login = Login::from_user_id(user_id);
        let on_own_will_topic = login.as_ref().is_some_and(|l| {
            l.will
                && l.identity == Identity::ReadOnly
                && self.readonly.as_ref().is_some_and(|r| r.is_status_topic(topic))
        });
        acl::publish_decision(
            login.as_ref().map(|l| &l.identity),
            login.as_ref().map(|l| l.protocol),
            &self.root,
            topic,
            on_own_will_topic,
        )
    }

    async fn check(&self, connect: &ConnectPacket) -> Result<Identity, ReasonCode> {
        let bad = ReasonCode::BadUsernameOrPassword;
        let username = connect.username.as_deref().ok_or(bad)?;
        let password = connect.password.as_deref().and_then(|p| std::str::from_utf8(p).ok()).ok_or(bad)?;
        let cid = connect.client_id.as_str();
        if username == HUB_USER {
            if !self.internal_key.matches(password) || !cid.starts_with(HUB_CLIENT_PREFIX) {
                return Err(bad);
            }
            if connect.will.as_ref().is_some_and(|w| !Identity::Hub.may_publish(&self.root, &w.topic)) {
                return Err(ReasonCode::NotAuthorized);
            }
            return Ok(Identity::Hub);
        }
        if username == READONLY_USER {
            let Some(readonly) = self.readonly.as_ref().filter(|r| r.password.matches(password)) else {
                return Err(bad);
            };
            if [HUB_CLIENT_PREFIX, "satellite-", "mobile-", crate::inference::remote::CLIENT_PREFIX]
                .iter()
                .any(|p| cid.starts_with(p))
            {
                return Err(ReasonCode::ClientIdentifierNotValid);
            }
            if connect.will.as_ref().is_some_and(|w| !readonly.accepts_will(&w.topic, w.payload.len(), w.retain)) {
                return Err(ReasonCode::NotAuthorized);
            }
            return Ok(Identity::ReadOnly);
        }
        if let Some(id) = username.strip_prefix(crate::inference::remote::CLIENT_PREFIX) {
            return self.check_worker(id, password, connect).await;
        }
        let satellite: SatelliteId = username.parse().map_err(|_| bad)?;
        if cid != format!("satellite-{satellite}") && cid != format!("mobile-{satellite}") {
            return Err(ReasonCode::ClientIdentifierNotValid);
        }
        let found =
            self.store.call(move |c| crate::store::satellites::credential(c, satellite)).await.map_err(|e| {
                tracing::error!(error = %e, "broker login lookup failed");
                ReasonCode::ServerUnavailable
            })?;
        let (tenant, stored_hash) = found.ok_or(bad)?;
        if !bool::from(sha256_hex(password).as_bytes().ct_eq(stored_hash.as_bytes())) {
            return Err(bad);
        }
        // A will skips the consumer: the broker would route it as it stands (to the hub's own
        // channels, or retained, one more per reconnect). Satellites have no use for one.
        if connect.will.is_some() {
            return Err(ReasonCode::NotAuthorized);
        }
        Ok(Identity::Satellite { satellite, prefix: topics::prefix(&self.root, tenant, satellite) })
    }

    /// A worker's login: its key must exist and not be revoked, its client id must be its
    /// username, and it may name no will.
    async fn check_worker(&self, id: &str, password: &str, connect: &ConnectPacket) -> Result<Identity, ReasonCode> {
        let bad = ReasonCode::BadUsernameOrPassword;
        let id: uuid::Uuid = id.parse().map_err(|_| bad)?;
        if connect.client_id != format!("{}{id}", crate::inference::remote::CLIENT_PREFIX) {
            return Err(ReasonCode::ClientIdentifierNotValid);
        }
        let stored = self.store.call(move |c| crate::store::worker_keys::live_hash(c, id)).await.map_err(|e| {
            tracing::error!(error = %e, "broker login lookup failed");
            ReasonCode::ServerUnavailable
        })?;
        let stored = stored.ok_or(bad)?;
        if !bool::from(sha256_hex(password).as_bytes().ct_eq(stored.as_bytes())) {
            return Err(bad);
        }
        if connect.will.is_some() {
            return Err(ReasonCode::NotAuthorized);
        }
        Ok(Identity::Worker(id))
    }

    /// The login behind a broker user id (as set at login).
    pub fn login(user_id: Option<&str>) -> Option<Login> {
        Login::from_user_id(user_id)
    }
}

impl AuthProvider for BrokerAuth {
    fn authenticate<'a>(
        &'a self,
        connect: &'a ConnectPacket,
        addr: SocketAddr,
    ) -> Pin<Box<dyn Future<Output = mqtt5::Result<AuthResult>> + Send + 'a>> {
        Box::pin(async move {
            match self.check(connect).await {
                Ok(identity) => {
                    let login = Login { identity, protocol: connect.protocol_version, will: connect.will.is_some() };
                    Ok(AuthResult::success_with_user(login.user_id()))
                }
                Err(code) => {
                    tracing::info!(client_id = %connect.client_id, %addr, ?code, "broker login refused");
                    Ok(AuthResult::fail(code))
                }
            }
        })
    }

    fn authorize_publish<'a>(
        &'a self,
        _client_id: &str,
        user_id: Option<&'a str>,
        topic: &'a str,
    ) -> Pin<Box<dyn Future<Output = bool> + Send + 'a>> {
        // A 3.1.1 client's foreign publish passes here and is dropped by the consumer (see `acl`).
        // Wills come here too, with the user id of the connection that named them.
        let passes = self.publish_decision(user_id, topic).broker_passes();
        Box::pin(async move { passes })
    }

    fn authorize_subscribe<'a>(
        &'a self,
        _client_id: &str,
        user_id: Option<&'a str>,
        filter: &'a str,
    ) -> Pin<Box<dyn Future<Output = bool> + Send + 'a>> {
        Box::pin(async move { self.may_subscribe(user_id, filter) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::TenantId;

    #[test]
    fn satellites_stay_in_their_own_tree() {
        let (t, s) = (TenantId::new(), SatelliteId::new());
        let me = Identity::Satellite { satellite: s, prefix: topics::prefix("bh", t, s) };
        let own = topics::topic("bh", t, s, topics::Channel::Audio);
        let other = topics::topic("bh", t, SatelliteId::new(), topics::Channel::Audio);
        assert!(me.may_publish("bh", &own));
        assert!(!me.may_publish("bh", &other));
        assert!(!me.may_publish("bh", &format!("bh/{t}/{s}/")));
        assert!(!me.may_publish("bh", &format!("bh/{t}/{s}/+")));
        assert!(me.may_subscribe("bh", &format!("bh/{t}/{s}/#")));
        assert!(me.may_subscribe("bh", &format!("bh/{t}/{s}/config")));
        assert!(!me.may_subscribe("bh", "#"));
        assert!(!me.may_subscribe("bh", &format!("bh/{t}/+/config")));
        assert!(!me.may_subscribe("bh", "bh/#"));
        let login = Login { identity: me, protocol: 4, will: false };
        assert_eq!(Login::from_user_id(Some(&login.user_id())), Some(login));
        assert!(Identity::Hub.may_publish("bh", &own) && !Identity::Hub.may_publish("bh", "other/x"));
    }

    #[test]
    fn the_read_only_login_reads_two_trees_and_nothing_else() {
        let mut settings = crate::config::Settings::default();
        assert!(ReadOnlyLogin::from_settings(&settings).is_none(), "closed while no integration is on");
        settings.integrations.home_assistant.enabled = true;
        settings.integrations.readonly_password = Secret::new("pw");
        let login = ReadOnlyLogin::from_settings(&settings).expect("open");
        for ok in ["homeassistant/#", "homeassistant/sensor/+/+/config", "birdhub-feed/#", "birdhub-feed/detections"] {
            assert!(login.may_subscribe(ok), "{ok}");
        }
        for denied in
            ["#", "+/#", "birdhub/#", "homeassistant", "$SYS/#", "$share/g/homeassistant/#", "birdhub-feedx/#"]
        {
            assert!(!login.may_subscribe(denied), "{denied}");
        }
        let ro = Identity::ReadOnly;
        assert!(!ro.may_publish("birdhub", "homeassistant/status") && !ro.may_subscribe("birdhub", "birdhub/#"));
        let login = Login { identity: ro, protocol: 5, will: true };
        assert_eq!(login.user_id(), "v5w|$readonly");
        assert_eq!(Login::from_user_id(Some(&login.user_id())), Some(login));
        // Home Assistant's own will may be named (the broker never publishes it); no other.
        assert!(login_will(&login_of(&settings), "homeassistant/status", 7, false));
        settings.integrations.home_assistant.discovery_prefix = "ha".into();
        let moved = login_of(&settings);
        assert!(login_will(&moved, "homeassistant/status", 7, false) && login_will(&moved, "ha/status", 7, false));
        for (topic, len, retain) in [
            ("homeassistant/status", 7, true),
            ("homeassistant/status", 65, false),
            ("homeassistant/other", 7, false),
            ("birdhub/t/s/update", 7, false),
            ("birdhub-feed/hub/state", 7, false),
        ] {
            assert!(!login_will(&moved, topic, len, retain), "{topic} {len} {retain}");
        }
    }

    fn login_of(settings: &crate::config::Settings) -> ReadOnlyLogin {
        ReadOnlyLogin::from_settings(settings).expect("open")
    }

    fn login_will(login: &ReadOnlyLogin, topic: &str, len: usize, retain: bool) -> bool {
        login.accepts_will(topic, len, retain)
    }

    #[test]
    fn only_user_ids_this_module_wrote_are_logins() {
        for junk in [None, Some(""), Some("hub"), Some("$readonly"), Some("v|hub"), Some("vx|hub"), Some("v5|nobody")] {
            assert_eq!(Login::from_user_id(junk), None, "{junk:?}");
        }
        assert_eq!(
            Login::from_user_id(Some("v4|hub")),
            Some(Login { identity: Identity::Hub, protocol: 4, will: false })
        );
    }
}
