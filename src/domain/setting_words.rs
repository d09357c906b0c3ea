//! Refused team and platform settings in words: which setting ([`Invalid::field`], for programs
//! and for the dashboard, which marks that field) and why, naming the setting by the label the
//! dashboard gives it ([`label`]), never by its key.

use serde::{Deserialize, Serialize};

use super::settings::patch;

/// A refused setting: which one, and why in words a person reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invalid {
    /// The setting's key, or `key.code` for one species' entry of a per-species setting: for
    /// programs (the API's `field`) and for the dashboard, which marks that field.
    pub field: String,
    /// A sentence naming the setting by its label (never its key) and a species by its name.
    pub message: String,
}

impl Invalid {
    pub fn new(field: &str, message: String) -> Self {
        Self { field: field.to_owned(), message }
    }
}

impl std::fmt::Display for Invalid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// A team or platform setting's name as the dashboard labels it (its key only when unknown).
pub fn label(key: &str) -> &str {
    match key {
        "mfa_required" => "Two-factor required for members",
        "device_policy" => "Who registers satellites",
        "time_zone" => "The team's time zone",
        "primary_language" => "Main language",
        "secondary_language" => "Second language",
        "satellite_offline_threshold_minutes" => "Offline after",
        "heartbeat_interval_sec" => "Heartbeat every",
        "filter_enabled" => "Skip quiet recordings",
        "filter_min_rms" => "Minimum loudness",
        "classifier_min_bird_prob" => "Minimum bird likelihood",
        "outbox_soft_size_mb" => "Start trimming old recordings at",
        "outbox_hard_size_mb" => "Never hold more than",
        "outbox_max_age_hours" => "Keep unsent recordings for at most",
        "public_page_enabled" => "Public page",
        "public_page_audio" => "Recordings on the public page",
        "public_page_exact_locations" => "Exact places on the public page",
        "public_page_title" => "The public page's title",
        "min_confidence" => "Minimum confidence",
        "sensitivity" => "Sensitivity",
        "species_min_confidence" => "Minimum confidence per species",
        "exclude_species" => "Never record these species",
        "include_species" => "Only record these species",
        "range_filter_threshold" => "Expected-here threshold",
        "not_expected_action" => "A species not expected here",
        "second_look_enabled" => "Second look",
        "second_look_sure_confidence" => "Sure level",
        "second_look_min_confidence" => "Confirm level",
        "second_look_wait_sec" => "Wait for the next chunk",
        "second_look_unconfirmed" => "A held detection that is not confirmed",
        "privacy_filter_enabled" => "Privacy filter",
        "privacy_min_confidence" => "Human voice level",
        "suppress_classes" => "Sounds that suppress",
        "suppress_species" => "Species they suppress",
        "suppress_min_confidence" => "Sound level",
        "suppress_seconds" => "Suppression time",
        "learned_threshold_precision" => "Share of confirmed votes a learned threshold keeps",
        "learned_threshold_min_votes" => "Votes a species needs",
        "learned_threshold_auto_apply" => "Apply learned thresholds as they change",
        "allow_self_registration" => "Anyone may create an account",
        "allow_tenant_creation" => "Signed-in people may create teams",
        "channel_targets" => "Where alert channels may send",
        other => other,
    }
}

/// [`patch`] for the team's and the platform's settings: a refusal names the setting it is about
/// by its label, and a wrong choice says so without listing the stored values.
pub fn patch_setting<T>(current: &T, changes: &serde_json::Value) -> Result<T, Invalid>
where
    T: Serialize + for<'de> Deserialize<'de>,
{
    let keys: Vec<String> = changes.as_object().map(|m| m.keys().cloned().collect()).unwrap_or_default();
    patch(current, changes).map_err(|message| {
        // serde_words names the field first, in backticks: `key` or `key.inner`.
        let named = message.strip_prefix('`').and_then(|rest| rest.split_once('`'));
        let Some((path, rest)) = named else {
            let unknown = keys.iter().find(|k| message.contains(&format!("{k:?}")));
            return match unknown {
                Some(k) => Invalid::new(k, format!("There is no setting called \u{201c}{k}\u{201d}.")),
                None => Invalid::new("", message),
            };
        };
        let key = path.split('.').next().unwrap_or(path);
        let words = if rest.contains("must be one of") {
            let got = rest.rsplit_once("(not ").map(|(_, g)| g.trim_end_matches(')').trim_matches('"')).unwrap_or("");
            format!("{}: \u{201c}{got}\u{201d} is not one of the choices.", label(key))
        } else {
            format!("{}{}.", label(key), rest.replace("empty (null)", "empty").trim_end_matches('.'))
        };
        Invalid::new(path, words)
    })
}
