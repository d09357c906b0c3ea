//! Species images (SPEC 4.9) against a real local picture source (`common::images`): statuses
//! per code, the fetcher's checks (image bytes, size cap, timeout), retries with backoff on the
//! hub's clock, the proxy's caching headers, the platform admin's stats, clear and retry, and
//! a hub with no source. Whatever the source does, the hub never answers 5xx.

mod common;

use std::time::Duration;

use common::{Api, TestHub, assert_error, images::ImageSource};
use reqwest::{StatusCode, header};
use serde_json::{Value, json};

const ALL: [&str; 8] = [
    "turdus_migratorius",
    "cardinalis_cardinalis",
    "cyanocitta_cristata",
    "sitta_carolinensis",
    "poecile_atricapillus",
    "melospiza_melodia",
    "dryobates_pubescens",
    "zenaida_macroura",
];

/// A hub that knows the source's species, downloading from `source` (or from nowhere).
async fn hub(source: Option<&ImageSource>) -> (TestHub, tempfile::TempDir) {
    hub_with_template(source.map(ImageSource::template)).await
}

async fn hub_with_template(template: Option<String>) -> (TestHub, tempfile::TempDir) {
    let labels = common::images::label_dir();
    let model_dir = labels.path().display().to_string();
    let hub = common::spawn_hub_with(move |s| {
        s.inference.model_dir = model_dir;
        s.species_images.source_url = template.unwrap_or_default();
        s.species_images.max_bytes = 64 * 1024;
        s.species_images.timeout_secs = 1;
        s.species_images.max_attempts = 3;
    })
    .await;
    (hub, labels)
}

/// POST /species/images, which must answer 200.
async fn ask(api: &Api, codes: &[&str]) -> Value {
    let (status, body) = api.post("/species/images", json!({ "codes": codes })).await;
    assert_eq!(status, 200, "{body}");
    body
}

/// Asks until every `(code, status)` holds (at most 20 s), then returns the last answer.
async fn wait_for(api: &Api, want: &[(&str, &str)]) -> Value {
    let codes: Vec<&str> = want.iter().map(|(c, _)| *c).collect();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let body = ask(api, &codes).await;
        if want.iter().all(|(c, s)| body["images"][c]["status"] == *s) {
            return body;
        }
        assert!(tokio::time::Instant::now() < deadline, "waited for {want:?}, got {body}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Waits until the stats show `check` true (at most 20 s).
async fn wait_stats(admin: &Api, what: &str, check: impl Fn(&Value) -> bool) -> Value {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let (status, stats) = admin.get("/species/image-cache/stats").await;
        assert_eq!(status, 200, "{stats}");
        if check(&stats) {
            return stats;
        }
        assert!(tokio::time::Instant::now() < deadline, "waited for {what}: {stats}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn failure<'a>(stats: &'a Value, code: &str) -> &'a Value {
    stats["recentFailures"].as_array().and_then(|l| l.iter().find(|f| f["speciesCode"] == code)).unwrap_or(&Value::Null)
}

/// GET through the client's cookie jar, raw.
async fn raw_get(api: &Api, path: &str, etag: Option<&str>) -> reqwest::Response {
    let mut req = api.client.get(format!("{}/api{path}", api.base));
    if let Some(tag) = etag {
        req = req.header(header::IF_NONE_MATCH, tag);
    }
    let resp = req.send().await.expect("request");
    assert!(resp.status().as_u16() < 500, "{path}: {}", resp.status());
    resp
}

fn head<'a>(resp: &'a reqwest::Response, name: &str) -> &'a str {
    resp.headers().get(name).and_then(|v| v.to_str().ok()).unwrap_or_default()
}

#[tokio::test]
async fn pictures_are_fetched_checked_retried_and_served_with_caching_headers() {
    let source = ImageSource::start().await;
    let (hub, _labels) = hub(Some(&source)).await;
    let owner = hub.user("owner@example.org", false).await;
    let admin_user = hub.user("root@example.org", true).await;
    let (api, admin) = (hub.login(&owner.email).await, hub.login(&admin_user.email).await);

    let first = ask(&api, &ALL).await;
    assert_eq!((first["enabled"].clone(), first["queued"].clone()), (json!(true), json!(8)), "{first}");
    for code in ALL {
        assert!(["queued", "cached"].contains(&first["images"][code]["status"].as_str().unwrap_or("")), "{first}");
    }

    let settled = wait_for(
        &api,
        &[
            ("turdus_migratorius", "cached"),
            ("cardinalis_cardinalis", "cached"),
            ("cyanocitta_cristata", "none"),
            ("sitta_carolinensis", "failed"),
            ("poecile_atricapillus", "failed"),
            ("melospiza_melodia", "failed"),
            ("dryobates_pubescens", "failed"),
            ("zenaida_macroura", "failed"),
        ],
    )
    .await;
    assert_eq!(settled["queued"], 0, "asking again queues nothing");
    assert_eq!(source.hits("/birds/Turdus%20migratorius?code=turdus_migratorius"), 1, "the name is URL-encoded");
    let robin = &settled["images"]["turdus_migratorius"];
    assert_eq!(robin["url"], "/api/species/image/proxy?code=turdus_migratorius");
    assert_eq!((robin["attribution"].clone(), robin["license"].clone()), (json!("© José Pérez"), json!("CC BY 4.0")));
    let cardinal = &settled["images"]["cardinalis_cardinalis"];
    assert_eq!((cardinal["attribution"].clone(), cardinal["license"].clone()), (json!("John Smith"), json!("CC0")));
    assert_eq!(cardinal["sourcePage"], "https://example.org/birds/cardinal");
    assert!(settled["images"]["cyanocitta_cristata"].get("url").is_none());

    // Why each one failed, for the admin; and nothing is retried before its backoff.
    let stats = wait_stats(&admin, "five failures", |s| s["counts"]["failed"] == 5).await;
    for (code, why) in [
        ("sitta_carolinensis", "HTTP 500"),
        ("poecile_atricapillus", "not an image (Content-Type text/html)"),
        ("melospiza_melodia", "not a JPEG, PNG, GIF or WebP image"),
        ("dryobates_pubescens", "larger than 65536 bytes"),
        ("zenaida_macroura", "did not answer within 1 s"),
    ] {
        let f = failure(&stats, code);
        assert!(f["lastError"].as_str().is_some_and(|e| e.contains(why)), "{code}: {why} in {f}");
        assert_eq!(f["attempts"], 1, "{f}");
        assert!(f["nextAttemptAt"].is_string(), "retried later: {f}");
    }
    assert_eq!((stats["counts"]["cached"].clone(), stats["counts"]["none"].clone()), (json!(2), json!(1)));
    let stored = (common::images::robin_png().len() + common::images::gif().len()) as u64;
    assert_eq!(stats["totalBytes"], stored);
    assert_eq!(source.hits_for("Sitta carolinensis"), 1);

    // The proxy serves the very bytes, with caching and credit headers, and 304 on a match.
    let resp = raw_get(&api, "/species/image/proxy?code=turdus_migratorius", None).await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(head(&resp, "content-type"), "image/png");
    assert_eq!(head(&resp, "cache-control"), "private, max-age=86400");
    assert_eq!(head(&resp, "x-attribution"), "%C2%A9 Jos%C3%A9 P%C3%A9rez");
    assert_eq!(head(&resp, "x-license"), "CC BY 4.0");
    assert_eq!(head(&resp, "x-content-type-options"), "nosniff");
    let etag = head(&resp, "etag").to_owned();
    assert!(etag.starts_with('"') && etag.len() > 10, "{etag}");
    assert_eq!(resp.bytes().await.expect("body").to_vec(), common::images::robin_png());
    let again = raw_get(&api, "/species/image/proxy?code=turdus_migratorius", Some(&etag)).await;
    assert_eq!(again.status(), StatusCode::NOT_MODIFIED);
    assert_eq!(head(&again, "etag"), etag);
    assert!(again.bytes().await.expect("body").is_empty());
    let stale = raw_get(&api, "/species/image/proxy?code=turdus_migratorius", Some("\"other\"")).await;
    assert_eq!(stale.status(), StatusCode::OK);
    let gif = raw_get(&api, "/species/image/proxy?code=cardinalis_cardinalis", None).await;
    assert_eq!(head(&gif, "content-type"), "image/gif");
    assert_eq!(gif.bytes().await.expect("body").to_vec(), common::images::gif());

    assert_error(&api.get("/species/image/proxy?code=cyanocitta_cristata").await, 404, "image_not_cached");
    assert_error(&api.get("/species/image/proxy?code=sitta_carolinensis").await, 404, "image_not_cached");
    assert_error(&api.get("/species/image/proxy?code=spinus_tristis").await, 404, "image_not_cached");
    assert_error(&api.get("/species/image/proxy?code=dodo").await, 422, "unknown_species");
    assert_error(&api.get("/species/image/proxy").await, 400, "invalid_query");
    assert_error(&hub.anon().get("/species/image/proxy?code=turdus_migratorius").await, 401, "unauthenticated");

    // A minute later (on the hub's clock) the failures are tried again: the source has recovered
    // for the nuthatch only.
    hub.state().clock.advance(Duration::from_secs(61));
    let healed = wait_for(&api, &[("sitta_carolinensis", "cached")]).await;
    assert!(healed["images"]["sitta_carolinensis"]["attribution"].is_string());
    let nuthatch = raw_get(&api, "/species/image/proxy?code=sitta_carolinensis", None).await;
    assert_eq!(nuthatch.bytes().await.expect("body").to_vec(), common::images::nuthatch_png());
    assert_eq!(source.hits_for("Sitta carolinensis"), 2);
    assert_eq!(source.hits_for("Cyanocitta cristata"), 1, "none is not retried");
    assert_eq!(source.hits_for("Turdus migratorius"), 1, "cached is not fetched again");

    // After max_attempts (3) the fetcher gives up and says so.
    wait_stats(&admin, "second attempts", |s| ALL[4..].iter().all(|c| failure(s, c)["attempts"] == 2)).await;
    hub.state().clock.advance(Duration::from_secs(121));
    let stats = wait_stats(&admin, "giving up", |s| {
        ALL[4..].iter().all(|c| failure(s, c)["attempts"] == 3 && failure(s, c)["nextAttemptAt"].is_null())
    })
    .await;
    assert!(failure(&stats, "poecile_atricapillus")["lastError"].as_str().is_some_and(|e| e.contains("gave up")));
    assert_eq!(ask(&api, &["zenaida_macroura"]).await["images"]["zenaida_macroura"]["status"], "failed");

    // Bad requests are refused with a reason.
    assert_error(&api.post("/species/images", json!({ "codes": [] })).await, 422, "invalid_codes");
    let many: Vec<String> = (0..201).map(|_| "turdus_migratorius".to_owned()).collect();
    assert_error(&api.post("/species/images", json!({ "codes": many })).await, 422, "invalid_codes");
    let unknown =
        api.post("/species/images", json!({ "codes": ["turdus_migratorius", "dodo", "Turdus migratorius"] })).await;
    assert_error(&unknown, 422, "unknown_species");
    let message = unknown.1["message"].as_str().unwrap_or_default();
    assert!(message.contains("\"dodo\"") && message.contains("\"Turdus migratorius\""), "{message}");
    assert!(!message.contains("\"turdus_migratorius\""), "{message}");
    assert_error(&api.post("/species/images", json!({ "codes": "turdus_migratorius" })).await, 422, "invalid_body");
    assert_error(&api.post("/species/images", json!({})).await, 422, "invalid_body");
    let malformed = api
        .client
        .post(format!("{}/api/species/images", api.base))
        .header(header::CONTENT_TYPE, "application/json")
        .body("{\"codes\": [")
        .send()
        .await
        .expect("request");
    assert_eq!(malformed.status(), StatusCode::BAD_REQUEST);
    let body: Value = malformed.json().await.expect("json");
    assert_eq!(body["code"], "invalid_json");
    assert_error(
        &hub.anon().post("/species/images", json!({ "codes": ["turdus_migratorius"] })).await,
        401,
        "unauthenticated",
    );
}

#[tokio::test]
async fn platform_admins_see_clear_and_retry_the_cache() {
    let source = ImageSource::start().await;
    let (hub, _labels) = hub(Some(&source)).await;
    let member = hub.user("member@example.org", false).await;
    let admin_user = hub.user("root@example.org", true).await;
    let (api, admin) = (hub.login(&member.email).await, hub.login(&admin_user.email).await);
    ask(&api, &["turdus_migratorius", "cyanocitta_cristata"]).await;
    wait_for(&api, &[("turdus_migratorius", "cached"), ("cyanocitta_cristata", "none")]).await;

    assert_error(&api.get("/species/image-cache/stats").await, 403, "platform_admin_required");
    assert_error(&api.post_empty("/species/image-cache/clear").await, 403, "platform_admin_required");
    assert_error(&api.post_empty("/species/image-cache/retry").await, 403, "platform_admin_required");
    assert_error(&hub.anon().get("/species/image-cache/stats").await, 401, "unauthenticated");

    let (status, stats) = admin.get("/species/image-cache/stats").await;
    assert_eq!(status, 200, "{stats}");
    assert_eq!(stats["enabled"], true);
    assert_eq!((stats["total"].clone(), stats["counts"]["cached"].clone()), (json!(2), json!(1)));
    assert_eq!(stats["counts"]["none"], 1);
    assert_eq!(stats["totalBytes"], common::images::robin_png().len() as u64);

    // Retry asks the source again about the species it had nothing for.
    let (status, retried) = admin.post_empty("/species/image-cache/retry").await;
    assert_eq!((status.as_u16(), retried["requeued"].clone()), (200, json!(1)), "{retried}");
    wait_stats(&admin, "the second look", |_| source.hits_for("Cyanocitta cristata") == 2).await;
    wait_for(&api, &[("cyanocitta_cristata", "none")]).await;

    // Clear forgets everything, deletes the files and is audited.
    let files = |hub: &TestHub| {
        std::fs::read_dir(hub.data_dir.join("objects/species-images")).map_or(0, |d| d.filter_map(Result::ok).count())
    };
    assert_eq!(files(&hub), 1);
    let (status, cleared) = admin.post_empty("/species/image-cache/clear").await;
    assert_eq!(status, 200, "{cleared}");
    assert_eq!((cleared["removed"].clone(), cleared["filesDeleted"].clone()), (json!(2), json!(1)));
    assert_eq!(files(&hub), 0);
    let (_, stats) = admin.get("/species/image-cache/stats").await;
    assert_eq!((stats["total"].clone(), stats["totalBytes"].clone()), (json!(0), json!(0)));
    assert_error(&api.get("/species/image/proxy?code=turdus_migratorius").await, 404, "image_not_cached");
    let audited: Vec<(String, String)> = hub.sql(|c| {
        let mut stmt = c
            .prepare("SELECT actor_user_id, details_json FROM audit_log WHERE action = 'admin.image_cache_cleared'")
            .expect("sql");
        stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?))).expect("rows").collect::<Result<_, _>>().expect("audit")
    });
    assert_eq!(audited.len(), 1, "{audited:?}");
    assert_eq!(audited[0].0, admin_user.id.to_string());
    let details: Value = serde_json::from_str(&audited[0].1).expect("details");
    assert_eq!(details["removed"], 2);

    // Asked again, the picture comes back.
    assert_eq!(ask(&api, &["turdus_migratorius"]).await["queued"], 1);
    wait_for(&api, &[("turdus_migratorius", "cached")]).await;
    assert_eq!(source.hits_for("Turdus migratorius"), 2);
}

#[tokio::test]
async fn without_a_source_nothing_is_queued_and_every_picture_is_none() {
    let (hub, _labels) = hub(None).await;
    let user = hub.user("viewer@example.org", false).await;
    let admin_user = hub.user("root@example.org", true).await;
    let (api, admin) = (hub.login(&user.email).await, hub.login(&admin_user.email).await);

    let body = ask(&api, &["turdus_migratorius", "spinus_tristis"]).await;
    assert_eq!(
        body,
        json!({
            "enabled": false,
            "queued": 0,
            "images": { "turdus_migratorius": { "status": "none" }, "spinus_tristis": { "status": "none" } },
        })
    );
    let rows: i64 = hub.sql(|c| c.query_row("SELECT count(*) FROM species_images", [], |r| r.get(0)).expect("count"));
    assert_eq!(rows, 0, "nothing queued");
    let (_, stats) = admin.get("/species/image-cache/stats").await;
    assert_eq!((stats["enabled"].clone(), stats["total"].clone()), (json!(false), json!(0)));
    let (status, retried) = admin.post_empty("/species/image-cache/retry").await;
    assert_eq!((status.as_u16(), retried["requeued"].clone()), (200, json!(0)));
    assert_error(&api.get("/species/image/proxy?code=turdus_migratorius").await, 404, "image_not_cached");
    assert_error(&api.post("/species/images", json!({ "codes": ["dodo"] })).await, 422, "unknown_species");
}

#[tokio::test]
async fn a_source_that_is_down_makes_pictures_fail_not_the_hub() {
    // Nothing listens on a port that was just bound and released.
    let port = std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port();
    let (hub, _labels) = hub_with_template(Some(format!("http://127.0.0.1:{port}/{{scientific_name}}"))).await;
    let user = hub.user("viewer@example.org", false).await;
    let admin_user = hub.user("root@example.org", true).await;
    let (api, admin) = (hub.login(&user.email).await, hub.login(&admin_user.email).await);
    assert_eq!(ask(&api, &["turdus_migratorius"]).await["images"]["turdus_migratorius"]["status"], "queued");
    wait_for(&api, &[("turdus_migratorius", "failed")]).await;
    let stats = wait_stats(&admin, "the failure", |s| s["counts"]["failed"] == 1).await;
    let error = failure(&stats, "turdus_migratorius")["lastError"].as_str().unwrap_or_default().to_owned();
    assert!(error.contains("could not connect"), "{error}");
    assert_error(&api.get("/species/image/proxy?code=turdus_migratorius").await, 404, "image_not_cached");
}
