//! The satellite monitor's rule, one pass (SPEC 3, 8): in each team, a satellite not heard from for
//! the team's `satellite_offline_threshold_minutes` (default 5) goes offline, and one heard from
//! since goes back online. Each change is announced once on the bus (`SatelliteOffline`,
//! `SatelliteOnline`), and going offline raises one `satellite_offline` alert under the team's
//! system rule of that name, in the same transaction: one alert per outage, not one per pass. The
//! same pass marks satellites whose clock went wrong or came right ([`super::clock_health`]).
//! `jobs::satellite_monitor` runs this every 60 s; it reads the hub's clock, so tests move time
//! instead of waiting.
//!
//! A satellite that says it stopped (its last heartbeat, [`said_stopped`]) goes offline at once,
//! announced the same way but raising no alert: it was stopped on purpose (by a person, or to
//! restart after an update). It stays offline until a heartbeat says otherwise.

use std::sync::Arc;

use super::alerting::{self, AlertContext};
use crate::{
    clock::Clock,
    domain::{
        alert_rules::{OFFLINE_RULE_KEY, OFFLINE_RULE_NAME},
        settings::TenantSettings,
    },
    events::{Bus, Event, SatelliteStatus},
    ids::{SatelliteId, TenantId},
    notify::{Notice, NoticeData},
    store::{self, Store, monitor::Changed},
    time::Timestamp,
};

/// What one pass changed.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Pass {
    pub went_offline: usize,
    pub came_back: usize,
    /// Satellites whose clock was found wrong, or right again, in this pass.
    pub clock_wrong: usize,
    pub clock_right: usize,
}

/// One pass over every team.
pub async fn check(store: &Store, bus: &Bus, clock: &Clock, ctx: &AlertContext) -> store::Result<Pass> {
    let now = clock.now();
    let ctx = ctx.clone();
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
                    let rule = store::alert_rules::offline_rule(&tx, team.id)?;
                    for s in down.iter().filter(|_| rule.enabled) {
                        // Recorded on the rule, so its "Last fired" shows the outage.
                        store::alert_rules::fired(&tx, &rule.id, &s.id.to_string(), Timestamp(now))?;
                        let zone = store::zones::satellite_zone(&tx, &s.id)?;
                        alerts.push(alerting::raise(
                            &tx,
                            &rule,
                            offline_notice(&ctx, team.id, (s, zone), minutes, now),
                            Timestamp(now),
                        )?);
                    }
                }
                let clocks = super::clock_health::check_team(&tx, &ctx, team.id, now)?;
                alerts.extend(clocks.alerts);
                out.push((team.id, down, up, alerts, (clocks.wrong, clocks.right)));
            }
            tx.commit()?;
            Ok(out)
        })
        .await?;
    let mut pass = Pass::default();
    for (tenant, down, up, alerts, (wrong, right)) in changes {
        pass.went_offline += down.len();
        pass.came_back += up.len();
        pass.clock_wrong += wrong.len();
        pass.clock_right += right.len();
        for s in wrong {
            tracing::warn!(satellite = %s.id, name = %s.name, offset_ms = s.offset_ms, "satellite clock wrong");
        }
        for s in right {
            tracing::info!(satellite = %s.id, name = %s.name, offset_ms = s.offset_ms, "satellite clock right again");
        }
        for s in down {
            tracing::warn!(satellite = %s.id, name = %s.name, "satellite offline");
            bus.publish(Event::SatelliteOffline(status(tenant, s)));
        }
        for s in up {
            tracing::info!(satellite = %s.id, name = %s.name, "satellite back online");
            bus.publish(Event::SatelliteOnline(status(tenant, s)));
        }
        // After the state change, so a client sees the satellite go offline, then the alert.
        alerting::announce(bus, alerts);
    }
    Ok(pass)
}

/// Marks a satellite whose heartbeat said `stopped` offline now, and announces it once.
pub async fn said_stopped(
    store: &Store,
    bus: &Bus,
    tenant: TenantId,
    satellite: SatelliteId,
    now: Timestamp,
) -> store::Result<()> {
    let changed = store.call(move |c| store::monitor::mark_stopped(c, tenant, satellite, now)).await?;
    if let Some(s) = changed {
        tracing::info!(satellite = %s.id, name = %s.name, "satellite stopped");
        bus.publish(Event::SatelliteOffline(status(tenant, s)));
    }
    Ok(())
}

fn offline_notice(
    ctx: &AlertContext,
    tenant: TenantId,
    (s, zone): (&Changed, chrono_tz::Tz),
    minutes: i64,
    now: chrono::DateTime<chrono::Utc>,
) -> Notice {
    // In the satellite's own zone, as everything about one station.
    let since = s.last_seen_at.map_or_else(|| "a while".to_owned(), |t| crate::time::readable_in(t, zone));
    let mut extra = serde_json::Map::new();
    extra.insert("lastSeenAt".into(), serde_json::to_value(s.last_seen_at).unwrap_or_default());
    extra.insert("thresholdMinutes".into(), minutes.into());
    Notice {
        event: OFFLINE_RULE_KEY.into(),
        timestamp: Timestamp(now),
        tenant_id: tenant,
        alert_id: None,
        rule_name: Some(OFFLINE_RULE_NAME.into()),
        title: format!("{} is offline", s.name),
        message: format!(
            "No heartbeat, audio or telemetry from {} since {since} (the team's threshold is {minutes} minutes).",
            s.name
        ),
        link: Some(ctx.link(&format!("/satellites/{}", s.id))),
        data: NoticeData {
            satellite_id: Some(s.id),
            satellite_name: Some(s.name.clone()),
            extra,
            zone: Some(zone),
            ..Default::default()
        },
    }
}

fn status(tenant: TenantId, s: Changed) -> Arc<SatelliteStatus> {
    Arc::new(SatelliteStatus {
        tenant_id: tenant,
        satellite_id: s.id,
        name: s.name,
        last_seen_at: s.last_seen_at.map(Timestamp::at),
    })
}
