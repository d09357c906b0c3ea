//! The hub's clock. Time-dependent rules (lockouts, token expiry, rate-limit windows) read it
//! instead of the system time, so tests can move time forward instead of waiting.

use std::sync::{
    Arc,
    atomic::{AtomicI64, Ordering},
};

use chrono::{DateTime, Duration, Utc};

use crate::time::Timestamp;

#[derive(Debug, Clone, Default)]
pub struct Clock {
    offset_ms: Arc<AtomicI64>,
}

impl Clock {
    pub fn now(&self) -> DateTime<Utc> {
        Utc::now() + Duration::milliseconds(self.offset_ms.load(Ordering::Relaxed))
    }

    /// `now()` as a [`Timestamp`], the type store functions take.
    pub fn stamp(&self) -> Timestamp {
        Timestamp(self.now())
    }

    /// `now() + d`, for expiries.
    pub fn stamp_in(&self, d: Duration) -> Timestamp {
        Timestamp(self.now() + d)
    }

    /// Moves this clock (and every clone of it) forward.
    pub fn advance(&self, d: std::time::Duration) {
        self.offset_ms.fetch_add(d.as_millis() as i64, Ordering::Relaxed);
    }
}
