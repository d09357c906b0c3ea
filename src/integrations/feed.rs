//! The feed's topics and message shapes (docs/mqtt-feed.md). Everything lives under
//! `integrations.feed.root`, outside the satellites' tree; keys are snake_case for templates.

use serde::Serialize;

use crate::{
    events::DetectionCreated,
    ids::SatelliteId,
    store::home_feed::{LastDetection, SatelliteFacts},
    time::Timestamp,
};

/// The availability payloads (Home Assistant's defaults).
pub const ONLINE: &str = "online";
pub const OFFLINE: &str = "offline";

/// The topic names under one feed root.
#[derive(Debug, Clone)]
pub struct Topics {
    root: String,
}

impl Topics {
    pub fn new(root: &str) -> Self {
        Self { root: root.to_owned() }
    }

    /// The hub's figures ([`HubState`]), retained.
    pub fn hub_state(&self) -> String {
        format!("{}/hub/state", self.root)
    }

    /// `online` while the hub publishes, `offline` once it stopped; retained.
    pub fn hub_availability(&self) -> String {
        format!("{}/hub/availability", self.root)
    }

    /// One satellite's figures ([`SatelliteState`]), retained.
    pub fn satellite_state(&self, s: SatelliteId) -> String {
        format!("{}/satellites/{s}/state", self.root)
    }

    /// `online` or `offline`, as the hub's satellite monitor sees it; retained.
    pub fn satellite_availability(&self, s: SatelliteId) -> String {
        format!("{}/satellites/{s}/availability", self.root)
    }

    /// The satellite's last detection ([`LastDetectionAttributes`]), retained.
    pub fn last_detection(&self, s: SatelliteId) -> String {
        format!("{}/satellites/{s}/last_detection", self.root)
    }

    /// Every new detection ([`DetectionMessage`]), not retained.
    pub fn detections(&self) -> String {
        format!("{}/detections", self.root)
    }

    /// Every alert raised, as `GET /alerts` shows it; not retained.
    pub fn alerts(&self) -> String {
        format!("{}/alerts", self.root)
    }
}

/// `{root}/hub/state`.
#[derive(Debug, Clone, Serialize)]
pub struct HubState<'a> {
    pub team: &'a str,
    pub detections_today: u64,
    pub species_today: u64,
    pub queue_length: u64,
    pub version: &'a str,
}

/// `{root}/satellites/{id}/state`.
#[derive(Debug, Clone, Serialize)]
pub struct SatelliteState<'a> {
    pub name: &'a str,
    /// Common name of the newest detection, or null before the first.
    pub last_species: Option<&'a str>,
    pub detections_today: u64,
    pub species_today: u64,
    /// From the newest telemetry sample, in °C; null until the satellite sends one.
    pub cpu_temperature: Option<f64>,
    /// From the newest telemetry sample, in MB (10^6 bytes); null until the satellite sends one.
    pub free_storage_mb: Option<f64>,
    pub last_seen_at: Option<Timestamp>,
}

impl<'a> SatelliteState<'a> {
    pub fn of(s: &'a SatelliteFacts) -> Self {
        Self {
            name: &s.name,
            last_species: s.last.as_ref().map(|l| l.common_name.as_str()),
            detections_today: s.detections_today,
            species_today: s.species_today,
            cpu_temperature: s.cpu_temp.map(|t| (t * 10.0).round() / 10.0),
            free_storage_mb: s.storage_free_bytes.map(|b| (b as f64 / 1e5).round() / 10.0),
            last_seen_at: s.last_seen_at,
        }
    }
}

/// `{root}/satellites/{id}/last_detection`: the attributes of the last-species sensor.
#[derive(Debug, Clone, Serialize)]
pub struct LastDetectionAttributes<'a> {
    pub common_name: &'a str,
    pub scientific_name: &'a str,
    pub species_code: &'a str,
    pub confidence: f64,
    pub detected_at: Timestamp,
    /// The species picture, where the team's public page is on (so the link needs no sign-in).
    pub image_url: Option<String>,
}

impl<'a> LastDetectionAttributes<'a> {
    pub fn of(l: &'a LastDetection, image_url: Option<String>) -> Self {
        Self {
            common_name: &l.common_name,
            scientific_name: &l.scientific_name,
            species_code: &l.species_code,
            confidence: (l.confidence * 1000.0).round() / 1000.0,
            detected_at: l.detected_at,
            image_url,
        }
    }
}

/// `{root}/detections`: one message per new detection of the team.
#[derive(Debug, Clone, Serialize)]
pub struct DetectionMessage<'a> {
    pub id: String,
    pub satellite_id: SatelliteId,
    pub satellite_name: &'a str,
    pub species_code: &'a str,
    pub common_name: &'a str,
    pub scientific_name: &'a str,
    pub confidence: f64,
    pub detected_at: Timestamp,
    pub is_rare: bool,
    pub is_first_of_day: bool,
    pub is_first_of_season: bool,
    pub image_url: Option<String>,
}

impl<'a> DetectionMessage<'a> {
    pub fn of(d: &'a DetectionCreated, image_url: Option<String>) -> Self {
        Self {
            id: d.id.to_string(),
            satellite_id: d.satellite_id,
            satellite_name: &d.satellite_name,
            species_code: &d.species_code,
            common_name: &d.common_name,
            scientific_name: &d.scientific_name,
            confidence: (f64::from(d.confidence) * 1000.0).round() / 1000.0,
            detected_at: d.detected_at.into(),
            is_rare: d.is_rare,
            is_first_of_day: d.is_first_of_day,
            is_first_of_season: d.is_first_of_season,
            image_url,
        }
    }
}
