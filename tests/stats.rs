//! The statistics routes (SPEC 4.8) on a seeded team, with numbers worked out by hand:
//!
//! Team A, June 2026 (all at 12:xx or 13:00 UTC, so the local date is the UTC date anywhere
//! within ±11 h). Hours are local to each station (issue 37): north stands in Pennsylvania, so
//! its hours are New York's; south has no position and follows the team's zone, the hub's own:
//! | id | satellite | time (06-) | species     | conf | verdict            |
//! | d1 | north     | 10 12:00   | robin       | 0.90 | confirmed (owner)  |
//! | d2 | north     | 10 12:05   | robin       | 0.80 | rejected (owner)   |
//! | d3 | north     | 10 13:00   | wren        | 0.60 | pending (member: unsure) |
//! | d4 | north     | 11 12:00   | robin       | 0.72 |                    |
//! | d5 | north     | 11 12:10   | warbler     | 0.95 |                    |
//! | d6 | south     | 10 12:30   | robin       | 0.85 |                    |
//! | d7 | south     | 12 12:00   | wren        | 0.75 | confirmed (owner)  |
//! | d8 | south     | 12 12:20   | blackburnian| 0.55 |                    |
//! Outside June: d9 north 05-31 12:00 robin 0.9; d10 south 07-01 12:00 wren 0.9.
//! Team B: one robin on 06-10, which team A never sees.

mod common;

use chrono::{DateTime, Timelike, Utc};
use common::{Api, TestHub, assert_error, seed};
use serde_json::{Value, json};

use birdhub::ids::{DetectionId, SatelliteId};

const JUNE: &str = "from=2026-06-01&to=2026-06-30";

struct World {
    hub: TestHub,
    owner: Api,
    member: Api,
    other: Api,
    north: SatelliteId,
    south: SatelliteId,
    theirs: SatelliteId,
    d: Vec<DetectionId>,
}

/// The hub's local hour of a UTC time: south's (the team's zone is the hub's).
fn hour(utc: &str) -> usize {
    utc.parse::<DateTime<Utc>>().expect("time").with_timezone(&birdhub::time::hub_zone()).hour() as usize
}

/// North's local hour of a UTC time: its position is in the New York zone.
fn ny(utc: &str) -> usize {
    utc.parse::<DateTime<Utc>>().expect("time").with_timezone(&chrono_tz::America::New_York).hour() as usize
}

/// The busiest hour, the earliest of equals.
fn peak(hourly: &[i64]) -> usize {
    let max = hourly.iter().copied().max().unwrap_or(0);
    hourly.iter().position(|n| *n == max).unwrap_or(0)
}

async fn world() -> World {
    let hub = common::spawn_hub().await;
    let a = hub.user("owner@example.org", false).await;
    let m = hub.member_of("member@example.org", a.tenant, birdhub::domain::Role::Member).await;
    let b = hub.user("other@example.org", false).await;
    let north = seed::satellite(&hub, a.tenant, "north").await;
    let south = seed::satellite(&hub, a.tenant, "south").await;
    let theirs = seed::satellite(&hub, b.tenant, "theirs").await;
    hub.state()
        .store
        .call(move |c| birdhub::store::satellites::set_location(c, a.tenant, north, 40.8, -77.9))
        .await
        .expect("located");
    let rows = [
        (north, "2026-06-10T12:00:00.000Z", seed::ROBIN, 0.90),
        (north, "2026-06-10T12:05:00.000Z", seed::ROBIN, 0.80),
        (north, "2026-06-10T13:00:00.000Z", seed::WREN, 0.60),
        (north, "2026-06-11T12:00:00.000Z", seed::ROBIN, 0.72),
        (north, "2026-06-11T12:10:00.000Z", seed::WARBLER, 0.95),
        (south, "2026-06-10T12:30:00.000Z", seed::ROBIN, 0.85),
        (south, "2026-06-12T12:00:00.000Z", seed::WREN, 0.75),
        (south, "2026-06-12T12:20:00.000Z", seed::BLACKBURNIAN, 0.55),
        (north, "2026-05-31T12:00:00.000Z", seed::ROBIN, 0.90),
        (south, "2026-07-01T12:00:00.000Z", seed::WREN, 0.90),
    ];
    let mut d = Vec::new();
    for (sat, at, species, conf) in rows {
        d.push(seed::heard(&hub, a.tenant, sat, at, species, conf).await.1);
    }
    seed::heard(&hub, b.tenant, theirs, "2026-06-10T12:00:00.000Z", seed::ROBIN, 0.9).await;
    let owner = hub.login(&a.email).await;
    let member = hub.login(&m.email).await;
    let other = hub.login(&b.email).await;
    for (api, i, vote) in
        [(&owner, 0, "confirm"), (&owner, 1, "reject"), (&owner, 6, "confirm"), (&member, 2, "unsure")]
    {
        let (status, body) = api.post(&format!("/detections/{}/verify", d[i]), json!({"vote": vote})).await;
        assert_eq!(status, 200, "{body}");
    }
    World { hub, owner, member, other, north, south, theirs, d }
}

async fn ok(api: &Api, path: &str) -> Value {
    let (status, body) = api.get(path).await;
    assert_eq!(status, 200, "{path}: {body}");
    body
}

fn close(got: &Value, want: f64) {
    let g = got.as_f64().unwrap_or(f64::NAN);
    assert!((g - want).abs() < 1e-6, "{g} is not {want}");
}

#[tokio::test]
async fn counts_trends_and_rankings_match_the_hand_worked_numbers() {
    let w = world().await;
    let api = &w.owner;

    let dash = ok(api, &format!("/stats/dashboard?{JUNE}")).await;
    assert_eq!(
        (&dash["species"], &dash["detections"], &dash["chunks"], &dash["satellites"]),
        (&json!(4), &json!(7), &json!(8), &json!(2)),
        "rejected d2 is left out; its chunk still counts: {dash}"
    );
    assert_eq!((&dash["allTime"]["detections"], &dash["allTime"]["chunks"]), (&json!(9), &json!(10)));
    assert_eq!((&dash["from"], &dash["to"], &dash["days"]), (&json!("2026-06-01"), &json!("2026-06-30"), &json!(30)));
    // Edge days around a whole month: 05-31, June, 07-01.
    let edges = ok(api, "/stats/dashboard?from=2026-05-31&to=2026-07-01").await;
    assert_eq!((&edges["detections"], &edges["chunks"]), (&json!(9), &json!(10)));
    let with = ok(api, &format!("/stats/dashboard?{JUNE}&includeRejected=true")).await;
    assert_eq!(with["detections"], 8);
    let north = ok(api, &format!("/stats/dashboard?{JUNE}&satelliteId={}", w.north)).await;
    assert_eq!((&north["detections"], &north["species"], &north["chunks"]), (&json!(4), &json!(3), &json!(5)));
    let confident = ok(api, &format!("/stats/dashboard?{JUNE}&minConfidence=0.75")).await;
    assert_eq!((&confident["detections"], &confident["species"]), (&json!(4), &json!(3)), "d1, d5, d6, d7");

    let trends = ok(api, "/stats/trends?from=2026-06-09&to=2026-06-13").await;
    let days: Vec<(String, i64, i64)> = trends["daily"]
        .as_array()
        .expect("daily")
        .iter()
        .map(|d| {
            (
                d["date"].as_str().unwrap_or("").to_owned(),
                d["detections"].as_i64().unwrap_or(-1),
                d["species"].as_i64().unwrap_or(-1),
            )
        })
        .collect();
    assert_eq!(
        days,
        vec![
            ("2026-06-09".into(), 0, 0),
            ("2026-06-10".into(), 3, 2),
            ("2026-06-11".into(), 2, 2),
            ("2026-06-12".into(), 2, 2),
            ("2026-06-13".into(), 0, 0)
        ]
    );
    assert_eq!(trends["total"], 7);

    let top = ok(api, &format!("/stats/top-species?{JUNE}")).await;
    let ranked: Vec<(&str, i64)> = top["species"]
        .as_array()
        .expect("species")
        .iter()
        .map(|s| (s["speciesCode"].as_str().unwrap_or(""), s["detections"].as_i64().unwrap_or(-1)))
        .collect();
    assert_eq!(ranked, vec![(seed::ROBIN.0, 3), (seed::WREN.0, 2), (seed::WARBLER.0, 1), (seed::BLACKBURNIAN.0, 1)]);
    assert_eq!(
        (&top["species"][0]["commonName"], &top["species"][0]["satellites"]),
        (&json!("American Robin"), &json!(2))
    );
    close(&top["species"][0]["share"], 3.0 / 7.0);
    let top2 = ok(api, &format!("/stats/top-species?{JUNE}&limit=2")).await;
    assert_eq!((top2["species"].as_array().map(Vec::len), &top2["total"]), (Some(2), &json!(7)));

    let activity = ok(api, &format!("/stats/activity?{JUNE}")).await;
    let mut hourly = vec![0i64; 24];
    hourly[ny("2026-06-10T12:00:00Z")] += 3; // north: d1, d4, d5
    hourly[ny("2026-06-10T13:00:00Z")] += 1; // north: d3
    hourly[hour("2026-06-10T12:00:00Z")] += 3; // south: d6, d7, d8
    assert_eq!(activity["hourly"], json!(hourly));
    assert_eq!(activity["peakHour"], json!(peak(&hourly)));

    let verification = ok(api, &format!("/stats/verification?{JUNE}")).await;
    assert_eq!(
        [
            &verification["total"],
            &verification["unverified"],
            &verification["pendingReview"],
            &verification["confirmed"],
            &verification["rejected"]
        ],
        [&json!(8), &json!(4), &json!(1), &json!(2), &json!(1)]
    );
    close(&verification["reviewedShare"], 3.0 / 8.0);

    // Votes are cast today: the default range (the last 30 days) holds them.
    let board = ok(api, "/stats/leaderboard").await;
    let voters: Vec<(&str, i64, i64, i64, i64)> = board["contributors"]
        .as_array()
        .expect("contributors")
        .iter()
        .map(|c| {
            let n = |k: &str| c[k].as_i64().unwrap_or(-1);
            (c["name"].as_str().unwrap_or(""), n("votes"), n("confirm"), n("reject"), n("unsure"))
        })
        .collect();
    assert_eq!(voters, vec![("owner", 3, 2, 1, 0), ("member", 1, 0, 0, 1)]);
    let old = ok(api, "/stats/leaderboard?from=2026-06-01&to=2026-06-30").await;
    assert_eq!(old["contributors"], json!([]), "no votes were cast in June");

    let catalogue = ok(api, &format!("/stats/species?{JUNE}")).await;
    assert_eq!(catalogue["total"], 4);
    let robin = &catalogue["species"][0];
    assert_eq!(
        (&robin["speciesCode"], &robin["detections"], &robin["confirmed"], &robin["rejected"], &robin["satellites"]),
        (&json!(seed::ROBIN.0), &json!(3), &json!(1), &json!(1), &json!(2))
    );
    assert_eq!(
        (&robin["firstDetectedAt"], &robin["lastDetectedAt"]),
        (&json!("2026-05-31T12:00:00.000Z"), &json!("2026-06-11T12:00:00.000Z")),
        "all time"
    );

    let accuracy = ok(api, &format!("/stats/species-accuracy?{JUNE}")).await;
    let acc: Vec<(&str, i64, i64, f64)> = accuracy["species"]
        .as_array()
        .expect("species")
        .iter()
        .map(|s| {
            (
                s["speciesCode"].as_str().unwrap_or(""),
                s["confirmed"].as_i64().unwrap_or(-1),
                s["rejected"].as_i64().unwrap_or(-1),
                s["accuracy"].as_f64().unwrap_or(-1.0),
            )
        })
        .collect();
    assert_eq!(acc, vec![(seed::ROBIN.0, 1, 1, 0.5), (seed::WREN.0, 1, 0, 1.0)]);
    close(&accuracy["overall"], 2.0 / 3.0);
    assert_eq!(accuracy["species"][1]["pendingReview"], 1);
}

#[tokio::test]
async fn species_profile_places_and_diversity_match_the_hand_worked_numbers() {
    let w = world().await;
    let api = &w.owner;
    let (north, south) = (w.north.to_string(), w.south.to_string());

    let robin = ok(api, &format!("/stats/species/{}?from=2026-06-09&to=2026-06-12", seed::ROBIN.0)).await;
    assert_eq!((&robin["detections"], &robin["confirmed"], &robin["rejected"]), (&json!(3), &json!(1), &json!(1)));
    assert_eq!(robin["daily"], json!([["2026-06-09", 0], ["2026-06-10", 2], ["2026-06-11", 1], ["2026-06-12", 0]]));
    let mut robin_hours = vec![0i64; 24];
    robin_hours[ny("2026-06-10T12:00:00Z")] += 2; // north: d1, d4
    robin_hours[hour("2026-06-10T12:00:00Z")] += 1; // south: d6
    assert_eq!(robin["hourly"], json!(robin_hours));
    let mut sats: Vec<(String, i64)> = robin["satellites"]
        .as_array()
        .expect("satellites")
        .iter()
        .map(|s| (s["name"].as_str().unwrap_or("").to_owned(), s["detections"].as_i64().unwrap_or(-1)))
        .collect();
    sats.sort();
    assert_eq!(sats, vec![("north".into(), 2), ("south".into(), 1)]);
    // 0.90 and 0.85 (as stored, f32) fall in the band from 0.85; 0.72 in the one from 0.70.
    let bands: Vec<i64> =
        robin["confidence"].as_array().expect("bands").iter().map(|b| b["detections"].as_i64().unwrap_or(-1)).collect();
    let mut want = vec![0; 20];
    want[17] = 2;
    want[14] = 1;
    assert_eq!(bands, want);
    let recent: Vec<&str> =
        robin["recent"].as_array().expect("recent").iter().map(|r| r["detectedAt"].as_str().unwrap_or("")).collect();
    assert_eq!(
        recent,
        [
            "2026-06-11T12:00:00.000Z",
            "2026-06-10T12:30:00.000Z",
            "2026-06-10T12:00:00.000Z",
            "2026-05-31T12:00:00.000Z"
        ],
        "newest first, the rejected one left out"
    );
    assert_error(&api.get(&format!("/stats/species/nope?{JUNE}")).await, 404, "species_not_found");
    assert_error(
        &api.get(&format!("/stats/species/{}?satelliteId={north}", seed::ROBIN.0)).await,
        422,
        "invalid_query",
    );

    let cmp = ok(api, &format!("/stats/compare?{JUNE}&satelliteIds={north},{south}")).await;
    assert_eq!(cmp["pairs"], json!([{"a": north, "b": south, "shared": 2, "jaccard": 0.5}]));
    let shared: Vec<&str> = cmp["sharedByAll"]
        .as_array()
        .expect("shared")
        .iter()
        .map(|s| s["speciesCode"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(shared, vec![seed::WREN.0, seed::ROBIN.0]);
    assert_eq!(cmp["unique"][0][0], json!(north));
    assert_eq!(cmp["unique"][0][1]["speciesCode"], seed::WARBLER.0);
    assert_eq!(cmp["unique"][1][0], json!(south));
    assert_eq!(cmp["satellites"][0]["detections"], 4);
    assert_error(
        &api.get(&format!("/stats/compare?{JUNE}&satelliteIds={north},{}", w.theirs)).await,
        404,
        "satellite_not_found",
    );
    assert_error(&api.get(&format!("/stats/compare?{JUNE}&satelliteIds={north}")).await, 422, "invalid_query");
    assert_error(&api.get(&format!("/stats/compare?{JUNE}&satelliteIds={north},{north}")).await, 422, "invalid_query");
    assert_error(&api.get(&format!("/stats/compare?{JUNE}&satelliteIds={north},zzz")).await, 400, "invalid_query");

    let migration = ok(api, "/stats/migration?from=2026-05-01&to=2026-07-31").await;
    assert_eq!(migration["months"], json!(["2026-05", "2026-06", "2026-07"]));
    let rows: Vec<(&str, Value, i64)> = migration["species"]
        .as_array()
        .expect("species")
        .iter()
        .map(|s| {
            (s["speciesCode"].as_str().unwrap_or(""), s["monthly"].clone(), s["monthsPresent"].as_i64().unwrap_or(-1))
        })
        .collect();
    assert_eq!(
        rows,
        vec![
            (seed::BLACKBURNIAN.0, json!([0, 1, 0]), 1),
            (seed::WARBLER.0, json!([0, 1, 0]), 1),
            (seed::ROBIN.0, json!([1, 3, 0]), 2),
            (seed::WREN.0, json!([0, 2, 1]), 2),
        ]
    );

    // north: robin 2, wren 1, warbler 1; south: robin, wren, blackburnian once each; together
    // robin 3, wren 2, warbler 1, blackburnian 1 (N = 7). By hand:
    // north H' = -(½ ln ½ + 2 · ¼ ln ¼) = 1.039721; 1-D = 1 - 2/(4·3) = 0.833333; J' = H'/ln 3 = 0.946395
    // south H' = ln 3 = 1.098612; 1-D = 1 - 0/6 = 1; J' = 1
    // all   H' = 1.277034; 1-D = 1 - (6+2)/(7·6) = 0.809524; J' = H'/ln 4 = 0.921185
    let bio = ok(api, &format!("/stats/biodiversity?{JUNE}")).await;
    let check = |v: &Value, s: i64, n: i64, h: f64, d: f64, j: f64| {
        assert_eq!((&v["species"], &v["individuals"]), (&json!(s), &json!(n)), "{v}");
        for (k, want) in [("shannon", h), ("simpson", d), ("evenness", j)] {
            assert!((v[k].as_f64().unwrap_or(f64::NAN) - want).abs() < 5e-7, "{k}: {} is not {want}", v[k]);
        }
    };
    check(&bio["overall"], 4, 7, 1.277034, 0.809524, 0.921185);
    let by_name = |name: &str| {
        bio["satellites"].as_array().and_then(|a| a.iter().find(|s| s["name"] == name).cloned()).expect("satellite")
    };
    check(&by_name("north"), 3, 4, 1.039721, 0.833333, 0.946395);
    check(&by_name("south"), 3, 3, 1.098612, 1.0, 1.0);

    let heat = ok(api, "/stats/activity-heatmap?from=2026-06-10&to=2026-06-11").await;
    let mut day10 = vec![0i64; 24];
    day10[ny("2026-06-10T12:00:00Z")] += 1; // north: d1
    day10[ny("2026-06-10T13:00:00Z")] += 1; // north: d3
    day10[hour("2026-06-10T12:00:00Z")] += 1; // south: d6
    let mut day11 = vec![0i64; 24];
    day11[ny("2026-06-11T12:00:00Z")] = 2; // north: d4, d5
    assert_eq!(heat["days"], json!([["2026-06-10", day10], ["2026-06-11", day11]]));
    assert_eq!(heat["max"], day10.iter().chain(&day11).max().copied().unwrap_or(0));
    let heat_south =
        ok(api, &format!("/stats/activity-heatmap?from=2026-06-10&to=2026-06-10&satelliteId={south}")).await;
    assert_eq!(heat_south["days"][0][1][hour("2026-06-10T12:00:00Z")], 1);

    let peaks = ok(api, &format!("/stats/satellite-activity?{JUNE}")).await;
    let n = &peaks["satellites"][0];
    assert_eq!((&n["name"], &n["total"]), (&json!("north"), &json!(4)));
    assert_eq!(n["peakHours"], json!([ny("2026-06-10T12:00:00Z"), ny("2026-06-10T13:00:00Z")]));
    assert_eq!((&peaks["satellites"][1]["name"], &peaks["satellites"][1]["total"]), (&json!("south"), &json!(3)));

    let map = ok(api, &format!("/stats/map?{JUNE}")).await;
    let m = &map["satellites"][0];
    assert_eq!(
        (&m["name"], &m["latitude"], &m["longitude"], &m["detections"], &m["species"]),
        (&json!("north"), &json!(40.8), &json!(-77.9), &json!(4), &json!(3))
    );
    assert_eq!(
        (&m["topSpecies"]["speciesCode"], &m["lastDetectionAt"]),
        (&json!(seed::ROBIN.0), &json!("2026-06-11T12:10:00.000Z"))
    );
    assert_eq!(
        (&map["satellites"][1]["latitude"], &map["satellites"][1]["lastDetectionAt"]),
        (&Value::Null, &json!("2026-07-01T12:00:00.000Z"))
    );
}

#[tokio::test]
async fn teams_see_only_their_own_numbers_and_bad_filters_get_clear_errors() {
    let w = world().await;
    let theirs = ok(&w.other, &format!("/stats/dashboard?{JUNE}")).await;
    assert_eq!((&theirs["detections"], &theirs["species"], &theirs["satellites"]), (&json!(1), &json!(1), &json!(1)));
    for path in [
        format!("/stats/dashboard?satelliteId={}", w.north),
        format!("/stats/trends?satelliteId={}", w.south),
        format!("/stats/biodiversity?satelliteId={}", w.north),
    ] {
        assert_error(&w.other.get(&path).await, 404, "satellite_not_found");
    }
    let b = ok(&w.other, "/stats/biodiversity?from=2026-06-01&to=2026-06-30").await;
    assert_eq!(b["satellites"].as_array().map(Vec::len), Some(1), "only their own satellite");
    // A member (Viewer+) reads; nobody signed out does.
    ok(&w.member, "/stats/top-species").await;
    assert_eq!(w.hub.anon().get("/stats/dashboard").await.0, 401);

    let api = &w.owner;
    for q in [
        "days=0",
        "days=-3",
        "days=100000",
        "days=367",
        "from=2026-06-02&to=2026-06-01",
        "from=2025-01-01&to=2026-01-02",
        "days=3&from=2026-06-01",
    ] {
        assert_error(&api.get(&format!("/stats/trends?{q}")).await, 422, "invalid_range");
    }
    for q in ["days=abc", "from=June", "includeRejected=maybe", "satelliteId=nope", "minConfidence=high"] {
        assert_error(&api.get(&format!("/stats/dashboard?{q}")).await, 400, "invalid_query");
    }
    assert_error(&api.get("/stats/dashboard?minConfidence=0.72").await, 422, "invalid_min_confidence");
    assert_error(&api.get("/stats/dashboard?minConfidence=2").await, 422, "invalid_min_confidence");
    assert_error(&api.get("/stats/top-species?lang=xx").await, 422, "unknown_language");
    assert_error(&api.get("/stats/top-species?limit=0").await, 422, "invalid_query");
    assert_error(
        &api.get(&format!("/stats/dashboard?satelliteId={}", SatelliteId::new())).await,
        404,
        "satellite_not_found",
    );
    assert_error(&api.get("/stats/map/detections?days=91").await, 422, "invalid_range");
    assert_error(&api.get("/stats/map/detections?limit=5001").await, 422, "invalid_query");

    // A removed satellite's detections stay in the team's history and totals; the per-satellite
    // answers list the current satellites only.
    let (status, body) = api.delete(&format!("/satellites/{}", w.south)).await;
    assert!(status.is_success(), "{body}");
    let dash = ok(api, &format!("/stats/dashboard?{JUNE}")).await;
    assert_eq!((&dash["detections"], &dash["chunks"]), (&json!(7), &json!(8)));
    let map = ok(api, &format!("/stats/map?{JUNE}")).await;
    assert_eq!(map["satellites"].as_array().map(Vec::len), Some(1));
    assert_error(&api.get(&format!("/stats/dashboard?satelliteId={}", w.south)).await, 404, "satellite_not_found");
    let _ = &w.d;
}

#[tokio::test]
async fn an_empty_team_gets_zeros_and_today_counts_what_arrives_now() {
    let hub = common::spawn_hub().await;
    let owner = hub.user("new@example.org", false).await;
    let api = hub.login(&owner.email).await;
    let dash = ok(&api, "/stats/dashboard").await;
    assert_eq!((&dash["species"], &dash["detections"], &dash["chunks"]), (&json!(0), &json!(0), &json!(0)));
    assert_eq!(dash["today"]["detections"], 0);
    let trends = ok(&api, "/stats/trends").await;
    assert_eq!(trends["daily"].as_array().map(Vec::len), Some(30));
    assert!(trends["daily"].as_array().is_some_and(|d| d.iter().all(|d| d["detections"] == 0)));
    for path in
        ["/stats/top-species", "/stats/species", "/stats/species-accuracy", "/stats/migration", "/stats/leaderboard"]
    {
        let body = ok(&api, path).await;
        let list = body.get("species").or_else(|| body.get("contributors")).expect("a list");
        assert_eq!(list, &json!([]), "{path}");
    }
    let activity = ok(&api, "/stats/activity").await;
    assert_eq!((&activity["total"], &activity["peakHour"]), (&json!(0), &Value::Null));
    let verification = ok(&api, "/stats/verification").await;
    assert_eq!((&verification["total"], &verification["reviewedShare"]), (&json!(0), &json!(0.0)));
    let bio = ok(&api, "/stats/biodiversity").await;
    assert_eq!(
        (&bio["overall"]["species"], &bio["overall"]["shannon"], &bio["overall"]["evenness"]),
        (&json!(0), &json!(0.0), &Value::Null)
    );
    let (a, b) = (seed::satellite(&hub, owner.tenant, "a").await, seed::satellite(&hub, owner.tenant, "b").await);
    let cmp = ok(&api, &format!("/stats/compare?satelliteIds={a},{b}")).await;
    assert_eq!(cmp["pairs"][0]["jaccard"], Value::Null, "two empty sets have no Jaccard index");
    let heat = ok(&api, "/stats/activity-heatmap?days=7").await;
    assert_eq!((heat["days"].as_array().map(Vec::len), &heat["max"]), (Some(7), &json!(0)));
    let points = ok(&api, "/stats/map/detections").await;
    assert_eq!((&points["points"], &points["truncated"]), (&json!([]), &json!(false)));

    // Detections arriving now show in today's numbers and on the map.
    hub.state()
        .store
        .call(move |c| birdhub::store::satellites::set_location(c, owner.tenant, a, 52.5, 13.4))
        .await
        .expect("located");
    let now = Utc::now() - chrono::Duration::minutes(1);
    let at = birdhub::time::format(now);
    seed::heard(&hub, owner.tenant, a, &at, seed::ROBIN, 0.9).await;
    seed::heard(&hub, owner.tenant, a, &at, seed::WREN, 0.8).await;
    // b has no position: its detection is not a point.
    seed::heard(&hub, owner.tenant, b, &at, seed::ROBIN, 0.9).await;
    let dash = ok(&api, "/stats/dashboard").await;
    assert_eq!(
        (&dash["today"]["detections"], &dash["today"]["species"], &dash["today"]["chunks"]),
        (&json!(3), &json!(2), &json!(3))
    );
    let points = ok(&api, "/stats/map/detections?days=1").await;
    let got: Vec<(&str, f64, f64)> = points["points"]
        .as_array()
        .expect("points")
        .iter()
        .map(|p| {
            (
                p["speciesCode"].as_str().unwrap_or(""),
                p["latitude"].as_f64().unwrap_or(0.0),
                p["longitude"].as_f64().unwrap_or(0.0),
            )
        })
        .collect();
    assert_eq!(got.len(), 2, "{points}");
    assert!(got.iter().all(|p| (p.1, p.2) == (52.5, 13.4)));
    // One satellite's points (read through its own index): a's two, none of b's.
    let only_a = ok(&api, &format!("/stats/map/detections?days=1&satelliteId={a}")).await;
    assert_eq!(only_a["points"].as_array().map(Vec::len), Some(2), "{only_a}");
    assert!(only_a["points"].as_array().into_iter().flatten().all(|p| p["satelliteId"] == json!(a.to_string())));
    let only_b = ok(&api, &format!("/stats/map/detections?days=1&satelliteId={b}")).await;
    assert_eq!(only_b["points"], json!([]), "b has no position");
    let capped = ok(&api, "/stats/map/detections?days=1&limit=1").await;
    assert_eq!((capped["points"].as_array().map(Vec::len), &capped["truncated"]), (Some(1), &json!(true)));
}
