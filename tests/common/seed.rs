//! Test data written through the hub's own store functions (the same paths ingest and the
//! inference workers use): satellites, chunks with real WAV files, detections.

use birdhub::{
    ids::{ChunkId, DetectionId, SatelliteId, TenantId},
    store,
};

use super::TestHub;

/// A satellite of `tenant`, made directly in the store.
pub async fn satellite(hub: &TestHub, tenant: TenantId, name: &str) -> SatelliteId {
    let name = name.to_owned();
    hub.state()
        .store
        .call(move |c| {
            store::satellites::insert(
                c,
                &store::satellites::NewSatellite {
                    tenant_id: tenant,
                    name: &name,
                    device_id: None,
                    kind: birdhub::domain::DeviceKind::Satellite,
                    registered_by: None,
                    mqtt_password_hash: "!",
                    latitude: None,
                    longitude: None,
                },
            )
        })
        .await
        .expect("satellite")
}

/// A stored 3 s chunk recorded at `at` (a 48 kHz tone WAV in the object store).
pub async fn chunk(hub: &TestHub, tenant: TenantId, sat: SatelliteId, at: &str) -> ChunkId {
    let id = ChunkId::new();
    let wav = super::sat::tone_wav(48_000, 3.0);
    let key = format!("audio/{tenant}/{id}.wav");
    hub.state().objects.put(&key, wav.clone()).await.expect("wav");
    let new = store::chunks::NewChunk {
        id,
        tenant_id: tenant,
        satellite_id: sat,
        recorded_at: at.parse().expect("time"),
        duration_ms: 3000,
        sample_rate: 48_000,
        latitude: None,
        longitude: None,
        storage_key: key,
        size_bytes: wav.len() as i64,
    };
    let hub_now = hub.state().clock.stamp();
    let stored =
        hub.state().store.call(move |c| store::chunks::insert_with_job(c, &new, hub_now)).await.expect("chunk");
    assert!(stored);
    id
}

/// A species: (code, common name, scientific name).
pub type Species = (&'static str, &'static str, &'static str);

pub const ROBIN: Species = ("turdus-migratorius", "American Robin", "Turdus migratorius");
pub const WREN: Species = ("troglodytes-aedon", "House Wren", "Troglodytes aedon");
pub const WARBLER: Species = ("leiothlypis-peregrina", "Tennessee Warbler", "Leiothlypis peregrina");
pub const BLACKBURNIAN: Species = ("setophaga-fusca", "Blackburnian Warbler", "Setophaga fusca");

/// What the workers would record: `species` in `chunk` (recorded at `at`) with `confidence`
/// over 0-3 s, and the range model's verdict `expected_here`.
pub fn new_detection(
    (tenant, sat, chunk): (TenantId, SatelliteId, ChunkId),
    at: &str,
    species: Species,
    confidence: f32,
    expected_here: Option<bool>,
) -> store::detections::NewDetection {
    store::detections::NewDetection {
        tenant_id: tenant,
        satellite_id: sat,
        satellite_name: String::new(),
        audio_chunk_id: chunk,
        model_id: birdhub::inference::MODEL_ID.into(),
        species_code: species.0.into(),
        common_name: species.1.into(),
        scientific_name: species.2.into(),
        confidence,
        detected_at: at.parse().expect("time"),
        start_ms: 0,
        end_ms: 3000,
        expected_here,
    }
}

/// A detection of `species` in `chunk` (recorded at `at`) with `confidence`.
pub async fn detection(
    hub: &TestHub,
    tenant: TenantId,
    sat: SatelliteId,
    chunk: ChunkId,
    at: &str,
    species: Species,
    confidence: f32,
) -> DetectionId {
    let new = new_detection((tenant, sat, chunk), at, species, confidence, None);
    let hub_now = hub.state().clock.stamp();
    hub.state()
        .store
        .call(move |c| birdhub::usecases::detections::record(c, &new, hub_now))
        .await
        .expect("detection")
        .expect("new")
        .id
}

/// A chunk at `at` with one detection of `species`; returns (chunk, detection).
pub async fn heard(
    hub: &TestHub,
    tenant: TenantId,
    sat: SatelliteId,
    at: &str,
    species: Species,
    confidence: f32,
) -> (ChunkId, DetectionId) {
    let c = chunk(hub, tenant, sat, at).await;
    let d = detection(hub, tenant, sat, c, at, species, confidence).await;
    (c, d)
}

/// Gives satellite `sat` a position.
pub async fn place(hub: &TestHub, tenant: TenantId, sat: SatelliteId, lat: f64, lon: f64) {
    hub.state().store.call(move |c| store::satellites::set_location(c, tenant, sat, lat, lon)).await.expect("located");
    birdhub::usecases::zones::wake();
}

/// A real species of the model: (code, common name, scientific name).
pub const BLACKBIRD: Species = ("turdus_merula", "Eurasian Blackbird", "Turdus merula");

/// Records a Eurasian Blackbird the way the inference workers do, runs the team's detection rules over it
/// in the same transaction and announces what they raised. Returns the detection's time.
pub async fn bird_alert(hub: &TestHub, tenant: TenantId, sat: SatelliteId) -> birdhub::time::Timestamp {
    let at = "2026-11-27T04:10:41.685Z";
    let chunk = chunk(hub, tenant, sat, at).await;
    let new = new_detection((tenant, sat, chunk), at, BLACKBIRD, 0.91, None);
    let s = hub.state();
    let (now, ctx) = (s.clock.stamp(), s.alerts.clone());
    let raised = s
        .store
        .call(move |c| {
            let stored = birdhub::usecases::detections::record(c, &new, now)?.into_iter().collect::<Vec<_>>();
            birdhub::usecases::alerting::on_detections(c, &stored, &ctx, now)
        })
        .await
        .expect("recorded");
    assert!(!raised.is_empty(), "a rule fired");
    birdhub::usecases::alerting::announce(&s.bus, raised);
    at.parse().expect("time")
}

/// Waits (polling, at most 20 s) until the zone mover has given `sat` the effective zone `want`
/// and counts its rollups in it.
pub async fn zone_settles(hub: &TestHub, sat: SatelliteId, want: &str) {
    let settled = |hub: &TestHub| -> bool {
        hub.sql(|c| {
            c.query_row(
                "SELECT time_zone = ?2 AND zone_move_from IS NULL AND (SELECT name FROM zones WHERE pk = zone_pk) = ?2
                 FROM satellites WHERE id = ?1",
                rusqlite::params![sat, want],
                |r| r.get::<_, Option<bool>>(0),
            )
            .expect("satellite")
            .unwrap_or(false)
        })
    };
    for _ in 0..200 {
        birdhub::usecases::zones::wake();
        if settled(hub) {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("satellite {sat} never settled in {want}");
}
