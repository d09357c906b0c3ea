//! The hub's clock. Time-dependent rules (lockouts, token expiry, rate-limit windows) read it
//! instead of the system time, so tests can move time forward instead of waiting.

use std::sync::{
    Arc,
    atomic::{AtomicI64, Ordering},
};

use chrono::{DateTime, Duration, Utc};

#[derive(Debug, Clone, Default)]
pub struct Clock {
    offset_ms: Arc<AtomicI64>,
}

impl Clock {
    pub fn now(&self) -> DateTime<Utc> {
        Utc::now() + Duration::milliseconds(self.offset_ms.load(Ordering::Relaxed))
    }

    /// `now()` in the SPEC's text format, as stored in SQLite.
    pub fn now_str(&self) -> String {
        crate::time::format(self.now())
    }

    /// `now() + d` in the stored format.
    pub fn in_str(&self, d: Duration) -> String {
        crate::time::format(self.now() + d)
    }

    /// Moves this clock (and every clone of it) forward.
    pub fn advance(&self, d: std::time::Duration) {
        self.offset_ms.fetch_add(d.as_millis() as i64, Ordering::Relaxed);
    }
}
