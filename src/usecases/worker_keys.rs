//! Remote workers' keys (issue 49): a platform admin mints one per worker machine (the secret is
//! shown once and kept as its SHA-256), lists them and revokes them. Revoking refuses the next
//! login at once; the connected worker is dropped by the caller ([`crate::api::worker_keys`])
//! or, for a key revoked from the command line, by the hub's guard within seconds.

use super::broker_logins::BrokerLogins;
use crate::{
    auth::tokens,
    domain::validate,
    ids::UserId,
    inference::remote,
    store::{self, Store, worker_keys::WorkerKey},
    time::Timestamp,
};

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{0}")]
    InvalidName(String),
    #[error("no such worker key")]
    NotFound,
    /// The key is stored, but the external broker did not take its login: revoke it and mint another.
    #[error("the MQTT broker is unavailable; revoke this key and mint another in a moment")]
    BrokerUnavailable(#[source] super::broker_logins::LoginSyncError),
    #[error(transparent)]
    Store(#[from] store::Error),
}

/// Mints a key: the row, and the key (`bhw.<id>.<secret>`) to hand to the worker, once.
/// `logins` learns the worker's login (an external broker's), after the row is stored.
pub async fn mint(
    store: &Store,
    logins: &dyn BrokerLogins,
    name: &str,
    by: Option<UserId>,
    now: Timestamp,
) -> Result<(WorkerKey, String), Error> {
    let name = validate::name(name, "name").map_err(Error::InvalidName)?;
    let (id, secret) = (uuid::Uuid::new_v4(), tokens::random_hex(32));
    let hash = tokens::sha256_hex(&secret);
    let key = store.call(move |c| store::worker_keys::insert(c, id, &name, &hash, by, now)).await?;
    logins.worker(id, &secret).await.map_err(Error::BrokerUnavailable)?;
    Ok((key, remote::format_key(id, &secret)))
}

pub async fn list(store: &Store) -> Result<Vec<WorkerKey>, Error> {
    Ok(store.call(|c| store::worker_keys::list(c)).await?)
}

/// Revokes a key. Revoking one already revoked is not an error (the answer is the same).
pub async fn revoke(store: &Store, id: uuid::Uuid, now: Timestamp) -> Result<(), Error> {
    let found = store
        .call(move |c| {
            store::worker_keys::revoke(c, id, now)?;
            store::worker_keys::exists(c, id)
        })
        .await?;
    if found { Ok(()) } else { Err(Error::NotFound) }
}

/// Of the workers connected now, those whose key was revoked (or deleted) since they joined.
pub async fn revoked_among(store: &Store, ids: Vec<uuid::Uuid>) -> Result<Vec<uuid::Uuid>, Error> {
    Ok(store
        .call(move |c| {
            let mut gone = Vec::new();
            for id in ids {
                if store::worker_keys::live_hash(c, id)?.is_none() {
                    gone.push(id);
                }
            }
            Ok(gone)
        })
        .await?)
}
