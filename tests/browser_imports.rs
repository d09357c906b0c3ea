//! "Import a station" in a real browser (issue 38): a team admin goes from Satellites to the
//! import page, uploads a BirdNET-Pi backup tar (made as Nachtzuster's backup makes it, with MP3
//! clips cut from the real recording), watches the job finish, reads the result in words and opens
//! the new satellite's page, which shows the imported history: its species and their counts. The
//! pages fit a 360 px phone and a desktop.

mod common;

use common::{
    PASSWORD,
    browser::Browser,
    peers::{self, PiEra, PiRow},
    peers_go,
};

const FITS: &str = "return document.documentElement.scrollWidth <= window.innerWidth;";

/// A BirdNET-Pi station's backup: two Eurasian Blackbirds and a Great Tit, with their clips.
fn pi_backup(dir: &std::path::Path) -> std::path::PathBuf {
    let station = dir.join("station");
    std::fs::create_dir_all(&station).expect("station");
    let rows = [
        PiRow::new("2026-05-01", "06:12:03", "Turdus merula", "Eurasian Blackbird", 0.87, None),
        PiRow::new("2026-05-01", "06:14:00", "Turdus merula", "Eurasian Blackbird", 0.8, None),
        PiRow::new("2026-05-02", "07:00:00", "Parus major", "Great Tit", 0.9, None),
    ];
    peers::pi_database(&station.join("birds.db"), PiEra::Nachtzuster2024, &rows, (52.52, 13.405));
    peers::birdnet_conf(&station.join("birdnet.conf"), "Old Pi", (52.52, 13.405));
    peers::pi_clips(&station, &rows.iter().collect::<Vec<_>>());
    let tar = dir.join("birdnet-pi-backup.tar");
    peers::pi_backup(&station, &tar);
    tar
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_admin_uploads_a_birdnet_pi_backup_and_finds_its_history_on_the_satellite_page() {
    let hub = common::spawn_hub_with(common::with_model).await;
    let owner = hub.user("owner@example.org", false).await;
    let tmp = tempfile::tempdir().expect("tmp");
    let tar = pi_backup(tmp.path());

    let b = Browser::start(hub.http_addr.port(), "imports").await;
    b.sign_in(&owner.email, PASSWORD, None).await;
    b.goto("/satellites").await;
    b.click("#import-station").await;
    b.find("#import-form").await;
    assert_eq!(b.path().await, "/imports");
    let zone = b.js("return document.getElementById('import-zone').value").await;
    assert!(zone.as_str().is_some_and(|z| !z.is_empty()), "the team's zone is filled in: {zone}");
    b.shot("form").await;
    for width in [360, 1280] {
        b.client.set_window_size(width, 900).await.expect("resize");
        assert_eq!(b.js(FITS).await, true, "the import page fits {width} px");
    }
    b.client.set_window_size(1280, 900).await.expect("resize");

    b.find("#import-file").await.send_keys(&tar.display().to_string()).await.expect("choose the file");
    b.js("document.getElementById('import-kind').value = 'birdnet-pi';").await;
    b.fill("#import-name", "Garden Pi").await;
    b.fill("#import-zone", "Europe/Berlin").await;
    b.click("#import-submit").await;
    assert!(
        b.wait_until("return !!document.querySelector('#import-result .import-result');", 90).await,
        "the job finishes and its result shows: {}",
        b.text("#import-progress").await
    );
    let result = b.text("#import-result").await;
    assert!(result.contains("Added 3 detections to Garden Pi."), "{result}");
    assert!(result.contains("3 clips copied."), "{result}");
    assert!(result.contains("Times read in Europe/Berlin."), "{result}");
    assert!(!result.contains("imports/uploads"), "no paths or ids: {result}");
    b.shot("done").await;
    for width in [360, 1280] {
        b.client.set_window_size(width, 900).await.expect("resize");
        assert_eq!(b.js(FITS).await, true, "the result fits {width} px");
    }
    b.client.set_window_size(1280, 900).await.expect("resize");

    b.click("#import-result .import-links a.button").await;
    let history = b.text("#sat-history").await;
    assert!(b.path().await.starts_with("/satellites/"));
    assert!(history.contains("3 detections"), "{history}");
    assert!(history.contains("Eurasian Blackbird") && history.contains("Great Tit"), "its species: {history}");
    let counts = b
        .js("return [...document.querySelectorAll('#sat-history .history-species li')].map(li => li.querySelector('.common').textContent + ' ' + li.querySelector('.count').textContent);")
        .await;
    assert_eq!(counts, serde_json::json!(["Eurasian Blackbird 2", "Great Tit 1"]));
    b.shot("satellite").await;
    for width in [360, 1280] {
        b.client.set_window_size(width, 900).await.expect("resize");
        assert_eq!(b.js(FITS).await, true, "the satellite page fits {width} px");
    }

    // The import is listed on the page afterwards, by its file name.
    b.goto("/imports").await;
    let past = b.text("#import-history").await;
    assert!(past.contains("birdnet-pi-backup.tar") && past.contains("finished"), "{past}");
    b.assert_no_js_errors().await;
    b.close().await;
}

/// Chooses `file` in the form, as station `kind`, into a new satellite, and sends it.
async fn send(b: &Browser, file: &std::path::Path, kind: &str) {
    b.goto("/imports").await;
    b.find("#import-file").await.send_keys(&file.display().to_string()).await.expect("choose the file");
    b.js(&format!("document.getElementById('import-kind').value = '{kind}'; return true;")).await;
    b.fill("#import-zone", "Europe/Berlin").await;
    b.click("#import-submit").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_file_is_named_in_words_and_the_other_peers_database_offers_the_switch() {
    let hub = common::spawn_hub_with(common::with_model).await;
    let owner = hub.user("owner@example.org", false).await;
    let tmp = tempfile::tempdir().expect("tmp");
    let b = Browser::start(hub.http_addr.port(), "imports-wrong").await;
    b.sign_in(&owner.email, PASSWORD, None).await;
    let error = "const e = document.getElementById('import-error'); return !e.hidden && e.textContent.length > 0;";

    // A text file with a long name: named as chosen, no path, no jargon, and the page still fits.
    let name = "notes-kept-on-the-old-garden-station-since-2019-before-we-moved.txt";
    let notes = tmp.path().join(name);
    std::fs::write(&notes, "Blackbird at dawn, wren at noon.\n").expect("notes");
    send(&b, &notes, "birdnet-pi").await;
    assert!(b.wait_until(error, 30).await, "the refusal shows");
    let said = b.text("#import-error").await;
    assert!(said.contains(&format!("{name} is not a BirdNET-Pi database (birds.db)")), "{said}");
    for jargon in ["imports/", "uploads", "unknown schema", "SQLite", "expected", "found"] {
        assert!(!said.contains(jargon), "{jargon:?} in {said}");
    }
    assert!(!b.has("#import-switch").await, "a text file is no other station's database");
    b.shot("text-file").await;
    for width in [360, 390, 1280] {
        b.client.set_window_size(width, 900).await.expect("resize");
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        assert_eq!(b.js(FITS).await, true, "the refusal fits {width} px");
    }
    b.client.set_window_size(1280, 900).await.expect("resize");

    // BirdNET-Go's database sent as BirdNET-Pi's: said so, and one click imports it as BirdNET-Go.
    let go = peers_go::legacy_station(&tmp.path().join("go"), "");
    send(&b, &go, "birdnet-pi").await;
    assert!(b.wait_until(error, 30).await, "the refusal shows");
    let said = b.text("#import-error").await;
    assert!(said.contains("birdnet.db is a BirdNET-Go database, not a BirdNET-Pi one"), "{said}");
    assert!(b.text("#import-switch").await.contains("Import it as BirdNET-Go"), "the switch is offered");
    b.shot("other-peer").await;
    b.click("#import-switch").await;
    assert_eq!(b.js("return document.getElementById('import-kind').value;").await, "birdnet-go");
    assert!(
        b.wait_until("return !!document.querySelector('#import-result .import-result');", 90).await,
        "the import runs as BirdNET-Go: {}",
        b.text("#import-card").await
    );
    let result = b.text("#import-result").await;
    assert!(result.contains("Added "), "{result}");

    // A BirdNET-Pi database with a row whose date cannot be read: that row, in words.
    let station = tmp.path().join("pi");
    std::fs::create_dir_all(&station).expect("station");
    let db = station.join("birds.db");
    let rows = [PiRow::new("2026-05-01", "06:12:03", "Turdus merula", "Eurasian Blackbird", 0.87, None)];
    peers::pi_database(&db, PiEra::Nachtzuster2024, &rows, (52.52, 13.405));
    peers::pi_corrupt_row(&db, "2026-13-45");
    send(&b, &db, "birdnet-pi").await;
    assert!(
        b.wait_until("return !!document.querySelector('#import-result .import-result');", 90).await,
        "the job finishes: {}",
        b.text("#import-card").await
    );
    b.click("#import-result details summary").await;
    let result = b.text("#import-result").await;
    assert!(
        result.contains("row 2 of the old database: the date \u{201c}2026-13-45\u{201d} cannot be read"),
        "{result}"
    );
    assert!(!result.contains("rowid") && !result.contains("bad date"), "{result}");
    b.shot("corrupt-row").await;
    b.assert_no_js_errors().await;
    b.close().await;
}
