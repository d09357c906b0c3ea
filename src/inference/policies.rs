//! Each satellite's detection settings, resolved for the inference workers ([`Policy`]) and kept
//! in a small cache: the team's settings with the satellite's overrides over them, else the hub's
//! `inference.threshold`. A settings change (team or satellite) publishes
//! [`Event::ConfigChanged`](crate::events::Event), which empties the cache ([`Policies::watch`]);
//! entries also expire after [`TTL`] as a safety net.

use std::{sync::Arc, time::Duration};

use super::{labels::Labels, screen::Policy};
use crate::{
    domain::{satellite_config::Overrides, settings::TenantSettings},
    events::{Bus, Event},
    ids::{SatelliteId, TenantId},
    store::{self, Store},
};

/// How long a resolved policy is used at most without a change announced.
pub const TTL: Duration = Duration::from_secs(60);

/// The cache; cheap to clone.
#[derive(Clone)]
pub struct Policies {
    store: Store,
    hub_threshold: f32,
    cache: moka::sync::Cache<SatelliteId, Arc<Policy>>,
}

impl Policies {
    pub fn new(store: Store, hub_threshold: f32) -> Self {
        let cache = moka::sync::Cache::builder().max_capacity(4096).time_to_live(TTL).build();
        Self { store, hub_threshold, cache }
    }

    /// The policy of `satellite` (of `tenant`), read through the cache. Blocking (a worker thread).
    pub fn get(&self, tenant: TenantId, satellite: SatelliteId, labels: &Labels) -> store::Result<Arc<Policy>> {
        if let Some(p) = self.cache.get(&satellite) {
            return Ok(p);
        }
        let settings = self.store.call_blocking(|c| {
            let team: TenantSettings = store::settings::load(c, &tenant.to_string())?;
            let overrides = store::satellites::get(c, satellite).ok().map(|s| s.overrides_json);
            Ok::<_, store::Error>(match overrides {
                Some(json) => {
                    let (o, dropped) = Overrides::sanitized(&json, &team);
                    for d in dropped {
                        tracing::warn!(satellite = %satellite, %d, "a stored override was left out");
                    }
                    o.apply(&team)
                }
                None => team,
            })
        })?;
        let policy = Arc::new(Policy::new(&settings, self.hub_threshold, labels));
        self.cache.insert(satellite, policy.clone());
        Ok(policy)
    }

    /// Forgets every cached policy.
    pub fn clear(&self) {
        self.cache.invalidate_all();
    }

    /// Empties the cache whenever settings change, until the bus closes.
    pub async fn watch(self, bus: Bus) {
        let mut events = bus.subscribe("detection-policies");
        while let Some(event) = events.recv().await {
            if matches!(event, Event::ConfigChanged { .. }) {
                self.clear();
            }
        }
    }
}
