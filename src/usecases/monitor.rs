//! The satellite monitor's rule, one pass (SPEC 3, 8): in each team, a satellite not heard from for
//! the team's `satellite_offline_threshold_minutes` (default 5) goes offline, and one heard from
//! since goes back online. Each change is announced once on the bus (`SatelliteOffline`,
//! `SatelliteOnline`), and going offline raises one `satellite_offline` alert under the team's
//! system rule of that name, in the same transaction: one alert per outage, not one per pass. `jobs::satellite_monitor`
//! runs this every 60 s; it reads the hub's clock, so tests move time instead of waiting.

use std::sync::Arc;

use crate::{
    clock::Clock,
    domain::settings::TenantSettings,
    events::{Bus, Event, SatelliteStatus},
    ids::TenantId,
    store::{self, Store, monitor::Changed},
    time::Timestamp,
};

/// What one pass changed.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Pass {
    pub went_offline: usize,
    pub came_back: usize,
}

/// One pass over every team.
pub async fn check(store: &Store, bus: &Bus, clock: &Clock) -> store::Result<Pass> {
    let now = clock.now();
    let changes = store
        .call(move |c| {
            let tx = c.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            let mut out = Vec::new();
            for team in store::tenants::list_all(&tx)? {
                let settings: TenantSettings = store::settings::load(&tx, &team.id.to_string())?;
                let minutes = i64::from(settings.satellite_offline_threshold_minutes);
                let cutoff = Timestamp(now - chrono::Duration::minutes(minutes));
                let down = store::monitor::mark_offline(&tx, team.id, cutoff, Timestamp(now))?;
                let up = store::monitor::mark_online(&tx, team.id, cutoff)?;
                let mut alerts = Vec::new();
                if !down.is_empty() {
                    let rule = store::alerts::system_rule(&tx, team.id, SYSTEM_RULE, "Satellite offline", Timestamp(now))?;
                    for s in &down {
                        let title = format!("{} is offline", s.name);
                        let since = s.last_seen_at.map_or_else(|| "a while".to_owned(), |t| t.to_string());
                        let message = format!(
                            "No heartbeat, audio or telemetry from {} since {since} (the team's threshold is {minutes} minutes).",
                            s.name
                        );
                        let data = serde_json::json!({
                            "satelliteId": s.id, "satelliteName": s.name, "lastSeenAt": s.last_seen_at,
                        });
                        let new = store::alerts::NewAlert {
                            tenant_id: team.id,
                            rule_id: Some(&rule),
                            kind: SYSTEM_RULE,
                            title: &title,
                            message: &message,
                            data: &data,
                        };
                        alerts.push(store::alerts::insert(&tx, &new, Timestamp(now))?);
                    }
                }
                out.push((team.id, down, up, alerts));
            }
            tx.commit()?;
            Ok(out)
        })
        .await?;
    let mut pass = Pass::default();
    for (tenant, down, up, alerts) in changes {
        pass.went_offline += down.len();
        pass.came_back += up.len();
        for s in down {
            tracing::warn!(satellite = %s.id, name = %s.name, "satellite offline");
            bus.publish(Event::SatelliteOffline(status(tenant, s)));
        }
        for s in up {
            tracing::info!(satellite = %s.id, name = %s.name, "satellite back online");
            bus.publish(Event::SatelliteOnline(status(tenant, s)));
        }
        // After the state change, so a client sees the satellite go offline, then the alert.
        for alert in alerts {
            let value = serde_json::to_value(&alert).unwrap_or_default();
            bus.publish(Event::AlertRaised { tenant_id: tenant, alert: Arc::new(value) });
        }
    }
    Ok(pass)
}

/// The key and name of the system rule that satellite outages are raised under (SPEC 2.15).
pub const SYSTEM_RULE: &str = "satellite_offline";

fn status(tenant: TenantId, s: Changed) -> Arc<SatelliteStatus> {
    Arc::new(SatelliteStatus {
        tenant_id: tenant,
        satellite_id: s.id,
        name: s.name,
        last_seen_at: s.last_seen_at.map(Timestamp::at),
    })
}
