//! A remote slot: a hub thread that claims batches with a lease and offers them to the remote
//! workers ([`crate::inference::remote`]), then goes on exactly as a local worker does.

use std::{
    sync::atomic::Ordering,
    time::{Duration, Instant},
};

use super::{BATCH, EXPIRY_SWEEP, Engine, Shared};
use crate::store;

impl Shared {
    /// A remote slot: while a joined worker has room, claims a batch with a lease, offers it to
    /// the worker group and goes on with the answer exactly as a local worker would.
    pub(super) fn offer(&self, id: &str) {
        let pool = &self.state.remote;
        let engine = Engine::Remote(pool, self.lease);
        let mut seen = self.state.signal.current();
        while !self.stop.load(Ordering::Relaxed) {
            // A join or the hub stopping wakes the slots at once; the wait only bounds a missed wake.
            if !pool.take_room(Duration::from_secs(5)) {
                continue;
            }
            let now = self.state.clock.stamp();
            // The lease outlives the offer's own wait a little: the slot decides first, and the
            // queue's sweep only catches a slot that is gone.
            let until = self.state.clock.stamp_in(chrono::Duration::from_std(self.lease * 2).unwrap_or_default());
            let sweep = self.last_expiry.lock().is_ok_and(|mut last| {
                let due = last.elapsed() >= EXPIRY_SWEEP;
                if due {
                    *last = Instant::now();
                }
                due
            });
            let claimed = self.state.store.call_blocking(|c| {
                if sweep {
                    store::jobs::requeue_expired(c, now)?;
                }
                store::jobs::claim_until(c, id, BATCH, now, Some(until))
            });
            match claimed {
                Ok(jobs) if !jobs.is_empty() => {
                    self.process(id, jobs, engine);
                    pool.done();
                    self.sweep(engine);
                }
                Ok(_) => {
                    pool.done();
                    seen = self.state.signal.wait(seen, Duration::from_secs(1));
                }
                Err(e) => {
                    pool.done();
                    tracing::error!(error = %e, "claiming jobs for remote workers failed");
                    std::thread::sleep(Duration::from_secs(1));
                }
            }
        }
    }
}
