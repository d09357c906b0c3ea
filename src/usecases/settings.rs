//! Saving settings: a team's (an admin's) and the hub's (a platform admin's). The caller patched
//! and validated them; saving a team's tells its satellites their config changed.

use crate::{
    clock::Clock,
    domain::settings::{PlatformSettings, TenantSettings},
    events::{Bus, Event},
    ids::TenantId,
    store::{self, Store},
};

/// Stores `tenant`'s settings and announces the change (the config pusher sends it out).
pub async fn save_tenant(
    store: &Store,
    clock: &Clock,
    bus: &Bus,
    tenant: TenantId,
    settings: TenantSettings,
) -> Result<(), store::Error> {
    let (scope, now) = (tenant.to_string(), clock.stamp());
    let zone_before = store.team_zone(tenant).await?;
    let zone_changed = zone_before.name() != settings.time_zone.trim();
    store.call(move |c| store::settings::save(c, &scope, &settings, now)).await?;
    if zone_changed {
        // Its satellites that follow the team's zone take the new one, and their statistics
        // move over in the background.
        super::zones::team_zone_saved(store, clock, tenant).await?;
    }
    bus.publish(Event::ConfigChanged { tenant_id: tenant, satellite_id: None });
    Ok(())
}

/// Stores the hub's platform settings.
pub async fn save_platform(store: &Store, clock: &Clock, settings: PlatformSettings) -> Result<(), store::Error> {
    let now = clock.stamp();
    store.call(move |c| store::settings::save(c, store::settings::PLATFORM, &settings, now)).await
}
