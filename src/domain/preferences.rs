//! A person's display preferences (SPEC 2.13): language, date and time format, voting mode.

use serde::{Deserialize, Serialize};

pub const DATE_FORMATS: &[&str] = &["YYYY-MM-DD", "DD.MM.YYYY", "DD/MM/YYYY", "MM/DD/YYYY"];
pub const TIME_FORMATS: &[&str] = &["24h", "12h"];

/// How the dashboard offers votes. It never restricts the API: a vote is always accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum VotingMode {
    /// One click confirms or rejects.
    #[default]
    Simple,
    /// The dashboard opens the annotation form first.
    Detailed,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct Preferences {
    /// A label language code (`en`, `de`, `pt_BR`, ...).
    pub language: String,
    pub date_format: String,
    pub time_format: String,
    pub voting_mode: VotingMode,
}

impl Default for Preferences {
    fn default() -> Self {
        Self {
            language: "en".into(),
            date_format: "YYYY-MM-DD".into(),
            time_format: "24h".into(),
            voting_mode: VotingMode::Simple,
        }
    }
}

impl Preferences {
    pub fn validate(&self) -> Result<(), String> {
        let lang_ok = !self.language.is_empty()
            && self.language.len() <= 8
            && self.language.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !lang_ok {
            return Err("language must be a language code such as en or pt_BR".into());
        }
        let one_of = |v: &str, allowed: &[&str], field: &str| {
            if allowed.contains(&v) { Ok(()) } else { Err(format!("{field} must be one of {}", allowed.join(", "))) }
        };
        one_of(&self.date_format, DATE_FORMATS, "dateFormat")?;
        one_of(&self.time_format, TIME_FORMATS, "timeFormat")
    }

    /// Stored JSON, falling back to the defaults for anything unreadable.
    pub fn from_stored(json: &str) -> Self {
        serde_json::from_str(json).unwrap_or_default()
    }
}
