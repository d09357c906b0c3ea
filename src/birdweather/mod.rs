//! BirdWeather sharing (issue 38, docs/birdweather.md): the pure rules (which token is well
//! formed, what a detection must be to go, how long to wait before trying again, how times are
//! written), the HTTP client ([`client`]) and the FLAC soundscape ([`flac`]). The outbox lives in
//! `store::birdweather`, the sending in `usecases::birdweather`, the loop in
//! `jobs::birdweather_sender`.

pub mod client;
pub mod flac;

use std::time::Duration;

use chrono::{DateTime, Utc};
use chrono_tz::Tz;

/// BirdNET 2.4, as BirdWeather names the algorithm.
pub const ALGORITHM: &str = "2p4";
/// The minimum confidence of a new station (BirdNET-Go's `birdweather.threshold`).
pub const DEFAULT_MIN_CONFIDENCE: f64 = 0.7;

/// Whether `token` can be a station token: 4 to 200 letters, digits, `-` or `_`. It goes into a
/// URL path, so nothing else is let through.
pub fn valid_token(token: &str) -> bool {
    (4..=200).contains(&token.len()) && token.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// The last 4 characters of a token, all that is ever shown of it.
pub fn hint(token: &str) -> String {
    let chars: Vec<char> = token.chars().collect();
    chars[chars.len().saturating_sub(4)..].iter().collect()
}

/// A time as the peers send it: ISO 8601 in the station's zone with its offset,
/// `2026-05-01T06:12:03.000+02:00`.
pub fn local_iso(t: DateTime<Utc>, zone: Tz) -> String {
    t.with_timezone(&zone).format("%Y-%m-%dT%H:%M:%S%.3f%:z").to_string()
}

/// Whether a label is a bird: the model's sound, human, dog, frog, insect and mammal classes are
/// not (BirdWeather answers 422 to them).
pub fn is_bird(scientific: &str, common: &str) -> bool {
    scientific != common && crate::satellite::gate::categories::category_of(scientific).is_none()
}

/// The wait before attempt `attempts + 1` after `attempts` failed ones: `initial`, doubled each
/// time, at most `max`.
pub fn backoff(attempts: u32, initial: Duration, max: Duration) -> Duration {
    let factor = 1u32.checked_shl(attempts.saturating_sub(1).min(20)).unwrap_or(u32::MAX);
    initial.saturating_mul(factor).min(max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_hints_and_times() {
        assert!(valid_token("aB3_xY-9"));
        assert!(!valid_token("abc") && !valid_token("a/b/../c") && !valid_token("tok en") && !valid_token("tök1"));
        assert_eq!(hint("abcdefgh"), "efgh");
        assert_eq!(hint("ab"), "ab");
        let t = "2026-05-01T04:12:03.5Z".parse::<DateTime<Utc>>().expect("time");
        assert_eq!(local_iso(t, chrono_tz::Europe::Berlin), "2026-05-01T06:12:03.500+02:00");
        assert_eq!(local_iso(t, chrono_tz::UTC), "2026-05-01T04:12:03.500+00:00");
    }

    #[test]
    fn birds_only() {
        assert!(is_bird("Turdus merula", "Eurasian Blackbird"));
        assert!(!is_bird("Dog", "Dog"));
        assert!(!is_bird("Engine", "Engine"));
    }

    #[test]
    fn backoff_doubles_up_to_the_cap() {
        let (i, m) = (Duration::from_secs(60), Duration::from_secs(3600));
        let waits: Vec<u64> = (1..=8).map(|n| backoff(n, i, m).as_secs()).collect();
        assert_eq!(waits, [60, 120, 240, 480, 960, 1920, 3600, 3600]);
        assert_eq!(backoff(100, i, m), m);
    }
}
