//! The one publish rule of the broker (SPEC 5.5): who may publish where, and where that is enforced.
//!
//! Both the broker's `authorize_publish` ([`super::auth`]) and the in-process consumer
//! ([`super::ingest`]) ask [`publish_decision`]; neither has a rule of its own. An MQTT 5 client's
//! foreign publish is denied by the broker (PUBACK "not authorized"). An MQTT 3.1.1 client's
//! foreign publish cannot be denied there: mqtt5 0.49 answers it with a malformed PUBACK that makes
//! paho reconnect in a loop (`../shared/CRATES.md`). So the broker lets it pass, acknowledges it
//! normally, and the consumer drops it before anything is stored or routed.
//!
//! Wills never reach the consumer: the broker asks `authorize_publish` and routes them as they
//! stand. So no will may depend on the consumer. Satellites may name none, the hub only one inside
//! the topic root, and the read-only login only Home Assistant's status will, whose topic the
//! broker refuses to that connection whatever its protocol (`own_will_topic`).

use super::auth::Identity;

/// The MQTT protocol level of MQTT 5 (CONNECT's protocol version byte). 3.1.1 is 4, 3.1 is 3.
pub const PROTOCOL_V5: u8 = 5;

/// What happens to one publish.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Within the publisher's tree: the consumer handles it.
    Allow,
    /// Refused by the broker itself (MQTT 5 clients: PUBACK/PUBREC "not authorized").
    Deny,
    /// Passed by the broker so the client gets a well-formed PUBACK, then dropped unseen by the
    /// consumer (MQTT 3.1.1 clients).
    DropInConsumer,
}

impl Decision {
    /// The answer for the broker's `authorize_publish`: only [`Decision::Deny`] is refused there.
    pub fn broker_passes(self) -> bool {
        self != Decision::Deny
    }

    /// Whether the consumer may act on the message: only [`Decision::Allow`].
    pub fn consumer_handles(self) -> bool {
        self == Decision::Allow
    }
}

/// The publish rule. `identity` is `None` when the broker's user id is unknown (never allowed);
/// `protocol_version` is the CONNECT's protocol level (`None` when unknown, treated as MQTT 5 so
/// an unknown client is denied outright). `own_will_topic`: the topic is the one a read-only
/// connection named its will on; the broker refuses it there, so the will is never published.
pub fn publish_decision(
    identity: Option<&Identity>,
    protocol_version: Option<u8>,
    root: &str,
    topic: &str,
    own_will_topic: bool,
) -> Decision {
    if identity.is_some_and(|i| i.may_publish(root, topic)) {
        return Decision::Allow;
    }
    if own_will_topic {
        return Decision::Deny;
    }
    match protocol_version {
        Some(v) if v < PROTOCOL_V5 => Decision::DropInConsumer,
        _ => Decision::Deny,
    }
}

#[cfg(test)]
mod tests {
    use super::{Decision::*, *};
    use crate::{
        ids::{SatelliteId, TenantId},
        mqtt::topics::{self, Channel},
    };

    #[test]
    fn the_decision_table() {
        let (team, other_team) = (TenantId::new(), TenantId::new());
        let (me, neighbour, stranger) = (SatelliteId::new(), SatelliteId::new(), SatelliteId::new());
        let sat = Identity::Satellite { satellite: me, prefix: topics::prefix("bh", team, me) };
        let own = topics::topic("bh", team, me, Channel::Audio);
        let same_team = topics::topic("bh", team, neighbour, Channel::Audio);
        let other = topics::topic("bh", other_team, stranger, Channel::Heartbeat);
        let hub_topic = format!("bh/{}", crate::mqtt::DISCONNECT_TOPIC);
        let wildcard = format!("bh/{team}/{me}/#");
        let bare_prefix = topics::prefix("bh", team, me);
        let outside_root = format!("elsewhere/{team}/{me}/audio");
        #[rustfmt::skip]
        let cases: Vec<(Option<&Identity>, Option<u8>, &str, Decision)> = vec![
            (Some(&sat), Some(5), &own, Allow),
            (Some(&sat), Some(4), &own, Allow),
            (Some(&sat), Some(3), &own, Allow),
            (Some(&sat), Some(5), &same_team, Deny),
            (Some(&sat), Some(4), &same_team, DropInConsumer),
            (Some(&sat), Some(5), &other, Deny),
            (Some(&sat), Some(4), &other, DropInConsumer),
            (Some(&sat), Some(3), &other, DropInConsumer),
            (Some(&sat), None, &other, Deny),
            (Some(&sat), Some(5), &hub_topic, Deny),
            (Some(&sat), Some(4), &hub_topic, DropInConsumer),
            (Some(&sat), Some(5), &wildcard, Deny),
            (Some(&sat), Some(4), &wildcard, DropInConsumer),
            (Some(&sat), Some(5), &bare_prefix, Deny),
            (Some(&sat), Some(5), &outside_root, Deny),
            (Some(&Identity::Hub), Some(5), &same_team, Allow),
            (Some(&Identity::Hub), Some(5), &hub_topic, Allow),
            (Some(&Identity::Hub), Some(5), &outside_root, Deny),
            (Some(&Identity::Hub), Some(4), &outside_root, DropInConsumer),
            (Some(&Identity::ReadOnly), Some(5), "homeassistant/sensor/x/config", Deny),
            (Some(&Identity::ReadOnly), Some(4), "homeassistant/sensor/x/config", DropInConsumer),
            (Some(&Identity::ReadOnly), Some(5), &own, Deny),
            (Some(&Identity::ReadOnly), Some(4), &own, DropInConsumer),
            (None, Some(5), &own, Deny),
            (None, Some(4), &own, DropInConsumer),
            (None, None, &own, Deny),
        ];
        for (identity, version, topic, want) in cases {
            let got = publish_decision(identity, version, "bh", topic, false);
            assert_eq!(got, want, "{identity:?} v{version:?} -> {topic}");
            assert_eq!(got.broker_passes(), want != Deny);
            assert_eq!(got.consumer_handles(), want == Allow, "only an allowed publish reaches the consumer's logic");
        }
        // A read-only connection's own will topic is refused by the broker itself, over 3.1.1 too.
        let ro = Some(&Identity::ReadOnly);
        for version in [Some(3), Some(4), Some(5), None] {
            assert_eq!(publish_decision(ro, version, "bh", "homeassistant/status", true), Deny, "{version:?}");
        }
    }
}
