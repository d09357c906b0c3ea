//! Which zone each satellite is in, and keeping the statistics right when that changes.
//!
//! A satellite's effective zone is, in order: its override (chosen on its page), the zone of its
//! coordinates (found offline, `domain::zone::Finder`), its team's `time_zone` setting. Changing
//! any of them changes the days and hours its detections count on. The rollups are not rebuilt
//! by hand: the zone mover ([`run_mover`], a background task) counts the satellite's rows over
//! from the old zone to the new in batches of [`BATCH`], each in its own transaction, so the
//! stats stay readable and every figure adds up at every moment. [`progress`] reports how far
//! it is.

use std::sync::OnceLock;

use chrono_tz::Tz;
use tokio::sync::Notify;

use crate::{
    clock::Clock,
    domain::zone::{self, ZoneError},
    ids::{SatelliteId, TenantId},
    store::{self, Store, zones::SatelliteZone},
};

/// Rows (detections, and chunks) per move batch: about 0.1 s of work on a Pi.
pub const BATCH: i64 = 2_000;

fn signal() -> &'static Notify {
    static WAKE: OnceLock<Notify> = OnceLock::new();
    WAKE.get_or_init(Notify::new)
}

/// Asks the zone mover to look for work now (a zone or a position changed).
pub fn wake() {
    signal().notify_one();
}

/// After a team's `time_zone` setting was saved: its satellites that follow it take it.
pub async fn team_zone_saved(store: &Store, clock: &Clock, tenant: TenantId) -> store::Result<()> {
    let now = clock.stamp();
    store
        .call(move |c| {
            let pks = store::zones::following_team(c, &tenant)?;
            store::zones::refresh_all(c, &pks, now)
        })
        .await?;
    wake();
    Ok(())
}

/// Why a satellite's zone override was refused.
#[derive(Debug, thiserror::Error)]
pub enum OverrideError {
    #[error("{0}.")]
    InvalidZone(#[from] ZoneError),
    #[error("There is no such satellite in this team.")]
    NotFound,
    #[error(transparent)]
    Store(store::Error),
}

super::from_store_error!(OverrideError, not_found => NotFound);

/// Sets (`Some`) or clears (`None`, back to its position or team) a satellite's zone.
pub async fn set_override(
    store: &Store,
    clock: &Clock,
    tenant: TenantId,
    id: SatelliteId,
    name: Option<&str>,
) -> Result<SatelliteZone, OverrideError> {
    let tz: Option<Tz> = name.map(zone::parse).transpose()?;
    let now = clock.stamp();
    let info = super::in_tx(store, move |tx| {
        store::satellites::ensure_in_tenant(tx, tenant, id)?;
        let pk = store::zones::set_override(tx, &id, tz)?;
        store::zones::refresh_all(tx, &[pk], now)?;
        Ok::<_, OverrideError>(store::zones::satellite_zone_info(tx, &id)?)
    })
    .await?;
    wake();
    Ok(info)
}

/// How far the statistics are from counting every satellite of a team in its current zone.
#[derive(Debug, Clone, Default, serde::Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Progress {
    /// Whether a move is under way (the day and hour figures of the satellites named are partly
    /// in their old zone until it ends).
    pub running: bool,
    /// Rows (detections and chunks) counted over, and to count, over all moves.
    pub done: i64,
    pub total: i64,
    pub satellites: Vec<SatelliteMove>,
}

/// One satellite's move.
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SatelliteMove {
    pub satellite_id: SatelliteId,
    pub name: String,
    pub from_zone: String,
    pub to_zone: String,
    pub done: i64,
    pub total: i64,
}

/// The team's moves under way.
pub async fn progress(store: &Store, tenant: TenantId) -> store::Result<Progress> {
    let moves = store.call(move |c| store::zones::moves(c, Some(&tenant))).await?;
    let satellites: Vec<SatelliteMove> = moves
        .into_iter()
        .map(|m| SatelliteMove {
            satellite_id: m.satellite_id,
            name: m.satellite_name,
            from_zone: m.from,
            to_zone: m.to,
            done: m.moved.min(m.total),
            total: m.total,
        })
        .collect();
    Ok(Progress {
        running: !satellites.is_empty(),
        done: satellites.iter().map(|s| s.done).sum(),
        total: satellites.iter().map(|s| s.total).sum(),
        satellites,
    })
}

/// Decides the zones of satellites that have none yet (what the mover does first; for commands
/// that run without it).
pub async fn resolve_pending(store: &Store, clock: &Clock) -> store::Result<()> {
    let now = clock.stamp();
    store
        .call(move |c| {
            let pks = store::zones::unresolved(c)?;
            store::zones::refresh_all(c, &pks, now)
        })
        .await
}

/// One round of the mover: decides the zones of satellites that need it, starts the moves that
/// are due, and carries every running move one batch further. Returns whether work is left.
pub async fn step(store: &Store, clock: &Clock) -> store::Result<bool> {
    let now = clock.stamp();
    let running = store
        .call(move |c| {
            store::zones::refresh_all(c, &store::zones::unresolved(c)?, now)?;
            for pk in store::zones::pending_moves(c)? {
                store::zones::start_move(c, pk, now)?;
            }
            Ok(store::zones::moves(c, None)?.into_iter().map(|m| m.satellite_pk).collect::<Vec<i64>>())
        })
        .await?;
    let mut left = false;
    for pk in running {
        let finished = store.call(move |c| store::zones::move_step(c, pk, BATCH, now)).await?;
        left |= !finished;
    }
    Ok(left)
}

/// The zone mover: runs [`step`] while there is work, then waits to be woken (or a minute).
pub async fn run_mover(
    store: Store,
    clock: Clock,
    shutdown: tokio_util::sync::CancellationToken,
) -> anyhow::Result<()> {
    loop {
        let more = match step(&store, &clock).await {
            Ok(more) => more,
            Err(e) => {
                tracing::warn!(error = %e, "moving statistics to a new time zone failed; retrying in a minute");
                false
            }
        };
        if more {
            // Leave the writer to ingest between batches.
            tokio::select! {
                _ = shutdown.cancelled() => return Ok(()),
                _ = tokio::time::sleep(std::time::Duration::from_millis(20)) => {}
            }
            continue;
        }
        tokio::select! {
            _ = shutdown.cancelled() => return Ok(()),
            _ = signal().notified() => {}
            _ = tokio::time::sleep(std::time::Duration::from_secs(60)) => {}
        }
    }
}
