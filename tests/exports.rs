//! The on-demand exports (SPEC 4.7) over real HTTP, each parsed back: CSV with the `csv` crate,
//! ZIPs with the `zip` crate; the column orders of eBird, iNaturalist and xeno-canto; the 1 MB
//! split; filters; another team's detections never appear; rejected ones never reach a
//! citizen-science file; bad input is a 4xx.

mod common;

use std::io::Read;

use birdhub::{
    ids::{SatelliteId, TenantId},
    store,
};
use common::seed;
use serde_json::Value;

struct World {
    hub: common::TestHub,
    token: String,
    tenant: TenantId,
    garden: SatelliteId,
    field: SatelliteId,
}

/// Five detections of one team over two satellites and three days, and one of another team.
async fn world() -> World {
    let hub = common::spawn_hub().await;
    let owner = hub.user("owner@example.org", false).await;
    let t = owner.tenant;
    let garden = seed::satellite(&hub, t, "garden").await;
    let field = seed::satellite(&hub, t, "=field").await;
    let finder = birdhub::domain::zone::Finder::load();
    for (sat, lat, lon) in [(garden, 45.5, -73.6), (field, 46.0, -74.0)] {
        hub.state().store.call(move |c| store::satellites::set_location(c, t, sat, lat, lon)).await.expect("place");
        // Exports write each station's local times: wait for its zone (from its position).
        seed::zone_settles(&hub, sat, finder.at(lat, lon).expect("a zone").name()).await;
    }
    seed::heard(&hub, t, garden, "2026-05-01T05:00:00.000Z", seed::ROBIN, 0.91).await;
    seed::heard(&hub, t, garden, "2026-05-01T06:00:00.000Z", seed::WREN, 0.72).await;
    seed::heard(&hub, t, field, "2026-05-02T05:00:00.000Z", seed::ROBIN, 0.55).await;
    seed::heard(&hub, t, garden, "2026-05-03T05:00:00.000Z", seed::WARBLER, 0.83).await;
    seed::heard(&hub, t, garden, "2026-05-03T05:30:00.000Z", seed::BLACKBURNIAN, 0.64).await;
    let other = hub.user("other@example.org", false).await;
    let theirs = seed::satellite(&hub, other.tenant, "theirs").await;
    seed::heard(&hub, other.tenant, theirs, "2026-05-01T05:00:00.000Z", seed::ROBIN, 0.99).await;
    let token = hub.token(&owner.email).await;
    World { hub, token, tenant: t, garden, field }
}

/// The zone of the garden satellite's position.
fn montreal() -> chrono_tz::Tz {
    birdhub::domain::zone::Finder::load().at(45.5, -73.6).expect("a zone")
}

struct Download {
    status: u16,
    content_type: String,
    disposition: String,
    body: Vec<u8>,
}

impl Download {
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).expect("json")
    }
}

async fn get(w: &World, path: &str) -> Download {
    get_as(&w.hub, &w.token, path).await
}

async fn get_as(hub: &common::TestHub, token: &str, path: &str) -> Download {
    let resp = reqwest::Client::new().get(hub.api(path)).bearer_auth(token).send().await.expect("request");
    let header = |n: &str| resp.headers().get(n).and_then(|v| v.to_str().ok()).unwrap_or("").to_owned();
    let (status, content_type, disposition) =
        (resp.status().as_u16(), header("content-type"), header("content-disposition"));
    let body = resp.bytes().await.expect("body").to_vec();
    Download { status, content_type, disposition, body }
}

fn csv_rows(bytes: &[u8], headers: bool) -> (Vec<String>, Vec<Vec<String>>) {
    let mut r = csv::ReaderBuilder::new().has_headers(headers).flexible(false).from_reader(bytes);
    let head = if headers { r.headers().expect("header").iter().map(str::to_owned).collect() } else { Vec::new() };
    let rows = r.records().map(|rec| rec.expect("record").iter().map(str::to_owned).collect()).collect();
    (head, rows)
}

fn zip_files(bytes: &[u8]) -> Vec<(String, Vec<u8>)> {
    let mut zip = zip::ZipArchive::new(std::io::Cursor::new(bytes)).expect("a zip");
    (0..zip.len())
        .map(|i| {
            let mut f = zip.by_index(i).expect("entry");
            let mut data = Vec::new();
            f.read_to_end(&mut data).expect("read");
            (f.name().expect("a UTF-8 name").into_owned(), data)
        })
        .collect()
}

fn set_status(w: &World, species: &str, status: &str) {
    let tenant = w.tenant.to_string();
    w.hub.sql(|c| {
        c.execute(
            "UPDATE detections SET verification_status = ?1
             WHERE tenant_pk = (SELECT pk FROM tenants WHERE id = ?2) AND species_pk = (SELECT pk FROM species_labels WHERE species_code = ?3)",
            [status, &tenant, species],
        )
        .expect("status")
    });
}

#[tokio::test]
async fn detections_stream_as_csv_and_json_with_every_field_the_filters_and_only_the_team() {
    let w = world().await;
    let d = get(&w, "/export/detections?format=csv").await;
    assert_eq!(d.status, 200, "{}", String::from_utf8_lossy(&d.body));
    assert!(d.content_type.starts_with("text/csv"));
    let today = chrono::Local::now().date_naive();
    assert_eq!(d.disposition, format!("attachment; filename=\"birdhub-detections-beginning-{today}.csv\""));
    let (head, rows) = csv_rows(&d.body, true);
    assert_eq!(head, birdhub::usecases::exports::detections::HEADER);
    assert_eq!(rows.len(), 5, "the other team's robin is not there");
    let col = |name: &str| head.iter().position(|h| h == name).expect("column");
    let times: Vec<&str> = rows.iter().map(|r| r[col("detected_at")].as_str()).collect();
    assert!(times.windows(2).all(|p| p[0] <= p[1]), "oldest first: {times:?}");
    assert_eq!(rows[0][col("common_name")], "American Robin");
    assert_eq!(rows[0][col("translated_common_name")], "American Robin", "no label files: the stored name");
    assert_eq!(rows[0][col("language")], "en");
    assert_eq!(rows[0][col("tenant_id")], w.tenant.to_string());
    assert_eq!(rows[2][col("satellite_name")], "'=field", "a name a spreadsheet would run is defused");

    let cases = [
        (format!("satelliteId={}", w.field), 1),
        ("species=turdus-migratorius".into(), 2),
        ("speciesSearch=WARBLER".into(), 2),
        ("minConfidence=0.8".into(), 2),
        ("from=2026-05-02&to=2026-05-02".into(), 1),
        ("from=2026-05-03".into(), 2),
        ("verificationStatus=confirmed".into(), 0),
    ];
    for (q, n) in cases {
        let d = get(&w, &format!("/export/detections?format=json&{q}")).await;
        assert_eq!(d.status, 200, "{q}");
        assert!(d.content_type.starts_with("application/json"));
        let rows = d.json();
        assert_eq!(rows.as_array().map(Vec::len), Some(n), "{q}: {rows}");
    }
    let d = get(&w, "/export/detections?format=json&from=2026-05-01&to=2026-05-01").await;
    assert!(d.disposition.contains("birdhub-detections-2026-05-01-2026-05-01.json"), "{}", d.disposition);
    let first = &d.json()[0];
    for key in [
        "id",
        "confidence",
        "calibrated_confidence",
        "verification_status",
        "storage_key",
        "is_first_of_day",
        "is_first_for_team",
    ] {
        assert!(first.get(key).is_some(), "{key} in {first}");
    }
    let empty = get(&w, "/export/detections?format=json&species=none").await;
    assert_eq!(empty.json(), serde_json::json!([]));
    let empty_csv = get(&w, "/export/detections?species=none").await;
    assert_eq!(csv_rows(&empty_csv.body, true).0.len(), 25, "an empty CSV still has its header");
}

#[tokio::test]
async fn checklists_are_ebirds_19_columns_without_a_header_and_leave_out_rejected() {
    let w = world().await;
    set_status(&w, "setophaga-fusca", "rejected");
    let d = get(&w, "/export/checklist").await;
    assert_eq!(d.status, 200, "{}", String::from_utf8_lossy(&d.body));
    assert!(d.disposition.contains("birdhub-ebird-") && d.disposition.ends_with(".csv\""));
    let (_, rows) = csv_rows(&d.body, false);
    assert_eq!(rows.len(), 4, "one row per species and checklist; the rejected warbler is left out");
    assert!(rows.iter().all(|r| r.len() == 19));
    assert!(!String::from_utf8_lossy(&d.body).contains('"'));
    let robin = &rows[0];
    assert_eq!(&robin[..4], ["American Robin", "Turdus", "migratorius", "X"]);
    assert_eq!((robin[5].as_str(), robin[6].as_str(), robin[7].as_str()), ("garden", "45.500000", "-73.600000"));
    let local = chrono::DateTime::parse_from_rfc3339("2026-05-01T05:00:00Z").expect("t").with_timezone(&montreal());
    assert_eq!(robin[8], local.format("%m/%d/%Y").to_string());
    assert_eq!(robin[9], local.format("%H:%M").to_string());
    assert_eq!((robin[12].as_str(), robin[13].as_str(), robin[15].as_str()), ("Stationary", "1", "N"));
    assert!(robin[14].parse::<u32>().is_ok_and(|m| m >= 60), "a day from 05:00 to past 06:00: {}", robin[14]);
    // Garden on May 1 (robin, wren), field on May 2, garden on May 3: three checklists.
    let lists: std::collections::BTreeSet<(String, String)> =
        rows.iter().map(|r| (r[5].clone(), r[8].clone())).collect();
    assert_eq!(lists.len(), 3);
    assert!(rows.iter().all(|r| r[0] != "Blackburnian Warbler"));

    set_status(&w, "leiothlypis-peregrina", "confirmed");
    let (_, only) = csv_rows(&get(&w, "/export/checklist?verifiedOnly=true&allReported=true").await.body, false);
    assert_eq!(only.len(), 1);
    assert_eq!((only[0][0].as_str(), only[0][15].as_str()), ("Tennessee Warbler", "Y"));
}

/// `n` detections of made-up species per satellite, on one chunk each, in one transaction.
async fn many_species(w: &World, sats: &[SatelliteId], n: usize) {
    for (i, &sat) in sats.iter().enumerate() {
        let at = format!("2026-06-{:02}T05:00:00.000Z", i + 1);
        let chunk = seed::chunk(&w.hub, w.tenant, sat, &at).await;
        let tenant = w.tenant;
        let now = w.hub.state().clock.stamp();
        w.hub
            .state()
            .store
            .call(move |c| {
                let tx = c.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
                for s in 0..n {
                    let new = store::detections::NewDetection {
                        tenant_id: tenant,
                        satellite_id: sat,
                        satellite_name: String::new(),
                        audio_chunk_id: chunk,
                        model_id: "test".into(),
                        species_code: format!("sp{s}"),
                        scientific_name: format!("Avis exemplaris{s}"),
                        common_name: format!("Example Bird Number {s} of a Long Made Up List"),
                        confidence: 0.9,
                        detected_at: at.parse().expect("t"),
                        start_ms: 0,
                        end_ms: 3000,
                        expected_here: None,
                    };
                    birdhub::usecases::detections::record(&tx, &new, now)?;
                }
                tx.commit()?;
                Ok(())
            })
            .await
            .expect("detections");
    }
}

#[tokio::test]
async fn a_checklist_export_over_1_mb_is_a_zip_of_files_under_1_mb_with_whole_checklists() {
    let w = world().await;
    many_species(&w, &[w.garden, w.field, w.garden, w.field, w.garden, w.field], 1500).await;
    let d = get(&w, "/export/checklist?from=2026-06-01&to=2026-06-30").await;
    assert_eq!(d.status, 200, "{}", String::from_utf8_lossy(&d.body));
    assert_eq!(d.content_type, "application/zip");
    assert!(d.disposition.ends_with(".zip\""));
    let files = zip_files(&d.body);
    assert!(files.len() >= 2, "{} files", files.len());
    let mut seen = std::collections::BTreeMap::new();
    for (name, data) in &files {
        assert!(name.ends_with(".csv"));
        assert!(data.len() <= 1_000_000, "{name}: {} bytes", data.len());
        let (_, rows) = csv_rows(data, false);
        assert!(rows.iter().all(|r| r.len() == 19));
        for r in rows {
            // A checklist (place and date) lives in one file only.
            let file = seen.entry((r[5].clone(), r[8].clone())).or_insert_with(|| name.clone());
            assert_eq!(file, name);
        }
    }
    assert_eq!(seen.len(), 6);
}

#[tokio::test]
async fn observations_have_inaturalists_header_and_a_file_it_would_refuse_is_a_422() {
    let w = world().await;
    set_status(&w, "setophaga-fusca", "rejected");
    let d = get(&w, "/export/observation?geoprivacy=obscured").await;
    assert_eq!(d.status, 200, "{}", String::from_utf8_lossy(&d.body));
    assert!(d.disposition.contains("birdhub-inaturalist-"));
    let (head, rows) = csv_rows(&d.body, true);
    assert_eq!(head, birdhub::domain::exports::inaturalist::HEADER);
    assert_eq!(rows.len(), 4);
    let robin = &rows[0];
    assert_eq!(robin[0], "Turdus migratorius");
    // The station's local time with its offset.
    let local = chrono::DateTime::parse_from_rfc3339("2026-05-01T05:00:00Z").expect("t").with_timezone(&montreal());
    assert_eq!(robin[1], local.format("%Y-%m-%d %H:%M %:z").to_string());
    assert!(robin[2].contains("no public link"), "the test hub has no public address: {}", robin[2]);
    assert_eq!((robin[3].as_str(), robin[4].as_str(), robin[5].as_str()), ("garden", "45.500000", "-73.600000"));
    assert_eq!((robin[6].as_str(), robin[7].as_str()), ("birdhub,audio", "obscured"));

    // A satellite without a location makes rows iNaturalist would refuse: the whole file is.
    let nowhere = seed::satellite(&w.hub, w.tenant, "nowhere").await;
    seed::heard(&w.hub, w.tenant, nowhere, "2026-05-04T05:00:00.000Z", seed::WREN, 0.9).await;
    let refused = get(&w, "/export/observation").await;
    assert_eq!(refused.status, 422);
    let body = refused.json();
    assert_eq!(body["code"], "observation_rows_invalid");
    assert!(body["message"].as_str().is_some_and(|m| m.contains("line 6") && m.contains("latitude")), "{body}");
    let each = get(&w, "/export/observation?groupBy=detection&to=2026-05-03").await;
    assert_eq!(csv_rows(&each.body, true).1.len(), 4);
}

#[tokio::test]
async fn the_recording_bundle_zips_the_wavs_with_xeno_canto_metadata_and_names_missing_audio() {
    let w = world().await;
    // One recording's audio is gone from the disk.
    let key: String = w.hub.sql(|c| {
        c.query_row(
            &format!(
                "SELECT {} FROM detections d JOIN audio_chunks c ON c.pk = d.chunk_pk WHERE d.species_pk = (SELECT pk FROM species_labels WHERE species_code = 'troglodytes-aedon')",
                birdhub::store::chunks::key_sql("c")
            ),
            [],
            |r| r.get(0),
        )
        .expect("key")
    });
    std::fs::remove_file(w.hub.state().objects.path_of(&key).expect("path")).expect("remove");
    let d = get(&w, "/export/recording").await;
    assert_eq!(d.status, 200, "{}", String::from_utf8_lossy(&d.body));
    assert_eq!(d.content_type, "application/zip");
    let files = zip_files(&d.body);
    assert_eq!(files[0].0, "metadata.csv");
    let wavs: Vec<&(String, Vec<u8>)> = files.iter().filter(|(n, _)| n.ends_with(".wav")).collect();
    assert_eq!(wavs.len(), 4);
    assert!(wavs.iter().all(|(_, b)| b.starts_with(b"RIFF")));
    let (head, rows) = csv_rows(&files[0].1, true);
    assert_eq!(head, birdhub::domain::exports::xenocanto::COLUMNS);
    assert_eq!(rows.len(), 5);
    let col = |name: &str| head.iter().position(|h| h == name).expect("column");
    let robin = &rows[0];
    assert_eq!((robin[col("gen")].as_str(), robin[col("sp")].as_str()), ("Turdus", "migratorius"));
    assert_eq!(robin[col("en")], "American Robin");
    assert_eq!(robin[col("rec")], "owner");
    assert_eq!((robin[col("lat")].as_str(), robin[col("lon")].as_str()), ("45.500000", "-73.600000"));
    assert!(robin[col("rmk")].contains("confidence 0.91"), "{}", robin[col("rmk")]);
    assert!(robin[col("lic")].starts_with("https://creativecommons.org/licenses/"));
    assert!(wavs.iter().any(|(n, _)| *n == robin[col("file-name")]));
    let wren = rows.iter().find(|r| r[col("en")] == "House Wren").expect("wren row");
    assert_eq!(wren[col("file-name")], "");
    assert!(wren[col("rmk")].contains("missing"));
}

#[tokio::test]
async fn bad_input_is_a_clear_4xx_and_viewers_cannot_export() {
    let w = world().await;
    let other = w.hub.user("stranger@example.org", false).await;
    let theirs = seed::satellite(&w.hub, other.tenant, "theirs2").await;
    let cases: Vec<(String, u16, &str)> = vec![
        ("/export/detections?format=xml".into(), 422, "invalid_format"),
        ("/export/detections?from=2026-05-03&to=2026-05-01".into(), 422, "invalid_range"),
        ("/export/checklist?days=0".into(), 422, "invalid_range"),
        ("/export/observation?days=3&from=2026-05-01".into(), 422, "invalid_range"),
        ("/export/detections?from=yesterday".into(), 400, "invalid_query"),
        ("/export/detections?minConfidence=2".into(), 422, "invalid_filter"),
        ("/export/detections?verificationStatus=maybe".into(), 422, "invalid_filter"),
        ("/export/detections?lang=xx".into(), 422, "unknown_language"),
        (format!("/export/detections?satelliteId={}", SatelliteId::new()), 404, "satellite_not_found"),
        (format!("/export/recording?satelliteId={theirs}"), 404, "satellite_not_found"),
        ("/export/checklist?groupBy=detection".into(), 422, "invalid_filter"),
        ("/export/checklist?groupBy=week".into(), 400, "invalid_query"),
        ("/export/observation?geoprivacy=public".into(), 400, "invalid_query"),
        ("/export/checklist?verifiedOnly=true&verificationStatus=rejected".into(), 422, "invalid_filter"),
    ];
    for (path, status, code) in cases {
        let d = get(&w, &path).await;
        assert_eq!(d.status, status, "{path}: {}", String::from_utf8_lossy(&d.body));
        assert_eq!(d.json()["code"], code, "{path}");
    }
    let viewer = w.hub.member_of("viewer@example.org", w.tenant, birdhub::domain::Role::Viewer).await;
    let token = w.hub.token(&viewer.email).await;
    let d = get_as(&w.hub, &token, "/export/detections").await;
    assert_eq!(d.status, 403);
}

#[tokio::test]
async fn render_makes_whole_files_for_scheduled_exports() {
    use birdhub::usecases::exports::{self, Filters, Format};
    let w = world().await;
    let s = w.hub.state();
    let env = exports::Env { store: s.store.clone(), names: s.names.clone(), share: None };
    let filters: Filters =
        serde_json::from_str(r#"{"from":"2026-05-01","to":"2026-05-02","species":"turdus-migratorius"}"#)
            .expect("filters as a schedule stores them");
    let now = s.clock.now();
    let csv = exports::render(&env, w.tenant, "en", Format::Csv, &filters, now).await.expect("csv");
    assert_eq!(csv.file_name, "birdhub-detections-2026-05-01-2026-05-02.csv");
    assert_eq!(csv_rows(&csv.bytes, true).1.len(), 2);
    let json = exports::render(&env, w.tenant, "en", Format::Json, &filters, now).await.expect("json");
    assert_eq!(serde_json::from_slice::<Value>(&json.bytes).expect("json").as_array().map(Vec::len), Some(2));
    let ebird = exports::render(&env, w.tenant, "en", Format::Checklist, &filters, now).await.expect("ebird");
    assert_eq!(csv_rows(&ebird.bytes, false).1.len(), 2);
    let inat = exports::render(&env, w.tenant, "en", Format::Observation, &filters, now).await.expect("inat");
    assert_eq!(csv_rows(&inat.bytes, true).1.len(), 2);
    let bad: Filters = serde_json::from_str(r#"{"days":0}"#).expect("parses");
    assert!(exports::render(&env, w.tenant, "en", Format::Csv, &bad, now).await.is_err());
}

/// `path` fetched the way a browser asks for it (`Accept-Encoding: gzip`), decoded when the hub
/// compressed it; also whether it was compressed.
async fn get_gzip(w: &World, path: &str) -> (Download, bool) {
    let resp = reqwest::Client::new()
        .get(w.hub.api(path))
        .bearer_auth(&w.token)
        .header("accept-encoding", "gzip, deflate, br")
        .send()
        .await
        .expect("request");
    let header = |n: &str| resp.headers().get(n).and_then(|v| v.to_str().ok()).unwrap_or("").to_owned();
    let (status, content_type, disposition, encoding) =
        (resp.status().as_u16(), header("content-type"), header("content-disposition"), header("content-encoding"));
    let raw = resp.bytes().await.expect("the whole body arrives").to_vec();
    let gzipped = encoding == "gzip";
    let body = if gzipped {
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(&raw[..]).read_to_end(&mut out).expect("a complete gzip stream");
        out
    } else {
        raw
    };
    (Download { status, content_type, disposition, body }, gzipped)
}

#[tokio::test]
async fn every_export_downloads_whole_when_the_client_accepts_gzip_as_browsers_do() {
    let w = world().await;
    // (path, whether it is a ZIP)
    let cases = [
        ("/export/detections?format=csv", false),
        ("/export/detections?format=json", false),
        ("/export/checklist", false),
        ("/export/observation?geoprivacy=obscured", false),
        ("/export/recording", true),
    ];
    for (path, zipped) in cases {
        let plain = get(&w, path).await;
        assert_eq!(plain.status, 200, "{path}: {}", String::from_utf8_lossy(&plain.body));
        let (gz, compressed) = get_gzip(&w, path).await;
        assert_eq!(gz.status, 200, "{path}");
        assert_eq!((&gz.content_type, &gz.disposition), (&plain.content_type, &plain.disposition), "{path}");
        assert!(!gz.body.is_empty(), "{path} arrived empty with gzip");
        if zipped {
            assert!(!compressed, "{path}: a ZIP is not compressed twice");
            assert_eq!(zip_files(&gz.body), zip_files(&plain.body), "{path}: the same files");
        } else {
            assert!(compressed, "{path} was sent gzip");
            assert_eq!(gz.body, plain.body, "{path}: the same bytes, gzip or not");
        }
    }
    // The rows themselves, as the other tests read them.
    let (csv, _) = get_gzip(&w, "/export/detections?format=csv").await;
    let (head, rows) = csv_rows(&csv.body, true);
    assert_eq!((head, rows.len()), (birdhub::usecases::exports::detections::HEADER.map(str::to_owned).to_vec(), 5));
    let (json, _) = get_gzip(&w, "/export/detections?format=json").await;
    assert_eq!(json.json().as_array().map(Vec::len), Some(5));
    let (ebird, _) = get_gzip(&w, "/export/checklist").await;
    assert!(!csv_rows(&ebird.body, false).1.is_empty());
    let (recording, _) = get_gzip(&w, "/export/recording").await;
    assert_eq!(zip_files(&recording.body)[0].0, "metadata.csv");
}
