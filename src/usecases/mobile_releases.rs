//! Mobile app releases (SPEC 2.14, 4.11): what the Android app asks (`latest`, with whether it
//! should update), the platform admin's list, the force-update flag and deleting a release with
//! its APK. Uploading is in [`upload`].
//!
//! The latest release is the one with the highest SemVer precedence, not the newest upload, so
//! uploading a 1.4.1 hotfix after 2.0.0 does not offer 2.0.0 users a downgrade.

mod apk_zip;
pub mod upload;

use super::in_tx;
use crate::{
    domain::versions::{self, BadVersion},
    objects::{ObjectError, ObjectStore},
    store::{self, Store, mobile_releases::Release},
};

/// How many releases the admin list shows (SPEC 8).
pub const RECENT: u32 = 20;

/// Everything that can go wrong with a release.
#[derive(Debug, thiserror::Error)]
pub enum ReleaseError {
    #[error("the form has no `apk` file")]
    MissingApk,
    #[error("the form has no `version`")]
    MissingVersion,
    #[error("version: {0}")]
    InvalidVersion(BadVersion),
    #[error("forceUpdate must be true or false, not {0:?}")]
    InvalidForceUpdate(String),
    #[error("notes may be at most {max} characters")]
    NotesTooLong { max: usize },
    #[error("the file is not an APK: {0}")]
    NotAnApk(String),
    #[error("the APK is larger than the limit of {limit} bytes")]
    TooLarge { limit: u64 },
    #[error("version {0} is already released; pick a new version")]
    VersionTaken(String),
    #[error("no such mobile release")]
    NotFound,
    #[error("currentVersion: {0}")]
    InvalidCurrentVersion(BadVersion),
    #[error(transparent)]
    Objects(#[from] ObjectError),
    #[error(transparent)]
    Store(store::Error),
}
from_store_error!(ReleaseError, not_found => NotFound);

/// What `GET /mobile/latest` tells the app.
#[derive(Debug, Clone)]
pub struct Latest {
    /// The highest release, or `None` when nothing was uploaded yet.
    pub release: Option<Release>,
    /// Whether `release` is newer than the app's `currentVersion`; without a `currentVersion`,
    /// whether there is any release at all.
    pub update_available: bool,
    /// Whether the app must update: some release newer than `currentVersion` is marked
    /// `force_update` (an app that skipped a forced 1.1.0 still must update when 1.2.0 is not
    /// forced). Without a `currentVersion`: the latest release's own flag. Never when no update.
    pub force_update: bool,
}

/// The release with the highest SemVer, compared with what the app runs.
pub async fn latest(store: &Store, current: Option<String>) -> Result<Latest, ReleaseError> {
    let current = match current.as_deref().map(str::trim) {
        None | Some("") => None,
        Some(text) => Some(versions::parse(text).map_err(ReleaseError::InvalidCurrentVersion)?),
    };
    let (release, forced) = store
        .call(|c| {
            let forced = store::mobile_releases::forced_versions(c)?;
            Ok((highest_in(c)?, forced))
        })
        .await?;
    let newer = |text: &str| match &current {
        None => true,
        Some(current) => versions::parse(text).is_ok_and(|v| versions::update_available(current, &v)),
    };
    let update_available = release.as_ref().is_some_and(|r| newer(&r.version));
    let force_update = update_available
        && match &current {
            None => release.as_ref().is_some_and(|r| r.force_update),
            Some(_) => forced.iter().any(|v| newer(v)),
        };
    Ok(Latest { release, update_available, force_update })
}

/// The release with the highest SemVer, if any.
pub async fn highest(store: &Store) -> Result<Option<Release>, ReleaseError> {
    Ok(store.call(|c| highest_in(c)).await?)
}

fn highest_in(c: &rusqlite::Connection) -> store::Result<Option<Release>> {
    let all = store::mobile_releases::versions(c)?;
    let Some(best) = versions::highest(all.iter().map(|(_, v)| v.as_str())) else { return Ok(None) };
    let id = all.iter().find(|(_, v)| versions::parse(v).is_ok_and(|v| v == best)).map(|(id, _)| id.clone());
    id.map(|id| store::mobile_releases::get(c, &id)).transpose()
}

/// One release (for its download).
pub async fn get(store: &Store, id: String) -> Result<Release, ReleaseError> {
    Ok(store.call(move |c| store::mobile_releases::get(c, &id)).await?)
}

/// The [`RECENT`] newest uploads, newest first.
pub async fn recent(store: &Store) -> Result<Vec<Release>, ReleaseError> {
    Ok(store.call(|c| store::mobile_releases::recent(c, RECENT)).await?)
}

/// Sets `force_update`, or flips it when `force` is `None` (SPEC 3: "flag toggled").
pub async fn set_force_update(store: &Store, id: String, force: Option<bool>) -> Result<Release, ReleaseError> {
    in_tx(store, move |tx| Ok(store::mobile_releases::set_force_update(tx, &id, force)?)).await
}

/// Deletes the row and its APK together: the file is removed inside the transaction, so a failure
/// to remove it keeps the row (and the release stays downloadable) instead of leaving a dangling row.
pub async fn delete(store: &Store, objects: &ObjectStore, id: String) -> Result<Release, ReleaseError> {
    let objects = objects.clone();
    in_tx(store, move |tx| {
        let release = store::mobile_releases::delete(tx, &id)?;
        objects.remove_blocking(&release.storage_key)?;
        Ok(release)
    })
    .await
}
