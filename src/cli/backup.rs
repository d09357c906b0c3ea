//! `admin backup` and `admin restore`: the bodies around [`crate::usecases::backup`], with the
//! progress and the outcome printed for the person at the terminal.

use std::{
    path::{Path, PathBuf},
    process::ExitCode,
    time::Instant,
};

use crate::{
    config::Settings,
    store::Store,
    usecases::backup::{self, DB_NAME, Manifest},
};

fn mb(bytes: u64) -> String {
    format!("{:.1} MB", bytes as f64 / 1_000_000.0)
}

/// `birdhub admin backup --to FILE`: works while the hub runs.
pub async fn backup(settings: &Settings, to: PathBuf) -> anyhow::Result<ExitCode> {
    let data = &settings.data_dir;
    let db = data.join(DB_NAME);
    if !db.is_file() {
        anyhow::bail!("no database at {} (pass the hub's --data-dir or --config)", db.display());
    }
    println!("backing up {} into {} (the hub may keep running)", data.display(), to.display());
    let started = Instant::now();
    let store = Store::open(&db)?;
    let manifest = backup::backup(&store, data, &to, chrono::Utc::now()).await?;
    let archive = std::fs::metadata(&to).map(|m| m.len()).unwrap_or(0);
    println!("{}", summary(&manifest));
    println!(
        "wrote {}: {} compressed in {:.1} s (schema version {}, birdhub {})",
        to.display(),
        mb(archive),
        started.elapsed().as_secs_f64(),
        manifest.schema_version,
        manifest.hub_version
    );
    Ok(ExitCode::SUCCESS)
}

/// `birdhub admin restore FILE [--force]`: the hub must be stopped.
pub async fn restore(settings: &Settings, file: PathBuf, force: bool) -> anyhow::Result<ExitCode> {
    let data = settings.data_dir.clone();
    println!("checking {} and restoring it into {}", file.display(), data.display());
    let started = Instant::now();
    let (from, into) = (file.clone(), data.clone());
    let restored = tokio::task::spawn_blocking(move || backup::restore(&from, &into, force)).await??;
    let m = &restored.manifest;
    println!("{}", summary(m));
    println!(
        "restored the backup of {} (birdhub {}) into {} in {:.1} s",
        m.created_at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        m.hub_version,
        data.display(),
        started.elapsed().as_secs_f64()
    );
    if restored.migrated_from != restored.migrated_to {
        println!("migrated the database from schema version {} to {}", restored.migrated_from, restored.migrated_to);
    }
    if let Some(aside) = &restored.moved_aside {
        println!("the data dir's previous contents are in {}", aside.display());
    }
    println!("start the hub again: sudo systemctl start birdhub");
    Ok(ExitCode::SUCCESS)
}

fn summary(m: &Manifest) -> String {
    let objects: u64 = m.files.iter().filter(|f| f.path.starts_with("objects/")).map(|f| f.size).sum();
    let secrets = m.files.iter().any(|f| Path::new(&f.path) == Path::new(backup::SECRETS_NAME));
    format!(
        "{} files, {}: database {}, {} objects {}, secrets {}",
        m.files.len(),
        mb(m.total_bytes()),
        mb(m.db_bytes()),
        m.object_count(),
        mb(objects),
        if secrets { "included" } else { "none (all configured)" }
    )
}
