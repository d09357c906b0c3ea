//! The audit log in words: each action as a sentence naming its object ("Satellite "Garden"
//! registered again", "Two-factor sign-in turned on"), and each recorded change as a line
//! ("Heartbeat every (seconds): 30 → 45"). Old entries, written before entries named their object
//! or listed their changes, read as well as their details allow.

use serde_json::Value;

/// ` "Garden"` when the object has a name, else nothing.
fn q(name: Option<&str>) -> String {
    name.filter(|n| !n.trim().is_empty()).map(|n| format!(" \"{n}\"")).unwrap_or_default()
}

/// The sentence of `action` about the object called `name` (when known); `details` refines a few.
pub fn summary(action: &str, name: Option<&str>, details: &Value) -> String {
    let n = q(name);
    let d = |k: &str| details[k].as_str().unwrap_or_default();
    let s = match action {
        "satellite.registered" => format!("Satellite{n} registered"),
        "satellite.reregistered" => format!("Satellite{n} registered again"),
        "admin.satellite_renamed" => match (d("from"), d("to")) {
            (from, to) if !from.is_empty() && !to.is_empty() => format!("Satellite \"{from}\" renamed \"{to}\""),
            _ => format!("Satellite{n} renamed"),
        },
        "admin.satellite_deleted" => format!("Satellite{n} deleted"),
        "admin.satellite_transferred" => format!("Satellite{n} handed to another member"),
        "admin.satellite_api_key_rotated" => format!("New key made for satellite{n}"),
        "admin.satellite_birdweather_changed" => format!("BirdWeather uploads of satellite{n} changed"),
        "admin.satellite_birdweather_removed" => format!("BirdWeather uploads of satellite{n} turned off"),
        "admin.satellite_config_changed" => format!("Settings of satellite{n} changed"),
        "admin.satellite_profile_changed" => format!("Device type of satellite{n} changed"),
        "admin.satellite_time_zone_changed" => format!("Time zone of satellite{n} changed"),
        "admin.satellite_update_requested" => format!("Update of satellite{n} requested"),
        "admin.satellite_logs_requested" => format!("Logs of satellite{n} requested"),
        "admin.satellite_live_started" => format!("Live listening to satellite{n} started"),
        "admin.tenant_settings_updated" => "Team settings updated".into(),
        "admin.platform_settings_updated" => "Hub settings updated".into(),
        "admin.tenant_created" => format!("Team{n} made"),
        "admin.tenant_renamed" => format!("Team renamed{}", q(Some(d("name")).filter(|s| !s.is_empty()).or(name))),
        "admin.api_key_created" => format!("API key{n} made"),
        "admin.api_key_revoked" => format!("API key{n} revoked"),
        "admin.worker_key_created" => format!("Worker key{n} made"),
        "admin.worker_key_revoked" => format!("Worker key{n} revoked"),
        "admin.invite_created" => "Invite link made".into(),
        "admin.invite_revoked" => "Invite link revoked".into(),
        "admin.member_role_changed" => format!("Role of{} changed", or_someone(&n)),
        "admin.member_removed" => format!("Member{n} removed from the team"),
        "admin.ownership_transferred" => format!("Team handed over to{}", or_someone(&n)),
        "admin.user_edited" => format!("Account of{} edited", or_someone(&n)),
        "admin.user_blocked" => format!("Account of{} blocked", or_someone(&n)),
        "admin.user_unblocked" => format!("Account of{} unblocked", or_someone(&n)),
        "admin.user_deleted" => format!("Account of{} deleted", or_someone(&n)),
        "admin.password_reset" => format!("Password of{} reset by an admin", or_someone(&n)),
        "admin.user_added_to_tenant" => format!("{} added to a team", or_someone(&n).trim_start().to_owned()),
        "admin.user_removed_from_tenant" => format!("{} removed from a team", or_someone(&n).trim_start().to_owned()),
        "admin.user_mfa_reset" => format!("Two-factor sign-in of{} reset by an admin", or_someone(&n)),
        "admin.alert_rule_created" => format!("Alert rule{n} made"),
        "admin.alert_rule_updated" => format!("Alert rule{n} changed"),
        "admin.alert_rule_deleted" => format!("Alert rule{n} deleted"),
        "admin.webhook_created" => format!("Alert channel{n} added"),
        "admin.webhook_updated" => format!("Alert channel{n} changed"),
        "admin.webhook_deleted" => format!("Alert channel{n} deleted"),
        "admin.scheduled_export_created" => format!("Scheduled export{n} made"),
        "admin.scheduled_export_updated" => format!("Scheduled export{n} changed"),
        "admin.scheduled_export_deleted" => format!("Scheduled export{n} deleted"),
        "admin.scheduled_export_run" => format!("Scheduled export{n} run now"),
        "admin.image_cache_cleared" => "Species pictures cleared".into(),
        "alert.acknowledged" => "Alert marked as seen".into(),
        "detection.voted" => "Vote on a detection".into(),
        "detection.annotated" => "Detection marked on its spectrogram".into(),
        "import.started" if details["dryRun"].as_bool() == Some(true) => "Station import checked (dry run)".into(),
        "import.started" => "Station import started".into(),
        "mobile.release_uploaded" => "App release uploaded".into(),
        "mobile.release_updated" => "App release changed".into(),
        "mobile.release_deleted" => "App release deleted".into(),
        "user.register" => "Account made".into(),
        "user.login" => "Signed in".into(),
        "user.login_failed" => "Sign-in refused".into(),
        "user.logout" => "Signed out".into(),
        "user.profile_updated" => "Name or email changed".into(),
        "user.preferences_updated" => "Display preferences changed".into(),
        "user.password_changed" => "Password changed".into(),
        "user.password_reset_requested" => "Password reset link asked for".into(),
        "user.password_reset_completed" => "Password reset with a link".into(),
        "user.password_reset_failed" => "Password reset link refused".into(),
        "user.account_deleted" => "Own account deleted".into(),
        "user.left_tenant" => "Left the team".into(),
        "user.mfa_enabled" => "Two-factor sign-in turned on".into(),
        "user.mfa_disabled" => "Two-factor sign-in turned off".into(),
        "user.mfa_backup_codes_regenerated" => "New backup codes made".into(),
        "user.passkey_added" => format!("Passkey{n} added"),
        "user.passkey_removed" => format!("Passkey{n} removed"),
        other => fallback(other, &n),
    };
    s.replace("  ", " ")
}

fn or_someone(n: &str) -> String {
    if n.is_empty() { " someone".into() } else { n.to_owned() }
}

/// An action this table does not know: its last part in words, with its object's name.
fn fallback(action: &str, n: &str) -> String {
    let tail = action.rsplit('.').next().unwrap_or(action).replace(['_', '-'], " ");
    let words: Vec<String> = tail
        .split(' ')
        .filter(|w| !w.is_empty())
        .map(|w| match w {
            "tenant" => "team".into(),
            "api" => "API".into(),
            "mfa" => "two-factor sign-in".into(),
            "birdweather" => "BirdWeather".into(),
            w => w.to_owned(),
        })
        .collect();
    let text = format!("{}{n}", words.join(" "));
    let mut chars = text.chars();
    chars.next().map(|c| c.to_uppercase().chain(chars).collect()).unwrap_or_default()
}

/// The action alone, for the log's filter: "Satellite registered again".
pub fn label(action: &str) -> String {
    summary(action, None, &Value::Null).replace(" of someone", "").replace(" to someone", "")
}

/// The words of a setting's name: the label the dashboard gives it.
pub fn setting_label(key: &str) -> String {
    let known = match key {
        "satellite_offline_threshold_minutes" => "Offline after (minutes without a heartbeat)",
        "heartbeat_interval_sec" => "Heartbeat every (seconds)",
        "device_policy" => "Who registers satellites",
        "filter_enabled" => "Skip quiet recordings on the satellite",
        "filter_min_rms" => "Minimum loudness (RMS)",
        "classifier_min_bird_prob" => "Minimum bird likelihood to send a recording",
        "outbox_soft_size_mb" => "Start trimming old recordings at (MB)",
        "outbox_hard_size_mb" => "Never hold more than (MB)",
        "outbox_max_age_hours" => "Keep unsent recordings for at most (hours)",
        "drop_amphibian_at_satellite" => "Drop frogs and toads on the satellite",
        "drop_insect_at_satellite" => "Drop insects on the satellite",
        "drop_anthropogenic_at_satellite" => "Drop human-made sounds on the satellite",
        "drop_human_voice_at_satellite" => "Drop human voices on the satellite",
        "drop_other_animal_at_satellite" => "Drop other animals on the satellite",
        "primary_language" => "Main language",
        "secondary_language" => "Second language",
        "mfa_required" => "Two-factor sign-in required",
        "public_page_enabled" => "Public page",
        "public_page_audio" => "Visitors may play recordings",
        "public_page_exact_locations" => "Exact station positions on the public page",
        "public_page_title" => "Public page title",
        "time_zone" => "Team time zone",
        "min_confidence" => "Minimum confidence",
        "sensitivity" => "Sensitivity",
        "species_min_confidence" => "Minimum confidence",
        "exclude_species" => "Never record",
        "include_species" => "Only record",
        "range_filter_threshold" => "Expected-here threshold",
        "not_expected_action" => "A species not expected here",
        "second_look_enabled" => "Second look",
        "second_look_sure_confidence" => "Second look: sure from",
        "second_look_min_confidence" => "Second look: considered from",
        "second_look_wait_sec" => "Second look: wait (seconds)",
        "second_look_unconfirmed" => "Unconfirmed detections",
        "privacy_filter_enabled" => "Privacy filter (human voices)",
        "privacy_min_confidence" => "Privacy filter: voice confidence",
        "suppress_classes" => "Sounds that suppress birds",
        "suppress_species" => "Species that suppress birds",
        "suppress_min_confidence" => "Suppressing sound confidence",
        "suppress_seconds" => "Suppress for (seconds)",
        "learned_threshold_precision" => "Share of confirmed votes a learned threshold keeps",
        "learned_threshold_min_votes" => "Votes a species needs before a threshold is suggested",
        "learned_threshold_auto_apply" => "Apply learned thresholds as they change",
        "allow_self_registration" => "Anyone may make an account",
        "allow_tenant_creation" => "People may make teams of their own",
        "channel_targets" => "Addresses alert channels may reach",
        _ => "",
    };
    if !known.is_empty() {
        return known.to_owned();
    }
    let text = key.replace(['_', '-'], " ");
    let mut chars = text.chars();
    chars.next().map(|c| c.to_uppercase().chain(chars).collect()).unwrap_or_default()
}

/// A setting's value in words: on/off, "the hub's" for an unset threshold, plain names for choices.
pub fn value_words(v: &Value) -> String {
    match v {
        Value::Null => "not set".into(),
        Value::Bool(true) => "on".into(),
        Value::Bool(false) => "off".into(),
        Value::String(s) if s.is_empty() => "empty".into(),
        Value::String(s) if s == super::audit_changes::HIDDEN => "a new value (hidden)".into(),
        Value::String(s) if s.contains("://") => s.clone(),
        Value::String(s) => s.replace('_', " "),
        Value::Array(items) if items.is_empty() => "none".into(),
        Value::Array(items) => items.iter().map(value_words).collect::<Vec<_>>().join(", "),
        Value::Number(n) => n.to_string(),
        Value::Object(_) => "changed".into(),
    }
}

/// A species code (`parus_major`) as a name when the entry did not record one: "Parus major".
fn species_words(code: &str) -> String {
    let text = code.replace('_', " ");
    let mut chars = text.chars();
    chars.next().map(|c| c.to_uppercase().chain(chars).collect()).unwrap_or_default()
}

/// One line per recorded change: `{setting, from, to}` ("Heartbeat every (seconds): 30 → 45"),
/// `{setting, item, name?, from, to}` ("Minimum confidence for Great Tit: 0.90 → 0.93"),
/// `{setting, added, removed}` and `{setting, hidden}`.
pub fn change_line(c: &Value) -> String {
    let label = setting_label(c["setting"].as_str().unwrap_or_default());
    if c["hidden"].as_bool() == Some(true) {
        return format!("{label}: changed (hidden)");
    }
    if let Some(item) = c["item"].as_str() {
        let name = c["name"].as_str().map_or_else(|| species_words(item), str::to_owned);
        return match (&c["from"], &c["to"]) {
            (Value::Null, to) => format!("{label} for {name}: {} (new)", value_words(to)),
            (from, Value::Null) => format!("{label} for {name}: {} → the team's", value_words(from)),
            (from, to) => format!("{label} for {name}: {} → {}", value_words(from), value_words(to)),
        };
    }
    if c.get("added").is_some() || c.get("removed").is_some() {
        let list = |k: &str| c[k].as_array().map(|a| a.iter().map(value_words).collect::<Vec<_>>()).unwrap_or_default();
        let (added, removed) = (list("added"), list("removed"));
        let mut parts = Vec::new();
        if !added.is_empty() {
            parts.push(format!("added {}", added.join(", ")));
        }
        if !removed.is_empty() {
            parts.push(format!("removed {}", removed.join(", ")));
        }
        return format!("{label}: {}", parts.join("; "));
    }
    format!("{label}: {} → {}", value_words(&c["from"]), value_words(&c["to"]))
}

/// The lines under an entry's sentence: its recorded changes, or what older entries kept.
pub fn change_lines(action: &str, details: &Value) -> Vec<String> {
    if let Some(changes) = details["changes"].as_array() {
        if changes.is_empty() && action.ends_with("settings_updated") {
            return vec!["Nothing changed".into()];
        }
        return changes.iter().map(change_line).collect();
    }
    let d = |k: &str| details[k].clone();
    match action {
        // A raise or a learned threshold named its species and both values.
        "admin.tenant_settings_updated" if details["speciesCode"].is_string() => {
            let c = serde_json::json!({
                "setting": "species_min_confidence", "item": d("speciesCode"), "name": d("speciesName"),
                "from": d("previous"), "to": d("threshold"),
            });
            let how = if details["automatic"].as_bool() == Some(true) {
                " (learned, applied by the hub)"
            } else if details["learnedThreshold"].as_bool() == Some(true) {
                " (learned)"
            } else {
                ""
            };
            vec![format!("{}{how}", change_line(&c))]
        }
        // Entries written before changes were recorded kept only the names of the fields sent.
        a if a.ends_with("settings_updated") => {
            match details["changed"].as_array() {
                Some(k) if !k.is_empty() => {
                    let keys: Vec<String> = k.iter().filter_map(Value::as_str).map(setting_label).collect();
                    vec![format!("Sent: {}", keys.join(", "))]
                }
                Some(_) => Vec::new(),
                // The hub's settings kept the values sent.
                None => details
                    .as_object()
                    .map(|m| {
                        m.iter()
                            .filter(|(k, _)| *k != "targetName")
                            .map(|(k, v)| format!("{}: {}", setting_label(k), value_words(v)))
                            .collect()
                    })
                    .unwrap_or_default(),
            }
        }
        "admin.satellite_time_zone_changed" => vec![format!("{} → {}", value_words(&d("from")), value_words(&d("to")))],
        "admin.satellite_update_requested" => vec![format!("To version {}", value_words(&d("targetVersion")))],
        "admin.satellite_birdweather_changed" => {
            let mut lines = Vec::new();
            if details["newToken"].as_bool() == Some(true) {
                lines.push("New station token (hidden)".to_owned());
            }
            if let Some(on) = details["enabled"].as_bool() {
                lines.push(format!("Uploads {}", if on { "on" } else { "off" }));
            }
            if details["minConfidence"].is_number() {
                lines.push(format!("Uploads from confidence {}", value_words(&d("minConfidence"))));
            }
            lines
        }
        "admin.api_key_created" | "admin.invite_created" | "admin.member_role_changed"
            if details["role"].is_string() =>
        {
            vec![format!("Role: {}", value_words(&d("role")))]
        }
        "user.login_failed" if details["reason"].is_string() => vec![format!("Why: {}", value_words(&d("reason")))],
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn actions_read_as_sentences_naming_their_object() {
        assert_eq!(
            summary("satellite.reregistered", Some("Garden"), &Value::Null),
            "Satellite \"Garden\" registered again"
        );
        assert_eq!(summary("satellite.registered", None, &Value::Null), "Satellite registered");
        assert_eq!(summary("user.mfa_enabled", None, &Value::Null), "Two-factor sign-in turned on");
        assert_eq!(summary("admin.api_key_created", Some("HA"), &Value::Null), "API key \"HA\" made");
        assert_eq!(summary("import.started", None, &json!({"dryRun": true})), "Station import checked (dry run)");
        assert_eq!(summary("admin.user_blocked", None, &Value::Null), "Account of someone blocked");
        assert_eq!(summary("admin.member_role_changed", Some("Ada"), &Value::Null), "Role of \"Ada\" changed");
        assert_eq!(summary("admin.frobnicated_api_thing", Some("X"), &Value::Null), "Frobnicated API thing \"X\"");
        assert_eq!(label("admin.user_blocked"), "Account blocked");
        assert_eq!(label("admin.ownership_transferred"), "Team handed over");
    }

    #[test]
    fn changes_read_from_and_to() {
        let c = json!({"setting": "heartbeat_interval_sec", "from": 30, "to": 45});
        assert_eq!(change_line(&c), "Heartbeat every (seconds): 30 → 45");
        let c = json!({"setting": "species_min_confidence", "item": "parus_major", "name": "Great Tit", "from": 0.9, "to": 0.93});
        assert_eq!(change_line(&c), "Minimum confidence for Great Tit: 0.9 → 0.93");
        let c = json!({"setting": "filter_enabled", "from": false, "to": true});
        assert_eq!(change_line(&c), "Skip quiet recordings on the satellite: off → on");
        let old = json!({"changed": ["filter_enabled", "heartbeat_interval_sec"]});
        assert_eq!(
            change_lines("admin.tenant_settings_updated", &old),
            vec!["Sent: Skip quiet recordings on the satellite, Heartbeat every (seconds)"]
        );
        let raise = json!({"changed": ["species_min_confidence"], "speciesCode": "parus_major", "threshold": 0.93, "previous": 0.9});
        assert_eq!(
            change_lines("admin.tenant_settings_updated", &raise),
            vec!["Minimum confidence for Parus major: 0.9 → 0.93"]
        );
        assert_eq!(change_lines("admin.tenant_settings_updated", &json!({"changes": []})), vec!["Nothing changed"]);
    }
}
