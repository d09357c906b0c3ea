//! `GET /export/recording`: a xeno-canto-style submission bundle (`domain::exports::xenocanto`):
//! a ZIP of the recordings' WAV files (stored, not deflated: audio barely shrinks) and a
//! `metadata.csv` that comes first. Rejected detections never; `verifiedOnly` keeps confirmed
//! ones. One recording per 3 s chunk.
//!
//! Limits, checked before the first byte: at most [`MAX_RECORDINGS`] recordings and
//! [`MAX_AUDIO_BYTES`] of audio; over either the export is refused (narrow the filters). A
//! recording whose WAV is gone from the hub stays in `metadata.csv` without a file, its remarks
//! say so. The ZIP is written as it is sent (no seeking), so memory stays small.

use std::{collections::HashMap, io::Write};

use chrono::{DateTime, Utc};
use tokio::sync::mpsc;

use super::{Env, ExportError, Filters, each_placed};
use crate::{
    domain::exports::xenocanto::{self, Call, DEFAULT_LICENSE, Recording},
    ids::TenantId,
    objects::ObjectStore,
};

/// The most recordings a bundle holds.
pub const MAX_RECORDINGS: usize = 500;
/// The most audio a bundle holds: 200 MB (about 1,000 chunks of 3 s at 48 kHz).
pub const MAX_AUDIO_BYTES: i64 = 200 * 1024 * 1024;

/// A checked bundle, ready to stream.
#[derive(Debug)]
pub struct Bundle {
    pub file_name: String,
    metadata: Vec<u8>,
    /// (name in the ZIP, object key) of every WAV that exists.
    files: Vec<(String, String)>,
}

/// One chunk while reading: its recording and where its audio is.
struct Entry {
    recording: Recording,
    key: String,
}

fn slug(s: &str) -> String {
    let s: String = s.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '-' }).collect();
    s.split('-').filter(|w| !w.is_empty()).collect::<Vec<_>>().join("-")
}

/// Reads and checks what the bundle holds; refuses it over the limits. `recordist` names the
/// person exporting (xeno-canto's `rec`).
pub async fn prepare(
    env: &Env,
    objects: &ObjectStore,
    tenant: TenantId,
    filters: &Filters,
    now: DateTime<Utc>,
    recordist: &str,
) -> Result<Bundle, ExportError> {
    let checked = super::check(&env.store, tenant, filters, now, true).await?;
    let file_name = checked.file_name("recordings", "zip");
    let (store, objects, recordist) = (env.store.clone(), objects.clone(), recordist.to_owned());
    tokio::task::spawn_blocking(move || {
        let mut order: Vec<Entry> = Vec::new();
        let mut by_chunk: HashMap<String, usize> = HashMap::new();
        let mut bytes = 0i64;
        each_placed(&store, tenant, &checked, |p| {
            let d = &p.detection;
            let call = Call {
                common_name: d.common_name.clone(),
                scientific_name: d.scientific_name.clone(),
                confidence: d.confidence,
                start_ms: d.start_ms,
                end_ms: d.end_ms,
            };
            let chunk = d.audio_chunk_id.to_string();
            if let Some(&i) = by_chunk.get(&chunk) {
                order[i].recording.calls.push(call);
                return true;
            }
            bytes += p.size_bytes;
            by_chunk.insert(chunk, order.len());
            let h = super::heard(p, &checked.zones);
            let local = p.recorded_at.at().with_timezone(&checked.zones.of(&d.satellite_id)).naive_local();
            order.push(Entry {
                recording: Recording {
                    file_name: None,
                    satellite_name: d.satellite_name.clone(),
                    latitude: h.latitude,
                    longitude: h.longitude,
                    start: local,
                    duration_ms: p.duration_ms,
                    sample_rate: p.sample_rate,
                    calls: vec![call],
                },
                key: d.storage_key.clone(),
            });
            order.len() <= MAX_RECORDINGS && bytes <= MAX_AUDIO_BYTES
        })?;
        if order.len() > MAX_RECORDINGS {
            return Err(ExportError::TooLarge(format!(
                "more than {MAX_RECORDINGS} recordings match; a bundle holds at most {MAX_RECORDINGS}: narrow the filters (dates, species, satellite)"
            )));
        }
        if bytes > MAX_AUDIO_BYTES {
            return Err(ExportError::TooLarge(format!(
                "the recordings are over {} MB; a bundle holds at most {} MB: narrow the filters",
                MAX_AUDIO_BYTES / (1024 * 1024),
                MAX_AUDIO_BYTES / (1024 * 1024)
            )));
        }
        let mut files = Vec::new();
        let mut w = csv::Writer::from_writer(Vec::new());
        let bad = |e: &dyn std::fmt::Display| ExportError::Encode(e.to_string());
        w.write_record(xenocanto::COLUMNS).map_err(|e| bad(&e))?;
        for (i, mut e) in order.into_iter().enumerate() {
            e.recording.calls.sort_by(|a, b| b.confidence.total_cmp(&a.confidence));
            let present = objects.path_of(&e.key).is_ok_and(|p| p.is_file());
            if present {
                let species = e.recording.calls.first().map(|c| slug(&c.scientific_name)).unwrap_or_default();
                // The hub's chunks are WAV; an imported clip keeps its own format (issue 38).
                let ext = e.key.rsplit_once('.').map_or("wav", |(_, x)| x);
                let name = format!("{:04}-{}-{species}.{ext}", i + 1, e.recording.start.format("%Y%m%d-%H%M%S"));
                e.recording.file_name = Some(name.clone());
                files.push((name, e.key));
            }
            w.write_record(xenocanto::row(&e.recording, &recordist, DEFAULT_LICENSE)).map_err(|e| bad(&e))?;
        }
        let metadata = w.into_inner().map_err(|e| bad(&e))?;
        Ok(Bundle { file_name, metadata, files })
    })
    .await
    .map_err(|e| ExportError::Encode(e.to_string()))?
}

/// Bytes written to the channel in pieces of about this size.
const PIECE: usize = 64 * 1024;

/// A `Write` that hands its bytes to a bounded channel; fails once the receiver is gone.
struct ChannelWriter {
    tx: mpsc::Sender<Result<Vec<u8>, ExportError>>,
    buf: Vec<u8>,
}

impl ChannelWriter {
    fn send(&mut self) -> std::io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let piece = std::mem::replace(&mut self.buf, Vec::with_capacity(PIECE));
        self.tx.blocking_send(Ok(piece)).map_err(|_| std::io::Error::from(std::io::ErrorKind::BrokenPipe))
    }
}

impl Write for ChannelWriter {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        self.buf.extend_from_slice(data);
        if self.buf.len() >= PIECE {
            self.send()?;
        }
        Ok(data.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.send()
    }
}

fn write_zip(objects: &ObjectStore, bundle: Bundle, out: ChannelWriter) -> Result<(), ExportError> {
    let bad = |e: &dyn std::fmt::Display| ExportError::Encode(e.to_string());
    let mut zip = zip::ZipWriter::new_stream(out);
    let deflated = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
    let stored = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    zip.start_file("metadata.csv", deflated).map_err(|e| bad(&e))?;
    zip.write_all(&bundle.metadata).map_err(|e| bad(&e))?;
    for (name, key) in bundle.files {
        let path = objects.path_of(&key).map_err(|e| bad(&e))?;
        let mut file = std::fs::File::open(&path).map_err(|e| bad(&e))?;
        zip.start_file(name, stored).map_err(|e| bad(&e))?;
        std::io::copy(&mut file, &mut zip).map_err(|e| bad(&e))?;
    }
    let mut out = zip.finish().map_err(|e| bad(&e))?.into_inner();
    out.flush().map_err(|e| bad(&e))
}

/// Streams `bundle` as a ZIP over the returned channel; stops when the receiver is dropped.
pub fn stream(objects: &ObjectStore, bundle: Bundle) -> mpsc::Receiver<Result<Vec<u8>, ExportError>> {
    let (tx, rx) = mpsc::channel(super::detections::CHANNEL_CHUNKS);
    let objects = objects.clone();
    tokio::task::spawn_blocking(move || {
        let out = ChannelWriter { tx: tx.clone(), buf: Vec::with_capacity(PIECE) };
        if let Err(e) = write_zip(&objects, bundle, out)
            && !tx.is_closed()
        {
            tracing::error!(error = %e, "recording bundle failed part way");
            let _ = tx.blocking_send(Err(e));
        }
    });
    rx
}
