//! Issue 34, finding 5: a team's channels as a way into the hub's network. A team admin types a
//! channel's URL and its payload, so the hub must connect only where the platform's
//! `channel_targets` allows (checked on the resolved address, before any connection), never
//! follow a redirect, and never hand what the receiver answered back to the team: the test
//! answer, the delivery log and a scheduled export's `lastError` carry the status code and a
//! classified reason only.

mod common;

use std::{
    sync::{Arc, Mutex},
    time::Duration,
};

use axum::{
    Router,
    http::{StatusCode, Uri, header},
    response::{IntoResponse, Response},
};
use birdhub::domain::Role;
use common::{Api, TestHub, assert_error, receiver::Receiver};
use serde_json::{Value, json};

/// What the scripted receiver answers on a 500: words a team must never read.
const SECRET: &str = "SECRET-redis-password-hunter2 internal admin panel";
/// Where the scripted receiver's redirect points: the cloud metadata service.
const METADATA: &str = "http://169.254.169.254/latest/meta-data/iam/security-credentials/";

/// A receiver on 127.0.0.1 that answers `/error` with 500 and [`SECRET`], `/metadata` with a
/// redirect to [`METADATA`], and `/to/<url>` with a 307 to that URL. Keeps every path it saw.
async fn scripted() -> (String, Arc<Mutex<Vec<String>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    let app = Router::new().fallback(move |uri: Uri| {
        let log = log.clone();
        async move {
            let path = uri.path().to_owned();
            log.lock().expect("lock").push(path.clone());
            let answer: Response = if path == "/error" {
                (StatusCode::INTERNAL_SERVER_ERROR, SECRET).into_response()
            } else if path == "/metadata" {
                (StatusCode::FOUND, [(header::LOCATION, METADATA)], SECRET).into_response()
            } else if let Some(to) = path.strip_prefix("/to/") {
                (StatusCode::TEMPORARY_REDIRECT, [(header::LOCATION, format!("http://{to}"))]).into_response()
            } else {
                (StatusCode::OK, "ok").into_response()
            };
            answer
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    tokio::spawn(async move { axum::serve(listener, app).await });
    (base, seen)
}

async fn webhook(api: &Api, name: &str, url: &str) -> String {
    let made =
        api.create("/alert-rules/channels", json!({"type": "webhook", "name": name, "config": {"url": url}})).await;
    made["id"].as_str().expect("id").to_owned()
}

async fn test_send(api: &Api, id: &str) -> Value {
    let (status, report) = api.post_empty(&format!("/alert-rules/channels/{id}/test")).await;
    assert_eq!(status, 200, "{report}");
    report
}

/// One scheduler pass now, as `jobs::scheduled_exports` makes it.
async fn pass(hub: &TestHub) {
    let s = hub.state();
    birdhub::usecases::scheduled_exports::run_due(&birdhub::jobs::scheduled_exports::env(s), s.clock.stamp())
        .await
        .expect("scheduler pass");
}

/// A schedule of `api`'s team on `channel`, due in ten minutes.
async fn schedule(api: &Api, channel: &str) -> String {
    let body = json!({"name": "weekly", "format": "csv", "cron": "*/10 * * * *", "channelId": channel});
    api.create("/exports/scheduled", body).await["id"].as_str().expect("id").to_owned()
}

/// Polls a schedule until its `lastError` is set (at most 20 s).
async fn last_error(api: &Api, id: &str) -> Value {
    for _ in 0..200 {
        let (_, s) = api.get(&format!("/exports/scheduled/{id}")).await;
        if s["lastError"].is_string() {
            return s;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the schedule never recorded an error");
}

#[tokio::test]
async fn a_public_only_hub_refuses_loopback_lan_and_localhost_before_connecting() {
    let hub = common::spawn_hub().await;
    let root = hub.user("root@example.org", true).await;
    let root = hub.login(&root.email).await;
    let owner = hub.user("owner@example.org", false).await;
    let admin = hub.login(&owner.email).await;

    // Only a platform admin sets it, and only to one of its three values.
    assert_error(
        &admin.put("/settings/platform", json!({"channel_targets": "public"})).await,
        403,
        "platform_admin_required",
    );
    assert_error(
        &root.put("/settings/platform", json!({"channel_targets": "everything"})).await,
        422,
        "invalid_settings",
    );
    let (status, platform) = root.get("/settings/platform").await;
    assert_eq!((status.as_u16(), &platform["channel_targets"]), (200, &json!("loopback")), "the default");
    let (status, platform) = root.put("/settings/platform", json!({"channel_targets": "public"})).await;
    assert_eq!((status.as_u16(), &platform["channel_targets"]), (200, &json!("public")), "{platform}");

    let rx = Receiver::start(None).await;
    let port = rx.base.rsplit(':').next().expect("port").to_owned();
    let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port();
    let targets = [
        rx.url("/hook"),
        format!("http://localhost:{port}/hook"),
        format!("http://[::ffff:127.0.0.1]:{port}/hook"),
        format!("http://2130706433:{port}/hook"),
        "http://10.255.255.1:8123/api/webhook/x".to_owned(),
        "http://192.168.1.20:1880/hook".to_owned(),
        // A closed port answers the same as an open one: no port scan.
        format!("http://127.0.0.1:{closed}/hook"),
    ];
    for url in &targets {
        let id = webhook(&admin, "inside", url).await;
        let report = test_send(&admin, &id).await;
        assert_eq!(report["delivered"], false, "{url}: {report}");
        assert_eq!(report["errorCode"], "target_not_allowed", "{url}: {report}");
        assert!(report["httpStatus"].is_null(), "{url}: {report}");
    }
    assert!(rx.received().is_empty(), "the receiver heard nothing: {:?}", rx.received());

    // Real deliveries take the same rule: a scheduled export to the loopback receiver.
    let hook = webhook(&admin, "export", &rx.url("/export")).await;
    let export = schedule(&admin, &hook).await;
    hub.state().clock.advance(Duration::from_secs(11 * 60));
    pass(&hub).await;
    let failed = last_error(&admin, &export).await;
    assert_eq!(failed["lastStatus"], "failed", "refused, not retried: {failed}");
    assert!(failed["lastError"].as_str().is_some_and(|e| e.contains("not allowed")), "{failed}");
    assert!(rx.received().is_empty(), "the receiver heard nothing: {:?}", rx.received());

    // The household's choice: the same channel reaches the Pi itself again.
    root.put("/settings/platform", json!({"channel_targets": "loopback"})).await;
    assert_eq!(test_send(&admin, &hook).await["delivered"], true);
    assert_eq!(rx.wait_for(1, 5).await.len(), 1);
}

#[tokio::test]
async fn a_receivers_reply_reaches_neither_the_admin_nor_the_viewers() {
    let hub = common::spawn_hub().await;
    let owner = hub.user("owner@example.org", false).await;
    let admin = hub.login(&owner.email).await;
    let viewer = hub.member_of("viewer@example.org", owner.tenant, Role::Viewer).await;
    let viewer = hub.login(&viewer.email).await;
    let (base, seen) = scripted().await;
    let channel = webhook(&admin, "inside", &format!("{base}/error")).await;

    // The admin's test answer: the status and its reason, not the body.
    let report = test_send(&admin, &channel).await;
    assert_eq!((&report["delivered"], &report["httpStatus"]), (&json!(false), &json!(500)), "{report}");
    assert_eq!(report["errorCode"], "http_status", "{report}");
    assert_eq!(report["error"], "HTTP 500 Internal Server Error", "{report}");
    assert!(!report.to_string().contains("hunter2"), "{report}");

    // A scheduled export to the same receiver records the same.
    let export = schedule(&admin, &channel).await;
    hub.state().clock.advance(Duration::from_secs(11 * 60));
    pass(&hub).await;
    let got = last_error(&viewer, &export).await;
    assert!(got["lastError"].as_str().is_some_and(|e| e.contains("500")), "{got}");
    assert!(!got.to_string().contains("hunter2"), "{got}");
    assert!(seen.lock().expect("lock").len() >= 2, "the receiver did answer both");

    // The viewer's delivery log, in the API and on the dashboard.
    let (status, log) = viewer.get(&format!("/alert-rules/channels/{channel}")).await;
    assert_eq!(status, 200, "{log}");
    let lines = log["log"].as_array().expect("log");
    assert!(lines.len() >= 2 && lines.iter().all(|l| l["httpStatus"] == 500), "{log}");
    assert!(lines.iter().all(|l| l["lastError"].as_str().is_some_and(|e| e.starts_with("HTTP 500"))), "{log}");
    assert!(!log.to_string().contains("hunter2"), "{log}");
    for page in ["/alerts", "/exports"] {
        let html = viewer.client.get(format!("{}{page}", viewer.base)).send().await.expect("page");
        assert_eq!(html.status(), 200, "{page}");
        let html = html.text().await.expect("html");
        assert!(!html.contains("hunter2"), "{page} shows the reply");
    }
    assert!(
        !hub.sql(|c| {
            c.query_row("SELECT group_concat(last_error) FROM alert_deliveries", [], |r| r.get::<_, String>(0))
                .expect("errors")
        })
        .contains("hunter2")
    );
}

#[tokio::test]
async fn metadata_and_link_local_addresses_are_refused_under_the_widest_policy() {
    let hub = common::spawn_hub().await;
    let root = hub.user("root@example.org", true).await;
    hub.login(&root.email).await.put("/settings/platform", json!({"channel_targets": "loopback"})).await;
    let owner = hub.user("owner@example.org", false).await;
    let admin = hub.login(&owner.email).await;
    for url in [
        "http://169.254.169.254/latest/meta-data/",
        "http://[::ffff:169.254.169.254]/latest/meta-data/",
        "http://[::ffff:a9fe:a9fe]/latest/meta-data/",
        "http://[fd00:ec2::254]/latest/meta-data/",
        "http://100.100.100.200/latest/meta-data/",
        "http://[fe80::1]/hook",
        "http://0.0.0.0:8080/hook",
        "http://[::]:8080/hook",
        "http://255.255.255.255/hook",
        "http://224.0.0.1/hook",
    ] {
        let id = webhook(&admin, "metadata", url).await;
        let report = test_send(&admin, &id).await;
        assert_eq!(report["delivered"], false, "{url}: {report}");
        assert_eq!(report["errorCode"], "target_not_allowed", "{url}: {report}");
    }
}

#[tokio::test]
async fn a_redirect_is_never_followed_nor_shown() {
    let hub = common::spawn_hub().await;
    let owner = hub.user("owner@example.org", false).await;
    let admin = hub.login(&owner.email).await;
    let (base, seen) = scripted().await;
    let elsewhere = Receiver::start(None).await;

    let to_metadata = webhook(&admin, "moved", &format!("{base}/metadata")).await;
    let report = test_send(&admin, &to_metadata).await;
    assert_eq!((&report["delivered"], &report["httpStatus"]), (&json!(false), &json!(302)), "{report}");
    assert_eq!(report["errorCode"], "redirect_refused", "{report}");
    assert!(!report.to_string().contains("169.254") && !report.to_string().contains("hunter2"), "{report}");

    // A 307 to another address the policy allows is not followed either.
    let target = elsewhere.base.trim_start_matches("http://");
    let hop = webhook(&admin, "hop", &format!("{base}/to/{target}/stolen")).await;
    let report = test_send(&admin, &hop).await;
    assert_eq!((&report["httpStatus"], &report["errorCode"]), (&json!(307), &json!("redirect_refused")), "{report}");
    assert!(!report.to_string().contains(target), "{report}");
    assert!(elsewhere.received().is_empty(), "the redirect was followed");
    assert_eq!(seen.lock().expect("lock").len(), 2, "one request each");

    // The log says the same; the target shows only in the URL the admin typed.
    let (_, channel) = admin.get(&format!("/alert-rules/channels/{to_metadata}")).await;
    assert_eq!(channel["log"][0]["lastError"], "HTTP 302 Found: redirects are not followed", "{channel}");
    assert!(!channel["log"].to_string().contains("169.254"), "{channel}");
}
