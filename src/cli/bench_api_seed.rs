//! The seeding half of `birdhub bench api`: a hub database filled as a live hub fills it, so the
//! tables, triggers, indexes and session bookkeeping are the real ones.
//!
//! Satellites record at dawn (60 to 90 min) and at dusk (about 30 min) on most days, in 3 s slots
//! back to back; their own filter (SPEC: `filterStats`) passes slots to the hub in bouts of song,
//! at the rate that makes about a third of the hub's chunks hold a detection. Species follow a
//! Zipf-like frequency. A seeded RNG makes seedings agree (ids aside: random v4 UUIDs, as real).
//!
//! Chunks are written as `chunks::insert_with_job` writes them (the job already `done`) and join
//! their session through `recording_sessions::add_chunk`. Detections skip `detections::insert`,
//! which prepares its INSERT and read-back anew per row (about 200 µs more a detection, some 7
//! minutes for 2 million): the same INSERT runs from a cached statement, with the flags worked
//! out by its rules from what went in before (rows go in in time order, so that is kept in
//! memory), and `recording_sessions::add_detection` and the `tenant_species` trigger keep the
//! summaries.

use std::time::{Duration, Instant};

use chrono::{DateTime, Datelike, Utc};
use rand::{Rng, SeedableRng, rngs::StdRng};
use rusqlite::{Connection, TransactionBehavior, params};

use crate::{
    app,
    auth::password,
    domain::season,
    ids::{ChunkId, DetectionId, SatelliteId, TenantId},
    inference::{MODEL_ID, labels::species_code},
    store::{self, recording_sessions, satellites::NewSatellite, users::NewUser},
    time::Timestamp,
};

pub(super) const EMAIL: &str = "bench@example.org";
pub(super) const PASSWORD: &str = "bench password 123";

/// Signs in as the seeded owner over HTTP; the bearer token for the benchmark's requests.
pub(super) async fn login(client: &reqwest::Client, base: &str) -> anyhow::Result<String> {
    let login = client
        .post(format!("{base}/auth/login"))
        .json(&serde_json::json!({ "email": EMAIL, "password": PASSWORD }))
        .send()
        .await?;
    anyhow::ensure!(login.status().is_success(), "login failed with {}", login.status());
    let body = login.json::<serde_json::Value>().await?;
    Ok(anyhow::Context::context(body["token"].as_str(), "no token in the login answer")?.to_owned())
}
/// Words of the names below, for `speciesSearch`: each matches several species, common and rare.
pub(super) const SEARCH_WORDS: [&str; 5] = ["warbler", "thrush", "sparrow", "wren", "woodpecker"];

/// "Common name: Scientific name;", most often heard first (the rank of the Zipf-like frequency).
const SPECIES: &str = "\
    American Robin: Turdus migratorius; Song Sparrow: Melospiza melodia; \
    Northern Cardinal: Cardinalis cardinalis; Red-winged Blackbird: Agelaius phoeniceus; \
    American Crow: Corvus brachyrhynchos; Blue Jay: Cyanocitta cristata; \
    Carolina Wren: Thryothorus ludovicianus; Black-capped Chickadee: Poecile atricapillus; \
    Mourning Dove: Zenaida macroura; White-throated Sparrow: Zonotrichia albicollis; \
    Tufted Titmouse: Baeolophus bicolor; American Goldfinch: Spinus tristis; House Wren: Troglodytes aedon; \
    Gray Catbird: Dumetella carolinensis; Yellow Warbler: Setophaga petechia; \
    Chipping Sparrow: Spizella passerina; Wood Thrush: Hylocichla mustelina; \
    Red-eyed Vireo: Vireo olivaceus; Common Yellowthroat: Geothlypis trichas; \
    Downy Woodpecker: Dryobates pubescens; Northern Flicker: Colaptes auratus; \
    Eastern Towhee: Pipilo erythrophthalmus; House Finch: Haemorhous mexicanus; \
    European Starling: Sturnus vulgaris; Hermit Thrush: Catharus guttatus; Field Sparrow: Spizella pusilla; \
    Ovenbird: Seiurus aurocapilla; White-breasted Nuthatch: Sitta carolinensis; \
    Red-bellied Woodpecker: Melanerpes carolinus; Swainson's Thrush: Catharus ustulatus; \
    Pine Warbler: Setophaga pinus; Black-throated Green Warbler: Setophaga virens; \
    Savannah Sparrow: Passerculus sandwichensis; Eastern Phoebe: Sayornis phoebe; \
    Baltimore Oriole: Icterus galbula; Scarlet Tanager: Piranga olivacea; \
    Rose-breasted Grosbeak: Pheucticus ludovicianus; Winter Wren: Troglodytes hiemalis; \
    Veery: Catharus fuscescens; Chestnut-sided Warbler: Setophaga pensylvanica; \
    Blackburnian Warbler: Setophaga fusca; Fox Sparrow: Passerella iliaca; Barred Owl: Strix varia; \
    Great Horned Owl: Bubo virginianus; Eastern Whip-poor-will: Antrostomus vociferus; \
    Cerulean Warbler: Setophaga cerulea; Grasshopper Sparrow: Ammodramus savannarum; \
    Varied Thrush: Ixoreus naevius; Kirtland's Warbler: Setophaga kirtlandii; \
    Henslow's Sparrow: Centronyx henslowii";

/// About this share of the chunks the hub receives hold at least one detection.
const DETECTED_SHARE: f64 = 0.35;
/// How likely a chunk with detections holds 1, 2 or 3 species.
const SPECIES_PER_CHUNK: [f64; 3] = [0.55, 0.30, 0.15];
/// The mean of [`SPECIES_PER_CHUNK`].
const MEAN_SPECIES: f64 = 1.6;
/// Mean run of slots a satellite's filter passes in a row (a bird singing for about 25 s).
const BOUT_SLOTS: f64 = 8.0;
const SLOT_MS: i64 = 3000;
/// Chunks per transaction. Big: a chunk's random-UUID keys land on a different page of each key
/// index, so every transaction rewrites (in the WAL, then by checkpoint) most of those pages.
const BATCH: usize = 100_000;
const RNG_SEED: u64 = 0x00b1_2d5e_ed00;
/// A 3 s mono 16-bit WAV at 48 kHz.
const CHUNK_BYTES: i64 = 288_044;

/// What to seed.
#[derive(Debug, Clone)]
pub(super) struct Plan {
    pub detections: u64,
    pub species: usize,
    pub satellites: usize,
    pub days: u32,
    /// The seeded days end here (a fixed date, so two seedings agree).
    pub end: DateTime<Utc>,
}

/// What was seeded.
pub(super) struct Seeded {
    pub chunks: u64,
    pub detections: u64,
    /// The share of 3 s slots the satellites' filters passed to the hub.
    pub pass_rate: f64,
    pub elapsed: Duration,
}

/// One chunk as a satellite sends it: when its audio starts (ms since the epoch) and who sent it.
#[derive(Debug, Clone, Copy)]
struct Slot {
    at_ms: i64,
    sat: usize,
}

/// What every insert needs: the team, the satellites and the species with their weights.
struct Ctx {
    tenant: TenantId,
    satellites: Vec<(SatelliteId, f64, f64)>,
    species: Vec<(String, String, String)>,
    /// Cumulative Zipf weights of `species`, ending at 1.
    cumulative: Vec<f64>,
    /// Jobs finished before this are not written: the hub prunes them after
    /// `store::jobs::DONE_RETENTION_DAYS`, so an old hub holds only the last week's.
    jobs_since: Timestamp,
    /// The team's reviewers, who cast the votes behind the seeded verdicts.
    voters: Vec<crate::ids::UserId>,
}

/// Per species, the start of the UTC day and of the season of its latest detection (`None`:
/// never detected), which is all the flags need when detections arrive in time order.
type Seen = Vec<Option<(DateTime<Utc>, DateTime<Utc>)>>;

/// The first `n` species, most common first: (code, common name, scientific name).
pub(super) fn species(n: usize) -> Vec<(String, String, String)> {
    SPECIES
        .split(';')
        .filter_map(|entry| entry.split_once(':'))
        .map(|(common, scientific)| (species_code(scientific), common.trim().to_owned(), scientific.trim().to_owned()))
        .take(n)
        .collect()
}

/// Creates the database in `data` and fills it according to `plan`.
pub(super) async fn seed(data: &std::path::Path, plan: &Plan) -> anyhow::Result<Seeded> {
    let started = Instant::now();
    let mut rng = StdRng::seed_from_u64(RNG_SEED);
    let (store, _) = app::open_store(data).await?;
    let hash = tokio::task::spawn_blocking(|| password::hash(PASSWORD)).await??;
    let new = NewUser { email: EMAIL.into(), name: "Bench".into(), password_hash: hash, is_platform_admin: false };
    let created = store.call(move |c| store::users::create_with_team(c, &new, "Bench team")).await?;
    let mut satellites = Vec::with_capacity(plan.satellites);
    for i in 0..plan.satellites {
        let name = format!("bench-sat-{:02}", i + 1);
        let (lat, lon) = (40.3 + rng.random::<f64>(), -78.4 + rng.random::<f64>());
        let (tenant, user) = (created.tenant_id, created.user_id);
        let id = store
            .call(move |c| {
                store::satellites::insert(
                    c,
                    &NewSatellite {
                        tenant_id: tenant,
                        name: &name,
                        device_id: None,
                        kind: crate::domain::DeviceKind::Satellite,
                        registered_by: Some(user),
                        mqtt_password_hash: "!",
                        latitude: Some(lat),
                        longitude: Some(lon),
                    },
                )
            })
            .await?;
        satellites.push((id, lat, lon));
    }
    let (days, pass_rate) = schedule(plan, &mut rng);
    let chunks: usize = days.iter().map(Vec::len).sum();
    anyhow::ensure!(
        plan.detections <= chunks as u64 * plan.species.min(3) as u64,
        "{} detections do not fit in the {chunks} chunks of {} satellites over {} days",
        plan.detections,
        plan.satellites,
        plan.days
    );
    let species = species(plan.species);
    anyhow::ensure!(species.len() == plan.species, "--species is at most {}", species.len());
    let weights: Vec<f64> = (0..plan.species).map(|i| 1.0 / (i + 1) as f64).collect();
    let sum: f64 = weights.iter().sum();
    let cumulative = weights
        .iter()
        .scan(0.0, |acc, w| {
            *acc += w / sum;
            Some(*acc)
        })
        .collect();
    let jobs_since = Timestamp(Utc::now() - chrono::Duration::days(store::jobs::DONE_RETENTION_DAYS));
    let mut voters = vec![created.user_id];
    for name in ["Reviewer Two", "Reviewer Three"] {
        let new = NewUser {
            email: format!("{}@example.org", name.to_lowercase().replace(' ', ".")),
            name: name.into(),
            password_hash: "!".into(),
            is_platform_admin: false,
        };
        let tenant = created.tenant_id;
        voters.push(
            store.call(move |c| store::users::create_in_tenant(c, &new, tenant, crate::domain::Role::Member)).await?,
        );
    }
    let ctx = Ctx { tenant: created.tenant_id, satellites, species, cumulative, jobs_since, voters };
    let target = plan.detections;
    let (chunks, detections) = tokio::task::spawn_blocking(move || {
        store.call_blocking(|c| {
            // A big page cache for this connection only (not stored in the file): the seeding is
            // faster, the database the hub then opens is the same.
            c.pragma_update(None, "cache_size", -2_097_152)?;
            insert_all(c, &ctx, &days, target, &mut rng, started)
        })
    })
    .await??;
    Ok(Seeded { chunks, detections, pass_rate, elapsed: started.elapsed() })
}

/// Every chunk the hub will receive, per day in time order (satellites interleaved, as they
/// arrive), and the filters' pass rate that gives about the wanted number of chunks.
fn schedule(plan: &Plan, rng: &mut StdRng) -> (Vec<Vec<Slot>>, f64) {
    // Sessions first: (day, satellite, start in ms, slots).
    let mut sessions = Vec::new();
    for day in 0..plan.days {
        let start = plan.end - chrono::Duration::days(i64::from(plan.days - day));
        let season = (2.0 * std::f64::consts::PI * (f64::from(start.ordinal()) - 172.0) / 365.25).cos();
        let midnight = start.timestamp_millis();
        for sat in 0..plan.satellites {
            if rng.random_bool(0.08) {
                continue; // offline that day (power, network, maintenance)
            }
            // Dawn at about 05:15 local in June and 06:45 in December (UTC-5), evening ~30 min.
            let dawn = 10.5 * 3600.0 - 75.0 * 60.0 * season + rng.random_range(-600.0..600.0);
            let minutes = rng.random_range(60.0..90.0);
            sessions.push((day, sat, midnight + (dawn * 1000.0) as i64, (minutes * 20.0) as u32));
            if rng.random_bool(0.8) {
                let dusk = 22.5 * 3600.0 + 75.0 * 60.0 * season + rng.random_range(-600.0..600.0);
                let minutes = rng.random_range(25.0..35.0);
                sessions.push((day, sat, midnight + (dusk * 1000.0) as i64, (minutes * 20.0) as u32));
            }
        }
    }
    let slots: u64 = sessions.iter().map(|s| u64::from(s.3)).sum();
    let wanted = plan.detections as f64 / MEAN_SPECIES / DETECTED_SHARE;
    let pass = (wanted / slots.max(1) as f64).min(1.0);
    // A two-state filter: in a bout every slot passes, a bout ends after BOUT_SLOTS on average,
    // and one starts with the probability that makes `pass` the share of slots in bouts.
    let (stop, begin) = (1.0 / BOUT_SLOTS, if pass >= 1.0 { 1.0 } else { pass / (BOUT_SLOTS * (1.0 - pass)) });
    let mut days: Vec<Vec<Slot>> = vec![Vec::new(); plan.days as usize];
    for (day, sat, start, n) in sessions {
        let mut bout = rng.random_bool(pass);
        for i in 0..i64::from(n) {
            bout = if bout { pass >= 1.0 || !rng.random_bool(stop) } else { rng.random_bool(begin.min(1.0)) };
            if bout {
                days[day as usize].push(Slot { at_ms: start + i * SLOT_MS, sat });
            }
        }
    }
    for d in &mut days {
        d.sort_by_key(|s| (s.at_ms, s.sat));
    }
    (days, pass)
}

/// Inserts the chunks in transactions of [`BATCH`] until `target` detections are stored.
fn insert_all(
    conn: &mut Connection,
    ctx: &Ctx,
    days: &[Vec<Slot>],
    target: u64,
    rng: &mut StdRng,
    started: Instant,
) -> store::Result<(u64, u64)> {
    let mut left = days.iter().map(Vec::len).sum::<usize>() as u64;
    let (mut chunks, mut stored, mut next_report) = (0u64, 0u64, target.div_ceil(10));
    let mut last_seen: Vec<Option<Timestamp>> = vec![None; ctx.satellites.len()];
    let mut seen: Seen = vec![None; ctx.species.len()];
    let mut slots = days.iter().flatten();
    while stored < target && left > 0 {
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        for slot in slots.by_ref().take(BATCH) {
            let k = species_in_chunk(rng, target - stored, left, ctx.species.len());
            let received = insert_chunk(&tx, ctx, *slot, k, rng, &mut seen)?;
            last_seen[slot.sat] = Some(received);
            chunks += 1;
            left -= 1;
            stored += k as u64;
            if stored >= next_report || stored >= target {
                let s = started.elapsed().as_secs_f64();
                eprintln!(
                    "  seeding: {:>3.0} %  {stored} detections, {chunks} chunks in {s:.0} s  ({:.0} detections/s, {:.0} chunks/s)",
                    stored as f64 * 100.0 / target as f64,
                    stored as f64 / s,
                    chunks as f64 / s
                );
                next_report = stored + target.div_ceil(10);
            }
            if stored >= target {
                break;
            }
        }
        tx.commit()?;
    }
    // What `chunks::insert_with_job` does per chunk, once per satellite with its last chunk.
    for ((id, ..), seen) in ctx.satellites.iter().zip(&last_seen) {
        if let Some(at) = seen {
            store::satellites::seen(conn, ctx.tenant, *id, *at)?;
        }
    }
    Ok((chunks, stored))
}

/// How many species the next chunk holds, so that `need` detections fill the `left` chunks.
fn species_in_chunk(rng: &mut StdRng, need: u64, left: u64, species: usize) -> usize {
    let floor = need.div_ceil(left.max(1)) as usize;
    let p = (need as f64 / (left as f64 * MEAN_SPECIES)).min(1.0);
    if floor <= 1 && !rng.random_bool(p) {
        return 0;
    }
    let r: f64 = rng.random();
    let [one, two, _] = SPECIES_PER_CHUNK;
    let drawn = 1 + usize::from(r >= one) + usize::from(r >= one + two);
    drawn.max(floor).min(species).min(need as usize)
}

/// One chunk, its finished job (if recent enough to be kept), its session, and its `k` detections. Returns its `received_at`.
fn insert_chunk(
    tx: &Connection,
    ctx: &Ctx,
    slot: Slot,
    k: usize,
    rng: &mut StdRng,
    seen: &mut Seen,
) -> store::Result<Timestamp> {
    let at = DateTime::<Utc>::from_timestamp_millis(slot.at_ms).unwrap_or_default();
    let ms = |n: i64| Timestamp(at + chrono::Duration::milliseconds(n));
    let (recorded, upload) = (slot.at_ms, SLOT_MS + rng.random_range(300..4000));
    let (received, claimed, finished) = (ms(upload), ms(upload + 120), ms(upload + 450));
    let (sat, lat, lon) = &ctx.satellites[slot.sat];
    let id = ChunkId::new();
    tx.prepare_cached(
        "INSERT INTO audio_chunks (id, tenant_pk, satellite_pk, recorded_at, duration_ms, sample_rate, latitude,
             longitude, storage_key, size_bytes, received_at)
         VALUES (?1, (SELECT pk FROM tenants WHERE id = ?2), (SELECT pk FROM satellites WHERE id = ?3), ?4, ?5, ?6, ?7,
                 ?8, ?9, ?10, ?11)",
    )?
    .execute(params![
        id,
        ctx.tenant,
        sat,
        recorded,
        SLOT_MS,
        48_000,
        lat,
        lon,
        // The key the ingest gives every chunk is derived from the row and stored as '' (see
        // `store::chunks::stored_key`).
        "",
        CHUNK_BYTES,
        received.millis()
    ])?;
    if finished >= ctx.jobs_since {
        tx.prepare_cached(
            "INSERT INTO inference_jobs (id, chunk_id, tenant_id, status, attempts, run_after, claimed_at, worker_id,
                 duration_ms, created_at, finished_at)
             VALUES (?1, ?2, ?3, 'done', 1, ?4, ?5, 'worker-0', 330, ?4, ?6)",
        )?
        .execute(params![uuid::Uuid::new_v4().to_string(), id, ctx.tenant, received, claimed, finished])?;
    }
    recording_sessions::add_chunk(tx, id, ctx.tenant, *sat, at.into(), SLOT_MS)?;
    let mut chosen: Vec<usize> = Vec::with_capacity(k);
    while chosen.len() < k {
        let r: f64 = rng.random();
        let i = ctx.cumulative.partition_point(|c| *c < r).min(ctx.species.len() - 1);
        if !chosen.contains(&i) {
            chosen.push(i);
        }
    }
    for i in chosen {
        let (code, common, scientific) = &ctx.species[i];
        let (day, season) = (season::day_bounds(at).0, season::season_bounds(at).0);
        let before = seen[i].replace((day, season));
        let expected_here = !rng.random_bool(0.03);
        // The rules of `detections::insert`.
        let rare_reason = (!expected_here).then_some("not_expected_here");
        let r: f64 = rng.random();
        let status = match r {
            r if r < 0.02 => "confirmed",
            r if r < 0.03 => "rejected",
            r if r < 0.035 => "pending_review",
            _ => "unverified",
        };
        let confidence = 0.5 + 0.5 * rng.random::<f32>().powf(1.3);
        let detection = DetectionId::new();
        tx.prepare_cached(
            "INSERT INTO detections (id, tenant_pk, satellite_pk, chunk_pk, model_id, species_pk, confidence, detected_at,
                 start_ms, end_ms, is_rare, rare_reason, is_first_of_day, is_first_of_season, expected_here,
                 verification_status, created_at, is_first_for_team)
             VALUES (?1, (SELECT pk FROM tenants WHERE id = ?2), (SELECT pk FROM satellites WHERE id = ?3),
                     (SELECT pk FROM audio_chunks WHERE id = ?4), ?5, ?6, ?7, ?8, 0, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)",
        )?
        .execute(params![
            detection,
            ctx.tenant,
            sat,
            id,
            MODEL_ID,
            store::detections::label(tx, code, scientific, common)?,
            f64::from(confidence),
            recorded,
            SLOT_MS,
            rare_reason.is_some(),
            rare_reason,
            before.is_none_or(|(d, _)| d != day),
            before.is_none_or(|(_, s)| s != season),
            expected_here,
            status,
            finished.millis(),
            before.is_none()
        ])?;
        recording_sessions::add_detection(tx, id, code, common, scientific)?;
        // The verdict came from a vote of one of the team's reviewers (the leaderboard's data).
        let vote = match status {
            "confirmed" => Some("confirm"),
            "rejected" => Some("reject"),
            "pending_review" => Some("unsure"),
            _ => None,
        };
        if let Some(vote) = vote {
            let voter = ctx.voters[rng.random_range(0..ctx.voters.len())];
            tx.prepare_cached(
                "INSERT INTO verification_votes (id, detection_id, user_id, vote, created_at, updated_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?5)",
            )?
            .execute(params![uuid::Uuid::new_v4().to_string(), detection, voter, vote, finished])?;
        }
    }
    Ok(received)
}
