//! An imported station looks like history, not a broken device (issue 51, defect 13), in a real
//! browser: a BirdNET-Pi `birds.db` uploaded alone is placed where its rows say (sun times on its
//! page), its page offers no update and no schedule and never says "recording now", Live and the
//! public page do not count it among the stations listening, and a satellite that never connected
//! does not claim to be recording either.

mod common;

use common::{
    PASSWORD,
    browser::Browser,
    imports,
    peers::{self, PiEra, PiRow},
};

const FITS: &str = "return document.documentElement.scrollWidth <= window.innerWidth;";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_imported_station_is_history_and_a_never_started_one_is_not_recording() {
    let hub = common::spawn_hub_with(common::with_model).await;
    let owner = hub.user("owner@example.org", false).await;
    let api = hub.login("owner@example.org").await;
    let garden = common::seed::satellite(&hub, owner.tenant, "Garden").await;
    let idle = common::seed::satellite(&hub, owner.tenant, "Never started").await;
    hub.sql(|c| {
        let now = chrono::Utc::now().format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string();
        c.execute("UPDATE satellites SET last_seen_at = ?2 WHERE id = ?1", rusqlite::params![garden, now])
            .expect("seen")
    });
    let (status, _) = api.put("/settings/tenant", serde_json::json!({ "public_page_enabled": true })).await;
    assert!(status.is_success());

    let tmp = tempfile::tempdir().expect("tmp");
    let rows = [
        PiRow::new("2026-05-01", "06:12:03", "Turdus migratorius", "American Robin", 0.87, None),
        PiRow::new("2026-05-02", "07:00:00", "Cardinalis cardinalis", "Northern Cardinal", 0.9, None),
    ];
    let db = tmp.path().join("birds.db");
    peers::pi_database(&db, PiEra::Nachtzuster2024, &rows, (40.7128, -74.006));
    let fields = [("kind", "birdnet-pi"), ("name", "Old Pi"), ("time_zone", "America/New_York")];
    let (_, job) = imports::upload(&hub, &api, &db, &fields).await;
    let job = imports::finished(&api, job["id"].as_str().expect("id")).await;
    assert_eq!(job["status"], "done", "{job}");
    let old = job["satellite_id"].as_str().expect("satellite").to_owned();

    let b = Browser::start(hub.http_addr.port(), "imported-station").await;
    b.sign_in(&owner.email, PASSWORD, None).await;

    // Live counts the two devices, not the history.
    b.goto("/").await;
    let today = b.text("#today").await;
    assert!(today.contains("1 of 2"), "one of the two devices is online: {today}");
    let sats = b.text("#sats").await;
    assert!(sats.contains("Old Pi") && sats.contains("imported history"), "{sats}");
    b.shot("live").await;

    // The imported station's page: placed, sun times, no update, no schedule, no "recording now".
    b.goto(&format!("/satellites/{old}")).await;
    let head = b.text("#sat").await;
    assert!(!head.contains("not set"), "placed where its rows say: {head}");
    assert!(head.contains("40.71") && head.contains("74.00"), "{head}");
    assert!(head.contains("imported history"), "says what it is: {head}");
    assert!(!head.contains("offline"), "{head}");
    assert!(!b.has("#act-update").await, "no update is offered to history");
    let page = b.text("main").await;
    for wrong in ["Request update", "recording now", "Fetch logs", "Listen live", "Rotate API key"] {
        assert!(!page.contains(wrong), "{wrong:?} on an imported station's page");
    }
    assert!(page.contains("Sunrise") && page.contains("Sunset"), "sun times from its position: {page}");
    b.shot("imported").await;
    for width in [360, 1280] {
        b.client.set_window_size(width, 900).await.expect("resize");
        assert_eq!(b.js(FITS).await, true, "the page fits {width} px");
    }
    b.client.set_window_size(1280, 900).await.expect("resize");

    // A satellite that never connected does not claim to record.
    b.goto(&format!("/satellites/{idle}")).await;
    let badge = b.text("#schedule .badge").await;
    assert_ne!(badge.trim(), "recording now", "a satellite that never connected records nothing");
    assert!(b.text("main").await.contains("never connected"), "{badge}");
    b.shot("never-started").await;

    // The satellites list says the same.
    b.goto("/satellites").await;
    let list = b.text("main").await;
    assert!(list.contains("imported history"), "{list}");
    assert!(list.contains("1 of 2"), "{list}");
    b.shot("list").await;

    // The public page: the history is no station that is offline.
    b.goto(&format!("/public/{}", owner.tenant)).await;
    let public = b.text("main").await;
    assert!(public.contains("1 of 2"), "two stations listen, one is: {public}");
    assert!(public.contains("imported history"), "{public}");
    b.shot("public").await;
    b.assert_no_js_errors().await;
    b.close().await;
}

/// Whether the element matched by `css` is shown (laid out) on the page.
fn shown(css: &str) -> String {
    format!("const e = document.querySelector('{css}'); return !!e && e.getClientRects().length > 0;")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_import_form_shows_only_the_chosen_target_and_a_dry_run_says_plainly_what_clips_lack() {
    let hub = common::spawn_hub_with(common::with_model).await;
    let owner = hub.user("owner@example.org", false).await;
    common::seed::satellite(&hub, owner.tenant, "Garden").await;
    let tmp = tempfile::tempdir().expect("tmp");
    let rows = [
        PiRow::new("2026-05-01", "06:12:03", "Turdus migratorius", "American Robin", 0.87, None),
        PiRow::new("2026-05-02", "07:00:00", "Cardinalis cardinalis", "Northern Cardinal", 0.9, None),
    ];
    let db = tmp.path().join("birds.db");
    peers::pi_database(&db, PiEra::Nachtzuster2024, &rows, (40.7128, -74.006));

    let b = Browser::start(hub.http_addr.port(), "import-form").await;
    b.sign_in(&owner.email, PASSWORD, None).await;
    b.goto("/imports").await;
    assert_eq!(b.js(&shown("#import-name")).await, true, "a new satellite's name");
    assert_eq!(b.js(&shown("#import-satellite")).await, false, "no satellite to choose for a new one");
    b.click("input[name=target][value=existing]").await;
    assert_eq!(b.js(&shown("#import-name")).await, false, "no name for an existing satellite");
    assert_eq!(b.js(&shown("#import-satellite")).await, true, "the team's satellites to choose from");
    b.shot("existing").await;
    b.click("input[name=target][value=new]").await;
    assert_eq!(b.js(&shown("#import-name")).await, true);

    b.find("#import-file").await.send_keys(&db.display().to_string()).await.expect("choose the file");
    b.fill("#import-zone", "America/New_York").await;
    b.click("#import-dry").await;
    b.click("#import-submit").await;
    assert!(
        b.wait_until("return !!document.querySelector('#import-result .import-result');", 90).await,
        "the dry run finishes: {}",
        b.text("#import-card").await
    );
    let result = b.text("#import-result").await;
    assert!(
        result.contains(
            "2 clips the old station lists were not found: their detections would be imported without sound."
        ),
        "{result}"
    );
    assert!(!result.contains("came without audio") && !result.contains("missing on the station"), "{result}");
    b.shot("dry-run").await;
    b.assert_no_js_errors().await;
    b.close().await;
}
