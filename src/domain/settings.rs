//! Tenant and platform settings (SPEC 2.11, 2.18): fields, defaults and validation.
//! Stored one key per row; unknown stored keys are ignored, missing ones take the default.

use serde::{Deserialize, Serialize};

/// Who may register satellites in a team (SPEC 5.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DevicePolicy {
    Members,
    Admins,
}

/// A team's settings. Field names are the SPEC's (snake_case) on the wire too.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TenantSettings {
    pub drop_amphibian_at_satellite: bool,
    pub drop_insect_at_satellite: bool,
    pub drop_anthropogenic_at_satellite: bool,
    pub drop_human_voice_at_satellite: bool,
    pub drop_other_animal_at_satellite: bool,
    /// Minutes without a heartbeat before a satellite counts as offline.
    pub satellite_offline_threshold_minutes: u32,
    pub heartbeat_interval_sec: u32,
    pub device_policy: DevicePolicy,
    pub filter_enabled: bool,
    pub filter_min_rms: f64,
    pub classifier_min_bird_prob: f64,
    pub outbox_soft_size_mb: u32,
    pub outbox_hard_size_mb: u32,
    pub outbox_max_age_hours: u32,
    /// Languages of species names in notifications (codes of the shipped label files).
    pub primary_language: String,
    pub secondary_language: Option<String>,
}

impl Default for TenantSettings {
    fn default() -> Self {
        Self {
            drop_amphibian_at_satellite: true,
            drop_insect_at_satellite: true,
            drop_anthropogenic_at_satellite: true,
            drop_human_voice_at_satellite: true,
            drop_other_animal_at_satellite: true,
            satellite_offline_threshold_minutes: 5,
            heartbeat_interval_sec: 30,
            device_policy: DevicePolicy::Members,
            filter_enabled: true,
            filter_min_rms: 0.002,
            classifier_min_bird_prob: 0.1,
            outbox_soft_size_mb: 512,
            outbox_hard_size_mb: 1024,
            outbox_max_age_hours: 72,
            primary_language: "en".into(),
            secondary_language: None,
        }
    }
}

impl TenantSettings {
    /// Range checks; the message names the field.
    pub fn validate(&self) -> Result<(), String> {
        let check = |ok: bool, msg: &str| if ok { Ok(()) } else { Err(msg.to_owned()) };
        check(
            (1..=1440).contains(&self.satellite_offline_threshold_minutes),
            "satellite_offline_threshold_minutes must be 1 to 1440",
        )?;
        check((5..=3600).contains(&self.heartbeat_interval_sec), "heartbeat_interval_sec must be 5 to 3600")?;
        check((0.0..=1.0).contains(&self.filter_min_rms), "filter_min_rms must be between 0 and 1")?;
        check(
            (0.0..=1.0).contains(&self.classifier_min_bird_prob),
            "classifier_min_bird_prob must be between 0 and 1",
        )?;
        check(self.outbox_soft_size_mb >= 1, "outbox_soft_size_mb must be at least 1")?;
        check(
            self.outbox_hard_size_mb >= self.outbox_soft_size_mb,
            "outbox_hard_size_mb must be at least outbox_soft_size_mb",
        )?;
        check((1..=24 * 365).contains(&self.outbox_max_age_hours), "outbox_max_age_hours must be 1 to 8760")?;
        let lang_ok =
            |l: &str| !l.is_empty() && l.len() <= 8 && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        check(lang_ok(&self.primary_language), "primary_language must be a language code such as en or pt_BR")?;
        check(self.secondary_language.as_deref().is_none_or(lang_ok), "secondary_language must be a language code")?;
        Ok(())
    }
}

/// Hub-wide settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PlatformSettings {
    /// Anyone may create an account at `POST /auth/register` (invites always work).
    pub allow_self_registration: bool,
    /// Signed-in users may create teams at `POST /auth/create-tenant` (platform admins always can).
    pub allow_tenant_creation: bool,
}

impl Default for PlatformSettings {
    fn default() -> Self {
        Self { allow_self_registration: false, allow_tenant_creation: true }
    }
}

/// Merges a JSON patch (only the keys present) over `current`, then validates the whole.
pub fn patch<T>(current: &T, patch: &serde_json::Value) -> Result<T, String>
where
    T: Serialize + for<'de> Deserialize<'de>,
{
    let serde_json::Value::Object(changes) = patch else {
        return Err("the body must be a JSON object of settings".into());
    };
    let mut merged = serde_json::to_value(current).map_err(|e| e.to_string())?;
    if let serde_json::Value::Object(map) = &mut merged {
        for (k, v) in changes {
            if !map.contains_key(k) {
                return Err(format!("unknown setting {k:?}"));
            }
            map.insert(k.clone(), v.clone());
        }
    }
    serde_json::from_value(merged).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patch_changes_only_given_keys_and_checks_types() {
        let base = TenantSettings::default();
        let next: TenantSettings = patch(&base, &serde_json::json!({"device_policy": "admins"})).expect("patch");
        assert_eq!(next.device_policy, DevicePolicy::Admins);
        assert_eq!(next.heartbeat_interval_sec, 30);
        assert!(patch(&base, &serde_json::json!({"heartbeat_interval_sec": "soon"})).is_err());
        assert!(patch(&base, &serde_json::json!({"nope": 1})).expect_err("unknown key").contains("nope"));
        let bad = TenantSettings { heartbeat_interval_sec: 1, ..base };
        assert!(bad.validate().expect_err("too short").contains("heartbeat_interval_sec"));
    }
}
