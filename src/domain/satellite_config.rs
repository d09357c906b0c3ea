//! A satellite's configuration (SPEC 2.5, 2.11): per-field resolution override > tenant setting >
//! default, the recording profile, and the `config` message pushed over MQTT.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use std::collections::BTreeMap;

use super::{
    detection_settings::{Merge, NotExpectedAction},
    settings::TenantSettings,
};

/// Per-satellite overrides; `None` inherits the team's setting.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Overrides {
    pub filter_enabled: Option<bool>,
    pub filter_min_rms: Option<f64>,
    pub classifier_min_bird_prob: Option<f64>,
    pub outbox_soft_size_mb: Option<u32>,
    pub outbox_hard_size_mb: Option<u32>,
    pub outbox_max_age_hours: Option<u32>,
    pub heartbeat_interval_sec: Option<u32>,
    pub drop_amphibian_at_satellite: Option<bool>,
    pub drop_insect_at_satellite: Option<bool>,
    pub drop_anthropogenic_at_satellite: Option<bool>,
    pub drop_human_voice_at_satellite: Option<bool>,
    pub drop_other_animal_at_satellite: Option<bool>,
    // Detection settings (docs/detection-quality.md); see [`Merge`] for how lists combine.
    pub min_confidence: Option<f64>,
    pub sensitivity: Option<f64>,
    /// Entries replace the team's for the same species.
    pub species_min_confidence: Option<BTreeMap<String, f64>>,
    /// Added to the team's list.
    pub exclude_species: Option<Vec<String>>,
    /// Replaces the team's list.
    pub include_species: Option<Vec<String>>,
    pub range_filter_threshold: Option<f64>,
    pub not_expected_action: Option<NotExpectedAction>,
}

impl Overrides {
    /// Reads stored overrides, keeping every key that parses: one unknown key or wrong type
    /// must not throw away the satellite's other overrides. See [`Overrides::sanitized`] for
    /// the version that also checks values against the team's settings and reports what it drops.
    pub fn from_stored(json: &str) -> Self {
        match serde_json::from_str::<Value>(json) {
            Ok(value) => Self::default().leniently(&value, None).0,
            Err(_) => Self::default(),
        }
    }

    /// Stored overrides as the hub applies them: each key that is unknown, has the wrong type, or
    /// would make the resolved settings invalid is dropped and reported; every other key is kept.
    pub fn sanitized(json: &str, tenant: &TenantSettings) -> (Self, Vec<Dropped>) {
        match serde_json::from_str::<Value>(json) {
            Ok(value) => Self::default().leniently(&value, Some(tenant)),
            Err(e) => (Self::default(), vec![Dropped { key: "*".into(), reason: format!("not JSON: {e}") }]),
        }
    }

    /// Like [`Overrides::patched`], but a bad key is dropped (and reported) instead of refusing
    /// the whole patch. For devices, which cannot be answered with an error.
    pub fn patched_leniently(&self, patch: &Value, tenant: &TenantSettings) -> (Self, Vec<Dropped>) {
        self.leniently(patch, Some(tenant))
    }

    /// Applies the keys of `patch` one at a time, in key order, keeping each that leaves a valid
    /// result. Validation against `tenant` is skipped when there is none.
    fn leniently(&self, patch: &Value, tenant: Option<&TenantSettings>) -> (Self, Vec<Dropped>) {
        let Value::Object(changes) = patch else {
            return (self.clone(), vec![Dropped { key: "*".into(), reason: "overrides must be a JSON object".into() }]);
        };
        let mut kept = self.clone();
        let mut dropped = Vec::new();
        for (key, value) in changes {
            let one = Value::Object([(key.clone(), value.clone())].into_iter().collect());
            let next = match tenant {
                Some(t) => kept.patched(&one, t),
                None => kept.merged(&one),
            };
            match next {
                Ok(next) => kept = next,
                Err(reason) => dropped.push(Dropped { key: key.clone(), reason }),
            }
        }
        (kept, dropped)
    }

    /// Applies a patch object: present keys replace (null clears the override), absent keys stay.
    /// Unknown keys and wrong types are refused; the merged result must resolve to valid settings.
    pub fn patched(&self, patch: &Value, tenant: &TenantSettings) -> Result<Self, String> {
        let next = self.merged(patch)?;
        next.apply(tenant).validate()?;
        Ok(next)
    }

    /// The merge of [`Overrides::patched`] without the check against the team's settings.
    fn merged(&self, patch: &Value) -> Result<Self, String> {
        let Value::Object(changes) = patch else { return Err("overrides must be a JSON object".into()) };
        let mut merged = serde_json::to_value(self).map_err(|e| e.to_string())?;
        if let Value::Object(map) = &mut merged {
            for (k, v) in changes {
                // Known by name too: stored overrides written before a key existed lack it.
                if !map.contains_key(k) && !super::detection_settings::SATELLITE_KEYS.contains(&k.as_str()) {
                    return Err(format!("unknown override {k:?}"));
                }
                map.insert(k.clone(), v.clone());
            }
        }
        super::serde_words::from_value(merged, "")
    }

    /// The team's settings with these overrides applied.
    pub fn apply(&self, t: &TenantSettings) -> TenantSettings {
        let mut merged = self.apply_device(t);
        Merge {
            min_confidence: self.min_confidence,
            sensitivity: self.sensitivity,
            species_min_confidence: self.species_min_confidence.as_ref(),
            exclude_species: self.exclude_species.as_ref(),
            include_species: self.include_species.as_ref(),
            range_filter_threshold: self.range_filter_threshold,
            not_expected_action: self.not_expected_action,
        }
        .apply(&mut merged);
        merged
    }

    /// The device fields of [`Overrides::apply`].
    fn apply_device(&self, t: &TenantSettings) -> TenantSettings {
        TenantSettings {
            filter_enabled: self.filter_enabled.unwrap_or(t.filter_enabled),
            filter_min_rms: self.filter_min_rms.unwrap_or(t.filter_min_rms),
            classifier_min_bird_prob: self.classifier_min_bird_prob.unwrap_or(t.classifier_min_bird_prob),
            outbox_soft_size_mb: self.outbox_soft_size_mb.unwrap_or(t.outbox_soft_size_mb),
            outbox_hard_size_mb: self.outbox_hard_size_mb.unwrap_or(t.outbox_hard_size_mb),
            outbox_max_age_hours: self.outbox_max_age_hours.unwrap_or(t.outbox_max_age_hours),
            heartbeat_interval_sec: self.heartbeat_interval_sec.unwrap_or(t.heartbeat_interval_sec),
            drop_amphibian_at_satellite: self.drop_amphibian_at_satellite.unwrap_or(t.drop_amphibian_at_satellite),
            drop_insect_at_satellite: self.drop_insect_at_satellite.unwrap_or(t.drop_insect_at_satellite),
            drop_anthropogenic_at_satellite: self
                .drop_anthropogenic_at_satellite
                .unwrap_or(t.drop_anthropogenic_at_satellite),
            drop_human_voice_at_satellite: self
                .drop_human_voice_at_satellite
                .unwrap_or(t.drop_human_voice_at_satellite),
            drop_other_animal_at_satellite: self
                .drop_other_animal_at_satellite
                .unwrap_or(t.drop_other_animal_at_satellite),
            ..t.clone()
        }
    }
}

/// An override key that was left out, and why (for the log).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dropped {
    pub key: String,
    pub reason: String,
}

impl std::fmt::Display for Dropped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.key, self.reason)
    }
}

/// One window of the recording schedule (SPEC 2.5).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScheduleEntry {
    pub start: String,
    pub end: String,
    /// `sunrise`, `sunset` or `absolute`.
    pub reference: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RecordingProfile {
    #[serde(rename = "type")]
    pub kind: String,
    pub schedule: Vec<ScheduleEntry>,
    pub sample_rate: u32,
    pub chunk_duration_ms: u32,
    pub overlap_ms: u32,
    pub gain: f64,
}

impl Default for RecordingProfile {
    fn default() -> Self {
        Self {
            kind: "continuous".into(),
            schedule: Vec::new(),
            sample_rate: 48_000,
            chunk_duration_ms: 3000,
            overlap_ms: 0,
            gain: 1.0,
        }
    }
}

impl RecordingProfile {
    pub fn validate(&self) -> Result<(), String> {
        if self.kind.trim().is_empty() || self.kind.len() > 64 {
            return Err("type must be 1 to 64 characters".into());
        }
        if !(8_000..=96_000).contains(&self.sample_rate) {
            return Err("sampleRate must be 8000 to 96000".into());
        }
        if !(1_000..=10_000).contains(&self.chunk_duration_ms) {
            return Err("chunkDurationMs must be 1000 to 10000".into());
        }
        if self.overlap_ms >= self.chunk_duration_ms {
            return Err("overlapMs must be shorter than chunkDurationMs".into());
        }
        if !(0.0..=100.0).contains(&self.gain) {
            return Err("gain must be between 0 and 100".into());
        }
        for (i, e) in self.schedule.iter().enumerate() {
            let ok = match e.reference.as_str() {
                "absolute" => e.absolute_times().is_some(),
                "sunrise" | "sunset" => e.minute_offsets().is_some(),
                _ => false,
            };
            if !ok {
                return Err(format!(
                    "schedule[{i}]: reference must be sunrise/sunset (minute offsets) or absolute (HH:MM)"
                ));
            }
        }
        Ok(())
    }
}

impl ScheduleEntry {
    /// Start and end of an `absolute` entry as local times (`HH:MM`); `None` when either is not.
    pub fn absolute_times(&self) -> Option<(chrono::NaiveTime, chrono::NaiveTime)> {
        Some((hh_mm(&self.start)?, hh_mm(&self.end)?))
    }

    /// Start and end of a `sunrise`/`sunset` entry as minute offsets (-720 to 720; negative is
    /// before the event); `None` when either is not.
    pub fn minute_offsets(&self) -> Option<(i64, i64)> {
        Some((minutes(&self.start)?, minutes(&self.end)?))
    }
}

fn hh_mm(s: &str) -> Option<chrono::NaiveTime> {
    let (h, m) = s.split_once(':')?;
    if h.len() != 2 || m.len() != 2 {
        return None;
    }
    chrono::NaiveTime::from_hms_opt(h.parse().ok()?, m.parse().ok()?, 0)
}

fn minutes(s: &str) -> Option<i64> {
    s.parse::<i64>().ok().filter(|m| (-720..=720).contains(m))
}

/// The `config` message of SPEC 2.5.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConfigPush {
    pub satellite_id: String,
    pub tenant_id: String,
    pub recording_profile: RecordingProfile,
    pub heartbeat_interval_sec: u32,
    pub filter_enabled: bool,
    pub filter_min_rms: f64,
    pub classifier_min_bird_prob: f64,
    pub excluded_classifier_categories: Vec<String>,
    pub outbox_soft_size_mb: u32,
    pub outbox_hard_size_mb: u32,
    pub outbox_max_age_hours: u32,
}

/// Resolves the effective config of a satellite.
pub fn resolve(
    satellite_id: &str,
    tenant_id: &str,
    tenant: &TenantSettings,
    overrides: &Overrides,
    profile: Option<RecordingProfile>,
) -> ConfigPush {
    let s = overrides.apply(tenant);
    let excluded = [
        ("anthropogenic", s.drop_anthropogenic_at_satellite),
        ("human_voice", s.drop_human_voice_at_satellite),
        ("amphibian", s.drop_amphibian_at_satellite),
        ("insect", s.drop_insect_at_satellite),
        ("other_animal", s.drop_other_animal_at_satellite),
    ]
    .iter()
    .filter(|(_, drop)| *drop)
    .map(|(name, _)| (*name).to_owned())
    .collect();
    ConfigPush {
        satellite_id: satellite_id.into(),
        tenant_id: tenant_id.into(),
        recording_profile: profile.unwrap_or_default(),
        heartbeat_interval_sec: s.heartbeat_interval_sec,
        filter_enabled: s.filter_enabled,
        filter_min_rms: s.filter_min_rms,
        classifier_min_bird_prob: s.classifier_min_bird_prob,
        excluded_classifier_categories: excluded,
        outbox_soft_size_mb: s.outbox_soft_size_mb,
        outbox_hard_size_mb: s.outbox_hard_size_mb,
        outbox_max_age_hours: s.outbox_max_age_hours,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn override_beats_tenant_beats_default() {
        let tenant =
            TenantSettings { heartbeat_interval_sec: 60, drop_insect_at_satellite: false, ..TenantSettings::default() };
        let o = Overrides::default()
            .patched(&json!({"heartbeat_interval_sec": 15, "drop_amphibian_at_satellite": false}), &tenant)
            .expect("patch");
        let c = resolve("s", "t", &tenant, &o, None);
        assert_eq!(c.heartbeat_interval_sec, 15, "override");
        assert_eq!(c.outbox_soft_size_mb, 512, "default through the tenant");
        assert_eq!(c.excluded_classifier_categories, ["anthropogenic", "human_voice", "other_animal"]);
        let cleared = o.patched(&json!({"heartbeat_interval_sec": null}), &tenant).expect("clear");
        assert_eq!(resolve("s", "t", &tenant, &cleared, None).heartbeat_interval_sec, 60, "null inherits again");
        assert!(o.patched(&json!({"bogus": 1}), &tenant).is_err());
        assert!(o.patched(&json!({"heartbeat_interval_sec": "x"}), &tenant).is_err());
        assert!(o.patched(&json!({"heartbeat_interval_sec": 1}), &tenant).is_err(), "resolved values are validated");
    }

    #[test]
    fn bad_stored_keys_are_dropped_one_by_one_and_the_good_ones_kept() {
        let tenant = TenantSettings::default();
        let stored = json!({"filter_min_rms": 0.02, "bogus": 1, "heartbeat_interval_sec": "x",
                            "outbox_max_age_hours": 48, "classifier_min_bird_prob": 7.0})
        .to_string();
        let (o, dropped) = Overrides::sanitized(&stored, &tenant);
        assert_eq!(o.filter_min_rms, Some(0.02));
        assert_eq!(o.outbox_max_age_hours, Some(48));
        assert_eq!((o.heartbeat_interval_sec, o.classifier_min_bird_prob), (None, None));
        let mut keys: Vec<&str> = dropped.iter().map(|d| d.key.as_str()).collect();
        keys.sort_unstable();
        assert_eq!(keys, ["bogus", "classifier_min_bird_prob", "heartbeat_interval_sec"]);
        assert!(o.apply(&tenant).validate().is_ok(), "what is kept resolves to valid settings");

        let lenient = Overrides::from_stored(&stored);
        assert_eq!(lenient.filter_min_rms, Some(0.02), "from_stored keeps the keys that parse");
        assert_eq!(lenient.classifier_min_bird_prob, Some(7.0), "it does not know the team's settings");
        assert_eq!(Overrides::from_stored("not json"), Overrides::default());
        assert_eq!(Overrides::sanitized("[1]", &tenant).0, Overrides::default());

        let (patched, dropped) = o.patched_leniently(&json!({"heartbeat_interval_sec": 20, "nope": true}), &tenant);
        assert_eq!((patched.heartbeat_interval_sec, patched.filter_min_rms), (Some(20), Some(0.02)));
        assert_eq!(dropped.len(), 1);
        assert_eq!(dropped[0].key, "nope");
        assert!(
            o.patched(&json!({"heartbeat_interval_sec": 20, "nope": true}), &tenant).is_err(),
            "strict stays strict"
        );
    }

    #[test]
    fn detection_overrides_are_set_and_cleared_by_a_patch() {
        let team = TenantSettings::default();
        let set = Overrides::default()
            .patched(&serde_json::json!({ "min_confidence": 0.9, "exclude_species": ["strix_aluco"] }), &team)
            .expect("known overrides");
        assert_eq!(set.min_confidence, Some(0.9));
        assert_eq!(set.exclude_species.as_deref(), Some(&["strix_aluco".to_owned()][..]));
        let cleared = set.patched(&serde_json::json!({ "min_confidence": null }), &team).expect("null clears");
        assert_eq!(cleared.min_confidence, None);
        assert!(cleared.exclude_species.is_some(), "the others stay");
        let bad = Overrides::default().patched(&serde_json::json!({ "min_confidence": 1.5 }), &team);
        let said = bad.expect_err("out of range");
        assert!(said.contains("inimum confidence must be between 0.01 and 0.99"), "names the setting in words: {said}");
        assert!(
            Overrides::default().patched(&serde_json::json!({ "nope": 1 }), &team).is_err(),
            "unknown stays unknown"
        );
    }

    #[test]
    fn profiles_are_validated() {
        let mut p = RecordingProfile::default();
        assert!(p.validate().is_ok());
        p.schedule = vec![ScheduleEntry { start: "-30".into(), end: "90".into(), reference: "sunrise".into() }];
        assert!(p.validate().is_ok());
        p.schedule.push(ScheduleEntry { start: "25:00".into(), end: "06:00".into(), reference: "absolute".into() });
        assert!(p.validate().is_err());
        let q = RecordingProfile { overlap_ms: 3000, ..RecordingProfile::default() };
        assert!(q.validate().is_err());
    }
}
