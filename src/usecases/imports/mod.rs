//! Importing an old BirdNET-Pi or BirdNET-Go station as a satellite of a team (issue 38).
//!
//! [`prepare`] opens and checks the source at once (a directory, a database file or a tar backup)
//! and writes only the job row; [`run`] reads the source in batches ([`peer::PeerSource`]),
//! maps names, converts times, copies clips and writes each batch in one transaction, updating
//! the job row as it goes. Imported rows are written through the store, never the event bus: they
//! fire no alert, webhook, MQTT message, live event or BirdWeather upload.

pub mod birdnet_go;
pub mod birdnet_pi;
pub mod boundary;
mod clips;
mod engine;
pub mod foreign_db;
pub mod peer;
pub mod place;
mod resolve;
pub mod shown;
pub mod source;
pub mod space;
pub mod unpack;
mod write;

use std::path::{Path, PathBuf};

use crate::{
    domain::{validate, zone},
    ids::{ImportId, SatelliteId, TenantId, UserId},
    inference::{range, translations::Translations},
    objects::ObjectStore,
    store::{self, Store, imports::ImportJob},
};

pub use peer::{PeerKind, SourceError};
pub use store::imports::Counts as Progress;

/// Where the history goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// A new satellite, named so (else after the station).
    New { name: Option<String> },
    /// A satellite of the team (a station that now runs `birdhub satellite`).
    Existing(SatelliteId),
}

/// One import, as asked.
#[derive(Debug, Clone)]
pub struct ImportRequest {
    pub tenant: TenantId,
    pub kind: PeerKind,
    /// A directory, a database file (BirdNET-Go: with its `-wal`/`-shm`), or a tar backup.
    pub source: PathBuf,
    pub target: Target,
    /// The IANA zone of the station's wall clock; `None`: the satellite's (existing) or team's.
    pub zone: Option<String>,
    pub dry_run: bool,
    pub actor: Option<UserId>,
    /// Where the clips are, when not beside the database (`--clips`).
    pub clips: Option<PathBuf>,
}

impl ImportRequest {
    /// A request with the defaults: the team's zone, no dry run, no actor, clips found beside.
    pub fn new(tenant: TenantId, kind: PeerKind, source: PathBuf, target: Target) -> Self {
        Self { tenant, kind, source, target, zone: None, dry_run: false, actor: None, clips: None }
    }
}

/// What can go wrong, in words people can act on.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// No database at the path, an unknown schema, the other peer's database, unreadable.
    #[error(transparent)]
    Source(#[from] SourceError),
    #[error("no satellite {0} in this team")]
    UnknownSatellite(SatelliteId),
    #[error(
        "{0:?} is not a time zone name the hub knows: give a place's zone such as Europe/Berlin or America/New_York"
    )]
    BadZone(String),
    /// The new satellite's name, as asked, is not one the hub takes (the API's rule).
    #[error("{0}")]
    InvalidName(String),
    #[error("this import is already running (job {0})")]
    AlreadyRunning(ImportId),
    #[error("no import job {0}")]
    NotFound(ImportId),
    #[error("not enough free space for the import: it needs {needed} bytes, {free} are free")]
    NoSpace { needed: u64, free: u64 },
    #[error("not enough free files (inodes) for the import: it needs {needed}, {free} are free")]
    NoFiles { needed: u64, free: u64 },
    /// An archive past the bounds a station's backup stays in (entries, depth, path length), or
    /// with an entry that would land outside it.
    #[error("{0}")]
    Archive(String),
    #[error("the hub's model labels are missing: species cannot be mapped (install the model)")]
    NoLabels,
    #[error(transparent)]
    Store(#[from] store::Error),
    #[error("writing a clip: {0}")]
    Objects(#[from] crate::objects::ObjectError),
    #[error("{0}")]
    Failed(String),
}

/// Where every import of the hub with data directory `data_dir` unpacks backups and copies WAL
/// databases: inside the data directory, under its space checks (never the system's temp
/// directory). The hub's start clears what no running import uses.
pub fn scratch_root(data_dir: &Path) -> PathBuf {
    data_dir.join("imports").join("scratch")
}

/// Opens and checks the source, decides the zone and the target, and writes the queued job row
/// (nothing else). A rerun of the same source into the same target returns the unfinished job,
/// to be resumed. A tar backup is unpacked under [`scratch_root`] (removed when the job ends).
pub async fn prepare(store: &Store, data_dir: &Path, req: ImportRequest) -> Result<ImportId, ImportError> {
    // The name asked for (the upload form's `name`, the CLI's `--name`) gets the API's check.
    if let Target::New { name: Some(name) } = &req.target {
        validate::name(name, "name").map_err(ImportError::InvalidName)?;
    }
    resolve::prepare(store, &scratch_root(data_dir), req).await
}

/// What [`run`] needs of the hub besides the job.
#[derive(Clone, Copy)]
pub struct Hub<'a> {
    pub store: &'a Store,
    pub objects: &'a ObjectStore,
    pub names: &'a Translations,
    pub range: Option<&'a range::Shared>,
    /// The hub's data directory: scratch copies go under [`scratch_root`] of it.
    pub data_dir: &'a Path,
}

/// Runs (or resumes) job `id` to its end and returns the finished job. Blocking parts run off the
/// async runtime. `progress` is called about once a second (and at the end) with the counters.
pub async fn run(
    hub: Hub<'_>,
    id: ImportId,
    progress: impl FnMut(&Progress) + Send + 'static,
) -> Result<ImportJob, ImportError> {
    engine::run(hub, id, progress).await
}

/// The zone named, or an error people can act on.
pub fn parse_zone(name: &str) -> Result<chrono_tz::Tz, ImportError> {
    zone::parse(name).map_err(|_| ImportError::BadZone(name.to_owned()))
}
