//! Who may connect to the embedded broker and where they may publish and subscribe (SPEC 5.5).
//!
//! Satellites log in with their UUID as username and the 32-byte hex password minted at
//! registration (stored as SHA-256, checked against the database on every connect, so deletion or
//! rotation takes effect at once). Their client id must be `satellite-{id}` or `mobile-{id}`.
//! They are confined to `{root}/{tenant}/{satellite}/`. The hub's own clients (split mode) log in
//! as `hub` with the internal API key and a `hub-` client id; no satellite can take those.
//! Home Assistant and other tools log in as `homeassistant` ([`ReadOnlyLogin`], only while an
//! integration is on): they may subscribe under the discovery prefix and the feed root, and
//! publish nowhere.
//! Where a client may publish is decided in one place, [`super::acl`]; this module only answers
//! the broker with it.

use std::{
    collections::HashMap,
    future::Future,
    net::SocketAddr,
    pin::Pin,
    sync::{Arc, Mutex},
};

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

/// The read-only login: its password and the topic trees it may subscribe to.
#[derive(Clone)]
pub struct ReadOnlyLogin {
    password: Secret,
    /// Each ends in `/`: `homeassistant/`, `birdhub-feed/`.
    prefixes: Vec<String>,
}

impl ReadOnlyLogin {
    /// The login while an integration is on; `None` (no such login) otherwise.
    pub fn from_settings(settings: &crate::config::Settings) -> Option<Self> {
        let i = &settings.integrations;
        if !i.active() || !i.readonly_password.is_set() {
            return None;
        }
        let prefixes = vec![format!("{}/", i.home_assistant.discovery_prefix), format!("{}/", i.feed.root)];
        Some(Self { password: i.readonly_password.clone(), prefixes })
    }

    /// A filter inside one of the trees, with no wildcard before the tree's own level.
    pub fn may_subscribe(&self, filter: &str) -> bool {
        self.prefixes.iter().any(|p| filter.starts_with(p.as_str()))
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
}

impl Identity {
    /// The broker's user id string: `hub`, or the satellite's own prefix.
    fn user_id(&self) -> String {
        match self {
            Identity::Hub => HUB_USER.into(),
            Identity::ReadOnly => READONLY_USER_ID.into(),
            Identity::Satellite { prefix, .. } => prefix.clone(),
        }
    }

    fn from_user_id(user_id: Option<&str>) -> Option<Identity> {
        match user_id? {
            HUB_USER => Some(Identity::Hub),
            READONLY_USER_ID => Some(Identity::ReadOnly),
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
        }
    }
}

pub struct BrokerAuth {
    store: Store,
    root: String,
    internal_key: Secret,
    /// MQTT protocol version per client id, as sent in CONNECT: the publish ACL treats 3.1.1
    /// clients differently (see [`acl`]). One entry per client id, so bounded by the satellites.
    versions: Mutex<HashMap<String, u8>>,
    readonly: Option<ReadOnlyLogin>,
    /// The will topic of each read-only client that set one. The broker publishes a will
    /// without asking the consumer, so the broker itself must refuse it (see `authorize_publish`).
    readonly_wills: Mutex<HashMap<String, String>>,
}

impl BrokerAuth {
    pub fn new(store: Store, root: &str, internal_key: Secret, readonly: Option<ReadOnlyLogin>) -> Arc<Self> {
        Arc::new(Self {
            store,
            root: root.into(),
            internal_key,
            versions: Mutex::new(HashMap::new()),
            readonly,
            readonly_wills: Mutex::new(HashMap::new()),
        })
    }

    /// Whether the broker lets `topic` through for this client. A read-only client's will is
    /// always refused; its other 3.1.1 publishes pass the broker and the consumer drops them.
    fn broker_passes(&self, client_id: &str, user_id: Option<&str>, topic: &str) -> bool {
        if Identity::from_user_id(user_id) == Some(Identity::ReadOnly) {
            let is_will = self.readonly_wills.lock().ok().is_some_and(|w| w.get(client_id).is_some_and(|t| t == topic));
            if is_will {
                return false;
            }
        }
        self.publish_decision(client_id, user_id, topic).broker_passes()
    }

    fn may_subscribe(&self, user_id: Option<&str>, filter: &str) -> bool {
        match Identity::from_user_id(user_id) {
            Some(Identity::ReadOnly) => self.readonly.as_ref().is_some_and(|r| r.may_subscribe(filter)),
            Some(identity) => identity.may_subscribe(&self.root, filter),
            None => false,
        }
    }

    /// The protocol level the client logged in with (4 = 3.1.1, 5 = MQTT 5), if it did.
    pub fn protocol_version(&self, client_id: &str) -> Option<u8> {
        self.versions.lock().ok().and_then(|v| v.get(client_id).copied())
    }

    /// The publish ACL for this client, asked by both the broker and the consumer (see [`acl`]).
    pub fn publish_decision(&self, client_id: &str, user_id: Option<&str>, topic: &str) -> Decision {
        let identity = Identity::from_user_id(user_id);
        acl::publish_decision(identity.as_ref(), self.protocol_version(client_id), &self.root, topic)
    }

    async fn check(&self, connect: &ConnectPacket) -> Result<Identity, ReasonCode> {
        let bad = ReasonCode::BadUsernameOrPassword;
        let username = connect.username.as_deref().ok_or(bad)?;
        let password = connect.password.as_deref().and_then(|p| std::str::from_utf8(p).ok()).ok_or(bad)?;
        let cid = connect.client_id.as_str();
        if username == HUB_USER {
            return if self.internal_key.matches(password) && cid.starts_with(HUB_CLIENT_PREFIX) {
                Ok(Identity::Hub)
            } else {
                Err(bad)
            };
        }
        if username == READONLY_USER {
            if !self.readonly.as_ref().is_some_and(|r| r.password.matches(password)) {
                return Err(bad);
            }
            if [HUB_CLIENT_PREFIX, "satellite-", "mobile-"].iter().any(|p| cid.starts_with(p)) {
                return Err(ReasonCode::ClientIdentifierNotValid);
            }
            if let Ok(mut wills) = self.readonly_wills.lock() {
                match &connect.will {
                    Some(will) => wills.insert(cid.to_owned(), will.topic.clone()),
                    None => wills.remove(cid),
                };
            }
            return Ok(Identity::ReadOnly);
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
        let identity = Identity::Satellite { satellite, prefix: topics::prefix(&self.root, tenant, satellite) };
        if connect.will.as_ref().is_some_and(|w| !identity.may_publish(&self.root, &w.topic)) {
            return Err(ReasonCode::NotAuthorized);
        }
        Ok(identity)
    }

    /// The identity behind a broker user id (as set at login).
    pub fn identity(user_id: Option<&str>) -> Option<Identity> {
        Identity::from_user_id(user_id)
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
                    if let Ok(mut v) = self.versions.lock() {
                        v.insert(connect.client_id.clone(), connect.protocol_version);
                    }
                    Ok(AuthResult::success_with_user(identity.user_id()))
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
        client_id: &str,
        user_id: Option<&'a str>,
        topic: &'a str,
    ) -> Pin<Box<dyn Future<Output = bool> + Send + 'a>> {
        // A 3.1.1 client's foreign publish passes here and is dropped by the consumer (see `acl`).
        let passes = self.broker_passes(client_id, user_id, topic);
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
        assert_eq!(Identity::from_user_id(Some(&me.user_id())), Some(me));
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
        assert_eq!(Identity::from_user_id(Some(&ro.user_id())), Some(ro));
    }
}
