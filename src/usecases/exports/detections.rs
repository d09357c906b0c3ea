//! `GET /export/detections?format=csv|json`: every field of every matching detection, plus its
//! common name in the caller's language, streamed: a blocking producer reads a page at a time
//! and sends encoded chunks over a bounded channel, so memory stays flat at any row count, the
//! first bytes leave at once, and a client that goes away stops the producer (its send fails).
//!
//! CSV has a header row and one row per detection, RFC 4180 quoting (the `csv` crate); text a
//! spreadsheet would run as a formula is defused with a leading apostrophe. JSON is one array of
//! objects with the same keys, valid even when empty.

use chrono::{DateTime, Utc};
use serde::Serialize;
use tokio::sync::mpsc;

use super::{Checked, Env, ExportError, ExportFile, Filters, Format, NameBook, PAGE};
use crate::{
    domain::exports::cells::spreadsheet_safe,
    ids::TenantId,
    store::{self, detections::Stored, export},
};

/// Chunks in flight between the producer and the client: a few pages at most.
pub const CHANNEL_CHUNKS: usize = 4;

/// One exported detection: the stored fields in the SPEC's snake_case, then the translation.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[schema(as = ExportedDetection)]
pub struct Row<'a> {
    id: String,
    detected_at: String,
    species_code: &'a str,
    common_name: &'a str,
    scientific_name: &'a str,
    translated_common_name: &'a str,
    language: &'a str,
    confidence: f64,
    calibrated_confidence: Option<f64>,
    verification_status: &'a str,
    satellite_id: String,
    satellite_name: std::borrow::Cow<'a, str>,
    audio_chunk_id: String,
    start_ms: i64,
    end_ms: i64,
    model_id: &'a str,
    is_rare: bool,
    rare_reason: Option<&'a str>,
    is_first_of_day: bool,
    is_first_of_season: bool,
    /// The team's first detection of the species ever ("New for the team").
    is_first_for_team: bool,
    expected_here: Option<bool>,
    storage_key: &'a str,
    tenant_id: String,
    created_at: String,
}

impl<'a> Row<'a> {
    fn new(d: &'a Stored, translated: &'a str, language: &'a str, csv: bool) -> Self {
        // The satellite's name is the one cell people type; the rest are ids, codes and numbers.
        let satellite_name = if csv { spreadsheet_safe(&d.satellite_name) } else { d.satellite_name.as_str().into() };
        Row {
            id: d.id.to_string(),
            detected_at: d.detected_at.to_string(),
            species_code: &d.species_code,
            common_name: &d.common_name,
            scientific_name: &d.scientific_name,
            translated_common_name: translated,
            language,
            confidence: d.confidence,
            calibrated_confidence: d.calibrated_confidence,
            verification_status: &d.verification_status,
            satellite_id: d.satellite_id.to_string(),
            satellite_name,
            audio_chunk_id: d.audio_chunk_id.to_string(),
            start_ms: d.start_ms,
            end_ms: d.end_ms,
            model_id: &d.model_id,
            is_rare: d.is_rare,
            rare_reason: d.rare_reason.as_deref(),
            is_first_of_day: d.is_first_of_day,
            is_first_of_season: d.is_first_of_season,
            is_first_for_team: d.is_first_for_team,
            expected_here: d.expected_here,
            storage_key: &d.storage_key,
            tenant_id: d.tenant_id.to_string(),
            created_at: d.created_at.to_string(),
        }
    }
}

/// Encodes pages of detections as CSV or a JSON array.
struct Encoder {
    format: Format,
    names: NameBook,
    rows: u64,
}

impl Encoder {
    fn page(&mut self, page: &[Stored]) -> Result<Vec<u8>, ExportError> {
        let bad = |e: &dyn std::fmt::Display| ExportError::Encode(e.to_string());
        let mut out = Vec::with_capacity(page.len() * 400);
        if self.format == Format::Csv {
            let mut w = csv::WriterBuilder::new().has_headers(self.rows == 0).from_writer(&mut out);
            for d in page {
                let translated = self.names.get(&d.species_code, &d.common_name);
                w.serialize(Row::new(d, &translated, self.names.lang(), true)).map_err(|e| bad(&e))?;
                self.rows += 1;
            }
            w.flush().map_err(|e| bad(&e))?;
            drop(w);
        } else {
            for d in page {
                out.extend_from_slice(if self.rows == 0 { b"[\n" } else { b",\n" });
                let translated = self.names.get(&d.species_code, &d.common_name);
                serde_json::to_writer(&mut out, &Row::new(d, &translated, self.names.lang(), false))
                    .map_err(|e| bad(&e))?;
                self.rows += 1;
            }
        }
        Ok(out)
    }

    /// What closes the file: the JSON array's end (or an empty array); CSV of no rows is the
    /// header alone.
    fn end(&mut self) -> Result<Vec<u8>, ExportError> {
        match (self.format, self.rows) {
            (Format::Json, 0) => Ok(b"[]\n".to_vec()),
            (Format::Json, _) => Ok(b"\n]\n".to_vec()),
            (_, 0) => {
                let mut out = Vec::new();
                let mut w = csv::Writer::from_writer(&mut out);
                w.write_record(HEADER).map_err(|e| ExportError::Encode(e.to_string()))?;
                w.flush().map_err(|e| ExportError::Encode(e.to_string()))?;
                drop(w);
                Ok(out)
            }
            _ => Ok(Vec::new()),
        }
    }
}

/// The CSV header (the keys of [`Row`], in order).
pub const HEADER: [&str; 25] = [
    "id",
    "detected_at",
    "species_code",
    "common_name",
    "scientific_name",
    "translated_common_name",
    "language",
    "confidence",
    "calibrated_confidence",
    "verification_status",
    "satellite_id",
    "satellite_name",
    "audio_chunk_id",
    "start_ms",
    "end_ms",
    "model_id",
    "is_rare",
    "rare_reason",
    "is_first_of_day",
    "is_first_of_season",
    "is_first_for_team",
    "expected_here",
    "storage_key",
    "tenant_id",
    "created_at",
];

/// `birdhub-detections-<from>-<to>.<csv|json>` and its content type.
pub fn file_of(checked: &Checked, format: Format) -> (String, &'static str) {
    match format {
        Format::Json => (checked.file_name("detections", "json"), "application/json"),
        _ => (checked.file_name("detections", "csv"), "text/csv; charset=utf-8"),
    }
}

/// Reads every page of `checked` and hands each encoded chunk to `send`; stops early (without
/// an error) when `send` returns false: the client went away. Blocking.
fn produce(
    store: &store::Store,
    tenant: TenantId,
    checked: &Checked,
    mut enc: Encoder,
    mut send: impl FnMut(Vec<u8>) -> bool,
) -> Result<(), ExportError> {
    let mut after: Option<export::Cursor> = None;
    loop {
        let rows = store.call_blocking(|c| {
            let mut rows = export::page(c, tenant, &checked.filter, after.as_ref(), PAGE)?;
            store::calibration::apply(c, tenant, &mut rows)?;
            Ok(rows)
        })?;
        if !rows.is_empty() && !send(enc.page(&rows)?) {
            return Ok(());
        }
        match rows.last() {
            Some(last) if rows.len() == PAGE => after = Some(export::Cursor::after(last)),
            _ => break,
        }
    }
    send(enc.end()?);
    Ok(())
}

/// Starts streaming the export of `checked`: encoded chunks arrive on the receiver, an `Err` ends
/// the stream early (the client sees a cut-off transfer, never a complete-looking file). The
/// producer stops when the receiver is dropped.
pub fn stream(
    env: &Env,
    tenant: TenantId,
    lang: &str,
    format: Format,
    checked: Checked,
) -> mpsc::Receiver<Result<Vec<u8>, ExportError>> {
    let (tx, rx) = mpsc::channel(CHANNEL_CHUNKS);
    let enc = Encoder { format, names: NameBook::new(&env.names, lang), rows: 0 };
    let store = env.store.clone();
    tokio::task::spawn_blocking(move || {
        let result = produce(&store, tenant, &checked, enc, |chunk| tx.blocking_send(Ok(chunk)).is_ok());
        if let Err(e) = result {
            tracing::error!(error = %e, "detections export failed part way");
            let _ = tx.blocking_send(Err(e));
        }
    });
    rx
}

/// The whole export in memory (scheduled exports).
pub async fn render(
    env: &Env,
    tenant: TenantId,
    lang: &str,
    format: Format,
    filters: &Filters,
    now: DateTime<Utc>,
) -> Result<ExportFile, ExportError> {
    let checked = super::check(&env.store, tenant, filters, now, false).await?;
    let (file_name, content_type) = file_of(&checked, format);
    let mut rx = stream(env, tenant, lang, format, checked);
    let mut bytes = Vec::new();
    while let Some(chunk) = rx.recv().await {
        bytes.extend_from_slice(&chunk?);
    }
    Ok(ExportFile { file_name, content_type, bytes })
}
