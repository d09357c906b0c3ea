//! Keeping an existing mosquitto's logins (`mqtt.external`, [`super::dynsec`]) in step with the
//! database. New secrets reach mosquitto when they are minted ([`crate::usecases::broker_logins`]);
//! this module does the rest:
//!
//! - at start, [`reconcile`] deletes the hub's logins that the database no longer knows, and says
//!   which satellites and worker keys have none there. The hub keeps only hashes, so those cannot
//!   be made: a satellite must be registered again, a worker key minted again.
//! - while running, [`satellite_revoked`] deletes the login of a satellite that was deleted or
//!   released (a re-registered one already has its new login, and lost its old session with it).

use std::collections::HashSet;

use super::dynsec::{DynSec, DynSecError, SATELLITE_ROLE, WORKER_ROLE, role_of};
use crate::{
    ids::SatelliteId,
    inference::remote::CLIENT_PREFIX,
    state::AppState,
    store::{self, Store},
};

#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    #[error(transparent)]
    DynSec(#[from] DynSecError),
    #[error(transparent)]
    Store(#[from] store::Error),
}

/// What [`reconcile`] found.
#[derive(Debug, Default)]
pub struct Reconciled {
    /// Logins of the hub's naming deleted because the database no longer knows them.
    pub deleted: Vec<String>,
    /// Satellites (id, name) that have a password in the database but no login on mosquitto.
    pub satellites_without_login: Vec<(SatelliteId, String)>,
    /// Live worker keys (id, name) without a login on mosquitto.
    pub workers_without_login: Vec<(uuid::Uuid, String)>,
}

/// Deletes stale logins of the hub's naming and lists the satellites and workers without one.
pub async fn reconcile(store: &Store, dynsec: &DynSec) -> Result<Reconciled, ReconcileError> {
    let (satellites, keys) = store
        .call(|c| {
            let keys = store::worker_keys::list(c)?;
            Ok((store::satellites::with_login(c)?, keys))
        })
        .await?;
    let workers: Vec<(uuid::Uuid, String)> =
        keys.into_iter().filter(|k| k.revoked_at.is_none()).map(|k| (k.id, k.name)).collect();
    let wanted: HashSet<String> = satellites
        .iter()
        .map(|(id, _)| id.to_string())
        .chain(workers.iter().map(|(id, _)| format!("{CLIENT_PREFIX}{id}")))
        .collect();
    let mut found = HashSet::new();
    let mut report = Reconciled::default();
    for client in dynsec.clients().await? {
        let ours = role_of(&client.username).is_some_and(|role| client.roles.iter().any(|r| r.rolename == role));
        let hub_naming =
            client.roles.iter().any(|r| r.rolename.starts_with(SATELLITE_ROLE) || r.rolename.starts_with(WORKER_ROLE));
        if !(ours || hub_naming) {
            continue; // someone else's login (Home Assistant's, the admin's ...)
        }
        if wanted.contains(&client.username) {
            found.insert(client.username);
        } else {
            dynsec.delete(&client.username).await?;
            report.deleted.push(client.username);
        }
    }
    report.satellites_without_login =
        satellites.into_iter().filter(|(id, _)| !found.contains(&id.to_string())).collect();
    report.workers_without_login =
        workers.into_iter().filter(|(id, _)| !found.contains(&format!("{CLIENT_PREFIX}{id}"))).collect();
    Ok(report)
}

/// [`reconcile`] at start, with its findings logged.
pub async fn reconcile_and_report(state: &AppState, dynsec: &DynSec) -> Result<(), ReconcileError> {
    let r = reconcile(&state.store, dynsec).await?;
    for name in &r.deleted {
        tracing::info!(login = %name, "deleted a mosquitto login the database no longer knows");
    }
    for (id, name) in &r.satellites_without_login {
        tracing::warn!(
            satellite = %id, %name,
            "this satellite has no login on mosquitto (registered while the embedded broker ran?): register it \
             again (POST /api/satellites with its name or deviceId) to give it one"
        );
    }
    for (id, name) in &r.workers_without_login {
        tracing::warn!(
            worker = %id, %name,
            "this worker key has no login on mosquitto: revoke it and mint a new one"
        );
    }
    Ok(())
}

/// A satellite's credentials were revoked: deleted or released, its login goes (which drops its
/// session); re-registered, it already has its new one.
pub async fn satellite_revoked(state: &AppState, dynsec: &DynSec, satellite: SatelliteId) {
    let login = state.store.call(move |c| store::satellites::credential(c, satellite)).await;
    let gone = match login {
        Ok(found) => found.is_none_or(|(_, hash)| hash == store::satellites::REVOKED_PASSWORD),
        Err(e) => {
            tracing::error!(%satellite, error = %e, "could not look a revoked satellite up");
            return;
        }
    };
    if gone && let Err(e) = dynsec.delete(&satellite.to_string()).await {
        tracing::error!(%satellite, error = %e, "could not delete a revoked satellite's login on mosquitto");
    }
}
