//! Imports started from the dashboard (issue 38): a team admin uploads an old station's backup
//! tar or database (`POST /api/imports`), the file streams to `<data>/imports/uploads/<id>/`
//! (never into memory) under a size cap and a free-space check, the engine's
//! [`imports::prepare`] checks it at once (a broken or unknown file is refused and removed), and
//! a task of the hub runs the job; the page polls the job row. One import runs per team at a
//! time, and at most `imports.max_concurrent` on the whole hub (more are refused with 503
//! `imports_busy` before a byte is read); every upload, unpack and copy reserves its bytes from
//! one budget ([`imports::space`]). The upload and anything unpacked from it are removed when the
//! job ends. A hub that stops mid-import marks the job failed at its next start ([`recover`]),
//! and removes the scratch no running import uses: uploading the file again resumes it, the
//! de-duplication keys skipping what was already added. What the team reads names the file as
//! it was sent, never a path on the hub ([`imports::shown`]), and a file that is not the station
//! the form said is refused in words ([`import_refusals`]).

use std::{
    collections::{HashMap, HashSet},
    path::{Path, PathBuf},
    sync::Mutex,
};

use tokio::io::AsyncWriteExt;

use crate::{
    ids::{ImportId, SatelliteId, TenantId, UserId},
    inference::{range, translations::Translations},
    objects::ObjectStore,
    store::{self, Store, imports::ImportJob},
    usecases::{
        import_refusals,
        imports::{self, ImportError, ImportRequest, PeerKind, Target, space, unpack},
    },
};

/// Space left free on the data dir's disk while an upload is written.
const RESERVE_BYTES: u64 = 256 * 1024 * 1024;
/// How often (bytes written) the free space is checked again during an upload.
const CHECK_EVERY: u64 = 16 * 1024 * 1024;

/// What an upload can meet.
#[derive(Debug, thiserror::Error)]
pub enum UploadError {
    #[error(
        "the file is larger than the upload limit of {limit} bytes (imports.max_upload_bytes); copy it to the hub and use `birdhub import` instead"
    )]
    TooLarge { limit: u64 },
    #[error("not enough free disk for the upload: {free} bytes are free")]
    NoSpace { free: u64 },
    #[error("an import is already running for this team; wait for it to finish")]
    Busy,
    #[error(
        "the hub is running {limit} import(s) already, its limit (imports.max_concurrent); try again when one has finished"
    )]
    HubBusy { limit: usize },
    #[error("{0}")]
    Invalid(String),
    /// The file is not the station the form said, in words that name it ([`import_refusals`]).
    #[error(transparent)]
    WrongFile(#[from] import_refusals::WrongFile),
    #[error(transparent)]
    Import(#[from] ImportError),
    #[error("writing the upload: {0}")]
    Io(#[from] std::io::Error),
    #[error(transparent)]
    Store(#[from] store::Error),
}

/// What the import task needs of the hub.
#[derive(Clone)]
pub struct Handles {
    pub store: Store,
    pub objects: ObjectStore,
    pub names: Translations,
    pub range: range::Shared,
    pub data_dir: PathBuf,
}

impl Handles {
    fn hub(&self) -> imports::Hub<'_> {
        imports::Hub {
            store: &self.store,
            objects: &self.objects,
            names: &self.names,
            range: Some(&self.range),
            data_dir: &self.data_dir,
        }
    }
}

/// Where uploads are written, one directory each.
pub fn uploads_dir(data_dir: &Path) -> PathBuf {
    data_dir.join("imports").join("uploads")
}

/// Where the engine unpacks tar backups and copies WAL databases.
pub fn scratch_dir(data_dir: &Path) -> PathBuf {
    imports::scratch_root(data_dir)
}

/// The teams importing on each hub (by data directory: tests run several hubs in one process).
fn busy_teams() -> &'static Mutex<HashMap<PathBuf, HashSet<TenantId>>> {
    static BUSY: std::sync::OnceLock<Mutex<HashMap<PathBuf, HashSet<TenantId>>>> = std::sync::OnceLock::new();
    BUSY.get_or_init(Mutex::default)
}

/// The team's one import slot (and one of the hub's `imports.max_concurrent`), held from the
/// upload's first byte to the job's end.
#[derive(Debug)]
pub struct TeamSlot(TenantId, PathBuf);

impl Drop for TeamSlot {
    fn drop(&mut self) {
        let mut all = busy_teams().lock().unwrap_or_else(|p| p.into_inner());
        if let Some(teams) = all.get_mut(&self.1) {
            teams.remove(&self.0);
            if teams.is_empty() {
                all.remove(&self.1);
            }
        }
    }
}

fn alive(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

/// Takes the team's import slot: refused while an upload or an import of this hub runs for the
/// team, or a `birdhub import` process is running one of its jobs; and refused while
/// `max_concurrent` imports run on the hub (its uploads and jobs, and `birdhub import` processes
/// of any team).
pub async fn reserve(
    store: &Store,
    data_dir: &Path,
    tenant: TenantId,
    max_concurrent: usize,
) -> Result<TeamSlot, UploadError> {
    let running = store.call(|c| store::imports::unfinished_all(c)).await?;
    let me = std::process::id();
    let elsewhere: Vec<TenantId> = running
        .iter()
        .filter(|(j, pid)| {
            j.status == store::imports::ImportStatus::Running && pid.is_some_and(|p| p != me && alive(p))
        })
        .filter_map(|(j, _)| j.internal.tenant_id)
        .collect();
    if elsewhere.contains(&tenant) {
        return Err(UploadError::Busy);
    }
    let mut all = busy_teams().lock().unwrap_or_else(|p| p.into_inner());
    let busy = all.entry(data_dir.to_path_buf()).or_default();
    if busy.contains(&tenant) {
        return Err(UploadError::Busy);
    }
    if busy.len() + elsewhere.len() >= max_concurrent.max(1) {
        return Err(UploadError::HubBusy { limit: max_concurrent.max(1) });
    }
    busy.insert(tenant);
    Ok(TeamSlot(tenant, data_dir.to_path_buf()))
}

/// An uploaded file arriving in pieces, in its own directory (removed when dropped unless
/// handed to a job).
#[derive(Debug)]
pub struct Upload {
    dir: PathBuf,
    path: PathBuf,
    file: Option<tokio::fs::File>,
    written: u64,
    next_check: u64,
    limit: u64,
    /// The declared length, reserved from the hub's import budget and given back as written.
    reserved: space::Reservation,
    /// Written since the last check (still counted in `reserved`).
    since_check: u64,
}

impl Upload {
    /// Starts a file named `name` (the sent file name, made safe) of at most `limit` bytes;
    /// `declared` is the request's length, when known, for the free-space check.
    pub async fn begin(data_dir: &Path, name: &str, limit: u64, declared: Option<u64>) -> Result<Self, UploadError> {
        let dir = uploads_dir(data_dir).join(uuid::Uuid::new_v4().to_string());
        tokio::fs::create_dir_all(&dir).await?;
        let mut up = Self {
            path: dir.join(safe_name(name)),
            dir,
            file: None,
            written: 0,
            next_check: CHECK_EVERY,
            limit,
            reserved: space::Reservation::none(),
            since_check: 0,
        };
        // The declared length (the whole request, a little more than the file) is promised to
        // this upload: another import's check sees it as taken.
        let declared = declared.unwrap_or(0).min(limit.saturating_add(crate::config::UPLOAD_ENVELOPE_BYTES));
        up.reserved = space::Reservation::take(&up.dir, declared, 2, RESERVE_BYTES)?
            .map_err(|s| UploadError::NoSpace { free: s.free })?;
        up.file = Some(tokio::fs::File::create_new(&up.path).await?);
        Ok(up)
    }

    fn check_space(&mut self) -> Result<(), UploadError> {
        self.reserved.written(std::mem::take(&mut self.since_check), 0);
        self.reserved.still_fits(&self.dir, RESERVE_BYTES)?.map_err(|s| UploadError::NoSpace { free: s.free })
    }

    /// The name the file was sent with, made safe: what the team reads instead of a hub path.
    pub fn shown_name(&self) -> String {
        self.path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "upload".into())
    }

    pub async fn write(&mut self, piece: &[u8]) -> Result<(), UploadError> {
        self.written += piece.len() as u64;
        self.since_check += piece.len() as u64;
        if self.written > self.limit {
            return Err(UploadError::TooLarge { limit: self.limit });
        }
        if self.written >= self.next_check {
            self.next_check = self.written + CHECK_EVERY;
            self.check_space()?;
        }
        match self.file.as_mut() {
            Some(f) => Ok(f.write_all(piece).await?),
            None => Err(UploadError::Invalid("the upload was already closed".into())),
        }
    }

    pub async fn finish(&mut self) -> Result<(), UploadError> {
        if let Some(mut f) = self.file.take() {
            f.flush().await?;
            f.sync_all().await?;
        }
        if self.written == 0 {
            return Err(UploadError::Invalid("the file is empty".into()));
        }
        // All of it is on the disk: nothing more is promised to it.
        drop(std::mem::replace(&mut self.reserved, space::Reservation::none()));
        Ok(())
    }
}

impl Drop for Upload {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A file name the sender chose, reduced to a plain name (no directories, no dot files).
fn safe_name(name: &str) -> String {
    let base = name.rsplit(['/', '\\']).next().unwrap_or_default();
    let clean: String =
        base.chars().map(|c| if c.is_alphanumeric() || "._- ".contains(c) { c } else { '_' }).take(100).collect();
    let clean = clean.trim().trim_start_matches('.').to_owned();
    if clean.is_empty() { "upload".into() } else { clean }
}

/// The form's other fields, as sent.
#[derive(Debug, Default, Clone)]
pub struct UploadForm {
    /// `birdnet-pi` or `birdnet-go`.
    pub kind: Option<String>,
    pub satellite_id: Option<String>,
    pub name: Option<String>,
    pub time_zone: Option<String>,
    /// `true`/`false` (`1`/`0`, `on`/`off`).
    pub dry_run: Option<String>,
}

fn nonempty(v: &Option<String>) -> Option<&str> {
    v.as_deref().map(str::trim).filter(|s| !s.is_empty())
}

fn request(
    tenant: TenantId,
    actor: Option<UserId>,
    form: &UploadForm,
    source: PathBuf,
) -> Result<ImportRequest, UploadError> {
    let kind = match nonempty(&form.kind) {
        Some("birdnet-pi") => PeerKind::BirdnetPi,
        Some("birdnet-go") => PeerKind::BirdnetGo,
        Some(other) => return Err(UploadError::Invalid(format!("kind is birdnet-pi or birdnet-go, not {other:?}"))),
        None => return Err(UploadError::Invalid("say which station this is: kind = birdnet-pi or birdnet-go".into())),
    };
    let target = match (nonempty(&form.satellite_id), nonempty(&form.name)) {
        (Some(_), Some(_)) => {
            return Err(UploadError::Invalid(
                "give satellite_id (an existing satellite) or name (a new one), not both".into(),
            ));
        }
        (Some(id), None) => Target::Existing(
            id.parse::<SatelliteId>()
                .map_err(|_| UploadError::Invalid(format!("satellite_id {id:?} is not a satellite id")))?,
        ),
        (None, name) => Target::New { name: name.map(str::to_owned) },
    };
    if let Some(name) = nonempty(&form.name)
        && name.chars().count() > 100
    {
        return Err(UploadError::Invalid("name is longer than 100 characters".into()));
    }
    let dry_run = match nonempty(&form.dry_run).map(str::to_lowercase).as_deref() {
        None | Some("false" | "0" | "off" | "no") => false,
        Some("true" | "1" | "on" | "yes") => true,
        Some(other) => return Err(UploadError::Invalid(format!("dry_run is true or false, not {other:?}"))),
    };
    let mut req = ImportRequest::new(tenant, kind, source, target);
    req.zone = nonempty(&form.time_zone).map(str::to_owned);
    req.dry_run = dry_run;
    req.actor = actor;
    Ok(req)
}

/// Checks the uploaded file and the form, writes the queued job and starts it in the
/// background; returns the job as it is now. On any refusal the upload is removed.
pub async fn start(
    h: &Handles,
    slot: TeamSlot,
    actor: Option<UserId>,
    form: UploadForm,
    upload: Upload,
) -> Result<ImportJob, UploadError> {
    let tenant = slot.0;
    let req = request(tenant, actor, &form, upload.path.clone())?;
    let kind = req.kind;
    let id = imports::prepare(&h.store, &h.data_dir, req).await.map_err(|e| {
        match import_refusals::explain(e, &h.data_dir, &upload.shown_name(), kind) {
            Ok(wrong) => UploadError::WrongFile(wrong),
            Err(other) => UploadError::Import(other),
        }
    })?;
    let job = h.store.call(move |c| store::imports::get(c, tenant, id)).await?;
    let h2 = h.clone();
    tokio::spawn(async move {
        run(&h2, id).await;
        // The upload goes with the job; the slot frees the team for the next one.
        drop(upload);
        drop(slot);
    });
    Ok(job)
}

async fn run(h: &Handles, id: ImportId) {
    match imports::run(h.hub(), id, |_| {}).await {
        Ok(job) => {
            tracing::info!(import = %id, added = job.rows_added, duplicates = job.rows_duplicate, "import finished")
        }
        Err(e) => tracing::warn!(import = %id, error = %e, "import failed"),
    }
}

/// At the hub's start: upload jobs this hub was running or had queued when it stopped are marked
/// failed ("interrupted"), and uploads left behind are removed. Jobs of `birdhub import` (the
/// command line) are left alone: rerunning the command resumes them.
pub async fn recover(store: &Store, data_dir: &Path) -> Result<u64, store::Error> {
    let uploads = uploads_dir(data_dir);
    // Job rows name their source canonically.
    let canonical = std::fs::canonicalize(data_dir).unwrap_or_else(|_| data_dir.to_path_buf());
    let uploads_text = uploads_dir(&canonical).display().to_string();
    let me = std::process::id();
    let marked = store
        .call(move |c| {
            let mut n = 0;
            for (job, pid) in store::imports::unfinished_all(c)? {
                // The command line's jobs are its own: a rerun of `birdhub import` resumes them.
                let from_upload = job.internal.source_key.starts_with(&uploads_text);
                let live = pid.is_some_and(|p| p != me && alive(p));
                if from_upload && !live {
                    let msg = "interrupted: the hub stopped during the import; upload the file again to resume";
                    store::imports::finish(c, job.id, Some(msg), crate::time::Timestamp(chrono::Utc::now()))?;
                    n += 1;
                }
            }
            Ok(n)
        })
        .await?;
    let _ = tokio::fs::remove_dir_all(&uploads).await;
    let in_use = store
        .call(move |c| {
            let jobs = store::imports::unfinished_all(c)?;
            Ok(jobs
                .into_iter()
                .filter(|(_, pid)| pid.is_some_and(|p| p != me && alive(p)))
                .filter_map(|(j, _)| j.internal.scratch_dir)
                .filter_map(|d| Path::new(&d).file_name().map(|n| n.to_string_lossy().into_owned()))
                .collect::<HashSet<String>>())
        })
        .await?;
    let (dir, cleared) = (data_dir.to_path_buf(), in_use);
    let removed = tokio::task::spawn_blocking(move || clear_scratch(&dir, &cleared)).await.unwrap_or(0);
    if removed > 0 {
        tracing::info!(removed, "removed the scratch of imports that stopped with an earlier run");
    }
    Ok(marked)
}

/// Removes everything under the scratch root (and the scratch directories older versions left
/// in `imports/`) that no running import uses: a job of a live process names it, or a live
/// process other than this one made it ([`unpack::owner`]: a `birdhub import` unpacking before
/// its job row exists). A hub killed mid-import leaves no scratch behind past its next start.
fn clear_scratch(data_dir: &Path, in_use: &HashSet<String>) -> usize {
    let me = std::process::id();
    let keep = |name: &str| in_use.contains(name) || unpack::owner(name).is_some_and(|p| p != me && alive(p));
    let mut removed = 0;
    let places = [(scratch_dir(data_dir), true), (data_dir.join("imports"), false)];
    for (place, everything) in places {
        let Ok(entries) = std::fs::read_dir(&place) else { continue };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let ours = everything || name.starts_with("unpack-") || name.starts_with("birdnet-go-");
            if !ours || keep(&name) {
                continue;
            }
            let path = entry.path();
            let gone = if entry.file_type().is_ok_and(|t| t.is_dir()) {
                std::fs::remove_dir_all(&path)
            } else {
                std::fs::remove_file(&path)
            };
            match gone {
                Ok(()) => removed += 1,
                Err(e) => tracing::warn!(path = %path.display(), error = %e, "could not remove an import's scratch"),
            }
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sent_file_names_stay_plain_names() {
        assert_eq!(safe_name("../../etc/passwd"), "passwd");
        assert_eq!(safe_name("C:\\Users\\me\\birds.db"), "birds.db");
        assert_eq!(safe_name(".hidden"), "hidden");
        assert_eq!(safe_name(""), "upload");
        assert_eq!(safe_name("backup 2024;rm -rf.tar"), "backup 2024_rm -rf.tar");
    }
}
