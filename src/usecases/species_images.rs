//! Species images (SPEC 4.9): asking for the pictures of up to [`MAX_CODES`] species (missing
//! ones are queued for the fetcher), reading a cached picture for the proxy, and the platform
//! admin's view of the cache (stats, clear, retry). Downloads happen in [`download`], driven by
//! `jobs::image_fetcher`; the HTTP side of a download is [`fetch`].
//!
//! With no source configured (`species_images.source_url` empty, the default on a LAN without
//! internet) nothing is queued: every species without a cached picture is `none`.

pub mod download;
pub mod fetch;

use std::{collections::BTreeMap, sync::Arc};

use serde::Serialize;
use tokio::sync::Notify;

use crate::{
    clock::Clock,
    config::SpeciesImageSettings,
    domain::species_images::ImageStatus,
    inference::translations::Translations,
    objects::{ObjectError, ObjectStore},
    store::{self, Store, species_images as rows},
    time::Timestamp,
};

/// Species one request may ask about.
pub const MAX_CODES: usize = 200;
/// Failures listed in the stats.
const RECENT_FAILURES: usize = 20;
/// Unknown codes named in an error message before "and N more".
const NAMED_UNKNOWN: usize = 10;

#[derive(Debug, thiserror::Error)]
pub enum ImageError {
    #[error("codes must hold 1 to {MAX_CODES} species codes, not {0}")]
    BadCount(usize),
    #[error("unknown species {}", name_list(.0))]
    UnknownSpecies(Vec<String>),
    #[error("no picture of {0} is cached (POST /api/species/images asks for one)")]
    NotCached(String),
    #[error("no label files are installed (the classifier model is missing): run birdhub model fetch")]
    NoModel,
    #[error("storage: {0}")]
    Store(#[from] store::Error),
    #[error("object store: {0}")]
    Objects(#[from] ObjectError),
    #[error("a background task failed: {0}")]
    Task(String),
}

fn name_list(codes: &[String]) -> String {
    let shown: Vec<String> =
        codes.iter().take(NAMED_UNKNOWN).map(|c| format!("{:?}", c.chars().take(60).collect::<String>())).collect();
    match codes.len().saturating_sub(NAMED_UNKNOWN) {
        0 => shown.join(", "),
        more => format!("{} and {more} more", shown.join(", ")),
    }
}

/// The picture source and the fetcher's wake-up call. Cheap to clone.
#[derive(Clone)]
pub struct Images {
    /// `None` when no source is configured.
    fetcher: Option<fetch::Fetcher>,
    max_attempts: u32,
    max_bytes: u64,
    /// How long a claim holds a species: longer than any download can take.
    lease: chrono::Duration,
    /// Rung when species are queued, so the fetcher starts at once instead of at its next poll.
    wake: Arc<Notify>,
}

impl Images {
    pub fn new(settings: &SpeciesImageSettings) -> Self {
        let timeout = i64::try_from(settings.timeout_secs).unwrap_or(300);
        Self {
            fetcher: fetch::Fetcher::new(settings),
            max_attempts: settings.max_attempts.max(1),
            max_bytes: settings.max_bytes,
            lease: chrono::Duration::seconds(timeout * 2 + 60),
            wake: Arc::new(Notify::new()),
        }
    }

    /// Whether a source is configured.
    pub fn enabled(&self) -> bool {
        self.fetcher.is_some()
    }

    /// Tells the fetcher there is work.
    pub fn wake(&self) {
        self.wake.notify_one();
    }

    /// Resolves when [`Images::wake`] was called (once per call, even if nobody waited then).
    pub async fn woken(&self) {
        self.wake.notified().await;
    }
}

/// One species in an answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ImageInfo {
    pub status: ImageStatus,
    /// Where the proxy serves it (cached only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attribution: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub license: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_page: Option<String>,
}

/// The answer to `POST /species/images`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Answer {
    /// Whether a source is configured; without one nothing is ever queued.
    pub enabled: bool,
    pub images: BTreeMap<String, ImageInfo>,
    /// How many species this request queued.
    pub queued: usize,
}

/// The statuses of `codes` (species codes, 1 to [`MAX_CODES`]); species never asked for before
/// are queued when a source is configured.
pub async fn request(
    store: &Store,
    clock: &Clock,
    names: &Translations,
    images: &Images,
    codes: Vec<String>,
) -> Result<Answer, ImageError> {
    if codes.is_empty() || codes.len() > MAX_CODES {
        return Err(ImageError::BadCount(codes.len()));
    }
    let species = resolve(names, codes).await?;
    let (enabled, now) = (images.enabled(), clock.stamp());
    // Pages ask on every render, and almost always for species asked about before: a plain read
    // answers those without taking the write lock (which the ingest writer needs).
    let codes: Vec<String> = species.iter().map(|(c, _)| c.clone()).collect();
    let mut known = store.call(move |c| rows::get_many(c, &codes)).await?;
    if !enabled || species.iter().all(|(c, _)| known.contains_key(c)) {
        let images = species.into_iter().map(|(code, _)| (code.clone(), info(known.remove(&code), enabled))).collect();
        return Ok(Answer { enabled, images, queued: 0 });
    }
    let (found, queued) = super::in_tx(store, move |tx| {
        let codes: Vec<String> = species.iter().map(|(c, _)| c.clone()).collect();
        let mut found = rows::get_many(tx, &codes)?;
        let mut queued = Vec::new();
        if enabled {
            for (code, scientific) in &species {
                if !found.contains_key(code) && rows::queue_new(tx, code, scientific, now)? {
                    queued.push(code.clone());
                }
            }
            found.extend(rows::get_many(tx, &queued)?);
        }
        Ok::<_, ImageError>((species.into_iter().map(|(c, _)| (found.remove(&c), c)).collect::<Vec<_>>(), queued))
    })
    .await?;
    if !queued.is_empty() {
        images.wake();
    }
    let images = found.into_iter().map(|(entry, code)| (code, info(entry, enabled))).collect();
    Ok(Answer { enabled, images, queued: queued.len() })
}

/// What an answer says of a species with this row (none when never asked for).
fn info(entry: Option<rows::Entry>, enabled: bool) -> ImageInfo {
    match entry {
        Some(e) if e.status == ImageStatus::Cached => cached_info(&e),
        Some(e) if enabled => bare(e.status.public()),
        _ => bare(ImageStatus::None),
    }
}

fn bare(status: ImageStatus) -> ImageInfo {
    ImageInfo { status, url: None, attribution: None, license: None, source_page: None }
}

fn cached_info(e: &rows::Entry) -> ImageInfo {
    ImageInfo {
        status: ImageStatus::Cached,
        url: Some(proxy_url(&e.species_code)),
        attribution: e.attribution.clone(),
        license: e.license.clone(),
        source_page: e.source_page.clone(),
    }
}

/// The proxy path of a species code (codes are `[a-z0-9_]`, nothing to encode).
pub fn proxy_url(code: &str) -> String {
    format!("/api/species/image/proxy?code={code}")
}

/// `(code, scientific name)` of each distinct code, in order; every unknown one named at once.
async fn resolve(names: &Translations, codes: Vec<String>) -> Result<Vec<(String, String)>, ImageError> {
    let names = names.clone();
    tokio::task::spawn_blocking(move || {
        if names.installed().is_empty() {
            return Err(ImageError::NoModel);
        }
        let (mut known, mut unknown) = (Vec::<(String, String)>::new(), Vec::new());
        for raw in codes {
            let code = raw.trim();
            match names.resolve(code).filter(|s| s.code == code && !code.is_empty()) {
                Some(s) if !known.iter().any(|(c, _)| *c == s.code) => known.push((s.code, s.scientific)),
                Some(_) => {}
                None if !unknown.contains(&raw) => unknown.push(raw),
                None => {}
            }
        }
        if unknown.is_empty() { Ok(known) } else { Err(ImageError::UnknownSpecies(unknown)) }
    })
    .await
    .map_err(|e| ImageError::Task(e.to_string()))?
}

/// A cached picture's description, enough to answer a conditional request without reading it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Picture {
    pub code: String,
    pub object_key: String,
    pub content_type: String,
    /// Hex SHA-256 of the bytes.
    pub sha256: String,
    pub attribution: String,
    pub license: String,
}

/// The cached picture of species `code`.
pub async fn picture(store: &Store, names: &Translations, code: &str) -> Result<Picture, ImageError> {
    let (code, _) = resolve(names, vec![code.to_owned()]).await?.remove(0);
    let key = code.clone();
    let entry = match store.call(move |c| rows::get(c, &key)).await {
        Ok(e) => e,
        Err(store::Error::NotFound) => return Err(ImageError::NotCached(code)),
        Err(e) => return Err(e.into()),
    };
    match (entry.status, entry.object_key, entry.content_type, entry.sha256) {
        (ImageStatus::Cached, Some(object_key), Some(content_type), Some(sha256)) => Ok(Picture {
            code,
            object_key,
            content_type,
            sha256,
            attribution: entry.attribution.unwrap_or_default(),
            license: entry.license.unwrap_or_else(|| "unknown".into()),
        }),
        _ => Err(ImageError::NotCached(code)),
    }
}

/// The bytes of `p`; `NotCached` when its object has gone missing from the disk.
pub async fn picture_bytes(objects: &ObjectStore, p: &Picture) -> Result<Vec<u8>, ImageError> {
    match objects.get(&p.object_key).await {
        Ok(bytes) => Ok(bytes),
        Err(ObjectError::NotFound(_)) => {
            tracing::warn!(species = %p.code, key = %p.object_key, "a cached species image is missing from the object store");
            Err(ImageError::NotCached(p.code.clone()))
        }
        Err(e) => Err(e.into()),
    }
}

/// A species whose last download failed, for the admin.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FailureView {
    pub species_code: String,
    pub attempts: u32,
    pub last_error: Option<String>,
    /// `None` once the fetcher gave up.
    pub next_attempt_at: Option<Timestamp>,
}

/// `GET /species/image-cache/stats`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Stats {
    pub enabled: bool,
    /// Species per status (all five, zero included).
    pub counts: BTreeMap<&'static str, u64>,
    pub total: u64,
    /// Bytes of the cached pictures.
    pub total_bytes: u64,
    pub max_bytes: u64,
    pub max_attempts: u32,
    pub recent_failures: Vec<FailureView>,
}

pub async fn stats(store: &Store, images: &Images) -> Result<Stats, ImageError> {
    let (totals, failures) = store.call(|c| Ok((rows::totals(c)?, rows::recent_failures(c, RECENT_FAILURES)?))).await?;
    let counts: BTreeMap<&'static str, u64> = totals.by_status.iter().map(|(s, n)| (s.as_str(), *n)).collect();
    Ok(Stats {
        enabled: images.enabled(),
        total: counts.values().sum(),
        counts,
        total_bytes: totals.cached_bytes,
        max_bytes: images.max_bytes,
        max_attempts: images.max_attempts,
        recent_failures: failures
            .into_iter()
            .map(|e| FailureView {
                species_code: e.species_code,
                attempts: e.attempts,
                last_error: e.last_error,
                next_attempt_at: e.next_attempt_at,
            })
            .collect(),
    })
}

/// What clearing the cache removed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Cleared {
    /// Species rows removed (any status).
    pub removed: u64,
    /// Picture files deleted from the object store.
    pub files_deleted: u64,
}

/// Forgets every species and deletes every stored picture. A download in flight finds its claim
/// gone and deletes what it wrote.
pub async fn clear(store: &Store, objects: &ObjectStore) -> Result<Cleared, ImageError> {
    let (removed, keys) = super::in_tx(store, |tx| Ok::<_, ImageError>(rows::clear(tx)?)).await?;
    let mut files_deleted = 0;
    for key in keys {
        match objects.delete(&key).await {
            Ok(true) => files_deleted += 1,
            Ok(false) => {}
            Err(e) => tracing::warn!(key, error = %e, "could not delete a species image"),
        }
    }
    Ok(Cleared { removed, files_deleted })
}

/// Queues every failed species and every one the source had no picture of again, with a fresh
/// count of attempts; returns how many. Nothing is queued without a source.
pub async fn retry(store: &Store, clock: &Clock, images: &Images) -> Result<u64, ImageError> {
    if !images.enabled() {
        return Ok(0);
    }
    let now = clock.stamp();
    let n = store.call(move |c| rows::requeue_misses(c, now)).await?;
    if n > 0 {
        images.wake();
    }
    Ok(n)
}
