//! A string that never shows up in logs or `Debug` output.

use serde::{Deserialize, Serialize};
use subtle::ConstantTimeEq;

/// A secret value from the configuration. `Debug` prints `"<redacted>"`; an empty secret means "not set".
#[derive(Clone, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The raw value, for the few places that must use it.
    pub fn expose(&self) -> &str {
        &self.0
    }

    pub fn is_set(&self) -> bool {
        !self.0.is_empty()
    }

    /// Constant-time comparison against a presented value.
    pub fn matches(&self, presented: &str) -> bool {
        self.is_set() && bool::from(self.0.as_bytes().ct_eq(presented.as_bytes()))
    }
}

impl PartialEq for Secret {
    fn eq(&self, other: &Self) -> bool {
        bool::from(self.0.as_bytes().ct_eq(other.0.as_bytes()))
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.is_set() { "\"<redacted>\"" } else { "\"\"" })
    }
}
