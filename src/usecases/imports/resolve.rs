//! [`super::prepare`]: the checks an import makes before anything is written, and the job row.

use std::path::Path;

use super::{ImportError, ImportRequest, Target, parse_zone, source, unpack};
use crate::{
    store::{self, Store, imports::NewImport},
    time::Timestamp,
};

pub fn kind_str(kind: super::PeerKind) -> &'static str {
    match kind {
        super::PeerKind::BirdnetPi => "birdnet-pi",
        super::PeerKind::BirdnetGo => "birdnet-go",
    }
}

pub fn schema_str(schema: super::peer::Schema) -> &'static str {
    match schema {
        super::peer::Schema::BirdnetPi => "birdnet-pi",
        super::peer::Schema::BirdnetGoLegacy => "birdnet-go-legacy",
        super::peer::Schema::BirdnetGoV2 => "birdnet-go-v2",
    }
}

/// The path as the job row names it: absolute, so a rerun from another directory finds the job.
fn canonical(path: &Path) -> String {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf()).display().to_string()
}

pub async fn prepare(store: &Store, scratch_root: &Path, req: ImportRequest) -> Result<super::ImportId, ImportError> {
    let zone = match &req.zone {
        Some(z) => Some(parse_zone(z)?),
        None => None,
    };
    let (tenant, target) = (req.tenant, req.target.clone());
    // The satellite must be the team's; the zone defaults to the satellite's, else the team's.
    let (satellite, default_zone) = store
        .call(move |c| {
            let sat = match target {
                Target::Existing(id) => match store::satellites::ensure_in_tenant(c, tenant, id) {
                    Ok(()) => Some(id),
                    Err(store::Error::NotFound) => return Ok(Err(ImportError::UnknownSatellite(id))),
                    Err(e) => return Err(e),
                },
                Target::New { .. } => None,
            };
            let tz = match sat {
                Some(id) => store::zones::satellite_zone(c, &id)?,
                None => store::zones::team_zone(c, &tenant)?,
            };
            Ok(Ok((sat, tz)))
        })
        .await??;
    let tz = zone.unwrap_or(default_zone);
    let (kind, path, clips, root) = (req.kind, req.source.clone(), req.clips.clone(), scratch_root.to_path_buf());
    let opened = tokio::task::spawn_blocking(move || source::open(kind, &path, clips.as_deref(), &root))
        .await
        .map_err(|e| ImportError::Failed(e.to_string()))??;
    let schema = schema_str(opened.source.schema());
    let source_text = canonical(&req.source);
    let database = opened.database.display().to_string();
    let clips = opened.clips.as_ref().map(|p| p.display().to_string());
    let scratch = opened.scratch.as_ref().map(|p| p.display().to_string());
    let new_name = match &req.target {
        Target::New { name } => name.clone(),
        Target::Existing(_) => None,
    };
    let is_new = matches!(req.target, Target::New { .. });
    let (dry_run, actor) = (req.dry_run, req.actor);
    let result = store
        .call(move |c| {
            let tx = c.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            let kind = kind_str(kind);
            // A rerun into a new satellite goes into the one the same source made before.
            let satellite = match satellite {
                Some(s) => Some(s),
                None if is_new => store::imports::earlier_satellite(&tx, tenant, kind, &source_text)?,
                None => None,
            };
            let now = Timestamp(chrono::Utc::now());
            let earlier = store::imports::unfinished(&tx, tenant, kind, &source_text, satellite, dry_run)?;
            let id = match earlier {
                Some(job) => {
                    if let Some(old) = job.internal.scratch_dir.as_deref()
                        && Some(old) != scratch.as_deref()
                    {
                        unpack::remove(Path::new(old));
                    }
                    store::imports::repoint(&tx, job.id, &database, clips.as_deref(), scratch.as_deref(), now)?;
                    job.id
                }
                None => store::imports::insert(
                    &tx,
                    &NewImport {
                        tenant_id: tenant,
                        satellite_id: satellite,
                        new_name: new_name.as_deref(),
                        kind,
                        schema,
                        source: &source_text,
                        database_path: &database,
                        clips_dir: clips.as_deref(),
                        scratch_dir: scratch.as_deref(),
                        time_zone: tz.name(),
                        dry_run,
                        actor,
                    },
                    now,
                )?,
            };
            tx.commit()?;
            Ok(id)
        })
        .await;
    if result.is_err()
        && let Some(dir) = &opened.scratch
    {
        unpack::remove(dir);
    }
    Ok(result?)
}
