//! Each station's own day (issue 37), on a hub whose machine zone is neither station's (UTC in
//! CI): a New York and a Berlin satellite of one team. "First of the day" and "first of the
//! season" turn over at each station's local midnight, the stats count each detection on its
//! station's local day and hour, a zone change moves the rollups over in the background with
//! nothing lost, and `admin recompute-flags` mends flags judged under the old rules.

mod common;

use birdhub::{
    ids::{DetectionId, SatelliteId, TenantId},
    store,
};
use common::{Api, TestHub, seed};
use serde_json::{Value, json};

const NEW_YORK: (f64, f64) = (40.7128, -74.0060);
const BERLIN: (f64, f64) = (52.52, 13.405);

struct World {
    hub: TestHub,
    api: Api,
    tenant: TenantId,
    ny: SatelliteId,
    berlin: SatelliteId,
}

async fn zone_of(hub: &TestHub, sat: SatelliteId) -> String {
    hub.state().store.satellite_zone(sat).await.expect("zone").name().to_owned()
}

async fn world() -> World {
    let hub = common::spawn_hub().await;
    let owner = hub.user("owner@example.org", false).await;
    let api = hub.login(&owner.email).await;
    // The team's own zone is UTC, whatever the machine's.
    let (status, body) = api.put("/settings/tenant", json!({"time_zone": "UTC"})).await;
    assert_eq!(status, 200, "{body}");
    let ny = seed::satellite(&hub, owner.tenant, "Brooklyn").await;
    let berlin = seed::satellite(&hub, owner.tenant, "Tiergarten").await;
    seed::place(&hub, owner.tenant, ny, NEW_YORK.0, NEW_YORK.1).await;
    seed::place(&hub, owner.tenant, berlin, BERLIN.0, BERLIN.1).await;
    assert_eq!(zone_of(&hub, ny).await, "America/New_York");
    assert_eq!(zone_of(&hub, berlin).await, "Europe/Berlin");
    World { hub, api, tenant: owner.tenant, ny, berlin }
}

async fn flags(w: &World, d: DetectionId) -> (bool, bool) {
    let (status, body) = w.api.get(&format!("/detections/{d}")).await;
    assert_eq!(status, 200, "{body}");
    (
        body["is_first_of_day"].as_bool().expect("is_first_of_day"),
        body["is_first_of_season"].as_bool().expect("is_first_of_season"),
    )
}

#[tokio::test]
async fn first_of_the_day_turns_over_at_each_stations_local_midnight() {
    let w = world().await;
    let (t, ny, berlin) = (w.tenant, w.ny, w.berlin);
    // New York: 23:30 on 14 May and 00:30 on 15 May local are both 15 May in UTC.
    let (_, a) = seed::heard(&w.hub, t, ny, "2026-05-15T03:30:00.000Z", seed::ROBIN, 0.9).await;
    let (_, b) = seed::heard(&w.hub, t, ny, "2026-05-15T04:30:00.000Z", seed::ROBIN, 0.9).await;
    let (_, c) = seed::heard(&w.hub, t, ny, "2026-05-15T05:00:00.000Z", seed::ROBIN, 0.9).await;
    assert!(flags(&w, a).await.0, "the first robin of 14 May in New York");
    assert!(flags(&w, b).await.0, "00:30 in New York is a new day there, though not in UTC");
    assert!(!flags(&w, c).await.0, "a second robin that New York morning");
    // Berlin: 23:30 on 14 May and 00:30 on 15 May local are both 14 May in UTC.
    let (_, d) = seed::heard(&w.hub, t, berlin, "2026-05-14T21:30:00.000Z", seed::WREN, 0.9).await;
    let (_, e) = seed::heard(&w.hub, t, berlin, "2026-05-14T22:30:00.000Z", seed::WREN, 0.9).await;
    assert!(flags(&w, d).await.0);
    assert!(flags(&w, e).await.0, "00:30 in Berlin starts 15 May there");
    // Seasons are local too: 23:00 on 31 May in New York is still spring (1 June in UTC).
    let (_, f) = seed::heard(&w.hub, t, ny, "2026-05-20T12:00:00.000Z", seed::WARBLER, 0.9).await;
    let (_, g) = seed::heard(&w.hub, t, ny, "2026-06-01T03:00:00.000Z", seed::WARBLER, 0.9).await;
    let (_, h) = seed::heard(&w.hub, t, ny, "2026-06-01T04:30:00.000Z", seed::WARBLER, 0.9).await;
    assert_eq!(flags(&w, f).await, (true, true));
    assert_eq!(flags(&w, g).await, (true, false), "still spring in New York");
    assert_eq!(flags(&w, h).await, (true, true), "00:30 on 1 June in New York: the first of summer");
}

/// `(date, detections)` of `/stats/trends` over the range, days with detections only.
async fn trend(api: &Api, query: &str) -> Vec<(String, i64)> {
    let (status, body) = api.get(&format!("/stats/trends?{query}")).await;
    assert_eq!(status, 200, "{body}");
    body["daily"]
        .as_array()
        .expect("daily")
        .iter()
        .filter(|d| d["detections"].as_i64() > Some(0))
        .map(|d| (d["date"].as_str().unwrap_or_default().to_owned(), d["detections"].as_i64().unwrap_or(-1)))
        .collect()
}

/// Detections per local hour of `/stats/activity` (hours with detections only).
async fn hours(api: &Api, query: &str) -> Vec<(usize, i64)> {
    let (status, body) = api.get(&format!("/stats/activity?{query}")).await;
    assert_eq!(status, 200, "{body}");
    let hourly: Vec<i64> = serde_json::from_value(body["hourly"].clone()).expect("hourly");
    hourly.into_iter().enumerate().filter(|(_, n)| *n > 0).collect()
}

const RANGE: &str = "from=2026-05-10&to=2026-05-20";

#[tokio::test]
async fn stats_count_each_detection_on_its_stations_day_and_hour() {
    let w = world().await;
    let (t, ny, berlin) = (w.tenant, w.ny, w.berlin);
    // 03:30 UTC on 15 May: 23:30 on 14 May in New York, 05:30 on 15 May in Berlin.
    seed::heard(&w.hub, t, ny, "2026-05-15T03:30:00.000Z", seed::ROBIN, 0.9).await;
    seed::heard(&w.hub, t, berlin, "2026-05-15T03:30:00.000Z", seed::WREN, 0.9).await;
    let ny_q = format!("{RANGE}&satelliteId={ny}");
    let berlin_q = format!("{RANGE}&satelliteId={berlin}");
    assert_eq!(trend(&w.api, &ny_q).await, vec![("2026-05-14".to_owned(), 1)]);
    assert_eq!(trend(&w.api, &berlin_q).await, vec![("2026-05-15".to_owned(), 1)]);
    assert_eq!(hours(&w.api, &ny_q).await, vec![(23, 1)]);
    assert_eq!(hours(&w.api, &berlin_q).await, vec![(5, 1)]);
    // The team's figure adds up the stations' local days.
    assert_eq!(trend(&w.api, RANGE).await, vec![("2026-05-14".to_owned(), 1), ("2026-05-15".to_owned(), 1)]);
    let drift = w.hub.state().store.call(|c| store::stats::rollups::drift(c)).await.expect("drift");
    assert!(drift.iter().all(|(_, n)| *n == 0), "the triggers count as a fresh aggregate does: {drift:?}");
}

/// Waits until no zone move of the team runs; returns the progress reports seen on the way.
async fn wait_for_moves(w: &World) -> Vec<birdhub::usecases::zones::Progress> {
    let mut seen = Vec::new();
    for _ in 0..600 {
        let p = birdhub::usecases::zones::progress(&w.hub.state().store, w.tenant).await.expect("progress");
        let running = p.running;
        seen.push(p);
        if !running {
            return seen;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("the zone move did not finish: {:?}", seen.last());
}

#[tokio::test]
async fn a_zone_change_moves_the_rollups_over_with_nothing_lost() {
    let w = world().await;
    let t = w.tenant;
    // A satellite with no position follows the team's zone (UTC): 2,500 detections over two
    // days, more than one move batch, half of them at 02:00 UTC (the evening before in New
    // York), with votes and a rejected one.
    let roof = seed::satellite(&w.hub, t, "roof").await;
    assert_eq!(zone_of(&w.hub, roof).await, "UTC");
    let rows = w
        .hub
        .state()
        .store
        .call(move |c| {
            let tx = c.transaction()?;
            for i in 0..2_500i64 {
                let at = if i % 2 == 0 { "2026-05-15T02:00:00.000Z" } else { "2026-05-15T14:00:00.000Z" };
                let at: birdhub::time::Timestamp = at.parse().expect("time");
                let at = birdhub::time::Timestamp(at.at() + chrono::Duration::milliseconds(i));
                let chunk = birdhub::ids::ChunkId::new();
                store::chunks::insert_with_job_in(
                    &tx,
                    &store::chunks::NewChunk {
                        id: chunk,
                        tenant_id: t,
                        satellite_id: roof,
                        recorded_at: at,
                        duration_ms: 3000,
                        sample_rate: 48_000,
                        latitude: None,
                        longitude: None,
                        storage_key: format!("audio/{t}/{chunk}.wav"),
                        size_bytes: 1,
                    },
                    at,
                )?;
                let species = if i % 3 == 0 { seed::ROBIN } else { seed::WREN };
                let mut d = seed::new_detection((t, roof, chunk), "2026-01-01T00:00:00Z", species, 0.9, None);
                d.detected_at = at;
                birdhub::usecases::detections::record(&tx, &d, at)?;
            }
            tx.commit()?;
            Ok(())
        })
        .await;
    rows.expect("seeded");
    let some: Vec<DetectionId> = w.hub.sql(|c| {
        c.prepare("SELECT id FROM detections ORDER BY pk LIMIT 3")
            .and_then(|mut s| s.query_map([], |r| r.get(0))?.collect())
            .expect("ids")
    });
    let (status, body) = w.api.post(&format!("/detections/{}/verify", some[0]), json!({"vote": "reject"})).await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = w.api.post(&format!("/detections/{}/verify", some[1]), json!({"vote": "confirm"})).await;
    assert_eq!(status, 200, "{body}");
    let roof_q = format!("{RANGE}&satelliteId={roof}");
    assert_eq!(trend(&w.api, &roof_q).await, vec![("2026-05-15".to_owned(), 2_499)], "one rejected");
    let dash = |q: String| {
        let api = &w.api;
        async move {
            let (status, body) = api.get(&format!("/stats/dashboard?{q}")).await;
            assert_eq!(status, 200, "{body}");
            body
        }
    };
    let before: Value = dash(roof_q.clone()).await;

    // The team moves to New York: the roof satellite follows, and its rows move over.
    let (status, body) = w.api.put("/settings/tenant", json!({"time_zone": "America/New_York"})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["settings"]["time_zone"], "America/New_York");
    assert_eq!(zone_of(&w.hub, roof).await, "America/New_York");
    let seen = wait_for_moves(&w).await;
    if let Some(p) = seen.iter().find(|p| p.running) {
        // Seen mid-way: it names the satellite and both zones, and counts every row.
        let names: Vec<&str> = p.satellites.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, vec!["roof"], "only the satellite that follows the team moves");
        assert_eq!((p.satellites[0].from_zone.as_str(), p.satellites[0].to_zone.as_str()), ("UTC", "America/New_York"));
        assert_eq!(p.total, 5_000, "2,500 detections and 2,500 chunks");
        assert!(p.done <= p.total);
    }
    assert_eq!(
        trend(&w.api, &roof_q).await,
        vec![("2026-05-14".to_owned(), 1_249), ("2026-05-15".to_owned(), 1_250)],
        "02:00 UTC is 22:00 the evening before in New York; nothing lost"
    );
    let after = dash(roof_q).await;
    for key in ["detections", "species", "chunks"] {
        assert_eq!(after[key], before[key], "{key}: {after}");
    }
    let drift = w.hub.state().store.call(|c| store::stats::rollups::drift(c)).await.expect("drift");
    assert!(drift.iter().all(|(_, n)| *n == 0), "every rollup equals a fresh count in the new zone: {drift:?}");
    // The stations with a position keep theirs.
    assert_eq!(zone_of(&w.hub, w.ny).await, "America/New_York");
    assert_eq!(zone_of(&w.hub, w.berlin).await, "Europe/Berlin");
}

#[tokio::test]
async fn a_team_zone_that_is_not_an_iana_name_is_refused_naming_one() {
    let w = world().await;
    for bad in ["Mars/Olympus", "CET", "+01:00", "berlin"] {
        let (status, body) = w.api.put("/settings/tenant", json!({"time_zone": bad})).await;
        assert_eq!(status, 422, "{bad}: {body}");
        assert_eq!(body["code"], "invalid_settings");
        let message = body["message"].as_str().unwrap_or_default();
        assert_eq!(body["field"], "time_zone", "{body}");
        assert!(message.contains("time zone") && message.contains("Europe/Berlin"), "{message}");
    }
}

#[tokio::test]
async fn recompute_flags_mends_flags_judged_by_utc_days_with_a_dry_run_first() {
    let w = world().await;
    let (t, ny) = (w.tenant, w.ny);
    let (_, a) = seed::heard(&w.hub, t, ny, "2026-05-15T03:30:00.000Z", seed::ROBIN, 0.9).await;
    let (_, b) = seed::heard(&w.hub, t, ny, "2026-05-15T04:30:00.000Z", seed::ROBIN, 0.9).await;
    // As an older hub judged them, by the UTC day: the second is not the first of its day.
    w.hub.sql(|c| c.execute("UPDATE detections SET is_first_of_day = 0 WHERE id = ?1", [b]).expect("old"));
    let dry = w.hub.state().store.call(|c| store::first_flags::recompute(c, true)).await.expect("dry run");
    assert_eq!((dry.detections, dry.day_set, dry.day_cleared, dry.changes()), (2, 1, 0, 1));
    assert!(!flags(&w, b).await.0, "a dry run changes nothing");
    let done = w.hub.state().store.call(|c| store::first_flags::recompute(c, false)).await.expect("recompute");
    assert_eq!(done, dry);
    assert_eq!((flags(&w, a).await.0, flags(&w, b).await.0), (true, true));
    let again = w.hub.state().store.call(|c| store::first_flags::recompute(c, true)).await.expect("again");
    assert_eq!(again.changes(), 0);
}
