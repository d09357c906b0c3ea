//! `GET /detections` over real HTTP: every filter and sort, paging edges, `withCount=false`,
//! bad parameters, team isolation, and totals past the count's cap (a lower bound, "N+" on the page).

mod common;

use common::{assert_error, seed};
use serde_json::Value;

struct World {
    hub: common::TestHub,
    api: common::Api,
    tenant: birdhub::ids::TenantId,
    garden: birdhub::ids::SatelliteId,
    field: birdhub::ids::SatelliteId,
}

/// Six detections over two satellites and four species, at known times and confidences.
async fn world() -> World {
    let hub = common::spawn_hub().await;
    let owner = hub.user("owner@example.org", false).await;
    let api = hub.login(&owner.email).await;
    let t = owner.tenant;
    let garden = seed::satellite(&hub, t, "garden").await;
    let field = seed::satellite(&hub, t, "field").await;
    seed::heard(&hub, t, garden, "2026-05-01T05:00:00.000Z", seed::ROBIN, 0.91).await;
    seed::heard(&hub, t, garden, "2026-05-01T06:00:00.000Z", seed::WREN, 0.72).await;
    seed::heard(&hub, t, field, "2026-05-02T05:00:00.000Z", seed::ROBIN, 0.55).await;
    seed::heard(&hub, t, field, "2026-05-03T05:00:00.000Z", seed::WARBLER, 0.83).await;
    seed::heard(&hub, t, garden, "2026-05-04T05:00:00.000Z", seed::BLACKBURNIAN, 0.64).await;
    seed::heard(&hub, t, garden, "2026-05-05T05:00:00.000Z", seed::ROBIN, 0.99).await;
    World { hub, api, tenant: t, garden, field }
}

fn names(body: &Value) -> Vec<String> {
    body["detections"]
        .as_array()
        .expect("detections")
        .iter()
        .map(|d| d["common_name"].as_str().expect("name").to_owned())
        .collect()
}

fn confidences(body: &Value) -> Vec<f64> {
    body["detections"]
        .as_array()
        .expect("detections")
        .iter()
        .map(|d| (d["confidence"].as_f64().expect("c") * 1000.0).round() / 1000.0)
        .collect()
}

#[tokio::test]
async fn default_is_newest_first_with_the_total_and_row_fields() {
    let w = world().await;
    let (status, body) = w.api.get("/detections").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["total"], 6);
    let times: Vec<&str> =
        body["detections"].as_array().expect("list").iter().map(|d| d["detected_at"].as_str().expect("t")).collect();
    let mut sorted = times.clone();
    sorted.sort_by(|a, b| b.cmp(a));
    assert_eq!(times, sorted, "newest first");
    let first = &body["detections"][0];
    assert_eq!(first["common_name"], "American Robin");
    assert_eq!(first["is_first_of_season"], false, "the third robin of the spring");
    assert!(first["calibrated_confidence"].is_null(), "no curve yet: {first}");
    assert_eq!(first["satellite_name"], "garden");
    let oldest = &body["detections"][5];
    assert_eq!(oldest["is_first_of_season"], true);
}

#[tokio::test]
async fn each_filter_narrows_the_list_and_the_total() {
    let w = world().await;
    let cases: Vec<(String, Vec<&str>)> = vec![
        (format!("satelliteId={}", w.field), vec!["Tennessee Warbler", "American Robin"]),
        ("species=turdus-migratorius".into(), vec!["American Robin"; 3]),
        ("speciesSearch=WARBLER".into(), vec!["Blackburnian Warbler", "Tennessee Warbler"]),
        ("speciesSearch=setophaga".into(), vec!["Blackburnian Warbler"]),
        ("speciesSearch=albatross".into(), vec![]),
        ("minConfidence=0.8".into(), vec!["American Robin", "Tennessee Warbler", "American Robin"]),
        (
            "verificationStatus=unverified".into(),
            vec![
                "American Robin",
                "Blackburnian Warbler",
                "Tennessee Warbler",
                "American Robin",
                "House Wren",
                "American Robin",
            ],
        ),
        ("verificationStatus=confirmed".into(), vec![]),
        (format!("satelliteId={}&species=turdus-migratorius&minConfidence=0.95", w.garden), vec!["American Robin"]),
    ];
    for (query, want) in cases {
        let (status, body) = w.api.get(&format!("/detections?{query}")).await;
        assert_eq!(status, 200, "{query}: {body}");
        assert_eq!(names(&body), want, "{query}");
        assert_eq!(body["total"], want.len(), "{query}");
    }
}

#[tokio::test]
async fn sorts_by_confidence_and_species_both_ways() {
    let w = world().await;
    let (_, body) = w.api.get("/detections?sortBy=confidence").await;
    assert_eq!(confidences(&body), [0.99, 0.91, 0.83, 0.72, 0.64, 0.55]);
    let (_, body) = w.api.get("/detections?sortBy=confidence&sortDir=asc").await;
    assert_eq!(confidences(&body)[0], 0.55);
    let (_, body) = w.api.get("/detections?sortBy=species&sortDir=asc").await;
    assert_eq!(
        names(&body),
        [
            "American Robin",
            "American Robin",
            "American Robin",
            "Blackburnian Warbler",
            "House Wren",
            "Tennessee Warbler"
        ]
    );
    let (_, body) = w.api.get("/detections?sortBy=species").await;
    assert_eq!(names(&body)[0], "Tennessee Warbler");
    let (_, body) = w.api.get("/detections?sortBy=date&sortDir=asc").await;
    assert_eq!(body["detections"][0]["detected_at"], "2026-05-01T05:00:00.000Z");
}

#[tokio::test]
async fn pages_cover_the_list_once_and_with_count_false_skips_the_total() {
    let w = world().await;
    let mut seen = Vec::new();
    for offset in [0, 4] {
        let (status, body) = w.api.get(&format!("/detections?limit=4&offset={offset}")).await;
        assert_eq!(status, 200);
        assert_eq!(body["total"], 6);
        seen.extend(body["detections"].as_array().expect("page").iter().map(|d| d["id"].clone()));
    }
    let unique: std::collections::HashSet<String> = seen.iter().map(|v| v.to_string()).collect();
    assert_eq!((seen.len(), unique.len()), (6, 6), "two pages give every detection exactly once");
    let (_, past) = w.api.get("/detections?offset=6").await;
    assert_eq!((past["detections"].as_array().map(Vec::len), past["total"].as_u64()), (Some(0), Some(6)));
    let (_, body) = w.api.get("/detections?withCount=false&limit=2").await;
    assert!(body["total"].is_null(), "{body}");
    assert_eq!(body["detections"].as_array().map(Vec::len), Some(2));
    let (_, body) = w.api.get("/detections?limit=500").await;
    assert_eq!(body["detections"].as_array().map(Vec::len), Some(6));
}

#[tokio::test]
async fn bad_parameters_are_clear_400s() {
    let w = world().await;
    for (query, code) in [
        ("sortBy=loudness", "invalid_sort"),
        ("sortDir=sideways", "invalid_sort"),
        ("limit=0", "invalid_limit"),
        ("limit=501", "invalid_limit"),
        ("limit=-1", "invalid_query"),
        ("limit=99999999999999", "invalid_query"),
        ("offset=-5", "invalid_query"),
        ("minConfidence=2", "invalid_confidence"),
        ("minConfidence=high", "invalid_query"),
        ("verificationStatus=maybe", "invalid_status"),
        ("satelliteId=not-a-uuid", "invalid_query"),
        ("withCount=perhaps", "invalid_query"),
    ] {
        assert_error(&w.api.get(&format!("/detections?{query}")).await, 400, code);
    }
    assert_error(&w.api.get("/detections/not-a-uuid").await, 400, "invalid_path");
    assert_error(&w.api.get(&format!("/detections/{}", uuid::Uuid::new_v4())).await, 404, "detection_not_found");
}

#[tokio::test]
async fn the_detail_has_the_storage_key_and_other_teams_see_nothing() {
    let w = world().await;
    let (_, body) = w.api.get("/detections?limit=1").await;
    let id = body["detections"][0]["id"].as_str().expect("id").to_owned();
    let (status, detail) = w.api.get(&format!("/detections/{id}")).await;
    assert_eq!(status, 200);
    assert!(detail["storage_key"].as_str().is_some_and(|k| k.starts_with("audio/")), "{detail}");
    assert_eq!(detail["votes"], serde_json::json!({"confirm": 0, "reject": 0, "unsure": 0}));

    let stranger = w.hub.user("stranger@example.org", false).await;
    let other = w.hub.login(&stranger.email).await;
    assert_error(&other.get(&format!("/detections/{id}")).await, 404, "detection_not_found");
    let (_, theirs) = other.get("/detections").await;
    assert_eq!(theirs["total"], 0);
    assert_error(&other.get(&format!("/detections?tenantId={}", w.tenant)).await, 404, "tenant_not_found");
}

/// A filter as the test applies it to the whole list.
type Keep = Box<dyn Fn(&Value) -> bool>;

/// Every filter with every sort and direction (each combination reads a different index) gives
/// exactly the rows and order computed here from the whole list.
#[tokio::test]
async fn every_filter_with_every_sort_matches_the_rule() {
    let w = world().await;
    let (_, all) = w.api.get("/detections?limit=500").await;
    let all: Vec<Value> = all["detections"].as_array().expect("rows").clone();
    // Two verified detections, so the status filters have something to find.
    for (i, vote) in [(0, "confirm"), (2, "reject")] {
        let id = all[i]["id"].as_str().expect("id");
        assert_eq!(w.api.post(&format!("/detections/{id}/verify"), serde_json::json!({"vote": vote})).await.0, 200);
    }
    let (_, all) = w.api.get("/detections?limit=500").await;
    let all: Vec<Value> = all["detections"].as_array().expect("rows").clone();
    let s = |d: &Value, k: &str| d[k].as_str().unwrap_or_default().to_owned();
    let filters: Vec<(String, Keep)> = vec![
        (String::new(), Box::new(|_| true)),
        (format!("satelliteId={}", w.garden), Box::new(|d: &Value| d["satellite_name"] == "garden")),
        ("species=turdus-migratorius".into(), Box::new(|d: &Value| d["species_code"] == "turdus-migratorius")),
        (
            "speciesSearch=warbler".into(),
            Box::new(|d: &Value| d["common_name"].as_str().is_some_and(|n| n.contains("Warbler"))),
        ),
        ("minConfidence=0.7".into(), Box::new(|d: &Value| d["confidence"].as_f64().is_some_and(|c| c >= 0.7))),
        ("verificationStatus=confirmed".into(), Box::new(|d: &Value| d["verification_status"] == "confirmed")),
        ("verificationStatus=unverified".into(), Box::new(|d: &Value| d["verification_status"] == "unverified")),
        (
            format!("satelliteId={}&speciesSearch=a&verificationStatus=rejected", w.field),
            Box::new(|d: &Value| d["satellite_name"] == "field" && d["verification_status"] == "rejected"),
        ),
    ];
    for (query, keep) in &filters {
        for sort in ["date", "confidence", "species"] {
            for dir in ["asc", "desc"] {
                let mut want: Vec<&Value> = all.iter().filter(|d| keep(d)).collect();
                want.sort_by(|a, b| {
                    let by = match sort {
                        "date" => s(a, "detected_at").cmp(&s(b, "detected_at")),
                        "confidence" => {
                            a["confidence"].as_f64().partial_cmp(&b["confidence"].as_f64()).expect("numbers")
                        }
                        _ => {
                            (s(a, "common_name"), s(a, "detected_at")).cmp(&(s(b, "common_name"), s(b, "detected_at")))
                        }
                    };
                    if dir == "desc" { by.reverse() } else { by }
                });
                let want: Vec<String> = want.iter().map(|d| s(d, "id")).collect();
                let url = format!("/detections?{query}&sortBy={sort}&sortDir={dir}&limit=500&withCount=false");
                let (code, got) = w.api.get(&url).await;
                assert_eq!(code, 200, "{url}: {got}");
                let got: Vec<String> = got["detections"].as_array().expect("rows").iter().map(|d| s(d, "id")).collect();
                assert_eq!(got, want, "{url}");
                let (_, counted) = w.api.get(&format!("/detections?{query}&sortBy={sort}&limit=1")).await;
                assert_eq!(counted["total"], want.len(), "{url}");
            }
        }
    }
}

/// `n` detections of `species` on `sat`, each in its own chunk, a second apart in April 2026,
/// all with confidence `confidence`: written in one transaction (the triggers keep their counts).
async fn many(w: &World, sat: birdhub::ids::SatelliteId, n: i64, confidence: f64) {
    let (tenant, sat) = (w.tenant.to_string(), sat.to_string());
    w.hub
        .state()
        .store
        .call(move |c| {
            let tx = c.transaction()?;
            tx.execute(
                "INSERT INTO audio_chunks (id, tenant_pk, satellite_pk, recorded_at, duration_ms, sample_rate, storage_key,
                     size_bytes)
                 WITH RECURSIVE i(k) AS (SELECT 1 UNION ALL SELECT k + 1 FROM i WHERE k < ?3)
                 SELECT randomblob(16), (SELECT pk FROM tenants WHERE id = ?1), (SELECT pk FROM satellites WHERE id = ?2),
                        1775001600000 + k * 1000, 3000, 48000, '', 1 FROM i",
                rusqlite::params![tenant, sat, n],
            )?;
            tx.execute(
                "INSERT INTO detections (id, tenant_pk, satellite_pk, chunk_pk, model_id, species_pk, confidence, detected_at)
                 SELECT randomblob(16), c.tenant_pk, c.satellite_pk, c.pk, 'm',
                        (SELECT pk FROM species_labels WHERE species_code = ?1), ?2, c.recorded_at
                 FROM audio_chunks c WHERE c.storage_key = '' AND c.recorded_at >= 1775001600000",
                rusqlite::params![seed::ROBIN.0, confidence],
            )?;
            tx.commit()?;
            Ok(())
        })
        .await
        .expect("many detections");
}

/// Past 10,000 rows the count of a `minConfidence` between two 0.05 steps stops and says so;
/// on a step, and with any satellite, species and status, the total stays exact. The page
/// writes the lower bound as "N+" and keeps offering the next page.
#[tokio::test]
async fn a_long_list_counts_exactly_on_steps_and_says_n_plus_past_the_cap() {
    let w = world().await;
    many(&w, w.garden, 10_050, 0.92).await;
    // Of the six: the 0.91 and 0.99 robins are at least 0.9; only the 0.99 one is at least 0.95.
    for (query, want) in [
        ("minConfidence=0.9".to_owned(), 10_052),
        ("minConfidence=0.95".to_owned(), 1),
        (format!("minConfidence=0.9&satelliteId={}", w.garden), 10_052),
        (format!("minConfidence=0.9&satelliteId={}", w.field), 0),
        ("minConfidence=0.9&verificationStatus=unverified".to_owned(), 10_052),
        ("minConfidence=0.5&species=turdus-migratorius".to_owned(), 10_053),
        (format!("satelliteId={}", w.garden), 10_054),
    ] {
        let (status, body) = w.api.get(&format!("/detections?{query}&limit=1")).await;
        assert_eq!(status, 200, "{query}: {body}");
        assert_eq!((body["total"].as_u64(), body["totalIsLowerBound"].as_bool()), (Some(want), Some(false)), "{query}");
    }
    let (_, body) = w.api.get("/detections?minConfidence=0.91&limit=1").await;
    let total = body["total"].as_u64().expect("a number, as the SPEC has it");
    assert_eq!(body["totalIsLowerBound"], true, "{body}");
    assert!((10_000..10_052).contains(&total), "at least the 10,000 counted, less than all: {total}");
    let (_, body) = w.api.get("/detections?minConfidence=0.91&withCount=false&limit=1").await;
    assert!(body["total"].is_null() && body["totalIsLowerBound"] == false, "{body}");

    let (client, base) = (&w.api.client, &w.hub.base_url);
    let page = |path: String| async move {
        let resp = client.get(format!("{base}{path}")).send().await.expect("page");
        resp.text().await.expect("html")
    };
    let html = page("/detections?minConfidence=0.91".into()).await;
    let shown = grouped(total);
    assert!(html.contains(&format!("1–20 of {shown}+")), "the heading says N+: {shown}");
    assert!(html.contains(&format!("Page 1 of {}+", grouped(total.div_ceil(20)))), "the pager too");
    assert!(html.contains("rel=\"next\""));
    // Past the lower bound the rows go on, and so does the pager.
    let html = page(format!("/detections?minConfidence=0.91&offset={}", total / 20 * 20)).await;
    assert!(html.contains("class=\"det-card\""), "a page past the bound still lists rows");
    assert!(html.contains("rel=\"prev\""));
    let html = page("/detections?minConfidence=0.9".into()).await;
    assert!(html.contains("1–20 of 10,052<"), "an exact total has no plus");
}

/// Thousands separated by commas, as the dashboard writes counts.
fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}
