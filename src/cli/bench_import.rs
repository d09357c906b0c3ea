//! `birdhub bench import`: a synthetic BirdNET-Pi station (the `birds.db` schema of IMPORTS.md
//! A.2, real species of the model's labels, WAV clips written with hound for some rows) imported
//! into a fresh data dir through the same engine as `birdhub import`. Prints rows/s, clips/s, the
//! peak resident memory and the resident memory at 25/50/75/100 %: it streams, so it stays flat.

use std::{
    path::Path,
    process::ExitCode,
    sync::{Arc, Mutex},
    time::Instant,
};

use rusqlite::params;

use super::bench::{peak_rss_mb, status_mb};
use crate::{
    app,
    config::Settings,
    inference::{range, translations::Translations},
    objects::ObjectStore,
    store::{self, users::NewUser},
    usecases::imports::{self, ImportRequest, PeerKind, Progress, Target},
};

#[derive(Debug, clap::Args)]
pub struct ImportBenchArgs {
    /// Rows of the synthetic station.
    #[arg(long, default_value_t = 500_000)]
    pub rows: u64,
    /// One row in this many has a clip (a 3 s WAV); 0 for none.
    #[arg(long, default_value_t = 500)]
    pub clip_every: u64,
}

/// Writes the station: `birds.db` and `By_Date/<Date>/<ComDir>/<File>.wav` clips.
fn station(dir: &Path, rows: u64, clip_every: u64, species: &[(String, String)]) -> anyhow::Result<u64> {
    let db = rusqlite::Connection::open(dir.join("birds.db"))?;
    db.execute_batch(
        "CREATE TABLE detections (Date DATE, Time TIME, Sci_Name VARCHAR(100) NOT NULL, Com_Name VARCHAR(100) NOT NULL,
           Confidence FLOAT, Lat FLOAT, Lon FLOAT, Cutoff FLOAT, Week INT, Sens FLOAT, Overlap FLOAT,
           File_Name VARCHAR(100) NOT NULL);
         CREATE INDEX detections_Com_Name ON detections (Com_Name);
         CREATE INDEX detections_Date_Time ON detections (Date DESC, Time DESC);",
    )?;
    let wav = crate::inference::audio::encode_wav_i16(
        &(0..144_000).map(|i| ((i as f32) * 0.05).sin() * 0.1).collect::<Vec<_>>(),
        48_000,
    );
    let start = chrono::NaiveDate::from_ymd_opt(2023, 1, 1).and_then(|d| d.and_hms_opt(5, 0, 0)).unwrap_or_default();
    let tx = db.unchecked_transaction()?;
    let mut clips = 0;
    {
        let mut insert =
            tx.prepare("INSERT INTO detections VALUES (?1, ?2, ?3, ?4, ?5, 40.7128, -74.006, 0.7, 1, 1.25, 0.0, ?6)")?;
        for i in 0..rows {
            // A detection every 40 s: half a million rows is about eight months.
            let at = start + chrono::Duration::seconds(i64::try_from(i)?.saturating_mul(40));
            let (sci, com) = &species[(i as usize) % species.len()];
            let conf = 0.7 + (i % 30) as f64 / 100.0;
            let (date, time) = (at.format("%Y-%m-%d").to_string(), at.format("%H:%M:%S").to_string());
            let dir_name = com.replace('\'', "").replace(' ', "_");
            let file = format!("{dir_name}-{}-{date}-birdnet-{time}.wav", (conf * 100.0).round() as i64);
            insert.execute(params![date, time, sci, com, conf, file])?;
            if clip_every > 0 && i % clip_every == 0 {
                let p = dir.join("By_Date").join(&date).join(&dir_name);
                std::fs::create_dir_all(&p)?;
                std::fs::write(p.join(&file), &wav)?;
                clips += 1;
            }
        }
    }
    tx.commit()?;
    Ok(clips)
}

pub async fn run(settings: &Settings, args: ImportBenchArgs) -> anyhow::Result<ExitCode> {
    let dir = std::env::temp_dir().join(format!("birdhub-bench-import-{}", std::process::id()));
    let result = measure(settings, &dir, &args).await;
    let _ = std::fs::remove_dir_all(&dir);
    result
}

async fn measure(settings: &Settings, dir: &Path, args: &ImportBenchArgs) -> anyhow::Result<ExitCode> {
    let names = Translations::new(&settings.inference.model_dir);
    let Some(labels) = names.classes() else {
        anyhow::bail!("the model's labels are missing (run `birdhub model fetch`)");
    };
    // Fifty species the model knows (every 100th label).
    let species: Vec<(String, String)> =
        labels.iter().step_by(100).take(50).map(|l| (l.scientific.clone(), l.common.clone())).collect();
    let source = dir.join("station");
    std::fs::create_dir_all(&source)?;
    let t = Instant::now();
    let clips = station(&source, args.rows, args.clip_every, &species)?;
    println!(
        "station:  {} rows, {clips} WAV clips written in {:.1} s",
        super::import::grouped(args.rows),
        t.elapsed().as_secs_f64()
    );
    let data = dir.join("data");
    let (store, _) = app::open_store(&data).await?;
    let objects = ObjectStore::open(data.join("objects"))?;
    let new = NewUser {
        email: "import@example.org".into(),
        name: "Import".into(),
        password_hash: "!".into(),
        is_platform_admin: false,
    };
    let tenant = store.call(move |c| store::users::create_with_team(c, &new, "Bench import")).await?.tenant_id;
    let req = ImportRequest {
        zone: Some("America/New_York".into()),
        ..ImportRequest::new(tenant, PeerKind::BirdnetPi, source.clone(), Target::New { name: Some("bench".into()) })
    };
    let id = imports::prepare(&store, &data, req).await?;
    let range = range::Shared::new(&settings.inference.model_dir);
    // Start the high-water mark again (Linux: "5" resets VmHWM): the peak is the import's.
    let _ = std::fs::write("/proc/self/clear_refs", "5");
    let before = status_mb(std::process::id(), "VmRSS:");
    let marks: Arc<Mutex<Vec<(u64, f64)>>> = Arc::default();
    let seen = marks.clone();
    let report = move |p: &Progress| {
        let pct = (p.rows_read * 100).checked_div(p.rows_total).unwrap_or(100);
        let mut m = seen.lock().unwrap_or_else(|e| e.into_inner());
        while (m.len() as u64 + 1) * 25 <= pct.min(100) {
            let mark = (m.len() as u64 + 1) * 25;
            m.push((mark, status_mb(std::process::id(), "VmRSS:")));
        }
    };
    let t = Instant::now();
    let job = imports::run(
        imports::Hub { store: &store, objects: &objects, names: &names, range: Some(&range), data_dir: &data },
        id,
        report,
    )
    .await?;
    let secs = t.elapsed().as_secs_f64();
    println!(
        "import:   {} rows in {secs:.1} s: {} rows/s; {} clips, {:.0} clips/s; {} added, {} unmapped",
        super::import::grouped(job.rows_read),
        super::import::grouped((job.rows_read as f64 / secs) as u64),
        job.clips_copied,
        job.clips_copied as f64 / secs,
        super::import::grouped(job.rows_added),
        job.rows_unmapped,
    );
    let marks = marks.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let at: Vec<String> = marks.iter().map(|(p, mb)| format!("{p} %: {mb:.0} MB")).collect();
    println!("memory:   RSS {before:.0} MB before; {}; peak (VmHWM) {:.0} MB", at.join(", "), peak_rss_mb());
    Ok(ExitCode::SUCCESS)
}
