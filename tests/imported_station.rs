//! An imported station is history, not a device (issue 51, defect 13), over HTTP: a `birds.db`
//! uploaded without its `birdnet.conf` still puts the satellite where its rows say it stood, and
//! `GET /satellites` says which satellites are only imported history (`history_only`), and its
//! `status=offline` filter leaves them out.

mod common;

use common::{
    imports,
    peers::{self, PiEra, PiRow},
};
use serde_json::Value;

/// A hand-made `birds.db` whose every row carries New York's position, and no `birdnet.conf`.
pub fn birds_db(dir: &std::path::Path) -> std::path::PathBuf {
    let rows = [
        PiRow::new("2026-05-01", "06:12:03", "Turdus migratorius", "American Robin", 0.87, None),
        PiRow::new("2026-05-02", "07:00:00", "Cardinalis cardinalis", "Northern Cardinal", 0.9, None),
    ];
    let db = dir.join("birds.db");
    peers::pi_database(&db, PiEra::Nachtzuster2024, &rows, (40.7128, -74.006));
    db
}

fn named<'a>(list: &'a Value, name: &str) -> &'a Value {
    list["satellites"].as_array().and_then(|l| l.iter().find(|s| s["name"] == name)).expect("listed")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_birds_db_alone_places_its_station_and_the_list_says_it_is_history() {
    let hub = common::spawn_hub_with(common::with_model).await;
    let user = hub.user("owner@birdhub.test", false).await;
    let api = hub.login("owner@birdhub.test").await;
    common::seed::satellite(&hub, user.tenant, "Garden").await;
    let tmp = tempfile::tempdir().expect("tmp");
    let db = birds_db(tmp.path());

    let fields = [("kind", "birdnet-pi"), ("name", "Old Pi"), ("time_zone", "America/New_York")];
    let (status, job) = imports::upload(&hub, &api, &db, &fields).await;
    assert_eq!(status, reqwest::StatusCode::ACCEPTED, "{job}");
    let job = imports::finished(&api, job["id"].as_str().expect("id")).await;
    assert_eq!(job["status"], "done", "{job}");

    let (_, list) = api.get("/satellites").await;
    let old = named(&list, "Old Pi");
    assert_eq!((old["latitude"].as_f64(), old["longitude"].as_f64()), (Some(40.7128), Some(-74.006)), "{old}");
    assert_eq!(old["history_only"], true, "{old}");
    assert_eq!(old["is_online"], false);
    assert_eq!(named(&list, "Garden")["history_only"], false, "a device is not history");
    let (_, one) = api.get(&format!("/satellites/{}", old["id"].as_str().expect("id"))).await;
    assert_eq!(one["history_only"], true, "{one}");
    assert_eq!(one["time_zone"], "America/New_York", "{one}");

    // History is neither online nor offline: the offline filter lists the devices that are.
    let names = |list: &Value| -> Vec<String> {
        list["satellites"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|s| s["name"].as_str().map(str::to_owned))
            .collect()
    };
    let (_, offline) = api.get("/satellites?status=offline").await;
    assert_eq!(names(&offline), ["Garden"], "{offline}");
    assert_eq!(offline["total"], 1);
    let (_, online) = api.get("/satellites?status=online").await;
    assert!(names(&online).is_empty(), "{online}");
}
