//! `[birdweather]`: where the hub sends BirdWeather uploads and how it paces them
//! (docs/birdweather.md, docs/configuration.md). The station tokens are per satellite, in the
//! database, sealed; none is configured here.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::ConfigError;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BirdweatherSettings {
    /// BirdWeather's API base; the station calls go to `{base_url}/stations/{token}/…`.
    pub base_url: String,
    /// The deadline of one call, connecting, sending and reading included (BirdNET-Go: 45 s).
    pub timeout_secs: u64,
    /// The per-station rate cap: at most one soundscape every this many seconds per station
    /// (BirdNET-Pi sends at most one per 15 s recording). 0 turns the cap off.
    pub min_interval_secs: u64,
    /// The wait after a first failed attempt; it doubles after each further one.
    pub retry_initial_secs: u64,
    /// The longest wait between two attempts.
    pub retry_max_secs: u64,
    /// Attempts after which a detection is given up (`failed`, the reason kept).
    pub max_attempts: u32,
    /// Consecutive failures of one station (no answer, 5xx, a refused token) after which it is
    /// paused for `pause_secs`; 422 species refusals do not count.
    pub pause_after_failures: u32,
    pub pause_secs: u64,
}

impl Default for BirdweatherSettings {
    fn default() -> Self {
        Self {
            base_url: "https://app.birdweather.com/api/v1".into(),
            timeout_secs: 45,
            min_interval_secs: 15,
            retry_initial_secs: 60,
            retry_max_secs: 3600,
            max_attempts: 10,
            pause_after_failures: 5,
            pause_secs: 600,
        }
    }
}

impl BirdweatherSettings {
    pub fn timeout(&self) -> Duration {
        Duration::from_secs(self.timeout_secs)
    }

    pub fn validate(&self) -> Result<(), ConfigError> {
        let bad = |key: &str, why: &str| Err(ConfigError::Invalid { key: key.into(), message: why.into() });
        let base = self.base_url.trim();
        if url::Url::parse(base).map_or(true, |u| !matches!(u.scheme(), "http" | "https") || !u.has_host()) {
            return bad("birdweather.base_url", "must be an http(s) URL such as https://app.birdweather.com/api/v1");
        }
        if !(1..=300).contains(&self.timeout_secs) {
            return bad("birdweather.timeout_secs", "must be 1 to 300 seconds");
        }
        if self.min_interval_secs > 3600 {
            return bad("birdweather.min_interval_secs", "must be 0 to 3600 seconds");
        }
        if !(1..=86_400).contains(&self.retry_initial_secs) {
            return bad("birdweather.retry_initial_secs", "must be 1 to 86400 seconds");
        }
        if self.retry_max_secs < self.retry_initial_secs || self.retry_max_secs > 86_400 {
            return bad("birdweather.retry_max_secs", "must be at least retry_initial_secs and at most 86400");
        }
        if !(1..=100).contains(&self.max_attempts) {
            return bad("birdweather.max_attempts", "must be 1 to 100");
        }
        if !(1..=100).contains(&self.pause_after_failures) {
            return bad("birdweather.pause_after_failures", "must be 1 to 100");
        }
        if !(1..=86_400).contains(&self.pause_secs) {
            return bad("birdweather.pause_secs", "must be 1 to 86400 seconds");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_values_name_their_key() {
        assert!(BirdweatherSettings::default().validate().is_ok());
        let key = |f: fn(&mut BirdweatherSettings)| {
            let mut s = BirdweatherSettings::default();
            f(&mut s);
            match s.validate() {
                Err(ConfigError::Invalid { key, .. }) => key,
                other => panic!("accepted: {other:?}"),
            }
        };
        assert_eq!(key(|s| s.base_url = "ftp://x".into()), "birdweather.base_url");
        assert_eq!(key(|s| s.timeout_secs = 0), "birdweather.timeout_secs");
        assert_eq!(key(|s| s.retry_max_secs = 1), "birdweather.retry_max_secs");
        assert_eq!(key(|s| s.max_attempts = 0), "birdweather.max_attempts");
    }
}
