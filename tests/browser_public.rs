//! A team's public page in a real browser (headless chromium): the owner turns it on in Team
//! settings and signs out, then a friend without an account opens it: today's species, the hour
//! grid, the station map and the feed, a recording that plays, and a species page whose charts
//! draw; screenshots at phone and desktop widths and no script errors.

mod common;

use common::{browser::Browser, seed};
use serde_json::json;

fn minutes_ago(hub: &common::TestHub, m: i64) -> String {
    let now = hub.state().clock.now();
    let since_midnight =
        i64::from(chrono::Timelike::num_seconds_from_midnight(&now.with_timezone(&chrono::Local))) / 60;
    let m = m.min(since_midnight.max(1) - 1).max(0);
    (now - chrono::Duration::minutes(m)).to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

const PIXELS: &str = "var n=0;document.querySelectorAll('canvas').forEach(function(c){var d=c.getContext('2d').getImageData(0,0,c.width,c.height).data;for(var i=3;i<d.length;i+=4){if(d[i]>0)n++}});return n;";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_friend_opens_the_public_page_plays_a_bird_and_reads_its_species_page() {
    let hub = common::spawn_hub().await;
    let owner = hub.user("owner@example.org", false).await;
    let t = owner.tenant;
    hub.sql(|c| c.execute("UPDATE tenants SET name = 'Hazel Lane garden' WHERE id = ?1", [t.to_string()]))
        .expect("renamed");
    let garden = seed::satellite(&hub, t, "Garden").await;
    let hedge = seed::satellite(&hub, t, "Hedge").await;
    seed::place(&hub, t, garden, 52.518_7, 13.404_9).await;
    seed::place(&hub, t, hedge, 52.531_2, 13.421_5).await;
    for (m, conf) in [(2, 0.91), (30, 0.84), (70, 0.77), (200, 0.88)] {
        seed::heard(&hub, t, garden, &minutes_ago(&hub, m), seed::ROBIN, conf).await;
    }
    for m in [12, 95] {
        seed::heard(&hub, t, hedge, &minutes_ago(&hub, m), seed::WREN, 0.7).await;
    }
    seed::heard(&hub, t, hedge, &minutes_ago(&hub, 40), seed::WARBLER, 0.66).await;
    // The owner turns the page on in Team settings, copies the link and signs out.
    let b = Browser::start(hub.http_addr.port(), "public").await;
    b.sign_in(&owner.email, common::PASSWORD, None).await;
    b.goto("/team").await;
    assert!(b.text("#public-page").await.contains("The page is off"));
    b.click("#pp-on").await;
    b.click("#pp-audio").await;
    b.click("#public-page button[type='submit']").await;
    b.find("#public-url").await;
    let link = b.js("return document.querySelector('#public-url').value;").await;
    assert!(link.as_str().is_some_and(|l| l.ends_with(&format!("/public/{t}"))), "{link}");
    b.assert_no_js_errors().await;
    b.shot("team-public-on").await;
    b.click("details.account summary").await;
    b.click("details.account form[action='/signout'] button").await;
    b.find("form[action='/signin']").await;

    // A friend, with no account, opens the link.
    b.goto(&format!("/public/{t}")).await;
    assert!(b.text("h1").await.contains("Hazel Lane garden"));
    assert_eq!(b.js("return document.querySelectorAll('.species-tiles li').length;").await, json!(3));
    assert!(b.text(".numbers").await.contains("7"), "seven detections today");
    assert!(b.has("svg.map .map-marker").await, "the stations are drawn");
    assert!(b.has("table.activity").await);
    assert!(!b.has("nav.tabs").await && !b.has("details.account").await, "no signed-in chrome");
    b.click("#recent .det-card button.play").await;
    assert!(
        b.wait_until("return window.bh.player.currentTime > 0 || window.bh.player.ended;", 15).await,
        "the recording plays"
    );
    b.assert_no_js_errors().await;
    b.shot("public-today").await;
    let fits = b.js("return document.documentElement.scrollWidth <= window.innerWidth;").await;
    assert_eq!(fits.as_bool(), Some(true), "nothing overflows the phone's width");

    b.click(&format!(".species-tiles a[href$='/species/{}']", seed::ROBIN.0)).await;
    assert!(b.wait_until("return document.querySelectorAll('.chart canvas').length === 2", 10).await, "two charts");
    assert!(b.text("h1").await.contains("American Robin"));
    assert!(b.js(PIXELS).await.as_i64().unwrap_or(0) > 1000, "the charts drew");
    assert!(b.text("main").await.contains("Per station") || b.text("main").await.contains("Recently heard"));
    b.assert_no_js_errors().await;
    b.shot("public-species").await;
    b.close().await;
}

/// A tile server on 127.0.0.1 that answers every `/{z}/{x}/{y}.png` with a small PNG and keeps
/// the paths it was asked for.
async fn tile_server() -> (String, std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
    use axum::{http::Uri, response::IntoResponse};
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = seen.clone();
    let app = axum::Router::new().fallback(move |uri: Uri| {
        let log = log.clone();
        async move {
            log.lock().expect("lock").push(uri.path().to_owned());
            ([(axum::http::header::CONTENT_TYPE, "image/png")], common::images::robin_png()).into_response()
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind tiles");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (base, seen)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_a_tile_server_configured_the_station_map_loads_its_tiles() {
    let (tiles, seen) = tile_server().await;
    let template = format!("{tiles}/{{z}}/{{x}}/{{y}}.png");
    let hub = common::spawn_hub_with(move |s| {
        s.http.map_tiles = template;
        s.http.map_attribution = "© Test Tiles".into();
    })
    .await;
    let owner = hub.user("owner@example.org", false).await;
    let t = owner.tenant;
    let garden = seed::satellite(&hub, t, "Garden").await;
    seed::place(&hub, t, garden, 52.518_7, 13.404_9).await;
    seed::heard(&hub, t, garden, &minutes_ago(&hub, 3), seed::ROBIN, 0.9).await;
    let api = hub.login(&owner.email).await;
    let (status, _) = api.put("/settings/tenant", json!({ "public_page_enabled": true })).await;
    assert_eq!(status, 200);

    let b = Browser::start(hub.http_addr.port(), "public-tiles").await;
    b.goto(&format!("/public/{t}")).await;
    assert!(b.has("svg.map.tiled image").await);
    assert!(b.text("svg.map").await.contains("© Test Tiles"), "the provider's credit is on the map");
    assert!(
        b.wait_until(&format!("return performance.getEntriesByType('resource').filter(function(e){{return e.name.indexOf('{tiles}/13/')===0}}).length >= 4;"), 10).await,
        "the browser loaded the tiles at zoom 13 (rounded positions)"
    );
    let asked = seen.lock().expect("lock").clone();
    assert!(asked.iter().any(|p| p == "/13/4400/2686.png"), "the tiles around Berlin: {asked:?}");
    b.assert_no_js_errors().await;
    b.shot("public-tiles").await;
    b.close().await;
}
