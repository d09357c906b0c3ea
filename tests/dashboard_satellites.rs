//! The Satellites, Alerts and Exports pages over real HTTP with a browser's cookie jar: what a
//! person sees (online state, sparklines, buttons by role), another team's satellite as the 404
//! page, the QR route's CSRF check, a raised alert with its Acknowledge button, and the export
//! links. Also the telemetry route the sparklines read.

mod common;

use birdhub::{domain::Role, ids::SatelliteId, store};
use common::{Api, TestHub, seed};
use reqwest::StatusCode;

/// A dashboard page as the signed-in browser of `api` gets it.
async fn page(hub: &TestHub, api: &Api, path: &str) -> (StatusCode, String) {
    let resp = api.client.get(format!("{}{path}", hub.base_url)).send().await.expect("page");
    let status = resp.status();
    (status, resp.text().await.expect("body"))
}

/// The card of one satellite on the list.
fn card(html: &str, id: SatelliteId) -> &str {
    let start = html.find(&format!("data-id=\"{id}\"")).expect("the satellite's card");
    let rest = &html[start..];
    &rest[..rest.find("</article>").unwrap_or(rest.len())]
}

fn csrf_of(html: &str) -> String {
    let at = html.find("name=\"csrf-token\" content=\"").expect("csrf meta") + "name=\"csrf-token\" content=\"".len();
    html[at..at + 32].to_owned()
}

async fn sample(hub: &TestHub, sat: SatelliteId, tenant: birdhub::ids::TenantId, minutes_ago: i64, temp: f64) {
    let now = hub.state().clock.stamp();
    let at = birdhub::time::Timestamp::from(hub.state().clock.now() - chrono::Duration::minutes(minutes_ago));
    hub.state()
        .store
        .call(move |c| {
            let s = store::telemetry::Sample {
                recorded_at: at,
                battery_level: None,
                storage_free_bytes: Some(8_000_000_000),
                cpu_temp: Some(temp),
                network_latency_ms: None,
                packet_loss_pct: None,
                uptime_seconds: Some(600),
            };
            store::telemetry::insert(c, sat, tenant, &s, now)
        })
        .await
        .expect("telemetry");
}

#[tokio::test]
async fn satellites_pages_show_state_respect_roles_and_hide_other_teams() {
    let hub = common::spawn_hub().await;
    let owner = hub.user("owner@example.com", false).await;
    let garden = seed::satellite(&hub, owner.tenant, "Garden Pi").await;
    let orchard = seed::satellite(&hub, owner.tenant, "Orchard Pi").await;
    let now = hub.state().clock.stamp();
    let tenant = owner.tenant;
    hub.state().store.call(move |c| store::satellites::seen(c, tenant, garden, now)).await.expect("seen");
    // Orchard Pi reported a newer release than Garden Pi's (unknown) one: Garden is offered it.
    hub.sql(|c| {
        c.execute("UPDATE satellites SET version = '0.2.0', stream = 'satellite' WHERE id = ?1", [orchard.to_string()])
            .expect("version")
    });
    sample(&hub, garden, owner.tenant, 30, 41.5).await;
    sample(&hub, garden, owner.tenant, 10, 44.0).await;

    let api = hub.login("owner@example.com").await;
    let (status, html) = page(&hub, &api, "/satellites").await;
    assert_eq!(status, 200, "{html}");
    let g = card(&html, garden);
    assert!(g.contains("Garden Pi") && g.contains("online"), "Garden Pi is online: {g}");
    assert!(g.contains("<polyline") && g.contains("44.0 °C"), "the temperature sparkline: {g}");
    let o = card(&html, orchard);
    assert!(o.contains("Orchard Pi") && o.contains("offline") && o.contains("never"), "{o}");
    assert!(html.contains("Register a satellite"), "an admin may register");

    // The telemetry route the sparklines read.
    let (status, body) = api.get(&format!("/satellites/{garden}/telemetry?hours=24")).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["points"].as_array().map(Vec::len), Some(2), "{body}");
    assert_eq!(body["points"][1]["cpuTemp"], 44.0);
    common::assert_error(&api.get(&format!("/satellites/{garden}/telemetry?hours=0")).await, 422, "invalid_hours");

    // The detail page: state, schedule, config beside the team defaults, the device buttons.
    let (status, html) = page(&hub, &api, &format!("/satellites/{garden}")).await;
    assert_eq!(status, 200, "{html}");
    for text in [
        "Garden Pi",
        "online",
        "Schedule",
        "Configuration",
        "Team default",
        "Request update to 0.2.0",
        "Fetch logs",
        "Rotate API key",
        "act-delete",
        "Listen live",
    ] {
        assert!(html.contains(text), "the detail page shows {text:?}");
    }
    assert!(html.contains("no position"), "no sun times without a position");

    // Another team's satellite (and a broken id) is the 404 page, not a leak.
    let other = hub.user("other@example.com", false).await;
    let theirs = seed::satellite(&hub, other.tenant, "Their Pi").await;
    let (status, html) = page(&hub, &api, &format!("/satellites/{theirs}")).await;
    assert_eq!(status, 404);
    assert!(html.contains("Not found") && !html.contains("Their Pi"), "{html}");
    common::assert_error(&api.get(&format!("/satellites/{theirs}/telemetry")).await, 404, "satellite_not_found");
    let (status, _) = page(&hub, &api, "/satellites/not-a-satellite").await;
    assert_eq!(status, 404);

    // A viewer sees the satellites but no register, delete, rename or key buttons.
    hub.member_of("viewer@example.com", owner.tenant, Role::Viewer).await;
    let viewer = hub.login("viewer@example.com").await;
    let (status, html) = page(&hub, &viewer, "/satellites").await;
    assert_eq!(status, 200);
    assert!(html.contains("Garden Pi") && !html.contains("Register a satellite"), "no register button for a viewer");
    let (status, html) = page(&hub, &viewer, &format!("/satellites/{garden}")).await;
    assert_eq!(status, 200);
    for text in ["act-delete", "Rotate API key", "Request update", "act-rename", "Listen live", "config-form\" "] {
        assert!(!html.contains(text), "a viewer sees no {text:?}");
    }
    assert!(html.contains("You can look but not change"), "and is told why");
    let (status, _) = page(&hub, &viewer, "/satellites/new").await;
    assert_eq!(status, 403, "a viewer cannot open the register form");
}

#[tokio::test]
async fn the_qr_route_needs_the_pages_csrf_token_and_draws_an_svg() {
    let hub = common::spawn_hub().await;
    hub.user("owner@example.com", false).await;
    let api = hub.login("owner@example.com").await;
    let (status, html) = page(&hub, &api, "/satellites/new").await;
    assert_eq!(status, 200);
    assert!(html.contains("Shown once."), "the page says the secrets are shown once");
    let token = csrf_of(&html);
    let url = format!("{}/satellites/qr", hub.base_url);
    let text = r#"{"hubUrl":"http://birdhub.local:8080","apiKey":"bh_sat_x"}"#;

    let missing = api.client.post(&url).body(text).send().await.expect("post");
    assert_eq!(missing.status(), 403, "no token");
    let wrong = api.client.post(&url).header("x-csrf-token", "0".repeat(32)).body(text).send().await.expect("post");
    assert_eq!(wrong.status(), 403, "a forged token");
    let right = api.client.post(&url).header("x-csrf-token", &token).body(text).send().await.expect("post");
    assert_eq!(right.status(), 200);
    assert_eq!(right.headers()["content-type"], "image/svg+xml");
    let svg = right.text().await.expect("svg");
    assert!(svg.starts_with("<svg") && svg.contains("<path d=\"M"), "{svg}");
    let too_long =
        api.client.post(&url).header("x-csrf-token", &token).body("x".repeat(3000)).send().await.expect("post");
    assert_eq!(too_long.status(), 422, "more than 2 KB is refused");
}

#[tokio::test]
async fn alerts_and_exports_pages_show_what_the_team_has() {
    let hub = common::spawn_hub().await;
    let owner = hub.user("owner@example.com", false).await;
    let tenant = owner.tenant;
    let now = hub.state().clock.stamp();
    let alert = hub
        .state()
        .store
        .call(move |c| {
            store::alerts::insert(
                c,
                &store::alerts::NewAlert {
                    tenant_id: tenant,
                    rule_id: None,
                    kind: "satellite_offline",
                    title: "Garden Pi is offline",
                    message: "No heartbeat for 20 minutes.",
                    data: &serde_json::json!({}),
                },
                now,
            )
        })
        .await
        .expect("alert");
    let api = hub.login("owner@example.com").await;
    let (status, html) = page(&hub, &api, "/alerts").await;
    assert_eq!(status, 200, "{html}");
    assert!(html.contains("Garden Pi is offline") && html.contains(&format!("data-ack=\"{}\"", alert.id)), "{html}");
    assert!(html.contains("Satellite offline"), "the system rule is listed");
    assert!(html.contains("Add a channel") && html.contains("Add a rule"), "an admin may add channels and rules");

    // Acknowledged, it leaves the open list and shows under "acknowledged".
    let (status, _) = api.post_empty(&format!("/alerts/{}/acknowledge", alert.id)).await;
    assert_eq!(status, 200);
    let (_, open) = page(&hub, &api, "/alerts/list?show=open").await;
    assert!(!open.contains("Garden Pi is offline") && open.contains("No open alerts"), "{open}");
    let (_, acked) = page(&hub, &api, "/alerts/list?show=acknowledged").await;
    assert!(acked.contains("Garden Pi is offline") && !acked.contains("data-ack"), "{acked}");
    let (status, _) = page(&hub, &api, "/alerts?show=sideways").await;
    assert_eq!(status, 422, "a bad filter is the message page");

    let (status, html) = page(&hub, &api, "/exports?from=2026-05-01&to=2026-05-31").await;
    assert_eq!(status, 200, "{html}");
    assert!(html.contains("/api/export/detections?format=csv&amp;tenantId="), "{html}");
    assert!(html.contains("from=2026-05-01&amp;to=2026-05-31"), "the range is in the links");
    assert!(html.contains("No scheduled exports"));
    // A range that cannot be exported keeps the form, as typed, and says why (issue 36).
    let (status, html) = page(&hub, &api, "/exports?from=yesterday").await;
    assert_eq!(status, 200);
    assert!(html.contains("must be a date like 2026-05-31") && html.contains(r#"value="yesterday""#), "{html}");
    assert!(!html.contains("/api/export/detections"), "no links for a range that cannot be exported");

    hub.member_of("viewer@example.com", owner.tenant, Role::Viewer).await;
    let viewer = hub.login("viewer@example.com").await;
    let (status, html) = page(&hub, &viewer, "/alerts").await;
    assert_eq!(status, 200);
    assert!(!html.contains("Add a channel") && !html.contains("data-test="), "a viewer manages no channels");
    let (_, html) = page(&hub, &viewer, "/exports").await;
    assert!(!html.contains("/api/export/detections") && html.contains("for members and admins"), "{html}");
}
