//! A team's public page, as strangers meet it: off by default (the same 404 as an unknown
//! team), turned on by an admin only, then today's species, the newest detections and the
//! station map without sign-in. It never shows satellite ids, people, rejected detections or
//! exact positions (unless chosen), plays recordings only when the team allows it, and limits
//! each address per minute.

mod common;

use birdhub::ids::{DetectionId, SatelliteId, TenantId};
use common::{Api, TestHub, assert_error, seed};
use reqwest::{Client, StatusCode, header};
use serde_json::{Value, json};

struct World {
    hub: TestHub,
    owner: Api,
    tenant: TenantId,
    garden: SatelliteId,
    robins: Vec<DetectionId>,
    rejected: DetectionId,
    other_team: DetectionId,
}

fn ago(hub: &TestHub, hours: i64) -> String {
    (hub.state().clock.now() - chrono::Duration::hours(hours)).to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// Within today in the hub's zone: minutes ago, never across midnight.
fn today_ago(hub: &TestHub, minutes: i64) -> String {
    let now = hub.state().clock.now();
    let local = now.with_timezone(&chrono::Local);
    let since_midnight = i64::from(chrono::Timelike::num_seconds_from_midnight(&local)) / 60;
    let m = minutes.min(since_midnight.max(1) - 1).max(0);
    (now - chrono::Duration::minutes(m)).to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

async fn world(per_minute: u32) -> World {
    let hub = common::spawn_hub_with(move |s| s.http.public_page_per_minute = per_minute).await;
    let owner = hub.user("owner@example.org", false).await;
    let t = owner.tenant;
    let garden = seed::satellite(&hub, t, "Garden").await;
    seed::place(&hub, t, garden, 52.518_73, 13.404_94).await;
    let mut robins = Vec::new();
    for m in [5, 20] {
        robins.push(seed::heard(&hub, t, garden, &today_ago(&hub, m), seed::ROBIN, 0.9).await.1);
    }
    seed::heard(&hub, t, garden, &today_ago(&hub, 10), seed::WREN, 0.7).await;
    let rejected = seed::heard(&hub, t, garden, &today_ago(&hub, 1), seed::BLACKBURNIAN, 0.4).await.1;
    seed::heard(&hub, t, garden, &ago(&hub, 40 * 24), seed::WARBLER, 0.8).await;
    let api = hub.login("owner@example.org").await;
    let (status, body) = api.post(&format!("/detections/{rejected}/verify"), json!({ "vote": "reject" })).await;
    assert!(status.is_success(), "{body}");
    let (_, d) = api.get(&format!("/detections/{rejected}")).await;
    assert_eq!(d["verification_status"], "rejected", "one admin's reject settles it: {d}");

    let stranger = hub.user("stranger@example.org", false).await;
    let far = seed::satellite(&hub, stranger.tenant, "Elsewhere").await;
    let other_team = seed::heard(&hub, stranger.tenant, far, &today_ago(&hub, 2), seed::ROBIN, 0.95).await.1;
    World { hub, owner: api, tenant: t, garden, robins, rejected, other_team }
}

/// GET without any credential: (status, headers, body).
async fn fetch(hub: &TestHub, path: &str, range: Option<&str>) -> (StatusCode, header::HeaderMap, Vec<u8>) {
    let mut req = Client::new().get(format!("{}{path}", hub.base_url));
    if let Some(r) = range {
        req = req.header(header::RANGE, r);
    }
    let r = req.send().await.expect("request");
    (r.status(), r.headers().clone(), r.bytes().await.expect("body").to_vec())
}

async fn page(hub: &TestHub, path: &str) -> (StatusCode, String) {
    let (s, _, b) = fetch(hub, path, None).await;
    (s, String::from_utf8(b).expect("utf-8"))
}

async fn set(w: &World, settings: Value) {
    let (status, body) = w.owner.put("/settings/tenant", settings).await;
    assert_eq!(status, 200, "{body}");
}

#[tokio::test]
async fn the_page_is_off_until_an_admin_turns_it_on_and_then_shows_today_to_anyone() {
    let w = world(0).await;
    let anon = w.hub.anon();
    let t = w.tenant;

    // Off by default: the page, its JSON and an unknown team are the same 404.
    let (status, html) = page(&w.hub, &format!("/public/{t}")).await;
    assert_eq!(status, 404);
    assert!(html.contains("No public page here"), "{html}");
    assert_error(&anon.get(&format!("/public/{t}")).await, 404, "public_page_not_found");
    assert_error(&anon.get(&format!("/public/{}", TenantId::new())).await, 404, "public_page_not_found");
    assert_error(&anon.get("/public/not-a-team").await, 404, "public_page_not_found");
    let (_, settings) = w.owner.get("/settings/tenant").await;
    assert_eq!(settings["settings"]["public_page_enabled"], false, "off by default");

    // A member may not turn it on; an admin may.
    let member = w.hub.member_of("member@example.org", t, birdhub::domain::Role::Member).await;
    let member = w.hub.login(&member.email).await;
    assert_error(
        &member.put("/settings/tenant", json!({ "public_page_enabled": true })).await,
        403,
        "insufficient_role",
    );
    set(&w, json!({ "public_page_enabled": true })).await;

    let (status, today) = anon.get(&format!("/public/{t}")).await;
    assert_eq!(status, 200, "{today}");
    let codes: Vec<&str> =
        today["species"].as_array().expect("species").iter().filter_map(|s| s["speciesCode"].as_str()).collect();
    assert_eq!(
        codes,
        [seed::ROBIN.0, seed::WREN.0],
        "today's species, most heard first; the rejected one left out of the feed only"
    );
    assert_eq!(today["species"][0]["detections"], 2);
    let recent: Vec<&str> =
        today["recent"].as_array().expect("recent").iter().filter_map(|d| d["id"].as_str()).collect();
    assert!(recent.contains(&w.robins[0].to_string().as_str()), "{recent:?}");
    assert!(!recent.contains(&w.rejected.to_string().as_str()), "a detection voted down is not shown");
    assert!(!recent.contains(&w.other_team.to_string().as_str()), "another team's detection is not shown");
    assert_eq!(today["recent"][0]["station"], "Garden");
    assert!(today["recent"][0]["audioUrl"].is_null(), "recordings stay private by default");
    let station = &today["stations"][0];
    assert_eq!(
        (station["speciesToday"].as_i64(), station["detectionsToday"].as_i64()),
        (Some(2), Some(3)),
        "voted-down detections are not counted: {station}"
    );
    assert_eq!(
        (station["name"].as_str(), station["latitude"].as_f64(), station["longitude"].as_f64()),
        (Some("Garden"), Some(52.52), Some(13.4)),
        "rounded to about a kilometre"
    );
    let text = today.to_string();
    for secret in
        [w.garden.to_string(), "owner@example.org".into(), "storage".into(), "audio/".into(), "tenantId".into()]
    {
        assert!(!text.contains(&secret), "the public JSON shows {secret}: {text}");
    }

    // The page itself, without sign-in.
    let (status, html) = page(&w.hub, &format!("/public/{t}")).await;
    assert_eq!(status, 200, "{html}");
    for want in [
        "Birds heard at",
        "American Robin",
        "House Wren",
        "Garden",
        "keeps its recordings private",
        "rounded to about a kilometre",
    ] {
        assert!(html.contains(want), "the page lacks {want:?}");
    }
    assert!(!html.contains("data-audio"), "no play buttons without audio");
    for secret in [w.garden.to_string(), "owner@example.org".into(), "Sign out".into(), "52.5187".into()] {
        assert!(!html.contains(&secret), "the page shows {secret}");
    }
    let (status, fragment) = page(&w.hub, &format!("/public/{t}/recent")).await;
    assert_eq!(status, 200);
    assert!(fragment.contains("Recently heard") && fragment.contains("hx-trigger=\"every 30s\""), "{fragment}");

    // Recordings: refused until allowed, then streamed with Range, only the team's own.
    let robin_audio = format!("/api/public/{t}/audio/{}", w.robins[0]);
    assert_error(&anon.get(&format!("/public/{t}/audio/{}", w.robins[0])).await, 403, "audio_not_shared");
    set(&w, json!({ "public_page_audio": true, "public_page_exact_locations": true })).await;
    let (status, headers, wav) = fetch(&w.hub, &robin_audio, None).await;
    assert_eq!(status, 200);
    assert_eq!(headers[header::CONTENT_TYPE], "audio/wav");
    assert_eq!(&wav[..4], b"RIFF");
    let (status, _, part) = fetch(&w.hub, &robin_audio, Some("bytes=0-99")).await;
    assert_eq!((status, part.len()), (StatusCode::PARTIAL_CONTENT, 100));
    for other in [w.rejected.to_string(), w.other_team.to_string(), DetectionId::new().to_string(), "nonsense".into()] {
        assert_error(&anon.get(&format!("/public/{t}/audio/{other}")).await, 404, "detection_not_found");
    }
    // Views are reused for a few seconds; the settings themselves apply at once.
    w.hub.state().cache.remove(&format!("public:today:{t}")).await;
    let (_, today) = anon.get(&format!("/public/{t}")).await;
    assert_eq!(
        today["recent"][0]["audioUrl"].as_str().map(|u| u.starts_with(&format!("/api/public/{t}/audio/"))),
        Some(true)
    );
    assert_eq!(today["stations"][0]["latitude"], 52.518_73, "exact when the team chose it");
    let (_, html) = page(&w.hub, &format!("/public/{t}")).await;
    assert!(html.contains("data-audio=\"/api/public/"), "play buttons once audio is shared");

    // Species pages: those the team heard, nothing else.
    let (status, html) = page(&w.hub, &format!("/public/{t}/species/{}", seed::ROBIN.0)).await;
    assert_eq!(status, 200, "{html}");
    assert!(
        html.contains("American Robin") && html.contains("public-trend-data") && html.contains("detections in 30 days")
    );
    let (status, species) = anon.get(&format!("/public/{t}/species/{}", seed::WARBLER.0)).await;
    assert_eq!(status, 200, "heard 40 days ago: its page exists with no recent count");
    assert_eq!(species["detections"], 0);
    let (status, html) = page(&w.hub, &format!("/public/{t}/species/corvus-corax")).await;
    assert_eq!(status, 404);
    assert!(html.contains("Not heard here"));
    assert_error(&anon.get(&format!("/public/{t}/species/corvus-corax")).await, 404, "species_not_found");
    assert_error(&anon.get(&format!("/public/{t}/species/{}/image", seed::ROBIN.0)).await, 404, "image_not_cached");

    // Off again: gone at once, for the page and its recordings.
    set(&w, json!({ "public_page_enabled": false })).await;
    assert_eq!(page(&w.hub, &format!("/public/{t}")).await.0, 404);
    assert_error(&anon.get(&format!("/public/{t}/audio/{}", w.robins[0])).await, 404, "public_page_not_found");
}

#[tokio::test]
async fn each_address_gets_a_limited_number_of_public_requests_a_minute() {
    let w = world(4).await;
    set(&w, json!({ "public_page_enabled": true })).await;
    let t = w.tenant;
    for i in 0..4 {
        let path = if i % 2 == 0 { format!("/public/{t}") } else { format!("/api/public/{t}") };
        assert_eq!(fetch(&w.hub, &path, None).await.0, 200, "request {i}");
    }
    let (status, headers, body) = fetch(&w.hub, &format!("/api/public/{t}"), None).await;
    assert_eq!(status, 429);
    assert_eq!(headers[header::RETRY_AFTER], "60");
    let body: Value = serde_json::from_slice(&body).expect("json");
    assert_eq!(body["code"], "rate_limited");
    let (status, html) = page(&w.hub, &format!("/public/{t}")).await;
    assert_eq!(status, 429);
    assert!(html.contains("Try again in a minute"), "{html}");
    // Signed-in pages are not counted.
    let (status, _) = w.owner.get("/stats/dashboard").await;
    assert_eq!(status, 200);
}

#[tokio::test]
async fn team_settings_has_the_switches_and_shows_the_link_to_share() {
    let w = world(0).await;
    let browser = &w.owner.client;
    let get = |path: &str| {
        let url = format!("{}{path}", w.hub.base_url);
        async move { browser.get(url).send().await.expect("page").text().await.expect("body") }
    };
    let html = get("/team").await;
    for want in [
        "Public page",
        "name=\"public_page_enabled\"",
        "name=\"public_page_audio\"",
        "name=\"public_page_exact_locations\"",
        "The page is off",
    ] {
        assert!(html.contains(want), "team settings lack {want:?}");
    }
    assert!(!html.contains("Public page enabled"), "the switches are not repeated in the general settings form");
    set(&w, json!({ "public_page_enabled": true })).await;
    let html = get("/team").await;
    assert!(html.contains(&format!("/public/{}", w.tenant)) && html.contains("Share this link"), "{html}");
}

#[tokio::test]
async fn species_pictures_show_on_the_public_page_with_their_credits() {
    let source = common::images::ImageSource::start().await;
    let labels = common::images::label_dir();
    let (model_dir, template) = (labels.path().display().to_string(), source.template());
    let hub = common::spawn_hub_with(move |s| {
        s.inference.model_dir = model_dir;
        s.species_images.source_url = template;
    })
    .await;
    let owner = hub.user("owner@example.org", false).await;
    let garden = seed::satellite(&hub, owner.tenant, "Garden").await;
    let robin: seed::Species = ("turdus_migratorius", "American Robin", "Turdus migratorius");
    seed::heard(&hub, owner.tenant, garden, &today_ago(&hub, 3), robin, 0.9).await;
    let api = hub.login(&owner.email).await;
    let (status, _) = api.put("/settings/tenant", json!({ "public_page_enabled": true })).await;
    assert_eq!(status, 200);
    // A member's visit asks for the picture; strangers never queue downloads.
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let (_, body) = api.post("/species/images", json!({ "codes": [robin.0] })).await;
        if body["images"][robin.0]["status"] == "cached" {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "the picture never arrived: {body}");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let t = owner.tenant;
    let image = format!("/api/public/{t}/species/{}/image", robin.0);
    let (status, headers, bytes) = fetch(&hub, &image, None).await;
    assert_eq!(status, 200);
    assert_eq!(bytes, common::images::robin_png());
    assert_eq!(headers["x-license"], "CC BY 4.0");
    assert!(headers[header::CACHE_CONTROL].to_str().unwrap_or_default().starts_with("public"));
    let (status, html) = page(&hub, &format!("/public/{t}/species/{}", robin.0)).await;
    assert_eq!(status, 200);
    assert!(html.contains(&format!("src=\"{image}\"")), "the species page shows the picture");
    assert!(html.contains("José Pérez") && html.contains("CC BY 4.0"), "with its credits");
    let (_, html) = page(&hub, &format!("/public/{t}")).await;
    assert!(html.contains(&format!("src=\"{image}\"")), "today's tiles show it too");
}

#[tokio::test]
async fn station_maps_have_no_tiles_unless_a_tile_server_is_configured() {
    let w = world(0).await;
    set(&w, json!({ "public_page_enabled": true })).await;
    let (_, html) = page(&w.hub, &format!("/public/{}", w.tenant)).await;
    assert!(html.contains("svg class=\"map plain\"") && !html.contains("<image"), "no tiles by default");
    let hub = common::spawn_hub_with(|s| {
        s.http.map_tiles = "https://tiles.example.org/{z}/{x}/{y}.png".into();
        s.http.map_attribution = "© Example Tiles".into();
    })
    .await;
    let owner = hub.user("owner@example.org", false).await;
    let t = owner.tenant;
    let garden = seed::satellite(&hub, t, "Garden").await;
    seed::place(&hub, t, garden, 52.518_73, 13.404_94).await;
    let api = hub.login(&owner.email).await;
    let r = api.client.get(format!("{}/stats/part/map", hub.base_url)).send().await.expect("map");
    let html = r.text().await.expect("body");
    assert!(
        html.contains("<image href=\"https://tiles.example.org/16/35208/21493.png\""),
        "zoom 16 tiles around the garden: {html}"
    );
    assert!(html.contains("© Example Tiles"));
}
