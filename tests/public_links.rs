//! Links the hub hands out never follow the request's `Host` header (an attacker's `Host` on
//! forgot-password would otherwise mail the victim a real reset token pointing at the attacker).
//! Every link starts with the hub's own base: `http.public_url`, else `http://<hostname>.local:<port>`.

mod common;

use common::{Api, seed, smtp};
use serde_json::json;

const EVIL: &str = "evil.example";

async fn hub_with_mail(public_url: Option<&'static str>) -> (common::TestHub, smtp::Sink) {
    let sink = smtp::Sink::start().await;
    let port = sink.port;
    let hub = common::spawn_hub_with(move |s| {
        s.smtp.host = "127.0.0.1".into();
        s.smtp.port = port;
        s.smtp.security = "none".into();
        s.smtp.from = "hub@birdhub.test".into();
        if let Some(url) = public_url {
            s.http.public_url = url.into();
        }
    })
    .await;
    (hub, sink)
}

/// The first URL in `text` that contains `marker`.
fn link_in(text: &str, marker: &str) -> String {
    text.split_whitespace().find(|w| w.contains(marker)).unwrap_or_else(|| panic!("no {marker} link in {text}")).into()
}

#[track_caller]
fn assert_own(link: &str, base: &str) {
    assert!(!link.contains(EVIL), "a link built from the Host header: {link}");
    assert!(link.starts_with(&format!("{base}/")), "{link} does not start with the hub's base {base}");
}

#[tokio::test]
async fn a_forged_host_never_reaches_the_reset_mail() {
    let (hub, sink) = hub_with_mail(None).await;
    hub.user("ada@example.org", false).await;
    let base = hub.state().links().http_base.clone();
    assert_eq!(base, format!("http://{}.local:{}", birdhub::links::hostname(), hub.http_addr.port()));

    let attacker = hub.anon().header("Host", EVIL);
    assert_eq!(attacker.post("/auth/forgot-password", json!({"email": "ada@example.org"})).await.0, 204);
    let mail = smtp::decoded(&sink.wait_for(1).await[0]);
    let link = link_in(&mail, "reset-password?token=");
    assert_own(&link, &base);
}

#[tokio::test]
async fn invite_admin_reset_share_and_broker_links_ignore_the_host_header() {
    let (hub, sink) = hub_with_mail(None).await;
    let root = hub.user("root@example.org", true).await;
    let ada = hub.user("ada@example.org", false).await;
    let links = hub.state().links().clone();
    let admin = hub.login(&root.email).await.header("Host", EVIL);

    let (status, invite) = admin.post("/auth/invites", json!({"role": "member", "tenantId": root.tenant})).await;
    assert_eq!(status, 201, "{invite}");
    assert_own(invite["url"].as_str().expect("url"), &links.http_base);

    let (status, reset) = admin.post_empty(&format!("/admin/users/{}/reset-password", ada.id)).await;
    assert_eq!(status, 200, "{reset}");
    let mail = smtp::decoded(&sink.wait_for(1).await[0]);
    assert_own(&link_in(&mail, "reset-password?token="), &links.http_base);
    assert_own(reset["resetUrl"].as_str().expect("resetUrl"), &links.http_base);

    let sat = seed::satellite(&hub, root.tenant, "garden").await;
    let (_, detection) = seed::heard(&hub, root.tenant, sat, "2026-05-01T05:00:00.000Z", seed::ROBIN, 0.8).await;
    let (status, share) = admin.get(&format!("/detections/{detection}/share")).await;
    assert_eq!(status, 200, "{share}");
    assert_own(share["url"].as_str().expect("url"), &links.http_base);
    assert_own(share["audioUrl"].as_str().expect("audioUrl"), &links.http_base);

    let (status, reg) = admin.post("/satellites", json!({"name": "porch", "tenantId": root.tenant})).await;
    assert_eq!(status, 201, "{reg}");
    let broker = reg["mqtt"]["brokerUrl"].as_str().expect("brokerUrl");
    assert!(!broker.contains(EVIL), "{broker}");
    assert_eq!(broker, format!("mqtt://{}.local:{}", birdhub::links::hostname(), hub.mqtt_port));
    assert_eq!(broker, links.broker_url);
}

#[tokio::test]
async fn a_configured_public_url_is_the_base_of_every_link() {
    let (hub, _sink) = hub_with_mail(Some("https://birds.example.org/")).await;
    let root = hub.user("root@example.org", true).await;
    let admin = Api::new(&hub.base_url).header("Host", EVIL);
    let (status, _) = admin.post("/auth/login", json!({"email": root.email, "password": common::PASSWORD})).await;
    assert_eq!(status, 200);
    let (_, invite) = admin.post("/auth/invites", json!({"role": "viewer"})).await;
    assert_own(invite["url"].as_str().expect("url"), "https://birds.example.org");
}
