//! Every dashboard page in a real browser, and its weight: each page is opened signed in as a
//! platform admin on a team with data, checked for script errors and for requests that leave
//! the hub, and shot at 390 and 1280 px. The page weight (the HTML, the assets it links and the
//! fragments it loads at once, all gzip as sent) is printed per page and must stay under
//! 150 KB. Run it alone to read the table:
//! `cargo test --test browser_pages -- --nocapture`.

mod common;

use chrono::{Duration, Utc};
use common::{PASSWORD, browser::Browser, seed};
use reqwest::{StatusCode, header, redirect::Policy};
use serde_json::json;

const BUDGET: usize = 150 * 1024;

/// The `_csrf` value in a page's form.
fn csrf_of(html: &str) -> String {
    let at = html.find("name=\"_csrf\" value=\"").expect("a CSRF field") + 20;
    html[at..at + 32].to_owned()
}

/// The values of `attr="..."` in `html` that start with `/` (links to the hub itself).
fn local_refs(html: &str, attr: &str) -> Vec<String> {
    let pat = format!("{attr}=\"");
    html.match_indices(&pat)
        .filter_map(|(i, _)| {
            let rest = &html[i + pat.len()..];
            rest.find('"').map(|end| rest[..end].replace("&amp;", "&"))
        })
        .filter(|v| v.starts_with('/'))
        .collect()
}

/// Bytes as sent with `Accept-Encoding: gzip`, and the body as text (decoded when needed).
async fn gz(c: &reqwest::Client, url: &str) -> (usize, String) {
    let r = c.get(url).header(header::ACCEPT_ENCODING, "gzip").header("hx-request", "true").send().await.expect("GET");
    assert!(r.status() == StatusCode::OK, "GET {url}: {}", r.status());
    let gzipped = r.headers().get(header::CONTENT_ENCODING).is_some_and(|v| v == "gzip");
    let bytes = r.bytes().await.expect("body");
    let text = if gzipped {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(&bytes[..]), &mut s).expect("gunzip");
        s
    } else {
        String::from_utf8_lossy(&bytes).into_owned()
    };
    (bytes.len(), text)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_page_renders_in_a_browser_without_errors_and_stays_under_150_kb() {
    let hub = common::spawn_hub().await;
    let ana = hub.user("ana@example.org", true).await;
    let sat = seed::satellite(&hub, ana.tenant, "Garden").await;
    let _other = seed::satellite(&hub, ana.tenant, "Orchard").await;
    let today = Utc::now();
    let mut first = None;
    for (i, (species, conf)) in
        [(seed::ROBIN, 0.91), (seed::WREN, 0.74), (seed::WARBLER, 0.83), (seed::ROBIN, 0.66)].into_iter().enumerate()
    {
        let at = (today - Duration::minutes(7 * i as i64 + 1)).to_rfc3339();
        let (_, d) = seed::heard(&hub, ana.tenant, sat, &at, species, conf).await;
        first.get_or_insert(d);
    }
    let det = first.expect("a detection");
    let (status, _) =
        hub.login(&ana.email).await.put("/settings/tenant", serde_json::json!({ "public_page_enabled": true })).await;
    assert_eq!(status, 200, "the public page is on");

    // A cookie client for the weights.
    let c = reqwest::Client::builder().cookie_store(true).redirect(Policy::none()).build().expect("client");
    let login_page = c.get(format!("{}/signin", hub.base_url)).send().await.expect("GET").text().await.expect("body");
    let form = [
        ("_csrf", csrf_of(&login_page)),
        ("email", ana.email.clone()),
        ("password", PASSWORD.into()),
        ("next", "/".into()),
    ];
    let r = c.post(format!("{}/signin", hub.base_url)).form(&form).send().await.expect("POST");
    assert_eq!(r.status(), StatusCode::SEE_OTHER);

    let pages: Vec<(&str, String)> = vec![
        ("live", "/".into()),
        ("detections", "/detections".into()),
        ("detection", format!("/detections/{det}")),
        ("species-list", "/species".into()),
        ("species", format!("/species/{}", seed::ROBIN.0)),
        ("stats", "/stats".into()),
        ("sessions", "/sessions".into()),
        ("satellites", "/satellites".into()),
        ("satellite-new", "/satellites/new".into()),
        ("satellite", format!("/satellites/{sat}")),
        ("alerts", "/alerts".into()),
        ("exports", "/exports".into()),
        ("team", "/team".into()),
        ("account", "/account".into()),
        ("admin", "/admin".into()),
        ("public", format!("/public/{}", ana.tenant)),
        ("public-species", format!("/public/{}/species/{}", ana.tenant, seed::ROBIN.0)),
    ];

    println!(
        "\n{:<16} {:>9} {:>9} {:>11} {:>9}  (KB gzip as sent, a first visit with an empty cache)",
        "page", "html", "assets", "fragments", "total"
    );
    let mut worst = (0usize, String::new());
    for (name, path) in &pages {
        let (html_bytes, html) = gz(&c, &format!("{}{path}", hub.base_url)).await;
        let mut assets: Vec<String> = local_refs(&html, "src")
            .into_iter()
            .chain(local_refs(&html, "href"))
            .filter(|u| u.starts_with("/assets/"))
            .collect();
        assets.sort();
        assets.dedup();
        let mut asset_bytes = 0;
        for a in &assets {
            asset_bytes += gz(&c, &format!("{}{a}", hub.base_url)).await.0;
        }
        // Fragments htmx loads as soon as the page is there.
        let mut frag_bytes = 0;
        for (i, _) in html.match_indices("hx-trigger=\"load") {
            let tag_start = html[..i].rfind('<').unwrap_or(0);
            let tag = &html[tag_start..html[i..].find('>').map_or(html.len(), |e| i + e)];
            if let Some(u) = local_refs(tag, "hx-get").first() {
                frag_bytes += gz(&c, &format!("{}{u}", hub.base_url)).await.0;
            }
        }
        for url in local_refs(&html, "src").iter().chain(local_refs(&html, "href").iter()) {
            assert!(!url.starts_with("//"), "{path} links outside the hub: {url}");
        }
        assert!(
            !html.contains("src=\"http") && !html.contains("href=\"https://cdn"),
            "{path} loads something from outside the hub"
        );
        let total = html_bytes + asset_bytes + frag_bytes;
        let kb = |b: usize| b as f64 / 1024.0;
        println!(
            "{name:<16} {:>9.1} {:>9.1} {:>11.1} {:>9.1}",
            kb(html_bytes),
            kb(asset_bytes),
            kb(frag_bytes),
            kb(total)
        );
        if total > worst.0 {
            worst = (total, (*name).to_owned());
        }
        assert!(total < BUDGET, "{path} weighs {total} bytes gzip, over the 150 KB budget");
    }
    println!("heaviest: {} at {:.1} KB of the 150 KB budget", worst.1, worst.0 as f64 / 1024.0);

    // The same pages in chromium: no script errors, no request leaves the hub, screenshots.
    let b = Browser::start(hub.http_addr.port(), "pages").await;
    b.sign_in(&ana.email, PASSWORD, None).await;
    for (name, path) in &pages {
        b.goto(path).await;
        b.find("main").await;
        // Let htmx fill lazy sections and charts draw.
        b.wait_until("return !document.querySelector('[hx-trigger^=\"load\"]:not(.htmx-settled)') || document.readyState === 'complete';", 5).await;
        tokio::time::sleep(std::time::Duration::from_millis(700)).await;
        let outside = b
            .js("return performance.getEntriesByType('resource').map(r => r.name).filter(n => !n.startsWith(location.origin) && !n.startsWith('data:') && !n.startsWith('blob:'));")
            .await;
        assert_eq!(outside, json!([]), "{path} made requests outside the hub");
        b.shot(name).await;
    }
    // Signed-out pages too.
    b.goto("/account").await;
    b.click("details.account summary").await;
    b.click("details.account form[action='/signout'] button").await;
    for (name, path) in [("signin", "/signin"), ("forgot", "/forgot"), ("invite", "/register?invite=abc")] {
        b.goto(path).await;
        b.find("main").await;
        b.shot(name).await;
    }
    b.close().await;
}
