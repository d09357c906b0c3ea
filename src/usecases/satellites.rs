//! What people do to devices: register (or re-register) a satellite, rename it, rotate its API key
//! and delete it. The device rule (who may touch which device) is checked by the caller with
//! `auth::device_rule`; these functions own the transaction and the rules of SPEC 4.4.

use super::broker_logins::BrokerLogins;
use crate::{
    auth::tokens,
    clock::Clock,
    domain::{DeviceKind, Role, settings::DevicePolicy, validate},
    ids::{SatelliteId, TenantId, UserId},
    store::{self, Store, satellites::Satellite},
};

/// A registration as the person (or the app on their behalf) asks for it; checked here.
#[derive(Debug, Clone)]
pub struct Registration {
    pub tenant: TenantId,
    pub by: UserId,
    /// Whether `by` is an admin of the team (or a platform admin).
    pub by_admin: bool,
    pub name: String,
    pub device_id: Option<String>,
    pub kind: DeviceKind,
    pub location: Option<(f64, f64)>,
}

/// The device and its fresh credentials, shown once.
#[derive(Debug, Clone)]
pub struct Registered {
    pub satellite: Satellite,
    /// `false` when a known device was re-registered (its old credentials are void).
    pub created: bool,
    /// A team-owned device that the registering member claimed (ownership moved to them).
    pub claimed: bool,
    pub mqtt_password: String,
    pub api_key: String,
}

#[derive(Debug, thiserror::Error)]
pub enum RegisterError {
    #[error("{0}")]
    InvalidName(String),
    #[error("deviceId must be 1 to 128 of A-Z a-z 0-9 . _ : -")]
    InvalidDeviceId,
    #[error("latitude/longitude out of range")]
    InvalidLocation,
    #[error("this team lets only admins register satellites")]
    PolicyAdminsOnly,
    #[error("a satellite of this team already has that name; choose another")]
    NameTaken,
    #[error("another member registered this device")]
    DeviceOfAnotherMember,
    /// The registration is stored, but the external broker did not take the new password: the
    /// credentials would not work. Registering again (same name or device id) retries.
    #[error("the MQTT broker is unavailable; register the satellite again in a moment")]
    BrokerUnavailable(#[source] super::broker_logins::LoginSyncError),
    #[error(transparent)]
    Store(#[from] store::Error),
}

fn valid_device_id(s: &str) -> bool {
    !s.is_empty() && s.len() <= 128 && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"._:-".contains(&b))
}

/// Registers a satellite, or re-registers a known one: found by `deviceId`, else adopted by name.
/// A known device may be re-registered by a team admin, by the member who registered it, or
/// claimed by a member when nobody registered it. Its old MQTT password and API keys stop working.
/// `logins` learns the new MQTT password (an external broker's login), after the commit.
pub async fn register(
    store: &Store,
    clock: &Clock,
    logins: &dyn BrokerLogins,
    req: Registration,
) -> Result<Registered, RegisterError> {
    let name = validate::name(&req.name, "name").map_err(RegisterError::InvalidName)?;
    let device_id = req.device_id.filter(|d| !d.is_empty());
    if device_id.as_deref().is_some_and(|d| !valid_device_id(d)) {
        return Err(RegisterError::InvalidDeviceId);
    }
    if req.location.is_some_and(|(a, o)| validate::position(a, o).is_err()) {
        return Err(RegisterError::InvalidLocation);
    }
    let password = tokens::random_hex(32);
    let api_key = tokens::random_hex(32);
    let (pw_hash, key_hash, key_prefix) =
        (tokens::sha256_hex(&password), tokens::sha256_hex(&api_key), api_key[..8].to_owned());
    let now = clock.stamp();
    let Registration { tenant, by: me, by_admin, kind, location, .. } = req;
    let outcome = store
        .call(move |c| {
            let tx = c.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            let settings: crate::domain::settings::TenantSettings = store::settings::load(&tx, &tenant.to_string())?;
            if settings.device_policy == DevicePolicy::Admins && !by_admin {
                return Ok(Err(RegisterError::PolicyAdminsOnly));
            }
            let existing = match &device_id {
                Some(d) => store::satellites::find_by_device(&tx, tenant, d)?.map(|s| (s, true)),
                None => None,
            }
            .or(store::satellites::find_by_name(&tx, tenant, &name)?.map(|s| (s, false)));
            let (id, created, claimed) = match existing {
                Some((sat, by_device)) => {
                    let mine = sat.registered_by == Some(me);
                    let claimable = by_device && sat.registered_by.is_none();
                    if !(by_admin || mine || claimable) {
                        return Ok(Err(if by_device {
                            RegisterError::DeviceOfAnotherMember
                        } else {
                            RegisterError::NameTaken
                        }));
                    }
                    store::satellites::set_password_hash(&tx, tenant, sat.id, &pw_hash, now)?;
                    if claimable && !by_admin {
                        store::satellites::set_registered_by(&tx, tenant, sat.id, Some(me), now)?;
                    }
                    if let Some((la, lo)) = location {
                        store::satellites::set_location(&tx, tenant, sat.id, la, lo)?;
                    }
                    store::api_keys::revoke_for_satellite(&tx, sat.id, now)?;
                    (sat.id, false, claimable && !by_admin)
                }
                None => {
                    let new = store::satellites::NewSatellite {
                        tenant_id: tenant,
                        name: &name,
                        device_id: device_id.as_deref(),
                        kind,
                        registered_by: Some(me),
                        mqtt_password_hash: &pw_hash,
                        latitude: location.map(|l| l.0),
                        longitude: location.map(|l| l.1),
                    };
                    (store::satellites::insert(&tx, &new)?, true, false)
                }
            };
            store::api_keys::create(
                &tx,
                &store::api_keys::NewKey {
                    tenant_id: tenant,
                    satellite_id: Some(id),
                    created_by: Some(me),
                    name: "satellite",
                    key_hash: &key_hash,
                    key_prefix: &key_prefix,
                    role: Role::Member,
                },
            )?;
            let sat = store::satellites::get(&tx, id)?;
            tx.commit()?;
            Ok(Ok((sat, created, claimed)))
        })
        .await
        .map_err(|e| match e {
            // Two registrations of one new name (or device) at once: the second loses on the index.
            store::Error::Duplicate => RegisterError::NameTaken,
            other => other.into(),
        })?;
    let (satellite, created, claimed) = outcome?;
    logins
        .satellite(satellite.tenant_id, satellite.id, satellite.kind, &password)
        .await
        .map_err(RegisterError::BrokerUnavailable)?;
    // Its zone is decided at once; a move of its statistics (a new position) starts now.
    super::zones::wake();
    Ok(Registered { satellite, created, claimed, mqtt_password: password, api_key })
}

#[derive(Debug, thiserror::Error)]
pub enum RenameError {
    #[error("{0}")]
    InvalidName(String),
    #[error("a satellite of this team already has that name")]
    NameTaken,
    #[error("There is no such satellite in this team.")]
    NotFound,
    #[error(transparent)]
    Store(store::Error),
}

super::from_store_error!(RenameError, not_found => NotFound, duplicate => NameTaken);

/// Renames one of `tenant`'s satellites; names are unique in a team.
pub async fn rename(
    store: &Store,
    clock: &Clock,
    tenant: TenantId,
    id: SatelliteId,
    name: &str,
) -> Result<Satellite, RenameError> {
    let name = validate::name(name, "name").map_err(RenameError::InvalidName)?;
    let now = clock.stamp();
    store
        .call(move |c| {
            let tx = c.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            if store::satellites::find_by_name(&tx, tenant, &name)?.is_some_and(|o| o.id != id) {
                return Ok(Err(RenameError::NameTaken));
            }
            store::satellites::rename(&tx, tenant, id, &name, now)?;
            let sat = store::satellites::get(&tx, id)?;
            tx.commit()?;
            Ok(Ok(sat))
        })
        .await?
}

/// Replaces the satellite's API key; the old one stops working at once. Returns the new key, once.
pub async fn rotate_key(
    store: &Store,
    clock: &Clock,
    tenant: TenantId,
    id: SatelliteId,
    by: Option<UserId>,
) -> Result<String, store::Error> {
    let key = tokens::random_hex(32);
    let (hash, prefix, now) = (tokens::sha256_hex(&key), key[..8].to_owned(), clock.stamp());
    store
        .call(move |c| {
            let tx = c.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            // Proves the device is the team's before any key is touched.
            store::satellites::ensure_in_tenant(&tx, tenant, id)?;
            store::api_keys::revoke_for_satellite(&tx, id, now)?;
            store::api_keys::create(
                &tx,
                &store::api_keys::NewKey {
                    tenant_id: tenant,
                    satellite_id: Some(id),
                    created_by: by,
                    name: "satellite",
                    key_hash: &hash,
                    key_prefix: &prefix,
                    role: Role::Member,
                },
            )?;
            tx.commit()?;
            Ok(())
        })
        .await?;
    Ok(key)
}

/// Deletes one of `tenant`'s satellites: its broker login and keys stop working at once. Its
/// recordings and detections stay with the team. The caller drops its live MQTT session.
pub async fn remove(store: &Store, clock: &Clock, tenant: TenantId, id: SatelliteId) -> Result<(), store::Error> {
    let now = clock.stamp();
    store
        .call(move |c| {
            let tx = c.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            store::satellites::soft_delete(&tx, tenant, id, now)?;
            store::api_keys::revoke_for_satellite(&tx, id, now)?;
            tx.commit()?;
            Ok(())
        })
        .await
}

/// Stores a satellite's config overrides (as JSON) and/or its config lock, and returns it as now
/// stored. The caller checked the device rule and pushes the new config.
pub async fn set_config(
    store: &Store,
    clock: &Clock,
    tenant: TenantId,
    id: SatelliteId,
    overrides_json: Option<String>,
    locked: Option<bool>,
) -> Result<store::satellites::Satellite, store::Error> {
    let now = clock.stamp();
    crate::usecases::in_tx(store, move |tx| {
        if let Some(j) = &overrides_json {
            store::satellites::set_overrides(tx, tenant, id, j, now)?;
        }
        if let Some(l) = locked {
            store::satellites::set_config_locked(tx, tenant, id, l, now)?;
        }
        store::satellites::get(tx, id)
    })
    .await
}

/// Stores a satellite's recording profile (as JSON) and returns it as now stored.
pub async fn set_profile(
    store: &Store,
    clock: &Clock,
    tenant: TenantId,
    id: SatelliteId,
    profile_json: String,
) -> Result<store::satellites::Satellite, store::Error> {
    let now = clock.stamp();
    crate::usecases::in_tx(store, move |tx| {
        store::satellites::set_profile(tx, tenant, id, &profile_json, now)?;
        store::satellites::get(tx, id)
    })
    .await
}

#[cfg(test)]
mod tests {
    //! Writes to a device name its team in SQL: another team's id changes nothing.
    use super::*;
    use crate::store::testing;

    #[tokio::test]
    async fn another_teams_satellite_cannot_be_changed_by_id() {
        let (store, _dir) = testing::store().await;
        let clock = Clock::default();
        let (a, b) = store.call(|c| Ok((testing::team(c, "a")?, testing::team(c, "b")?))).await.expect("teams");
        let reg = Registration {
            tenant: b.0,
            by: b.1,
            by_admin: true,
            name: "b-garden".into(),
            device_id: None,
            kind: DeviceKind::Satellite,
            location: None,
        };
        let theirs = register(&store, &clock, &crate::usecases::broker_logins::NoBrokerLogins, reg)
            .await
            .expect("registered")
            .satellite;
        let (team_a, id) = (a.0, theirs.id);
        let now = clock.stamp();
        let attempts = store
            .call(move |c| {
                Ok([
                    store::satellites::rename(c, team_a, id, "mine", now),
                    store::satellites::set_password_hash(c, team_a, id, "h", now),
                    store::satellites::set_registered_by(c, team_a, id, None, now),
                    store::satellites::set_overrides(c, team_a, id, "{\"x\":1}", now),
                    store::satellites::set_config_locked(c, team_a, id, true, now),
                    store::satellites::set_profile(c, team_a, id, "{}", now),
                    store::satellites::set_location(c, team_a, id, 1.0, 2.0).map(|_| ()),
                    store::satellites::request_update(c, team_a, id, "1.0.0", now),
                    store::satellites::soft_delete(c, team_a, id, now),
                    store::satellites::record_heartbeat(c, team_a, id, &Default::default(), now, now),
                ])
            })
            .await
            .expect("attempts");
        // A sign of life names the device's team too; another team's id refreshes nothing.
        store.call(move |c| store::satellites::seen(c, team_a, id, now)).await.expect("seen");
        for (i, r) in attempts.iter().enumerate() {
            assert!(matches!(r, Err(store::Error::NotFound)), "write {i} of another team's device: {r:?}");
        }
        assert!(matches!(rename(&store, &clock, team_a, id, "mine").await, Err(RenameError::NotFound)));
        assert!(matches!(remove(&store, &clock, team_a, id).await, Err(store::Error::NotFound)));
        assert!(matches!(rotate_key(&store, &clock, team_a, id, None).await, Err(store::Error::NotFound)));
        let after = store.call(move |c| store::satellites::get(c, id)).await.expect("still there");
        assert_eq!(after, theirs, "nothing about B's device changed");
    }
}
