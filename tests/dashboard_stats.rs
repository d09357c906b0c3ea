//! The dashboard's Species and Stats pages over HTTP, as a browser gets them: a team with two
//! satellites (Garden, Orchard), three robins at Garden and one wren at Orchard in the last day.
//! The pages show the seeded names and numbers, the inline chart data holds the seeded counts,
//! the Stats sections load as fragments, and bad input gives a 4xx page, never a 500.

mod common;

use birdhub::ids::{DetectionId, SatelliteId};
use common::{TestHub, seed};
use reqwest::{Client, StatusCode, redirect::Policy};
use serde_json::Value;

struct World {
    hub: TestHub,
    browser: Client,
    garden: SatelliteId,
    orchard: SatelliteId,
    robins: Vec<DetectionId>,
    tenant: birdhub::ids::TenantId,
}

fn ago(hub: &TestHub, hours: i64) -> String {
    (hub.state().clock.now() - chrono::Duration::hours(hours)).to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

async fn world() -> World {
    let hub = common::spawn_hub().await;
    let owner = hub.user("owner@example.org", false).await;
    let garden = seed::satellite(&hub, owner.tenant, "Garden").await;
    let orchard = seed::satellite(&hub, owner.tenant, "Orchard").await;
    let mut robins = Vec::new();
    for (h, conf) in [(1, 0.9), (2, 0.8), (26, 0.72)] {
        robins.push(seed::heard(&hub, owner.tenant, garden, &ago(&hub, h), seed::ROBIN, conf).await.1);
    }
    seed::heard(&hub, owner.tenant, orchard, &ago(&hub, 3), seed::WREN, 0.6).await;
    // Heard 40 days ago: in the catalogue (a year), not in the last 30 days.
    seed::heard(&hub, owner.tenant, orchard, &ago(&hub, 40 * 24), seed::WARBLER, 0.7).await;
    let api = hub.login("owner@example.org").await;
    World { browser: api.client, hub, garden, orchard, robins, tenant: owner.tenant }
}

/// GET a page: (status, body).
async fn page(c: &Client, hub: &TestHub, path: &str) -> (StatusCode, String) {
    let r = c.get(format!("{}{path}", hub.base_url)).send().await.expect("page");
    let status = r.status();
    (status, r.text().await.expect("body"))
}

/// The inline JSON `<script type="application/json" id="{id}">`.
fn chart_data(html: &str, id: &str) -> Value {
    let open = format!(r#"id="{id}">"#);
    let start = html.find(&open).unwrap_or_else(|| panic!("no {id} in the page")) + open.len();
    let end = start + html[start..].find("</script>").expect("script end");
    serde_json::from_str(&html[start..end]).expect("chart json")
}

fn sum(series: &Value) -> i64 {
    series["values"].as_array().expect("values").iter().map(|v| v.as_i64().expect("count")).sum()
}

#[tokio::test]
async fn species_pages_show_the_seeded_birds_with_counts_names_and_chart_data() {
    let w = world().await;
    let (status, html) = page(&w.browser, &w.hub, "/species").await;
    assert_eq!(status, 200, "{html}");
    for text in ["American Robin", "Turdus migratorius", "House Wren", "Troglodytes aedon", "Search species"] {
        assert!(html.contains(text), "catalogue lacks {text}");
    }
    assert!(html.contains(&format!("/species/{}", seed::ROBIN.0)));
    // Most heard first, with their counts.
    let robin_at = html.find("American Robin").expect("robin");
    assert!(robin_at < html.find("House Wren").expect("wren"), "the robin (3) comes before the wren (1)");
    assert!(html.contains("<strong>3</strong> detections"), "robin count");
    assert!(html.contains("<strong>1</strong> detection ·"), "wren count");
    assert!(html.contains("Tennessee Warbler"), "a species of the year, outside the last 30 days");

    // The server filters too (for browsers without scripts).
    let (_, found) = page(&w.browser, &w.hub, "/species?q=wren").await;
    assert!(found.contains(r#"data-search="american robin turdus migratorius turdus-migratorius" hidden>"#), "{found}");
    assert!(found.contains(r#"data-search="house wren troglodytes aedon troglodytes-aedon">"#));

    let (status, html) = page(&w.browser, &w.hub, &format!("/species/{}", seed::ROBIN.0)).await;
    assert_eq!(status, 200, "{html}");
    for text in
        ["American Robin", "<em class=\"sci\">Turdus migratorius</em>", "Garden", "detections in the last 30 days"]
    {
        assert!(html.contains(text), "species page lacks {text}");
    }
    assert!(html.contains(&format!("/detections?species={}", seed::ROBIN.0)), "link to the filtered list");
    for id in &w.robins {
        assert!(html.contains(&format!("/detections/{id}")), "recent detection {id} linked");
    }
    assert!(html.contains("No satellite has a location"), "says why there is no expected-here status");
    // The profile charts hold the seeded numbers.
    let trend = chart_data(&html, "species-trend-data");
    assert_eq!(trend["type"], "bar");
    assert_eq!(trend["x"].as_array().map(Vec::len), Some(30), "a bar per day of the range");
    assert_eq!(sum(&trend["series"][0]), 3);
    assert_eq!(sum(&chart_data(&html, "species-hourly-data")["series"][0]), 3);
    let conf = chart_data(&html, "species-confidence-data");
    assert_eq!(conf["x"].as_array().map(Vec::len), Some(20));
    assert_eq!(sum(&conf["series"][0]), 3);
    // The wren's page counts only the wren, at Orchard.
    let (_, wren) = page(&w.browser, &w.hub, &format!("/species/{}?days=7", seed::WREN.0)).await;
    assert_eq!(sum(&chart_data(&wren, "species-trend-data")["series"][0]), 1);
    assert_eq!(chart_data(&wren, "species-trend-data")["x"].as_array().map(Vec::len), Some(7));
    assert!(
        wren.contains("Orchard")
            && wren.contains(r#"<span class="n">1</span><span class="l">detection in the last 7 days"#)
    );

    // With a located satellite the page asks the range model; either way it says something.
    let (tenant, garden) = (w.tenant, w.garden);
    w.hub
        .state()
        .store
        .call(move |c| birdhub::store::satellites::set_location(c, tenant, garden, 40.8, -77.9))
        .await
        .expect("located");
    let (status, html) = page(&w.browser, &w.hub, &format!("/species/{}", seed::ROBIN.0)).await;
    assert_eq!(status, 200, "{html}");
    assert!(html.contains("xpected here"), "an expected-here status or the reason for none");
    assert!(!html.contains("No satellite has a location"));
}

#[tokio::test]
async fn stats_renders_its_sections_and_each_fragment_has_the_numbers() {
    let w = world().await;
    let (status, html) = page(&w.browser, &w.hub, "/stats").await;
    assert_eq!(status, 200, "{html}");
    for name in
        ["trends", "heatmap", "top", "biodiversity", "compare", "migration", "verification", "leaderboard", "map"]
    {
        assert!(html.contains(&format!(r#"hx-get="/stats/part/{name}?days=30""#)), "section {name} loads lazily");
    }
    assert!(html.contains("<option value=\"30\" selected>"), "the range selector shows 30 days");
    assert!(html.contains("Garden") && html.contains("Orchard"), "satellite filter and compare selects");
    // The totals of the range: 2 species, 4 detections.
    assert!(html.contains(r#"<span class="n">2</span><span class="l">species in the last 30 days"#), "{html}");
    assert!(html.contains(r#"<span class="n">4</span><span class="l">detections in the last 30 days"#));

    let part = |name: &str, q: &str| {
        let c = w.browser.clone();
        let url = format!("{}/stats/part/{name}?{q}", w.hub.base_url);
        async move {
            let r = c.get(url).send().await.expect("part");
            assert_eq!(r.status(), 200);
            r.text().await.expect("body")
        }
    };
    let trends = part("trends", "days=30").await;
    assert!(trends.contains("4 detections in the last 30 days"), "{trends}");
    let data = chart_data(&trends, "trend-chart-data");
    assert_eq!(sum(&data["series"][0]), 4);
    let top = part("top", "days=30").await;
    assert!(top.find("American Robin").expect("robin") < top.find("House Wren").expect("wren"));
    let heat = part("heatmap", "days=30").await;
    assert!(heat.contains("hm l"), "shaded cells: {heat}");
    let bio = part("biodiversity", "days=30").await;
    assert!(bio.contains("Garden") && bio.contains("Orchard") && bio.contains("All together"));
    let cmp = part("compare", &format!("days=30&a={}&b={}", w.garden, w.orchard)).await;
    assert!(cmp.contains("Only Garden") && cmp.contains("American Robin") && cmp.contains("House Wren"), "{cmp}");
    let mig = part("migration", "days=365").await;
    assert!(mig.contains("American Robin"));
    let ver = part("verification", "days=30").await;
    assert!(ver.contains("of 4 detections reviewed"), "{ver}");
    let map = part("map", "days=30").await;
    assert!(map.contains("No satellite has a position yet") && map.contains("not set"), "{map}");
    // One satellite: the numbers follow the filter.
    let only = part("trends", &format!("days=7&satellite={}", w.orchard)).await;
    assert!(only.contains("1 detection in the last 7 days"), "{only}");
    // A satellite-filtered page keeps the filter in its fragment links.
    let (_, filtered) = page(&w.browser, &w.hub, &format!("/stats?days=7&satellite={}", w.orchard)).await;
    assert!(filtered.contains(&format!("/stats/part/trends?days=7&amp;satellite={}", w.orchard)), "{filtered}");
}

#[tokio::test]
async fn bad_input_and_no_session_give_pages_not_500s() {
    let w = world().await;
    let (status, html) = page(&w.browser, &w.hub, "/species/no-such-bird").await;
    assert_eq!(status, 404);
    assert!(html.contains("Not found") && html.contains("<html"), "{html}");
    for bad in ["/stats?days=abc", "/stats?days=0", "/stats?days=9999", "/species/turdus-migratorius?days=abc"] {
        let (status, html) = page(&w.browser, &w.hub, bad).await;
        assert!(status.is_client_error(), "{bad}: {status}");
        assert!(html.contains("<html") && html.contains("That did not work"), "{bad}: {html}");
    }
    // Another team's satellite is unknown here.
    let stranger = w.hub.user("stranger@example.org", false).await;
    let theirs = seed::satellite(&w.hub, stranger.tenant, "Theirs").await;
    let (status, _) = page(&w.browser, &w.hub, &format!("/stats?satellite={theirs}")).await;
    assert_eq!(status, 404);
    let (status, _) = page(&w.browser, &w.hub, "/stats?satellite=not-an-id").await;
    assert!(status.is_client_error(), "{status}");
    // A bad value in a fragment shows in place (htmx swaps only 2xx answers).
    let r = w.browser.get(format!("{}/stats/part/trends?days=abc", w.hub.base_url)).send().await.expect("part");
    assert_eq!(r.status(), 200);
    assert!(r.text().await.expect("body").contains("class=\"error\""));

    // Without a session: to sign-in, and back after.
    birdhub::install_tls_provider();
    let anon = Client::builder().redirect(Policy::none()).build().expect("client");
    for path in ["/species", "/species/turdus-migratorius", "/stats", "/stats/part/trends"] {
        let r = anon.get(format!("{}{path}", w.hub.base_url)).send().await.expect("anon");
        assert_eq!(r.status(), 303, "{path}");
        let to = r.headers().get("location").and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
        assert!(to.starts_with("/signin?next=%2F"), "{path} -> {to}");
    }
}

#[tokio::test]
async fn a_new_team_sees_empty_states_that_say_why() {
    let w = world().await;
    w.hub.user("new@example.org", false).await;
    let fresh = w.hub.login("new@example.org").await.client;
    let (status, html) = page(&fresh, &w.hub, "/species").await;
    assert_eq!(status, 200);
    assert!(html.contains("No species yet") && !html.contains("American Robin"), "{html}");
    // A species heard before the range: its page says why the charts are empty.
    let (status, html) = page(&w.browser, &w.hub, &format!("/species/{}", seed::WARBLER.0)).await;
    assert_eq!(status, 200, "{html}");
    assert!(html.contains("No detections in the last 30 days") && !html.contains("species-trend-data"), "{html}");
    assert!(html.contains("Tennessee Warbler") && html.contains("Recent detections"));
    let (status, _) = page(&fresh, &w.hub, "/stats").await;
    assert_eq!(status, 200);
    let (_, trends) = page(&fresh, &w.hub, "/stats/part/trends?days=30").await;
    assert!(trends.contains("No detections in the last 30 days"), "{trends}");
    let (_, cmp) = page(&fresh, &w.hub, "/stats/part/compare?days=30").await;
    assert!(cmp.contains("Comparing needs two satellites"));
    let (_, map) = page(&fresh, &w.hub, "/stats/part/map?days=30").await;
    assert!(map.contains("No satellites yet"));
    let _ = w.orchard;
}
