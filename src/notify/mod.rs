//! Outgoing notifications: what an alert says ([`Notice`]) and every way the hub delivers it.
//!
//! Everything here is pure except [`http`], which makes one POST and classifies the answer, and
//! [`guard`], which keeps that POST to the addresses the platform allows.
//! Deciding *when* to notify, queueing and retrying belong to the caller.
//!
//! - [`body`]: the default webhook body (SPEC 2.20).
//! - [`template`]: a channel's `payload_template` (minijinja, sandboxed by size and fuel).
//! - [`chat`]: the four chat shapes (block layout, bot message, card, rich embed).
//! - [`email`]: subject and plain-text body of a mail.
//! - [`files`]: naming a delivered file (webhook header, mail text of an attachment).
//! - [`signature`]: the `X-Service-Signature` HMAC (SPEC 5.6).
//! - [`http`]: one POST with a timeout and a capped reply, classified as delivered, retry or failed;
//!   what the receiver said stays in the hub's log, the team sees a classified reason.
//! - [`guard`]: the platform's `channel_targets` enforced on the resolved address at connect time.
//! - [`text`]: the wording the formats share (facts, names, truncation, escaping).

use std::collections::BTreeMap;

use chrono::{SubsecRound, Utc};
use serde::{Deserialize, Serialize};

use crate::{
    ids::{DetectionId, SatelliteId, TenantId},
    time::Timestamp,
};

pub mod body;
pub mod chat;
pub mod email;
pub mod files;
pub mod guard;
pub mod http;
pub mod render;
pub mod signature;
pub mod template;
pub mod text;

/// What an alert says: the input of every delivery format.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Notice {
    /// `rare_species`, `first_of_day`, `first_of_season`, `detection`, `absence`, `trend`,
    /// `satellite_offline`, `test`. Text because templates and receivers match on it as text.
    pub event: String,
    /// When the alert was raised.
    pub timestamp: Timestamp,
    /// The team the alert belongs to.
    pub tenant_id: TenantId,
    /// The stored alert, when there is one (a test send has none).
    pub alert_id: Option<String>,
    /// The rule that fired, so a reader knows which rule to change to stop the messages.
    pub rule_name: Option<String>,
    /// One line, e.g. "Rare: Northern Cardinal at Backyard".
    pub title: String,
    /// One or two sentences.
    pub message: String,
    /// Hub URL of the detection or satellite (an absolute http(s) URL).
    pub link: Option<String>,
    /// The facts behind the alert.
    pub data: NoticeData,
}

/// The facts of a [`Notice`]; which ones are set depends on the event.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NoticeData {
    /// Scientific name.
    pub species: Option<String>,
    /// Common name in the team's primary language.
    pub common_name: Option<String>,
    /// Language code -> common name (the team's primary and secondary languages); may be empty.
    pub common_names: BTreeMap<String, String>,
    /// The species code of the label set (eBird style), for receivers that key on it.
    pub species_code: Option<String>,
    /// Model confidence, 0..1.
    pub confidence: Option<f64>,
    /// The satellite that heard the bird or went offline.
    pub satellite_id: Option<SatelliteId>,
    /// Its display name.
    pub satellite_name: Option<String>,
    /// The detection behind the alert.
    pub detection_id: Option<DetectionId>,
    /// When the bird was heard (the alert may be raised later).
    pub detected_at: Option<Timestamp>,
    /// Anything else the event carries (absence minutes, trend numbers ...), flattened into `data`.
    #[serde(flatten)]
    pub extra: serde_json::Map<String, serde_json::Value>,
    /// The zone the texts write times in: the station's (a detection, a satellite's silence or
    /// outage), else the team's. Not sent: the timestamps stay UTC, the texts name the zone.
    #[serde(skip)]
    pub zone: Option<chrono_tz::Tz>,
}

impl NoticeData {
    /// `t` as the notice's texts write it: in its zone, with the zone's abbreviation.
    pub fn readable(&self, t: Timestamp) -> String {
        match self.zone {
            Some(z) => crate::time::readable_in(t, z),
            None => crate::time::readable(t),
        }
    }
}

/// The species of [`sample`]: a species of the model, under the code real alerts carry.
pub const SAMPLE_SPECIES_CODE: &str = "cardinalis_cardinalis";

/// A realistic notice for test sends and for trial-rendering a template: a Northern Cardinal
/// heard by "Backyard", worded and shaped as a detection alert (the same keys, a species code of
/// the model, a readable time), but with event `test`.
pub fn sample(tenant: TenantId) -> Notice {
    // No zone of its own: written in the hub's, as a notice without one is.
    let mut n = sample_in(tenant, crate::time::hub_zone());
    n.data.zone = None;
    n
}

/// [`sample`] with its times written in `zone` (a test send: the team's zone).
pub fn sample_in(tenant: TenantId, zone: chrono_tz::Tz) -> Notice {
    // Whole milliseconds, as the SPEC's timestamps carry, so the sample survives a JSON round trip.
    let now = Timestamp::from(Utc::now().trunc_subsecs(3));
    let detection = DetectionId::new();
    let common_names = BTreeMap::from([
        ("en".to_owned(), "Northern Cardinal".to_owned()),
        ("de".to_owned(), "Rotkardinal".to_owned()),
    ]);
    Notice {
        event: "test".to_owned(),
        timestamp: now,
        tenant_id: tenant,
        alert_id: None,
        rule_name: None,
        title: "Test: Northern Cardinal at Backyard".to_owned(),
        message: format!(
            "Northern Cardinal (Cardinalis cardinalis) heard by Backyard at {} with 92% confidence. \
             This is a test notification from birdhub.",
            crate::time::readable_in(now, zone)
        ),
        link: None,
        data: NoticeData {
            species: Some("Cardinalis cardinalis".to_owned()),
            common_name: Some("Northern Cardinal".to_owned()),
            common_names,
            species_code: Some(SAMPLE_SPECIES_CODE.to_owned()),
            confidence: Some(0.92),
            satellite_id: Some(SatelliteId::new()),
            satellite_name: Some("Backyard".to_owned()),
            detection_id: Some(detection),
            detected_at: Some(now),
            extra: serde_json::Map::new(),
            zone: Some(zone),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_notice_round_trips_through_json_with_extra_data_flattened() {
        let mut n = sample(TenantId::new());
        n.data.extra.insert("absentMinutes".to_owned(), serde_json::json!(45));
        let json = serde_json::to_value(&n).expect("json");
        assert_eq!(json["tenantId"], serde_json::json!(n.tenant_id.to_string()));
        assert_eq!(json["data"]["absentMinutes"], serde_json::json!(45));
        assert_eq!(json["data"]["commonNames"]["de"], "Rotkardinal");
        let back: Notice = serde_json::from_value(json).expect("back");
        assert_eq!(back, n);
    }

    #[test]
    fn the_sample_describes_a_cardinal_at_backyard() {
        let n = sample(TenantId::new());
        assert_eq!(n.event, "test");
        assert_eq!(n.data.species.as_deref(), Some("Cardinalis cardinalis"));
        assert_eq!(n.data.confidence, Some(0.92));
        assert_eq!(n.data.satellite_name.as_deref(), Some("Backyard"));
        assert!(n.data.detection_id.is_some());
        assert_ne!(sample(n.tenant_id).data.detection_id, n.data.detection_id, "a fresh detection id each time");
    }
}
