//! Recording sessions and the timeline over real HTTP: the 5-minute rule at its edge, chunks
//! arriving out of order, the filters and sorts of `GET /sessions`, and team isolation.

mod common;

use common::{assert_error, seed};
use serde_json::Value;

fn field(body: &Value, name: &str) -> Vec<Value> {
    body["sessions"].as_array().expect("sessions").iter().map(|s| s[name].clone()).collect()
}

#[tokio::test]
async fn a_gap_of_exactly_five_minutes_starts_a_new_session() {
    let hub = common::spawn_hub().await;
    let owner = hub.user("owner@example.org", false).await;
    let (t, api) = (owner.tenant, hub.login(&owner.email).await);
    let sat = seed::satellite(&hub, t, "garden").await;
    // 05:00:00, then 4 min 59.999 s later: one session. Then exactly 5 min later: a new one.
    seed::chunk(&hub, t, sat, "2026-05-01T05:00:00.000Z").await;
    seed::chunk(&hub, t, sat, "2026-05-01T05:04:59.999Z").await;
    seed::chunk(&hub, t, sat, "2026-05-01T05:09:59.999Z").await;
    let (code, body) = api.get("/sessions?sortDir=asc").await;
    assert_eq!(code, 200, "{body}");
    assert_eq!(body["total"], 2);
    let first = &body["sessions"][0];
    assert_eq!(first["started_at"], "2026-05-01T05:00:00.000Z");
    assert_eq!(first["ended_at"], "2026-05-01T05:05:02.999Z", "the last chunk's end");
    assert_eq!(first["chunk_count"], 2);
    assert_eq!(first["duration_ms"], 302_999);
    assert_eq!(first["satellite_name"], "garden");
    assert_eq!(body["sessions"][1]["chunk_count"], 1);
}

#[tokio::test]
async fn a_late_chunk_bridging_two_sessions_merges_them_with_their_detections() {
    let hub = common::spawn_hub().await;
    let owner = hub.user("owner@example.org", false).await;
    let (t, api) = (owner.tenant, hub.login(&owner.email).await);
    let sat = seed::satellite(&hub, t, "garden").await;
    seed::heard(&hub, t, sat, "2026-05-01T05:00:00.000Z", seed::ROBIN, 0.9).await;
    seed::heard(&hub, t, sat, "2026-05-01T05:08:00.000Z", seed::ROBIN, 0.9).await;
    let (_, c) = seed::heard(&hub, t, sat, "2026-05-01T05:08:03.000Z", seed::WREN, 0.9).await;
    let _ = c;
    let (_, before) = api.get("/sessions").await;
    assert_eq!(before["total"], 2);
    // The satellite's outbox delivers 05:04:00 late: 4 min after the first, 4 min before the second.
    seed::chunk(&hub, t, sat, "2026-05-01T05:04:00.000Z").await;
    let (_, after) = api.get("/sessions").await;
    assert_eq!(after["total"], 1, "{after}");
    let s = &after["sessions"][0];
    assert_eq!(
        (s["chunk_count"].as_i64(), s["detection_count"].as_i64(), s["species_count"].as_i64()),
        (Some(4), Some(3), Some(2))
    );
    assert_eq!(s["top_species"][0]["common_name"], "American Robin");
    assert_eq!(s["top_species"][0]["detections"], 2);
    assert_eq!(s["top_species"][1]["common_name"], "House Wren");
    let in_session: i64 = hub
        .sql(|c| c.query_row("SELECT count(DISTINCT session_pk) FROM audio_chunks", [], |r| r.get(0)).expect("count"));
    assert_eq!(in_session, 1, "every chunk points at the merged session");
}

#[tokio::test]
async fn filters_and_sorts_of_the_session_list() {
    let hub = common::spawn_hub().await;
    let owner = hub.user("owner@example.org", false).await;
    let (t, api) = (owner.tenant, hub.login(&owner.email).await);
    let garden = seed::satellite(&hub, t, "garden").await;
    let meadow = seed::satellite(&hub, t, "field").await;
    // A: garden, 3 chunks, 2 detections of 2 species. B: garden, 1 empty chunk. C: field, 2 chunks, 1 detection.
    seed::heard(&hub, t, garden, "2026-05-01T05:00:00.000Z", seed::ROBIN, 0.9).await;
    seed::heard(&hub, t, garden, "2026-05-01T05:00:03.000Z", seed::WREN, 0.9).await;
    seed::chunk(&hub, t, garden, "2026-05-01T05:00:06.000Z").await;
    seed::chunk(&hub, t, garden, "2026-05-02T05:00:00.000Z").await;
    seed::heard(&hub, t, meadow, "2026-05-03T05:00:00.000Z", seed::WARBLER, 0.9).await;
    seed::chunk(&hub, t, meadow, "2026-05-03T05:02:00.000Z").await;

    let days =
        |b: &Value| field(b, "started_at").iter().map(|v| v.as_str().expect("t")[8..10].to_owned()).collect::<Vec<_>>();
    let (_, b) = api.get("/sessions").await;
    assert_eq!((days(&b), b["total"].as_u64()), (vec!["03".into(), "02".into(), "01".into()], Some(3)), "newest first");
    let (_, b) = api.get("/sessions?filter=with-detections").await;
    assert_eq!(days(&b), ["03", "01"]);
    let (_, b) = api.get("/sessions?filter=empty").await;
    assert_eq!((days(&b), b["total"].as_u64()), (vec!["02".into()], Some(1)));
    let (_, b) = api.get(&format!("/sessions?satelliteId={meadow}")).await;
    assert_eq!(days(&b), ["03"]);
    let (_, b) = api.get("/sessions?sortBy=chunks").await;
    assert_eq!(field(&b, "chunk_count"), [3, 2, 1]);
    let (_, b) = api.get("/sessions?sortBy=detections&sortDir=asc").await;
    assert_eq!(field(&b, "detection_count"), [0, 1, 2]);
    let (_, b) = api.get("/sessions?sortBy=species").await;
    assert_eq!(field(&b, "species_count"), [2, 1, 0]);
    let (_, b) = api.get("/sessions?sortBy=duration").await;
    assert_eq!(field(&b, "duration_ms"), [123_000, 9_000, 3_000]);
    let (_, b) = api.get("/sessions?limit=1&offset=1").await;
    assert_eq!((days(&b), b["total"].as_u64()), (vec!["02".into()], Some(3)));

    for (q, code) in [
        ("sortBy=loudness", "invalid_sort"),
        ("sortDir=up", "invalid_sort"),
        ("filter=full", "invalid_filter"),
        ("limit=0", "invalid_limit"),
        ("limit=-3", "invalid_query"),
        ("satelliteId=x", "invalid_query"),
    ] {
        assert_error(&api.get(&format!("/sessions?{q}")).await, 400, code);
    }
    let stranger = hub.user("stranger@example.org", false).await;
    let (_, theirs) = hub.login(&stranger.email).await.get("/sessions").await;
    assert_eq!(theirs["total"], 0);
}

#[tokio::test]
async fn the_timeline_returns_chunks_and_detections_of_a_range() {
    let hub = common::spawn_hub().await;
    let owner = hub.user("owner@example.org", false).await;
    let (t, api) = (owner.tenant, hub.login(&owner.email).await);
    let sat = seed::satellite(&hub, t, "garden").await;
    seed::heard(&hub, t, sat, "2026-05-01T05:00:00.000Z", seed::ROBIN, 0.9).await;
    seed::chunk(&hub, t, sat, "2026-05-01T05:00:03.000Z").await;
    seed::heard(&hub, t, sat, "2026-05-01T07:00:00.000Z", seed::WREN, 0.9).await;

    let (code, b) = api.get("/sessions/timeline?from=2026-05-01T04:00:00Z&to=2026-05-01T06:00:00Z").await;
    assert_eq!(code, 200, "{b}");
    assert_eq!(b["chunks"].as_array().map(Vec::len), Some(2));
    assert_eq!(b["detections"].as_array().map(Vec::len), Some(1));
    assert_eq!(b["detections"][0]["common_name"], "American Robin");
    assert_eq!(b["truncated"], false);
    assert!(b["chunks"][0]["session_id"].is_string());
    let (_, all) = api
        .get(&format!("/sessions/timeline?from=2026-05-01T00:00:00Z&to=2026-05-02T00:00:00Z&satelliteId={sat}"))
        .await;
    assert_eq!(all["chunks"].as_array().map(Vec::len), Some(3));

    for q in [
        "from=yesterday",
        "from=2026-05-02T00:00:00Z&to=2026-05-01T00:00:00Z",
        "from=2026-01-01T00:00:00Z&to=2026-03-01T00:00:00Z",
    ] {
        let got = api.get(&format!("/sessions/timeline?{q}")).await;
        assert_eq!(got.0, 400, "{q}: {}", got.1);
    }
}
