//! [`super::run`]: reads the source batch by batch, copies the clips outside the write
//! transaction, writes each batch in one transaction ([`super::write`]), reports progress about
//! once a second, and ends the job (done or failed), removing any scratch directory.

use std::{
    collections::{HashMap, HashSet},
    path::{Path, PathBuf},
    sync::Mutex,
    time::{Duration, Instant},
};

use chrono_tz::Tz;

use super::{
    ImportError, Progress, clips,
    peer::{ClipRef, PeerKind, Read},
    shown, source, unpack,
    write::{self, Prepared, Target},
};
use crate::{
    ids::ImportId,
    inference::{labels::Label, range, translations::Translations},
    objects::ObjectStore,
    store::{self, Store, imports::ImportJob},
    time::Timestamp,
};

/// Rows read per batch (one write transaction each).
const BATCH: usize = 200;
/// Rows listed as corrupt, clips listed as missing, at most.
const LISTED: usize = 100;

/// Jobs running in this process (the hub runs several; the CLI one).
fn running() -> &'static Mutex<HashSet<ImportId>> {
    static RUNNING: std::sync::OnceLock<Mutex<HashSet<ImportId>>> = std::sync::OnceLock::new();
    RUNNING.get_or_init(Mutex::default)
}

/// Whether process `pid` is alive (Linux: its `/proc` entry).
fn alive(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

pub async fn run(
    hub: super::Hub<'_>,
    id: ImportId,
    mut progress: impl FnMut(&Progress) + Send + 'static,
) -> Result<ImportJob, ImportError> {
    let store = hub.store;
    let job = match store.call(move |c| store::imports::get_any(c, id)).await {
        Err(store::Error::NotFound) => return Err(ImportError::NotFound(id)),
        other => other?,
    };
    if job.status == store::imports::ImportStatus::Done {
        progress(&job.counts());
        return Ok(job);
    }
    {
        let mut set = running().lock().unwrap_or_else(|p| p.into_inner());
        let me = std::process::id();
        let other = store.call_blocking(|c| store::imports::runner(c, id))?;
        if set.contains(&id) || other.is_some_and(|pid| pid != me && alive(pid)) {
            return Err(ImportError::AlreadyRunning(id));
        }
        set.insert(id);
    }
    let now = Timestamp(chrono::Utc::now());
    let started = store.call(move |c| store::imports::start(c, id, std::process::id(), now)).await;
    let outcome = match started {
        Ok(()) => {
            let ctx = Ctx {
                store: store.clone(),
                objects: hub.objects.clone(),
                names: hub.names.clone(),
                range: hub.range.cloned(),
                data_dir: hub.data_dir.to_path_buf(),
                job: job.clone(),
            };
            tokio::task::spawn_blocking(move || ctx.work(&mut progress))
                .await
                .unwrap_or_else(|e| Err(ImportError::Failed(format!("the import stopped: {e}"))))
        }
        Err(e) => Err(e.into()),
    };
    running().lock().unwrap_or_else(|p| p.into_inner()).remove(&id);
    let error = outcome.as_ref().err().map(|e| shown_text(&job, hub.data_dir, &e.to_string()));
    let now = Timestamp(chrono::Utc::now());
    store.call(move |c| store::imports::finish(c, id, error.as_deref(), now)).await?;
    if let Some(dir) = &job.internal.scratch_dir {
        unpack::remove(Path::new(dir));
    }
    outcome?;
    Ok(store.call(move |c| store::imports::get_any(c, id)).await?)
}

/// A message about `job` as its team reads it: an uploaded job's names no path on the hub.
fn shown_text(job: &ImportJob, data_dir: &Path, text: &str) -> String {
    match &job.internal.uploaded {
        Some(name) => shown::hide(text, data_dir, name),
        None => text.to_owned(),
    }
}

/// What the blocking part of a run holds.
struct Ctx {
    store: Store,
    objects: ObjectStore,
    names: Translations,
    range: Option<range::Shared>,
    /// The hub's data directory: the scratch root is under it, and messages hide it.
    data_dir: PathBuf,
    job: ImportJob,
}

/// Rates over this run (a resumed job counts from its resumption).
struct Rates {
    started: Instant,
    rows_at_start: u64,
    clips_at_start: u64,
    last_report: Option<Instant>,
}

impl Rates {
    fn update(&self, c: &mut Progress) {
        let secs = self.started.elapsed().as_secs_f64().max(1e-3);
        c.rows_per_second = (c.rows_read.saturating_sub(self.rows_at_start)) as f64 / secs;
        c.clips_per_second = (c.clips_copied.saturating_sub(self.clips_at_start)) as f64 / secs;
        let left = c.rows_total.saturating_sub(c.rows_read) as f64;
        c.seconds_left = (c.rows_per_second > 0.0).then(|| left / c.rows_per_second);
    }

    /// Whether a second has passed since the last report (and marks one).
    fn due(&mut self) -> bool {
        let due = self.last_report.is_none_or(|t| t.elapsed() >= Duration::from_secs(1));
        if due {
            self.last_report = Some(Instant::now());
        }
        due
    }
}

fn kind_of(s: &str) -> PeerKind {
    if s == "birdnet-go" { PeerKind::BirdnetGo } else { PeerKind::BirdnetPi }
}

impl Ctx {
    fn work(self, progress: &mut (impl FnMut(&Progress) + Send)) -> Result<(), ImportError> {
        let job = &self.job;
        let id = job.id;
        let tenant = job.internal.tenant_id.ok_or(ImportError::NotFound(id))?;
        // Inside the data directory, under the space checks: never the system's temp directory
        // (a WAL database uploaded alone would be copied to a RAM-backed /tmp).
        let scratch_root = super::scratch_root(&self.data_dir);
        let mut source = source::reopen(
            kind_of(&job.kind),
            Path::new(&job.internal.database_path),
            job.internal.clips_dir.as_deref().map(Path::new),
            &scratch_root,
        )?;
        let classes = self.names.classes().ok_or(ImportError::NoLabels)?;
        let labels: HashMap<String, (usize, Label)> =
            classes.iter().enumerate().map(|(i, l)| (l.code.clone(), (i, l.clone()))).collect();
        let tz: Tz = super::parse_zone(&job.time_zone)?;
        let station = source.station();
        let target = if job.dry_run {
            job.satellite_id
                .map(|sat| self.store.call_blocking(|c| write::target(c, tenant, sat, &job.kind)))
                .transpose()?
        } else {
            let sat = match job.satellite_id {
                Some(s) => s,
                None => {
                    // A birds.db without its birdnet.conf still carries the place in every row.
                    let station = super::place::with_row_position(station.clone(), &mut *source)?;
                    self.store.call_blocking(|c| write::new_satellite(c, job, tenant, &station, tz))?
                }
            };
            Some(self.store.call_blocking(|c| write::target(c, tenant, sat, &job.kind))?)
        };
        let range = self.range.as_ref().and_then(|r| r.get().ok());
        let mut counts = job.counts();
        counts.rows_total = source.total_rows()?;
        let mut rates = Rates {
            started: Instant::now(),
            rows_at_start: counts.rows_read,
            clips_at_start: counts.clips_copied,
            last_report: None,
        };
        let mut cursor = job.internal.cursor;
        let mut unmapped: HashMap<String, u64> = counts.unmapped.iter().map(|n| (n.name.clone(), n.count)).collect();
        let mut species_touched: HashSet<String> = HashSet::new();
        let mut dry_seen: HashSet<String> = HashSet::new();
        loop {
            let batch = source.next_batch(cursor, BATCH)?;
            if batch.items.is_empty() {
                break;
            }
            let mut prepared = Vec::with_capacity(batch.items.len());
            for item in batch.items {
                counts.rows_read += 1;
                let row = match item {
                    Read::Row(r) => r,
                    Read::Corrupt { at, reason } => {
                        counts.rows_corrupt += 1;
                        if counts.corrupt.len() < LISTED {
                            let reason = shown_text(job, &self.data_dir, &reason);
                            counts.corrupt.push(store::imports::CorruptRow { at, reason });
                        }
                        continue;
                    }
                };
                let code = crate::inference::labels::species_code(&row.scientific_name);
                let Some((index, label)) = labels.get(&code).cloned() else {
                    counts.rows_unmapped += 1;
                    *unmapped.entry(row.scientific_name.clone()).or_default() += 1;
                    continue;
                };
                let at = write::instant(row.time, tz);
                prepared.push(Prepared { row, label, index, at, clip: None, expected_here: None });
            }
            // Rows already imported are counted, not read further (no clip copied again).
            let seen = match &target {
                Some(t) => self.store.call_blocking(|c| write::seen(c, t.pk, &prepared))?,
                None => vec![false; prepared.len()],
            };
            let mut fresh = Vec::with_capacity(prepared.len());
            for (p, seen) in prepared.into_iter().zip(seen) {
                if seen || (job.dry_run && !dry_seen.insert(p.row.key.clone())) {
                    counts.rows_duplicate += 1;
                } else {
                    fresh.push(p);
                }
            }
            // A file several rows of this batch name is read and copied once.
            let mut copied: HashMap<PathBuf, Option<write::ClipChunk>> = HashMap::new();
            for p in &mut fresh {
                if let (Some(r), Some(lat), Some(lon)) = (&range, p.row.latitude, p.row.longitude) {
                    let day = crate::domain::zone::local_day(p.at.at(), tz);
                    p.expected_here = r.expected(lat, lon, day, p.index).ok();
                }
                if let Some(ClipRef::Found(path)) = &p.row.clip
                    && let Some(done) = copied.get(path)
                {
                    p.clip = done.clone();
                    continue;
                }
                self.clip(p, &target, tenant, &mut counts)?;
                if let Some(ClipRef::Found(path)) = &p.row.clip {
                    copied.insert(path.clone(), p.clip.clone());
                }
            }
            if job.dry_run {
                counts.rows_added += fresh.len() as u64;
            } else if target.is_some() {
                species_touched.extend(fresh.iter().map(|p| p.label.code.clone()));
                counts.rows_added += fresh.len() as u64;
            }
            cursor = batch.cursor;
            counts.unmapped = sorted(&unmapped);
            rates.update(&mut counts);
            let report = rates.due();
            match &target {
                // The counters and the cursor commit with the rows: a run killed at any point
                // resumes exactly after the last batch it committed, with its totals.
                Some(t) if !job.dry_run => {
                    self.store.call_blocking(|c| write::batch(c, (id, tenant, Some((&counts, cursor))), t, &fresh))?;
                }
                _ if report => self.store.call_blocking(|c| {
                    store::imports::progress(c, id, &counts, cursor, Timestamp(chrono::Utc::now()))
                })?,
                _ => {}
            }
            if report {
                progress(&counts);
            }
        }
        if target.is_some() && !job.dry_run {
            let codes: Vec<String> = species_touched.into_iter().collect();
            self.store.call_blocking(|c| write::refresh_flags(c, tenant, &codes))?;
        }
        rates.update(&mut counts);
        counts.seconds_left = Some(0.0);
        self.store
            .call_blocking(|c| store::imports::progress(c, id, &counts, cursor, Timestamp(chrono::Utc::now())))?;
        progress(&counts);
        Ok(())
    }

    /// Reads, measures and (unless a dry run) copies the row's clip, once per file.
    fn clip(
        &self,
        p: &mut Prepared,
        target: &Option<Target>,
        tenant: crate::ids::TenantId,
        counts: &mut Progress,
    ) -> Result<(), ImportError> {
        let path: PathBuf = match &p.row.clip {
            None => return Ok(()),
            Some(ClipRef::Missing(text)) => {
                counts.clips_missing += 1;
                if counts.missing_clips.len() < LISTED {
                    counts.missing_clips.push(shown_text(&self.job, &self.data_dir, text));
                }
                return Ok(());
            }
            Some(ClipRef::Found(path)) => path.clone(),
        };
        let shown = path.display().to_string();
        if let Some(t) = target {
            let known = self.store.call_blocking(|c| store::import_rows::clip_chunk(c, t.pk, &shown))?;
            if let Some((chunk, undecodable)) = known {
                p.clip = Some(write::ClipChunk::Existing { chunk, undecodable, path: shown });
                return Ok(());
            }
        }
        // A file that is not audio (or too large to be a clip) is never copied: the row comes
        // without audio, counted with the missing clips and listed with the reason.
        let clip = match clips::read(&path) {
            Ok(Ok(c)) => c,
            Ok(Err(not)) => {
                counts.clips_missing += 1;
                if counts.missing_clips.len() < LISTED {
                    counts.missing_clips.push(shown_text(&self.job, &self.data_dir, &format!("{shown}: {not}")));
                }
                return Ok(());
            }
            Err(_) => {
                counts.clips_missing += 1;
                if counts.missing_clips.len() < LISTED {
                    counts.missing_clips.push(shown_text(&self.job, &self.data_dir, &shown));
                }
                return Ok(());
            }
        };
        if clip.measured.is_none() {
            counts.clips_undecodable += 1;
        }
        counts.clips_copied += 1;
        if self.job.dry_run {
            return Ok(());
        }
        let Some(t) = target else { return Ok(()) };
        let chunk = clips::chunk_id(t.satellite, &shown);
        let start_ms = write::clip_offset(clip.measured);
        let recorded = Timestamp(p.at.at() - chrono::Duration::milliseconds(start_ms));
        let key = clips::object_key(tenant, t.satellite, recorded, chunk, &clip.ext);
        let size = clips::store(&self.objects, &key, &clip)?;
        p.clip = Some(write::ClipChunk::New { chunk, key, size, measured: clip.measured, path: shown, recorded });
        Ok(())
    }
}

fn sorted(unmapped: &HashMap<String, u64>) -> Vec<store::imports::NameCount> {
    let mut v: Vec<_> =
        unmapped.iter().map(|(n, c)| store::imports::NameCount { name: n.clone(), count: *c }).collect();
    v.sort_by(|a, b| b.count.cmp(&a.count).then(a.name.cmp(&b.name)));
    v
}
