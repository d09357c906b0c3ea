//! The embedded broker's load, for the service registry and `GET /system/status`: messages
//! received from clients (every publish passes ingest's hook, which counts it here) and their rate.
//! The connected-client count comes from the broker's own session table
//! ([`super::MqttHandle::connected_clients`]); mqtt5's `BrokerStats` is not used because the
//! broker never decrements its connected counter.

use std::{
    collections::VecDeque,
    sync::{
        Mutex,
        atomic::{AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

/// The rate is the messages received over about this long.
const WINDOW: Duration = Duration::from_secs(60);

#[derive(Debug, Default)]
pub struct Meter {
    received: AtomicU64,
    /// (when, messages received by then), oldest first; one is taken at each [`Meter::rate`].
    samples: Mutex<VecDeque<(Instant, u64)>>,
}

impl Meter {
    /// Counts one message a client published.
    pub fn count_received(&self) {
        self.received.fetch_add(1, Ordering::Relaxed);
    }

    /// Messages received since the broker started.
    pub fn received(&self) -> u64 {
        self.received.load(Ordering::Relaxed)
    }

    /// Messages per second over the last minute or so (since the first sample, when younger).
    /// The registry task samples every 10 s, so the window is always filled once it has run.
    pub fn rate(&self) -> f64 {
        let (now, n) = (Instant::now(), self.received());
        let Ok(mut samples) = self.samples.lock() else { return 0.0 };
        samples.push_back((now, n));
        while samples.len() > 2 && now.duration_since(samples[1].0) >= WINDOW {
            samples.pop_front();
        }
        let (since, base) = samples[0];
        let secs = now.duration_since(since).max(Duration::from_secs(1)).as_secs_f64();
        n.saturating_sub(base) as f64 / secs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rate_counts_messages_since_the_oldest_sample_in_the_window() {
        let meter = Meter::default();
        assert_eq!(meter.rate(), 0.0, "nothing received yet");
        for _ in 0..5 {
            meter.count_received();
        }
        assert_eq!(meter.received(), 5);
        let rate = meter.rate();
        assert!(rate > 0.0 && rate <= 5.0, "five messages within a second or so: {rate}");
    }
}
