//! `GET /export/checklist`: the team's detections as eBird checklists (Record Format
//! (Extended), see `domain::exports::ebird`): one checklist per satellite place and local day,
//! or per recording session (`groupBy=session`); rejected detections never, only confirmed ones
//! with `verifiedOnly=true`. One CSV under 1 MB, else a ZIP of CSVs each under 1 MB, never
//! splitting a checklist.

use std::io::Write;

use chrono::{DateTime, Utc};

use super::{Env, ExportError, ExportFile, Filters, each_placed, heard};
use crate::{
    domain::exports::{
        GroupBy,
        ebird::{self, Builder, MAX_FILE_BYTES, Options},
    },
    ids::TenantId,
};

pub async fn render(
    env: &Env,
    tenant: TenantId,
    filters: &Filters,
    now: DateTime<Utc>,
) -> Result<ExportFile, ExportError> {
    let by = filters.group_by.unwrap_or_default();
    if by == GroupBy::Detection {
        return Err(ExportError::InvalidFilter(
            "an eBird checklist gathers a day or a session: groupBy is day or session".into(),
        ));
    }
    let checked = super::check(&env.store, tenant, filters, now, true).await?;
    let store = env.store.clone();
    let opts = Options { all_reported: filters.all_reported, comment: String::new() };
    let name = |ext: &str| checked.file_name("ebird", ext);
    let (csv, zip) = (name("csv"), name("zip"));
    let stem = csv.trim_end_matches(".csv").to_owned();
    tokio::task::spawn_blocking(move || {
        let mut lists = Builder::new(by);
        each_placed(&store, tenant, &checked, |p| {
            lists.add(&heard(p, &checked.zones));
            true
        })?;
        let encoded: Vec<String> = lists.finish().iter().map(|l| ebird::encode(l, &opts)).collect();
        if let Some(big) = encoded.iter().find(|l| l.len() > MAX_FILE_BYTES) {
            return Err(ExportError::ChecklistTooLarge(big.len()));
        }
        let mut files = ebird::pack(encoded, MAX_FILE_BYTES);
        if files.len() <= 1 {
            let bytes = files.pop().unwrap_or_default().into_bytes();
            return Ok(ExportFile { file_name: csv, content_type: "text/csv; charset=utf-8", bytes });
        }
        let named = files.into_iter().enumerate().map(|(i, f)| (format!("{stem}-{}.csv", i + 1), f.into_bytes()));
        Ok(ExportFile { file_name: zip, content_type: "application/zip", bytes: zip_files(named)? })
    })
    .await
    .map_err(|e| ExportError::Encode(e.to_string()))?
}

/// A ZIP (deflated) of `files` in memory.
pub(crate) fn zip_files(files: impl IntoIterator<Item = (String, Vec<u8>)>) -> Result<Vec<u8>, ExportError> {
    let bad = |e: &dyn std::fmt::Display| ExportError::Encode(e.to_string());
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let opts = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
    for (name, bytes) in files {
        zip.start_file(name, opts).map_err(|e| bad(&e))?;
        zip.write_all(&bytes).map_err(|e| bad(&e))?;
    }
    Ok(zip.finish().map_err(|e| bad(&e))?.into_inner())
}
