//! The Species and Stats pages in a real browser (headless chromium): sign in, open a seeded
//! species and see its charts drawn (pixels on the canvas), open Stats and Species, with
//! screenshots at phone and desktop widths and no script errors anywhere.

mod common;

use common::{PASSWORD, browser::Browser, seed};

fn ago(hub: &common::TestHub, hours: i64) -> String {
    (hub.state().clock.now() - chrono::Duration::hours(hours)).to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// Non-transparent pixels over every canvas of the page.
const PIXELS: &str = "var n=0;document.querySelectorAll('canvas').forEach(function(c){var d=c.getContext('2d').getImageData(0,0,c.width,c.height).data;for(var i=3;i<d.length;i+=4){if(d[i]>0)n++}});return n;";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn species_charts_draw_and_the_stats_pages_render_without_errors() {
    let hub = common::spawn_hub().await;
    let owner = hub.user("owner@example.org", false).await;
    let (t, garden) = (owner.tenant, seed::satellite(&hub, owner.tenant, "Garden").await);
    let orchard = seed::satellite(&hub, t, "Orchard").await;
    hub.state()
        .store
        .call(move |c| birdhub::store::satellites::set_location(c, t, garden, 40.8, -77.9))
        .await
        .expect("located");
    for (h, conf) in [(1, 0.9), (2, 0.8), (26, 0.72), (50, 0.66), (75, 0.93)] {
        seed::heard(&hub, t, garden, &ago(&hub, h), seed::ROBIN, conf).await;
    }
    for h in [3, 30] {
        seed::heard(&hub, t, orchard, &ago(&hub, h), seed::WREN, 0.6).await;
    }

    let b = Browser::start(hub.http_addr.port(), "stats").await;
    b.sign_in(&owner.email, PASSWORD, None).await;

    b.goto(&format!("/species/{}", seed::ROBIN.0)).await;
    assert!(b.text("h1").await.contains("American Robin"));
    b.find("#species-trend canvas").await;
    assert!(b.wait_until("return document.querySelectorAll('.chart canvas').length === 3", 10).await, "three charts");
    let pixels = b.js(PIXELS).await.as_i64().unwrap_or(0);
    assert!(pixels > 2000, "the charts drew bars and axes: {pixels} pixels");
    b.assert_no_js_errors().await;
    b.shot("species-robin").await;
    // The charts follow the container: after the phone-width shot they still fit the page.
    let fits = b.js("return document.documentElement.scrollWidth <= window.innerWidth;").await;
    assert_eq!(fits.as_bool(), Some(true));

    b.goto("/stats").await;
    // Every section loads itself; the trend chart draws.
    assert!(
        b.wait_until("return document.querySelectorAll('.stats-part .loading').length === 0", 15).await,
        "every section loaded"
    );
    b.find("#trend-chart canvas").await;
    assert!(b.js(PIXELS).await.as_i64().unwrap_or(0) > 1000, "the trend chart drew");
    assert!(b.has(".heatmap .hm.l1, .heatmap .hm.l5, .heatmap .hm.l2, .heatmap .hm.l3, .heatmap .hm.l4").await);
    assert!(b.text("#map").await.contains("Garden"));
    b.shot("stats").await;

    // The range choice goes into the URL.
    b.goto("/stats?days=7").await;
    b.find("#trend-chart canvas").await;
    assert!(b.path().await.contains("days=7"));
    b.assert_no_js_errors().await;

    b.goto("/species").await;
    b.fill("#species-q", "wren").await;
    assert!(b.wait_until("return document.querySelectorAll('.species-card:not([hidden])').length === 1", 5).await);
    b.fill("#species-q", "").await;
    assert!(
        b.wait_until("return document.querySelectorAll('.species-card:not([hidden])').length === 2", 5).await,
        "cleared"
    );
    b.shot("species").await;
    b.close().await;
}
