//! A hub without the classifier model answers its species routes with 503 `model_unavailable`
//! on every request; the log says so once at WARN, not with an ERROR line per request, also when
//! the dashboard's pages make those requests in process.

mod common;

use std::{
    io::Write,
    sync::{Arc, Mutex, OnceLock},
};

use common::seed;
use serde_json::json;

/// Everything logged at WARN and above in this test binary (one global subscriber).
fn captured() -> Arc<Mutex<Vec<u8>>> {
    static LOG: OnceLock<Arc<Mutex<Vec<u8>>>> = OnceLock::new();
    LOG.get_or_init(|| {
        let log = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&log);
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::WARN)
            .with_ansi(false)
            .with_writer(move || Sink(Arc::clone(&sink)))
            .finish();
        tracing::subscriber::set_global_default(subscriber).expect("the only subscriber");
        log
    })
    .clone()
}

struct Sink(Arc<Mutex<Vec<u8>>>);

impl Write for Sink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("log").extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn lines(log: &Arc<Mutex<Vec<u8>>>, level: &str) -> Vec<String> {
    let text = String::from_utf8_lossy(&log.lock().expect("log")).into_owned();
    text.lines().filter(|l| l.contains(level)).map(str::to_owned).collect()
}

#[tokio::test]
async fn a_missing_model_is_one_warning_not_an_error_per_request() {
    let log = captured();
    let hub = common::spawn_hub().await;
    let owner = hub.user("owner@example.org", false).await;
    let sat = seed::satellite(&hub, owner.tenant, "garden").await;
    seed::heard(&hub, owner.tenant, sat, "2026-05-14T06:00:00.000Z", seed::ROBIN, 0.9).await;
    let api = hub.login(&owner.email).await;
    let before = lines(&log, "WARN").len();

    for _ in 0..3 {
        let (status, body) = api.get("/species/translate?code=turdus_migratorius&lang=de").await;
        assert_eq!((status.as_u16(), body["code"].as_str()), (503, Some("model_unavailable")), "{body}");
        let (status, _) = api.post("/species/images", json!({ "codes": ["turdus_migratorius"] })).await;
        assert_eq!(status, 503);
        // Pages ask for pictures in process and still render.
        for page in ["/", "/species", &format!("/species/{}", seed::ROBIN.0)] {
            let r = api.client.get(format!("{}{page}", hub.base_url)).send().await.expect("page");
            assert_eq!(r.status(), 200, "{page} renders without the model");
        }
    }

    let warned: Vec<String> =
        lines(&log, "WARN").into_iter().skip(before).filter(|l| l.contains("model_unavailable")).collect();
    assert_eq!(warned.len(), 1, "one warning: {warned:#?}");
    assert!(warned[0].contains("birdhub model fetch"), "it says how to install the model: {}", warned[0]);
    let errors = lines(&log, "ERROR");
    assert!(errors.is_empty(), "no error lines for a missing model: {errors:#?}");
}
