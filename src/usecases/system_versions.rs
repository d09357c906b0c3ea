//! `GET /system/versions` (SPEC 2.21): the latest SemVer per release stream, for the dashboard's
//! "update available" hints.
//!
//! - `hub`: the higher of the running binary's version and `releases.hub_version`.
//! - `satellite`: the higher of `releases.satellite_version` and the highest version that any
//!   satellite of the `satellite` stream reported in a heartbeat (all teams: a version number says
//!   nothing about a team, and every team's Pis run the same releases).
//! - `mobile`: the highest uploaded APK release.
//!
//! Each is `None` when nothing is known.

use serde::Serialize;

use crate::{
    config::ReleaseSettings,
    domain::versions::{self, Version},
    store::{self, Store},
};

#[derive(Debug, thiserror::Error)]
pub enum VersionsError {
    #[error(transparent)]
    Store(#[from] store::Error),
}

/// The latest version of each stream.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LatestVersions {
    pub hub: Option<String>,
    pub satellite: Option<String>,
    pub mobile: Option<String>,
}

/// `running` is this binary's version.
pub async fn latest(
    store: &Store,
    running: &str,
    configured: &ReleaseSettings,
) -> Result<LatestVersions, VersionsError> {
    let hub = versions::newest(known([running, &configured.hub_version]));
    let (reported, releases) = store
        .call(|c| Ok((store::satellites::reported_versions(c, "satellite")?, store::mobile_releases::versions(c)?)))
        .await?;
    let satellite = versions::newest(
        known([configured.satellite_version.as_str()]).chain(versions::highest(reported.iter().map(String::as_str))),
    );
    let mobile = versions::highest(releases.iter().map(|(_, v)| v.as_str()));
    Ok(LatestVersions {
        hub: hub.map(|v| v.to_string()),
        satellite: satellite.map(|v| v.to_string()),
        mobile: mobile.map(|v| v.to_string()),
    })
}

/// The texts that parse as SemVer (config values are checked at start; empty means unset).
fn known<'a, const N: usize>(texts: [&'a str; N]) -> impl Iterator<Item = Version> + 'a {
    texts.into_iter().filter_map(|t| versions::parse(t).ok())
}
