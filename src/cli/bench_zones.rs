//! `birdhub bench zones`: what local time costs (issue 37). The position finder's load time,
//! lookup rate and memory; building a zone's offsets; writing detections through the zone-aware
//! rollup triggers; and a zone move's rate (a satellite's rows counted over to a new zone).

use std::time::{Duration, Instant};

use crate::{
    app,
    clock::Clock,
    domain::zone::{self, Finder},
    ids::{ChunkId, SatelliteId},
    store::{self, chunks::NewChunk, detections::NewDetection, users::NewUser},
    time::Timestamp,
    usecases,
};

#[derive(Debug, clap::Args)]
pub struct ZonesArgs {
    /// Detections (each in its own chunk) to write and then move to another zone.
    #[arg(long, default_value_t = 100_000)]
    pub detections: u64,
}

/// The process's resident memory in MB (Linux), or 0.
fn rss_mb() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines().find(|l| l.starts_with("VmRSS:")).and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
        })
        .map_or(0.0, |kb| kb / 1024.0)
}

fn finder() {
    let before = rss_mb();
    let mut loads = Vec::new();
    let mut loaded = None;
    for _ in 0..3 {
        let t = Instant::now();
        loaded = Some(Finder::load());
        loads.push(t.elapsed());
    }
    let with = rss_mb();
    let Some(f) = loaded else { return };
    let n = 100_000u32;
    let t = Instant::now();
    let mut found = 0u32;
    for i in 0..n {
        // A spiral over the land and sea of the world.
        let lat = -60.0 + f64::from(i % 1_200) * 0.1;
        let lon = -180.0 + f64::from(i % 3_600) * 0.1;
        found += u32::from(f.at(lat, lon).is_some());
    }
    let per = t.elapsed() / n;
    drop(f);
    loads.sort();
    println!(
        "position finder: load {:.0} ms (median of 3), {:.1} µs a lookup ({found} of {n} found), +{:.0} MB while loaded ({:.0} MB after dropping it)",
        loads[1].as_secs_f64() * 1000.0,
        per.as_secs_f64() * 1e6,
        with - before,
        rss_mb() - before,
    );
    let t = Instant::now();
    let steps = zone::offset_steps(chrono_tz::America::New_York);
    println!("zone offsets: America/New_York has {} steps 1900-2100, built in {:.0} ms", steps.len(), ms(t.elapsed()));
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

pub async fn run(args: ZonesArgs) -> anyhow::Result<std::process::ExitCode> {
    finder();
    let dir = std::env::temp_dir().join(format!("birdhub-bench-zones-{}", std::process::id()));
    let result = measure(&dir, args.detections).await;
    let _ = std::fs::remove_dir_all(&dir);
    result
}

async fn measure(dir: &std::path::Path, n: u64) -> anyhow::Result<std::process::ExitCode> {
    let (store, _) = app::open_store(dir).await?;
    let new = NewUser {
        email: "zones@example.org".into(),
        name: "Zones".into(),
        password_hash: "!".into(),
        is_platform_admin: false,
    };
    let created = store.call(move |c| store::users::create_with_team(c, &new, "Bench zones")).await?;
    let tenant = created.tenant_id;
    let sat: SatelliteId = store
        .call(move |c| {
            store::satellites::insert(
                c,
                &store::satellites::NewSatellite {
                    tenant_id: tenant,
                    name: "bench",
                    device_id: None,
                    kind: crate::domain::DeviceKind::Satellite,
                    registered_by: None,
                    mqtt_password_hash: "!",
                    latitude: Some(40.7128),
                    longitude: Some(-74.006),
                },
            )
        })
        .await?;
    let species = [
        ("turdus_migratorius", "American Robin", "Turdus migratorius"),
        ("troglodytes_aedon", "House Wren", "Troglodytes aedon"),
    ];
    let start = chrono::DateTime::parse_from_rfc3339("2026-01-01T00:00:00Z")?.to_utc();
    let t = Instant::now();
    store
        .call(move |c| {
            let tx = c.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            for i in 0..n {
                // One a minute: about 70 days.
                let at = Timestamp(start + chrono::Duration::minutes(i64::try_from(i).unwrap_or(0)));
                let chunk = ChunkId::new();
                let row = NewChunk {
                    id: chunk,
                    tenant_id: tenant,
                    satellite_id: sat,
                    recorded_at: at,
                    duration_ms: 3000,
                    sample_rate: 48_000,
                    latitude: None,
                    longitude: None,
                    storage_key: String::new(),
                    size_bytes: 1,
                };
                store::chunks::insert_with_job_in(&tx, &row, at)?;
                let (code, common, scientific) = species[usize::from(i % 3 == 0)];
                let d = NewDetection {
                    tenant_id: tenant,
                    satellite_id: sat,
                    satellite_name: String::new(),
                    audio_chunk_id: chunk,
                    model_id: crate::inference::MODEL_ID.into(),
                    species_code: code.into(),
                    common_name: common.into(),
                    scientific_name: scientific.into(),
                    confidence: 0.5 + (i % 50) as f32 / 100.0,
                    detected_at: at,
                    start_ms: 0,
                    end_ms: 3000,
                    expected_here: Some(true),
                };
                usecases::detections::record(&tx, &d, at)?;
            }
            tx.commit()?;
            Ok(())
        })
        .await?;
    let wrote = t.elapsed();
    println!(
        "writing: {n} chunks with a detection each through the zone-aware triggers in {:.1} s ({:.0} detections/s, one transaction)",
        wrote.as_secs_f64(),
        n as f64 / wrote.as_secs_f64()
    );
    let clock = Clock::default();
    let t = Instant::now();
    usecases::zones::set_override(&store, &clock, tenant, sat, Some("Europe/Berlin")).await?;
    let mut steps = 0u32;
    while usecases::zones::step(&store, &clock).await? {
        steps += 1;
    }
    let moved = t.elapsed();
    let drift = store.call(|c| store::stats::rollups::drift(c)).await?;
    let drifted: i64 = drift.iter().map(|(_, n)| n).sum();
    println!(
        "zone move: {} rows ({n} detections + {n} chunks) from America/New_York to Europe/Berlin in {:.1} s ({:.0} rows/s, {} batches of {}), {} rollup rows differ from a fresh count",
        2 * n,
        moved.as_secs_f64(),
        (2 * n) as f64 / moved.as_secs_f64(),
        steps + 1,
        usecases::zones::BATCH,
        drifted
    );
    Ok(std::process::ExitCode::SUCCESS)
}
