//! `birdhub import birdnet-pi|birdnet-go <PATH>`: brings an old station's history into a team
//! as a satellite (issue 38). Progress goes to stderr once a second, the summary to stdout. The
//! hub may keep running meanwhile (SQLite WAL); an interrupted import resumes when run again.

use std::{io::Write, path::PathBuf, process::ExitCode};

use anyhow::{Context, bail};

use crate::{
    config::Settings,
    ids::{SatelliteId, TenantId},
    objects::ObjectStore,
    store::{self, imports::ImportJob},
    usecases::imports::{self, ImportRequest, PeerKind, Progress, Target},
};

#[derive(Debug, clap::Args)]
pub struct ImportArgs {
    /// The station's directory, its database file, or a backup tar.
    #[arg(value_name = "PATH")]
    pub path: PathBuf,
    /// The team (its id or its name); not needed when the hub has one team.
    #[arg(long, value_name = "ID|NAME")]
    pub team: Option<String>,
    /// Import into this existing satellite of the team (a station that now runs `birdhub satellite`).
    #[arg(long, value_name = "ID", conflicts_with = "name")]
    pub satellite: Option<SatelliteId>,
    /// The name of the new satellite (default: the station's own name).
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    /// The IANA zone the station's clock kept, e.g. Europe/Berlin (default: the satellite's,
    /// else the team's).
    #[arg(long, value_name = "IANA")]
    pub zone: Option<String>,
    /// Where the clips are, when not beside the database (BirdNET-Pi: the `By_Date` directory or
    /// the directory holding it).
    #[arg(long, value_name = "DIR")]
    pub clips: Option<PathBuf>,
    /// Read and count everything, write nothing; print what the import would do.
    #[arg(long)]
    pub dry_run: bool,
}

/// Thousands separated by commas, as people read counts.
pub fn grouped(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// "rows 120,000/500,000 (24 %), 41,200 rows/s; clips 310, 52/s; about 9 s left"
pub fn progress_line(p: &Progress) -> String {
    let pct = (p.rows_read * 100).checked_div(p.rows_total).unwrap_or(100);
    let left = match p.seconds_left {
        Some(s) if s >= 90.0 => format!("; about {} min left", (s / 60.0).round() as u64),
        Some(s) => format!("; about {} s left", s.ceil() as u64),
        None => String::new(),
    };
    format!(
        "rows {}/{} ({pct} %), {} rows/s; clips {}, {}/s{left}",
        grouped(p.rows_read),
        grouped(p.rows_total),
        grouped(p.rows_per_second.round() as u64),
        grouped(p.clips_copied),
        grouped(p.clips_per_second.round() as u64),
    )
}

/// The summary a finished job prints.
pub fn summary(job: &ImportJob, satellite: Option<&str>) -> String {
    let mut s = String::new();
    let would = if job.dry_run { "would add" } else { "added" };
    let copied = if job.dry_run { "clips that would be copied" } else { "clips copied" };
    let mut line = |t: String| {
        s.push_str(&t);
        s.push('\n');
    };
    if job.dry_run {
        line("dry run: nothing was written".into());
    }
    if let Some(name) = satellite {
        line(format!("satellite: {name}"));
    }
    line(format!("rows read: {}", grouped(job.rows_read)));
    line(format!("{would}: {}", grouped(job.rows_added)));
    line(format!("duplicates (already imported): {}", grouped(job.rows_duplicate)));
    line(format!("unmapped names: {} rows", grouped(job.rows_unmapped)));
    for n in job.unmapped.iter().take(20) {
        line(format!("  {} ({})", n.name, grouped(n.count)));
    }
    line(format!("corrupt rows: {}", grouped(job.rows_corrupt)));
    for c in job.corrupt.iter().take(20) {
        line(format!("  {}: {}", c.at, c.reason));
    }
    line(format!("{copied}: {}", grouped(job.clips_copied)));
    line(format!("missing clips: {}", grouped(job.clips_missing)));
    for m in job.missing_clips.iter().take(20) {
        line(format!("  {m}"));
    }
    line(format!("undecodable clips (kept, no spectrogram): {}", grouped(job.clips_undecodable)));
    line(format!("times read in: {}", job.time_zone));
    s
}

/// The team named by id or by name; the only team when none is named. A name matches whatever
/// its case, so a name two teams share that way ("Garden", "GARDEN") is refused with both ids:
/// the history must not go into whichever sorts first.
async fn team(store: &store::Store, named: Option<String>) -> anyhow::Result<(TenantId, String)> {
    let all = store.call(|c| store::tenants::list_all(c)).await?;
    match named {
        None if all.len() == 1 => Ok((all[0].id, all[0].name.clone())),
        None if all.is_empty() => bail!("this hub has no team yet: create an account first"),
        None => bail!(
            "this hub has {} teams: name one with --team (its id or name): {}",
            all.len(),
            all.iter().map(|t| t.name.as_str()).collect::<Vec<_>>().join(", ")
        ),
        Some(n) => {
            if let Some(t) = all.iter().find(|t| t.id.to_string().eq_ignore_ascii_case(n.trim())) {
                return Ok((t.id, t.name.clone()));
            }
            let matches: Vec<_> = all.iter().filter(|t| t.name.to_lowercase() == n.to_lowercase()).collect();
            match matches.as_slice() {
                [] => bail!("no team {n:?} on this hub"),
                [one] => Ok((one.id, one.name.clone())),
                many => bail!(
                    "{} teams are named {n:?} (whatever the case): {}; give the id with --team",
                    many.len(),
                    many.iter().map(|t| format!("{} (id {})", t.name, t.id)).collect::<Vec<_>>().join(", ")
                ),
            }
        }
    }
}

pub async fn run(settings: &Settings, kind: PeerKind, args: ImportArgs) -> anyhow::Result<ExitCode> {
    let (store, _) = crate::app::open_store(&settings.data_dir).await?;
    let objects = ObjectStore::open(settings.data_dir.join("objects")).context("opening the object store")?;
    let (tenant, team_name) = team(&store, args.team).await?;
    // Said on every import: the operator sees which team the history goes into.
    println!("team: {team_name} (id {tenant})");
    let target = match args.satellite {
        Some(id) => Target::Existing(id),
        None => Target::New { name: args.name },
    };
    let req = ImportRequest {
        zone: args.zone,
        dry_run: args.dry_run,
        clips: args.clips,
        ..ImportRequest::new(tenant, kind, args.path, target)
    };
    let id = match imports::prepare(&store, &settings.data_dir, req).await {
        Ok(id) => id,
        Err(e) => {
            eprintln!("birdhub import: {e}");
            return Ok(ExitCode::from(2));
        }
    };
    let names = crate::inference::translations::Translations::new(&settings.inference.model_dir);
    let range = crate::inference::range::Shared::new(&settings.inference.model_dir);
    let report = |p: &Progress| {
        let mut err = std::io::stderr().lock();
        let _ = writeln!(err, "{}", progress_line(p));
    };
    let hub = imports::Hub {
        store: &store,
        objects: &objects,
        names: &names,
        range: Some(&range),
        data_dir: &settings.data_dir,
    };
    let job = match imports::run(hub, id, report).await {
        Ok(job) => job,
        Err(e) => {
            eprintln!("birdhub import: {e}");
            return Ok(ExitCode::FAILURE);
        }
    };
    let sat = match job.satellite_id {
        Some(s) => {
            Some(store.call(move |c| store::satellites::get(c, s)).await.map(|s| format!("{} ({})", s.name, s.id))?)
        }
        None => None,
    };
    print!("{}", summary(&job, sat.as_deref()));
    if job.clips_copied > 0 {
        // Imported clips are retained like the hub's own: old ones go at the next sweep.
        println!(
            "note: clips older than retention.keep_audio_days ({} days) are deleted by the hub's next retention \
             sweep (their detections stay); raise it to keep them",
            settings.retention.keep_audio_days
        );
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_reads_like_a_sentence() {
        let p = Progress {
            rows_total: 500_000,
            rows_read: 120_000,
            rows_per_second: 41_200.0,
            clips_copied: 310,
            clips_per_second: 52.0,
            seconds_left: Some(9.2),
            ..Default::default()
        };
        assert_eq!(progress_line(&p), "rows 120,000/500,000 (24 %), 41,200 rows/s; clips 310, 52/s; about 10 s left");
        assert_eq!(grouped(999), "999");
        assert_eq!(grouped(1_000), "1,000");
    }
}
