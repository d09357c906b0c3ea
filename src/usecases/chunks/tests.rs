use super::*;
use crate::{
    store::{detections::testing::satellite, testing},
    usecases::audio_retention::{DiskGuard, Policy},
};

struct Hub {
    handles: Handles,
    tenant: TenantId,
    sat: SatelliteId,
    _dir: tempfile::TempDir,
}

async fn hub() -> Hub {
    let (store, dir) = testing::store().await;
    let (tenant, sat) = store
        .call(|c| {
            let (tenant, _) = testing::team(c, "ingest")?;
            Ok((tenant, satellite(c, tenant)?))
        })
        .await
        .expect("team");
    let objects = ObjectStore::open(dir.path().join("objects")).expect("objects");
    let disk = DiskGuard::new(Policy { keep_audio_days: 30, min_free_bytes: 0 }, dir.path());
    Hub { handles: Handles { store, objects, clock: Clock::default(), disk }, tenant, sat, _dir: dir }
}

fn upload(tenant: TenantId, sat: SatelliteId, chunk: ChunkId) -> Upload {
    let tone: Vec<f32> = (0..48_000 * 3).map(|i| (i as f32 * 0.05).sin() * 0.1).collect();
    Upload {
        tenant,
        satellite: sat,
        chunk,
        recorded_at: Timestamp(chrono::Utc::now()),
        duration_ms: 3000,
        sample_rate: 48_000,
        location: Some((40.8, -77.9)),
        wav: audio::encode_wav_i16(&tone, 48_000),
    }
}

async fn rows(h: &Hub) -> (i64, i64) {
    h.handles
        .store
        .call(|c| {
            let n = |sql: &str| c.query_row(sql, [], |r| r.get::<_, i64>(0));
            Ok((n("SELECT count(*) FROM audio_chunks")?, n("SELECT count(*) FROM inference_jobs")?))
        })
        .await
        .expect("counts")
}

fn files(dir: &std::path::Path) -> usize {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| if e.path().is_dir() { files(&e.path()) } else { 1 })
        .sum()
}

#[tokio::test]
async fn a_batch_commits_its_good_chunks_and_fails_a_bad_one_alone() {
    let h = hub().await;
    let Handles { store, objects, clock, disk } = &h.handles;
    let earlier = ChunkId::new();
    let stored = store_chunk(store, objects, clock, disk, upload(h.tenant, h.sat, earlier)).await;
    assert_eq!(stored.expect("earlier chunk"), Stored::New);

    let (good, ghost, other) = (ChunkId::new(), ChunkId::new(), ChunkId::new());
    // A satellite deleted while its chunk waited: its row breaks a foreign key inside the batch.
    let orphan = upload(h.tenant, SatelliteId::new(), ghost);
    let batch: Vec<Checked> = [
        upload(h.tenant, h.sat, good),
        orphan,
        upload(h.tenant, h.sat, other),
        upload(h.tenant, h.sat, good),    // the same chunk twice in one batch
        upload(h.tenant, h.sat, earlier), // a retry of a stored chunk
    ]
    .into_iter()
    .map(|u| check(u).expect("checks pass"))
    .collect();
    let outcomes = batch::store_batch(store, objects, clock, disk, batch).await;

    assert!(matches!(outcomes[0], Ok(Stored::New)), "{:?}", outcomes[0]);
    assert!(matches!(outcomes[1], Err(ChunkError::NotStored(_))), "{:?}", outcomes[1]);
    assert!(matches!(outcomes[2], Ok(Stored::New)), "{:?}", outcomes[2]);
    assert!(matches!(outcomes[3], Ok(Stored::Duplicate)), "{:?}", outcomes[3]);
    assert!(matches!(outcomes[4], Ok(Stored::Duplicate)), "{:?}", outcomes[4]);
    assert_eq!(rows(&h).await, (3, 3), "the earlier chunk and the two good ones, each with a job");
    assert_eq!(files(&objects.path_of("audio").expect("audio")), 3, "the bad chunk's file was removed");
}

#[tokio::test]
async fn chunks_sent_together_share_a_batch_and_each_gets_its_outcome() {
    let h = hub().await;
    let writer = ChunkWriter::spawn(h.handles.clone()).expect("writer thread");
    let sends: Vec<_> = (0..12)
        .map(|_| {
            let (writer, up) = (writer.clone(), upload(h.tenant, h.sat, ChunkId::new()));
            tokio::spawn(async move { writer.store(check(up).expect("check")).await })
        })
        .collect();
    for send in sends {
        assert_eq!(send.await.expect("task").expect("stored"), Stored::New);
    }
    let (batches, chunks) = writer.counts();
    assert_eq!(chunks, 12);
    assert!(batches < chunks, "queued chunks are committed together: {batches} batches");
    assert_eq!(rows(&h).await, (12, 12));
}

#[test]
fn checks_refuse_what_the_workers_could_not_use() {
    let (tenant, sat) = (TenantId::new(), SatelliteId::new());
    let good = upload(tenant, sat, ChunkId::new());
    type Expect = fn(&ChunkError) -> bool;
    let cases: Vec<(Upload, Expect)> = vec![
        (Upload { location: Some((91.0, 0.0)), ..good.clone() }, |e| matches!(e, ChunkError::InvalidLocation)),
        (Upload { sample_rate: 44_100, ..good.clone() }, |e| matches!(e, ChunkError::SampleRateMismatch { .. })),
        (Upload { duration_ms: 5000, ..good.clone() }, |e| matches!(e, ChunkError::DurationMismatch { .. })),
        (Upload { wav: good.wav[..good.wav.len() - 1].to_vec(), ..good.clone() }, |e| {
            matches!(e, ChunkError::BadWav(_))
        }),
        (Upload { wav: b"RIFFnope".to_vec(), ..good.clone() }, |e| matches!(e, ChunkError::BadWav(_))),
    ];
    for (i, (up, expected)) in cases.into_iter().enumerate() {
        let refused = check(up).expect_err("refused");
        assert!(expected(&refused), "case {i}: {refused:?}");
    }
    assert_eq!(check(good).expect("good").wav_ms, 3000);
}

#[tokio::test]
async fn a_chunk_marks_its_satellite_seen_and_moves_it_only_with_a_position_far_away() {
    let h = hub().await;
    let Handles { store, objects, clock, disk } = &h.handles;
    let sat = h.sat;
    let where_is = || async move {
        store
            .call(move |c| {
                Ok(c.query_row(
                    "SELECT last_seen_at IS NOT NULL, latitude, longitude, zone_source FROM satellites WHERE id = ?1",
                    [sat],
                    |r| {
                        Ok((
                            r.get::<_, bool>(0)?,
                            r.get::<_, Option<f64>>(1)?,
                            r.get::<_, Option<f64>>(2)?,
                            r.get::<_, Option<String>>(3)?,
                        ))
                    },
                )?)
            })
            .await
            .expect("satellite")
    };
    let send = |location| {
        let up = Upload { location, ..upload(h.tenant, sat, ChunkId::new()) };
        store_chunk(store, objects, clock, disk, up)
    };
    assert_eq!(send(Some((40.8, -77.9))).await.expect("first"), Stored::New);
    let (seen, lat, lon, zone) = where_is().await;
    assert!(seen, "a stored chunk is a sign of life");
    assert_eq!((lat, lon), (Some(40.8), Some(-77.9)));
    assert_eq!(zone.as_deref(), Some("position"), "the new position's zone was decided at once");

    // No position: the satellite stays where it was.
    assert_eq!(send(None).await.expect("no position"), Stored::New);
    assert_eq!(where_is().await, (true, Some(40.8), Some(-77.9), Some("position".into())));
    // A step of a few metres is stored; a move across the ocean decides the zone again.
    assert_eq!(send(Some((40.8001, -77.9))).await.expect("near"), Stored::New);
    assert_eq!(where_is().await.1, Some(40.8001));
    assert_eq!(send(Some((51.5, -0.1))).await.expect("far"), Stored::New);
    let (_, lat, lon, zone) = where_is().await;
    assert_eq!((lat, lon, zone.as_deref()), (Some(51.5), Some(-0.1), Some("position")));
    let zone: String = store
        .call(move |c| Ok(c.query_row("SELECT time_zone FROM satellites WHERE id = ?1", [sat], |r| r.get(0))?))
        .await
        .expect("zone");
    assert_eq!(zone, "Europe/London");
}
