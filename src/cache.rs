//! The in-memory cache that stands in for Redis: TTL entries, windowed counters (rate limits),
//! short-lived secrets (pending MFA enrolments) and the service registry of SPEC 2.21.
//! Nothing here survives a restart, by design.

use std::{sync::Arc, time::Duration};

use moka::{Expiry, future::Cache as Moka, ops::compute::Op};
use serde::{Serialize, de::DeserializeOwned};
use serde_json::Value;

/// How long a service registry entry lives without a refresh (SPEC 2.21).
pub const REGISTRY_TTL: Duration = Duration::from_secs(30);

#[derive(Clone)]
struct Entry {
    value: Arc<Value>,
    /// Time to live from the moment of writing; `None` lives until evicted.
    ttl: Option<Duration>,
    /// An update that keeps the original expiry (counters in a fixed window).
    keep_expiry: bool,
}

struct PerEntryExpiry;

impl Expiry<String, Entry> for PerEntryExpiry {
    fn expire_after_create(&self, _: &String, e: &Entry, _: std::time::Instant) -> Option<Duration> {
        e.ttl
    }

    fn expire_after_update(
        &self,
        _: &String,
        e: &Entry,
        _: std::time::Instant,
        remaining: Option<Duration>,
    ) -> Option<Duration> {
        if e.keep_expiry { remaining } else { e.ttl }
    }
}

/// A cloneable handle on the shared cache.
#[derive(Clone)]
pub struct Cache {
    inner: Moka<String, Entry>,
    registry_prefix: Arc<str>,
}

impl Cache {
    pub fn new(max_entries: u64, registry_prefix: &str) -> Self {
        let inner = Moka::builder().max_capacity(max_entries).expire_after(PerEntryExpiry).build();
        Self { inner, registry_prefix: registry_prefix.into() }
    }

    /// Stores `value` under `key` for `ttl` (or until evicted when `None`).
    pub async fn set<T: Serialize>(&self, key: &str, value: &T, ttl: Option<Duration>) {
        let value = Arc::new(serde_json::to_value(value).unwrap_or(Value::Null));
        self.inner.insert(key.to_owned(), Entry { value, ttl, keep_expiry: false }).await;
    }

    /// The live value under `key`, if any and if it has the expected shape.
    pub async fn get<T: DeserializeOwned>(&self, key: &str) -> Option<T> {
        let entry = self.inner.get(key).await?;
        serde_json::from_value((*entry.value).clone()).ok()
    }

    /// Removes and returns the value (for single-use entries).
    pub async fn take<T: DeserializeOwned>(&self, key: &str) -> Option<T> {
        let entry = self.inner.remove(key).await?;
        serde_json::from_value((*entry.value).clone()).ok()
    }

    pub async fn remove(&self, key: &str) {
        self.inner.invalidate(key).await;
    }

    /// Adds one to the counter under `key` and returns the new count. The first increment opens a
    /// window of `window`; later increments do not extend it, so the count resets when it ends.
    pub async fn incr(&self, key: &str, window: Duration) -> u64 {
        let result = self
            .inner
            .entry(key.to_owned())
            .and_compute_with(|current| {
                let next = match current {
                    Some(e) => Entry {
                        value: Arc::new(Value::from(e.value().value.as_u64().unwrap_or(0) + 1)),
                        ttl: Some(window),
                        keep_expiry: true,
                    },
                    None => Entry { value: Arc::new(Value::from(1u64)), ttl: Some(window), keep_expiry: false },
                };
                std::future::ready(Op::Put(next))
            })
            .await;
        result.into_entry().and_then(|e| e.into_value().value.as_u64()).unwrap_or(1)
    }

    /// True at most once per `period` for `key`, measured on the caller's clock (`now`, the hub's
    /// [`crate::clock::Clock`]), so a frequent event (an API key's use) causes a rare write. The entry
    /// itself lives `period` of real time; the hub clock never runs slower than that.
    pub async fn once_per(&self, key: &str, now: chrono::DateTime<chrono::Utc>, period: Duration) -> bool {
        let now_ms = now.timestamp_millis();
        let period_ms = i64::try_from(period.as_millis()).unwrap_or(i64::MAX);
        let mut claimed = false;
        self.inner
            .entry(key.to_owned())
            .and_compute_with(|current| {
                let last = current.and_then(|e| e.value().value.as_i64());
                let due = last.is_none_or(|last| now_ms.saturating_sub(last) >= period_ms);
                claimed = due;
                std::future::ready(if due {
                    Op::Put(Entry { value: Arc::new(Value::from(now_ms)), ttl: Some(period), keep_expiry: false })
                } else {
                    Op::Nop
                })
            })
            .await;
        claimed
    }

    /// The current count under `key` (0 when absent or expired).
    pub async fn count(&self, key: &str) -> u64 {
        self.inner.get(key).await.and_then(|e| e.value.as_u64()).unwrap_or(0)
    }

    /// How many live entries the cache holds, and how many it may hold.
    pub async fn entries(&self) -> (u64, Option<u64>) {
        self.inner.run_pending_tasks().await;
        (self.inner.entry_count(), self.inner.policy().max_capacity())
    }

    /// Announces a running service instance; call again well within [`REGISTRY_TTL`] to stay listed.
    pub async fn register<T: Serialize>(&self, service: &str, instance_id: &str, info: &T) {
        let key = format!("{}:registry:{service}:{instance_id}", self.registry_prefix);
        self.set(&key, info, Some(REGISTRY_TTL)).await;
    }

    /// Every live registry entry as (service, instance id, info), sorted.
    pub async fn registry(&self) -> Vec<(String, String, Value)> {
        self.inner.run_pending_tasks().await;
        let prefix = format!("{}:registry:", self.registry_prefix);
        let mut out: Vec<_> = self
            .inner
            .iter()
            .filter_map(|(key, entry)| {
                let (service, instance) = key.strip_prefix(&prefix)?.split_once(':')?;
                Some((service.to_owned(), instance.to_owned(), (*entry.value).clone()))
            })
            .collect();
        out.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Polls `cond` every 10 ms until it holds; false after 10 s (moka expires on real time).
    async fn eventually<F: std::future::Future<Output = bool>>(mut cond: impl FnMut() -> F) -> bool {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while tokio::time::Instant::now() < deadline {
            if cond().await {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        false
    }

    #[tokio::test]
    async fn entries_expire_after_their_ttl() {
        let cache = Cache::new(100, "t");
        cache.set("mfa:pending:u1", &"SECRET", Some(Duration::from_millis(100))).await;
        cache.set("forever", &42, None).await;
        assert_eq!(cache.get::<String>("mfa:pending:u1").await.as_deref(), Some("SECRET"));
        assert!(eventually(|| async { cache.get::<String>("mfa:pending:u1").await.is_none() }).await, "expired");
        assert_eq!(cache.get::<i32>("forever").await, Some(42));
    }

    #[tokio::test]
    async fn counters_count_within_a_window() {
        let cache = Cache::new(100, "t");
        let window = Duration::from_secs(600);
        assert_eq!(cache.incr("login:1.2.3.4", window).await, 1);
        assert_eq!(cache.incr("login:1.2.3.4", window).await, 2);
        assert_eq!(cache.incr("login:1.2.3.4", window).await, 3);
        assert_eq!(cache.count("login:1.2.3.4").await, 3);
        assert_eq!(cache.count("login:5.6.7.8").await, 0);
    }

    #[tokio::test]
    async fn a_counter_window_does_not_slide() {
        // Hits keep coming more often than the window; a sliding window would never reset.
        let cache = Cache::new(100, "t");
        let window = Duration::from_millis(200);
        assert_eq!(cache.incr("login:1.2.3.4", window).await, 1);
        let highest = std::cell::Cell::new(1);
        let reset = eventually(|| {
            let (cache, highest) = (&cache, &highest);
            async move {
                let n = cache.incr("login:1.2.3.4", window).await;
                highest.set(highest.get().max(n));
                n == 1
            }
        });
        assert!(reset.await, "the window closed while hits kept arriving");
        assert!(highest.get() > 1, "hits inside the window were counted");
    }

    #[tokio::test]
    async fn once_per_follows_the_given_clock() {
        let (cache, clock) = (Cache::new(100, "t"), crate::clock::Clock::default());
        let minute = Duration::from_secs(60);
        assert!(cache.once_per("k1", clock.now(), minute).await, "the first use is due");
        for _ in 0..5 {
            assert!(!cache.once_per("k1", clock.now(), minute).await, "not again within the minute");
        }
        assert!(cache.once_per("k2", clock.now(), minute).await, "each key on its own");
        clock.advance(Duration::from_secs(61));
        assert!(cache.once_per("k1", clock.now(), minute).await, "due again a minute later");
        assert!(!cache.once_per("k1", clock.now(), minute).await);
    }

    #[tokio::test]
    async fn take_is_single_use() {
        let cache = Cache::new(100, "t");
        cache.set("once", &"v", None).await;
        assert_eq!(cache.take::<String>("once").await.as_deref(), Some("v"));
        assert_eq!(cache.take::<String>("once").await, None);
    }

    #[tokio::test]
    async fn registry_lists_instances_under_the_spec_key_pattern() {
        let cache = Cache::new(100, "birdhub");
        cache.register("api", "i-1", &serde_json::json!({"version": "0.1.0"})).await;
        cache.register("worker", "w-2", &serde_json::json!({"processed": 3})).await;
        assert_eq!(cache.get::<Value>("birdhub:registry:api:i-1").await, Some(serde_json::json!({"version": "0.1.0"})));
        let listed = cache.registry().await;
        let names: Vec<_> = listed.iter().map(|(s, i, _)| format!("{s}/{i}")).collect();
        assert_eq!(names, ["api/i-1", "worker/w-2"]);
    }
}
