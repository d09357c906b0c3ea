//! Tenant and platform settings (SPEC 2.11, 2.18): fields, defaults and validation.
//! Stored one key per row; unknown stored keys are ignored, missing ones take the default.
//!
//! Reading them fails closed: a malformed stored value is refused alone ([`resolve`]); every other
//! key keeps its value, and a refused security setting takes its strictest value, never the
//! default (a broken `device_policy: admins` must not turn into `members`).

use serde::{Deserialize, Serialize, de::DeserializeOwned};
use serde_json::Value;

use std::collections::BTreeMap;

pub use super::setting_words::{Invalid, label, patch_setting};
use super::{
    detection_settings::{NotExpectedAction, UnconfirmedAction},
    outbound::TargetPolicy,
};

/// A settings struct stored one key per row.
pub trait StoredSettings: Serialize + DeserializeOwned + Default {
    /// What a security-relevant `key` resolves to when its stored value is malformed: its strictest
    /// value. `None` for keys whose default is harmless.
    fn strictest(key: &str) -> Option<Value>;
}

/// A stored key whose value was refused, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    pub key: String,
    pub reason: String,
    /// The refused key took its strictest value rather than the default.
    pub fail_closed: bool,
}

/// The settings from stored `(key, json)` rows over the defaults. Each well-formed value is kept;
/// each malformed one is refused and reported, its key taking the strictest value when it is a
/// security setting, else the default. Unknown keys (an older or newer hub's) are ignored.
pub fn resolve<T: StoredSettings>(rows: impl IntoIterator<Item = (String, String)>) -> (T, Vec<Refused>) {
    let Ok(Value::Object(mut map)) = serde_json::to_value(T::default()) else {
        return (T::default(), Vec::new());
    };
    let mut refused = Vec::new();
    for (key, json) in rows {
        if !map.contains_key(&key) {
            continue;
        }
        let fits = |v: &Value| {
            let mut trial = map.clone();
            trial.insert(key.clone(), v.clone());
            serde_json::from_value::<T>(Value::Object(trial)).map(|_| ())
        };
        let checked = serde_json::from_str::<Value>(&json).and_then(|v| fits(&v).map(|()| v));
        match checked {
            Ok(v) => {
                map.insert(key, v);
            }
            Err(e) => {
                let strict = T::strictest(&key);
                let fail_closed = strict.is_some();
                if let Some(v) = strict {
                    map.insert(key.clone(), v);
                }
                refused.push(Refused { key, reason: e.to_string(), fail_closed });
            }
        }
    }
    // Every value was checked in place above, so this holds; if not, fail closed on all of them.
    let settings = serde_json::from_value(Value::Object(map)).unwrap_or_else(|_| strictest_defaults());
    (settings, refused)
}

/// The defaults with every security setting at its strictest.
fn strictest_defaults<T: StoredSettings>() -> T {
    let Ok(Value::Object(mut map)) = serde_json::to_value(T::default()) else { return T::default() };
    for (key, slot) in map.iter_mut() {
        if let Some(v) = T::strictest(key) {
            *slot = v;
        }
    }
    serde_json::from_value(Value::Object(map)).unwrap_or_default()
}

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
    /// Every member must sign in with a second factor; those without one enrol at their next login.
    pub mfa_required: bool,
    /// A read-only page at `/public/<team id>` for anyone, without sign-in: today's species,
    /// the newest detections, species pages and the station map ([`crate::usecases::public_page`]).
    pub public_page_enabled: bool,
    /// The public page plays (and so lets anyone download) the detections' recordings.
    pub public_page_audio: bool,
    /// The public page's map shows the stations' exact positions, not rounded to about 1 km.
    pub public_page_exact_locations: bool,
    /// The public page's title ("Birds heard at <title>"); `None` takes the team's name. Separate
    /// from the name so a team called after its owner need not show a person's name to strangers.
    pub public_page_title: Option<String>,
    /// The team's IANA time zone (`Europe/Berlin`): "today", default ranges and scheduled
    /// exports, and the zone of its satellites with no position and no zone of their own. A new
    /// team takes the hub's zone (`store::zones::default_team_zone`).
    pub time_zone: String,
    // What is kept as a detection ([`super::detection_settings`], docs/detection-quality.md).
    /// Lowest confidence kept; `None` takes the hub's `inference.threshold`.
    pub min_confidence: Option<f64>,
    /// BirdNET's sensitivity (0.5 to 1.5; higher finds more); `None` is 1.0.
    pub sensitivity: Option<f64>,
    /// Lowest confidence kept per species code, over `min_confidence`.
    pub species_min_confidence: BTreeMap<String, f64>,
    /// Species never recorded ("never record this species here").
    pub exclude_species: Vec<String>,
    /// When not empty, only these species are recorded.
    pub include_species: Vec<String>,
    /// The range model's score at or above which a species counts as expected here this week.
    pub range_filter_threshold: f64,
    /// What a species that is not expected here gets: kept and flagged, a second look, or dropped.
    pub not_expected_action: NotExpectedAction,
    /// Hold detections below the sure level for a second look at the windows around them.
    pub second_look_enabled: bool,
    /// Detections at or above this (and expected here) are kept at once; below it they are held.
    pub second_look_sure_confidence: f64,
    /// A shifted or neighbouring window must name the species at least this confidently.
    pub second_look_min_confidence: f64,
    /// How long a held detection waits for the satellite's next chunk before it is decided.
    pub second_look_wait_sec: u32,
    /// What a held detection that was not confirmed becomes.
    pub second_look_unconfirmed: UnconfirmedAction,
    /// A chunk where the model hears a human voice loses its audio and its detections.
    pub privacy_filter_enabled: bool,
    /// How confident the model must be of a human voice for the privacy filter.
    pub privacy_min_confidence: f64,
    /// Non-bird classes (codes such as `dog`) that suppress `suppress_species` on that satellite.
    pub suppress_classes: Vec<String>,
    /// Species codes (or the group `owls`) a suppressing sound hides for `suppress_seconds`.
    pub suppress_species: Vec<String>,
    /// How confident the model must be of a suppressing sound.
    pub suppress_min_confidence: f64,
    /// How long a suppressing sound hides the suppressed species on its satellite.
    pub suppress_seconds: u32,
    /// The share of confirmed votes a learned threshold keeps a species at.
    pub learned_threshold_precision: f64,
    /// Votes a species needs in the team before a threshold is suggested for it.
    pub learned_threshold_min_votes: u32,
    /// Apply learned thresholds as they change, without a click.
    pub learned_threshold_auto_apply: bool,
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
            mfa_required: false,
            public_page_enabled: false,
            public_page_audio: false,
            public_page_exact_locations: false,
            public_page_title: None,
            time_zone: crate::time::hub_zone().name().to_owned(),
            min_confidence: None,
            sensitivity: None,
            species_min_confidence: BTreeMap::new(),
            exclude_species: Vec::new(),
            include_species: Vec::new(),
            range_filter_threshold: 0.03,
            not_expected_action: NotExpectedAction::default(),
            second_look_enabled: true,
            second_look_sure_confidence: 0.85,
            second_look_min_confidence: 0.5,
            second_look_wait_sec: 15,
            second_look_unconfirmed: UnconfirmedAction::default(),
            privacy_filter_enabled: true,
            privacy_min_confidence: 0.5,
            suppress_classes: vec!["dog".into()],
            suppress_species: vec![super::detection_settings::OWLS.into()],
            suppress_min_confidence: 0.5,
            suppress_seconds: 30,
            learned_threshold_precision: 0.95,
            learned_threshold_min_votes: 20,
            learned_threshold_auto_apply: false,
        }
    }
}

impl TenantSettings {
    /// Range checks; the message names the setting by its label, and a species by its code's
    /// scientific name.
    pub fn validate(&self) -> Result<(), String> {
        self.check(&super::detection_settings::scientific_name).map_err(|e| e.message)
    }

    /// [`Self::validate`], saying which setting was refused; `name` names a species.
    pub fn check(&self, name: &dyn Fn(&str) -> String) -> Result<(), Invalid> {
        let within = |key: &str, ok: bool, rule: &str| {
            if ok { Ok(()) } else { Err(Invalid::new(key, format!("{} must be {rule}.", label(key)))) }
        };
        within(
            "satellite_offline_threshold_minutes",
            (1..=1440).contains(&self.satellite_offline_threshold_minutes),
            "1 to 1440 minutes",
        )?;
        within("heartbeat_interval_sec", (5..=3600).contains(&self.heartbeat_interval_sec), "5 to 3600 seconds")?;
        within("filter_min_rms", (0.0..=1.0).contains(&self.filter_min_rms), "between 0 and 1")?;
        within("classifier_min_bird_prob", (0.0..=1.0).contains(&self.classifier_min_bird_prob), "between 0 and 1")?;
        within("outbox_soft_size_mb", self.outbox_soft_size_mb >= 1, "at least 1 MB")?;
        let soft = self.outbox_soft_size_mb;
        within(
            "outbox_hard_size_mb",
            self.outbox_hard_size_mb >= soft,
            &format!("at least the size where trimming starts ({soft} MB)"),
        )?;
        within("outbox_max_age_hours", (1..=24 * 365).contains(&self.outbox_max_age_hours), "1 to 8760 hours")?;
        // Only the languages the model ships names in: any other code would show codes, not names.
        let lang_ok = |l: &str| super::languages::KNOWN.iter().any(|k| k.code == l);
        let not_a_language = |key: &str, l: &str| {
            let message = format!(
                "{}: \u{201c}{l}\u{201d} is not a language species names come in. Choose one from the list, such as English or Deutsch.",
                label(key)
            );
            Invalid::new(key, message)
        };
        if !lang_ok(&self.primary_language) {
            return Err(not_a_language("primary_language", &self.primary_language));
        }
        if let Some(l) = self.secondary_language.as_deref().filter(|l| !lang_ok(l)) {
            return Err(not_a_language("secondary_language", l));
        }
        if let Some(t) = &self.public_page_title {
            within(
                "public_page_title",
                t.chars().count() <= 100 && !t.chars().any(char::is_control),
                "at most 100 characters, on one line",
            )?;
        }
        if super::zone::parse(&self.time_zone).is_err() {
            let message = format!(
                "\u{201c}{}\u{201d} is not a time zone. Choose one from the list, such as Europe/Berlin, Europe/London or America/New_York.",
                self.time_zone.trim()
            );
            return Err(Invalid::new("time_zone", message));
        }
        super::detection_settings::check(self, name)
    }
}

impl StoredSettings for TenantSettings {
    fn strictest(key: &str) -> Option<Value> {
        match key {
            // Only admins register and manage devices.
            "device_policy" => Some(Value::from("admins")),
            // Recordings of people's voices stay on the satellite.
            "drop_human_voice_at_satellite" | "privacy_filter_enabled" => Some(Value::from(true)),
            // Sign-in keeps its second factor.
            "mfa_required" => Some(Value::from(true)),
            // Nothing is shown to strangers that the team did not choose to show.
            "public_page_enabled" | "public_page_audio" | "public_page_exact_locations" => Some(Value::from(false)),
            _ => None,
        }
    }
}

/// Hub-wide settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PlatformSettings {
    /// Anyone may create an account at `POST /auth/register` (invites always work).
    pub allow_self_registration: bool,
    /// Signed-in users may create teams at `POST /auth/create-tenant` (platform admins always can).
    /// Off by default: whoever makes a team is its admin, so while it is on every team-admin power
    /// (uploads, imports, channels) is a power of every account (docs/accounts.md).
    pub allow_tenant_creation: bool,
    /// The addresses a team's webhook and chat channels may reach (`public`, `lan`, `loopback`);
    /// link-local and cloud metadata addresses never ([`super::outbound`]).
    pub channel_targets: TargetPolicy,
}

impl Default for PlatformSettings {
    fn default() -> Self {
        Self {
            allow_self_registration: false,
            // A household hub: the owner invites people into their team; new teams are the owner's
            // choice (the first-run page and `PUT /settings/platform` turn this on).
            allow_tenant_creation: false,
            // A household's own hub posts to Home Assistant or Node-RED on its LAN or on the same Pi.
            channel_targets: TargetPolicy::Loopback,
        }
    }
}

impl StoredSettings for PlatformSettings {
    fn strictest(key: &str) -> Option<Value> {
        match key {
            // Nobody gets an account or a team the hub's owner did not allow.
            "allow_self_registration" | "allow_tenant_creation" => Some(Value::from(false)),
            // Channels reach the internet only, never the hub's own network.
            "channel_targets" => Some(Value::from(TargetPolicy::Public.as_str())),
            _ => None,
        }
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
            // Each value alone first, so that a wrong type is reported with its setting's name.
            let mut alone = map.clone();
            alone.insert(k.clone(), v.clone());
            super::serde_words::from_value::<T>(serde_json::Value::Object(alone), "")?;
            map.insert(k.clone(), v.clone());
        }
    }
    super::serde_words::from_value(merged, "")
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
        let bad = TenantSettings { heartbeat_interval_sec: 1, ..base.clone() };
        assert_eq!(bad.validate().expect_err("too short"), "Heartbeat every must be 5 to 3600 seconds.");
        let klingon = TenantSettings { primary_language: "klingon".into(), ..base.clone() };
        let refused = klingon.check(&str::to_owned).expect_err("unknown language");
        assert_eq!(refused.field, "primary_language");
        assert!(refused.message.starts_with("Main language: \u{201c}klingon\u{201d}"), "{}", refused.message);
        let second = TenantSettings { secondary_language: Some("xx".into()), ..base.clone() };
        assert_eq!(second.check(&str::to_owned).expect_err("unknown language").field, "secondary_language");
        let mars = TenantSettings { time_zone: "Mars/Olympus".into(), ..base.clone() };
        let refused = mars.check(&str::to_owned).expect_err("no such zone");
        assert_eq!(refused.field, "time_zone");
        assert!(refused.message.starts_with("\u{201c}Mars/Olympus\u{201d} is not a time zone."), "{}", refused.message);
        assert!(TenantSettings { primary_language: "pt_BR".into(), ..base }.validate().is_ok());
    }

    fn rows(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
    }

    #[test]
    fn a_refused_patch_names_the_setting_in_words() {
        let refused =
            patch_setting(&PlatformSettings::default(), &serde_json::json!({"channel_targets": "everywhere"}))
                .expect_err("no such choice");
        assert_eq!(refused.field, "channel_targets");
        assert_eq!(
            refused.message,
            "Where alert channels may send: \u{201c}everywhere\u{201d} is not one of the choices."
        );
        let refused = patch_setting(&TenantSettings::default(), &serde_json::json!({"heartbeat_interval_sec": "soon"}))
            .expect_err("not a number");
        assert_eq!(refused.field, "heartbeat_interval_sec");
        assert_eq!(refused.message, "Heartbeat every must be a whole number of 0 or more, not \"soon\".");
        let refused = patch_setting(&TenantSettings::default(), &serde_json::json!({"nope": 1})).expect_err("unknown");
        assert_eq!(
            (refused.field.as_str(), refused.message.as_str()),
            ("nope", "There is no setting called \u{201c}nope\u{201d}.")
        );
    }

    #[test]
    fn one_malformed_value_leaves_the_others_alone() {
        let (s, refused): (TenantSettings, _) = resolve(rows(&[
            ("device_policy", r#""admins""#),
            ("heartbeat_interval_sec", r#""soon""#),
            ("filter_min_rms", "0.01"),
            ("no_longer_a_setting", "1"),
        ]));
        assert_eq!(s.device_policy, DevicePolicy::Admins, "kept, not reset to the default");
        assert_eq!(s.filter_min_rms, 0.01);
        assert_eq!(s.heartbeat_interval_sec, 30, "the malformed one takes its default");
        assert_eq!(refused.len(), 1);
        assert_eq!(refused[0].key, "heartbeat_interval_sec");
        assert!(!refused[0].fail_closed);
    }

    #[test]
    fn a_malformed_security_setting_takes_its_strictest_value() {
        for bad in [r#""everyone""#, "1", "not json", "null"] {
            let (s, refused): (TenantSettings, _) =
                resolve(rows(&[("device_policy", bad), ("drop_human_voice_at_satellite", r#""no""#)]));
            assert_eq!(s.device_policy, DevicePolicy::Admins, "{bad}");
            assert!(s.drop_human_voice_at_satellite);
            assert!(refused.iter().all(|r| r.fail_closed), "{refused:?}");
        }
        let (p, _): (PlatformSettings, _) =
            resolve(rows(&[("allow_self_registration", "\"yes\""), ("allow_tenant_creation", "{}")]));
        assert!(!p.allow_self_registration && !p.allow_tenant_creation);
        let (p, _): (PlatformSettings, _) = resolve(rows(&[("channel_targets", "\"everywhere\"")]));
        assert_eq!(p.channel_targets, TargetPolicy::Public, "a broken policy reaches the internet only");
        assert_eq!(PlatformSettings::default().channel_targets, TargetPolicy::Loopback);
    }
}
