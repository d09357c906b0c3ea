//! `GET /export/observation`: iNaturalist's bulk CSV (`domain::exports::inaturalist`): one
//! observation per species per satellite and day (or session, or detection), rejected
//! detections never. Every row is checked before anything is handed out: iNaturalist rejects a
//! whole file for one bad row, so a file it would reject is refused here (422, listing the
//! first bad rows) instead.

use chrono::{DateTime, Utc};

use super::{Env, ExportError, ExportFile, Filters, each_placed, heard};
use crate::{
    domain::exports::inaturalist::{self, Builder, HEADER, MAX_ROWS},
    ids::TenantId,
};

pub async fn render(
    env: &Env,
    tenant: TenantId,
    filters: &Filters,
    now: DateTime<Utc>,
) -> Result<ExportFile, ExportError> {
    let checked = super::check(&env.store, tenant, filters, now, true).await?;
    let by = filters.group_by.unwrap_or_default();
    let geoprivacy = filters.geoprivacy;
    // iNaturalist asks for a new file name per upload: the minute it was made.
    let base = checked.file_name("inaturalist", "csv");
    let file_name = format!("{}-{}.csv", base.trim_end_matches(".csv"), now.format("%Y%m%dT%H%M"));
    let (store, share) = (env.store.clone(), env.share.clone());
    tokio::task::spawn_blocking(move || {
        let mut found = Builder::new(by);
        // Past MAX_ROWS the file is refused whatever follows: stop reading there.
        each_placed(&store, tenant, &checked, |p| {
            found.add(&heard(p, &checked.zones));
            found.len() <= MAX_ROWS
        })?;
        let rows: Vec<[String; 8]> = found
            .finish()
            .iter()
            .map(|o| {
                inaturalist::row(o, share.as_ref().and_then(|s| s.audio(&o.best.detection, now)).as_deref(), geoprivacy)
            })
            .collect();
        let problems = inaturalist::check(&rows);
        if !problems.is_empty() {
            return Err(ExportError::ObservationRejected(problems));
        }
        let bad = |e: &dyn std::fmt::Display| ExportError::Encode(e.to_string());
        let mut w = csv::Writer::from_writer(Vec::new());
        w.write_record(HEADER).map_err(|e| bad(&e))?;
        for r in &rows {
            w.write_record(r).map_err(|e| bad(&e))?;
        }
        let bytes = w.into_inner().map_err(|e| bad(&e))?;
        Ok(ExportFile { file_name, content_type: "text/csv; charset=utf-8", bytes })
    })
    .await
    .map_err(|e| ExportError::Encode(e.to_string()))?
}
