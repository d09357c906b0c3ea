//! Whose clock a time is read on (issue 51, defects 5 to 7), in a real headless chromium whose
//! zone is UTC (CI's) unless a test moves it, with a station in New York:
//! - 5: a satellite's own page (its History card and BirdWeather's "Latest detections") writes
//!   times on the station's clock with its zone's short name, on the viewer's 12-hour clock;
//! - 6: a share link opened in Tokyo says when the bird sang on the station's clock, with its
//!   zone, and the reader's own time beside it;
//! - 7: "Today, hour by hour" on Live, the public page and the Stats heatmap say whose hours they
//!   count; at 390 px the heatmap's hour labels stay on one line and its days read in words.
//!
//! Screenshots at 390 and 1280 px.

mod common;

#[path = "birdweather/fake.rs"]
mod fake;

use chrono::{Duration, Utc};
use common::{PASSWORD, browser::Browser, seed};
use serde_json::{Value, json};

/// 14:18 UTC on 6 December is 9:18 AM in New York (EST) and 23:18 in Tokyo.
const SANG: &str = "2026-12-06T14:18:00.000Z";

async fn text_has(b: &Browser, css: &str, want: &str) -> bool {
    let script = format!(
        "const e = document.querySelector({}); return !!e && e.textContent.includes({});",
        json!(css),
        json!(want)
    );
    b.wait_until(&script, 10).await
}

async fn fits(b: &Browser, what: &str) {
    for width in [390, 1280] {
        b.client.set_window_size(width, 900).await.expect("resize");
        let ok = b.wait_until("return document.documentElement.scrollWidth <= window.innerWidth;", 3).await;
        let got = b.js("return [document.documentElement.scrollWidth, window.innerWidth];").await;
        assert!(ok, "{what} scrolls sideways at {width} px: {got}");
    }
    b.client.set_window_size(1280, 900).await.expect("resize");
}

/// The browser's clock moved to `zone` (Chrome DevTools' `Emulation.setTimezoneOverride`, through
/// chromedriver), as a reader there has it.
#[derive(Debug)]
struct Zone(&'static str);

impl fantoccini::wd::WebDriverCompatibleCommand for Zone {
    fn endpoint(&self, base: &url::Url, session: Option<&str>) -> Result<url::Url, url::ParseError> {
        base.join(&format!("session/{}/goog/cdp/execute", session.unwrap_or_default()))
    }

    fn method_and_body(&self, _url: &url::Url) -> (axum::http::Method, Option<String>) {
        let body = json!({ "cmd": "Emulation.setTimezoneOverride", "params": { "timezoneId": self.0 } });
        (axum::http::Method::POST, Some(body.to_string()))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_satellites_own_page_reads_on_the_stations_clock() {
    let bw = fake::BirdWeather::start().await;
    let base = bw.base.clone();
    let hub = common::spawn_hub_with(move |s| {
        s.birdweather.base_url = base;
        s.birdweather.min_interval_secs = 0;
        s.birdweather.retry_initial_secs = 1;
    })
    .await;
    let owner = hub.user("owner@example.com", false).await;
    let api = hub.login(&owner.email).await;
    assert_eq!(api.put("/auth/me/preferences", json!({ "timeFormat": "12h" })).await.0, 200);
    let sat = seed::satellite(&hub, owner.tenant, "Central Park").await;
    seed::place(&hub, owner.tenant, sat, 40.78, -73.97).await;
    seed::zone_settles(&hub, sat, "America/New_York").await;
    let (code, body) =
        api.put(&format!("/satellites/{sat}/birdweather"), json!({ "token": "bwStationTok3nS3cretXyZ9" })).await;
    assert_eq!(code, 200, "{body}");
    let (_, d) = seed::heard(&hub, owner.tenant, sat, SANG, seed::BLACKBIRD, 0.9).await;
    let (code, body) = api.post(&format!("/detections/{d}/verify"), json!({"vote": "confirm"})).await;
    assert_eq!(code, 200, "{body}");
    assert_eq!(bw.wait_for(2, 30).await.len(), 2, "soundscape and detection");

    let b = Browser::start(hub.http_addr.port(), "station-times").await;
    b.sign_in(&owner.email, PASSWORD, None).await;
    let mut sent = false;
    for _ in 0..50 {
        b.goto(&format!("/satellites/{sat}")).await;
        if text_has(&b, "#bw-counts", "1 sent").await {
            sent = true;
            break;
        }
    }
    assert!(sent, "the upload is done");
    // The station's clock, named, on the viewer's 12-hour clock: never the viewer's 14:18 or 2:18 PM.
    assert!(text_has(&b, "#sat-history", "9:18 AM EST").await, "History: {}", b.text("#sat-history").await);
    let recent = b.js("return document.getElementById('bw-recent').textContent;").await;
    let recent = recent.as_str().unwrap_or_default();
    assert!(recent.contains("9:18 AM EST"), "BirdWeather's latest detections: {recent}");
    assert!(!recent.contains("2:18") && !b.text("#sat-history").await.contains("2:18"), "no viewer's time");
    b.js("document.querySelector('#sat-birdweather details').open = true; return null;").await;
    fits(&b, "the satellite page").await;
    b.shot("satellite").await;
    b.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_friend_in_tokyo_reads_when_the_bird_sang_on_the_stations_clock() {
    let hub = common::spawn_hub().await;
    let owner = hub.user("owner@example.com", false).await;
    let api = hub.login(&owner.email).await;
    let sat = seed::satellite(&hub, owner.tenant, "Central Park").await;
    seed::place(&hub, owner.tenant, sat, 40.78, -73.97).await;
    seed::zone_settles(&hub, sat, "America/New_York").await;
    let (_, d) = seed::heard(&hub, owner.tenant, sat, SANG, seed::BLACKBIRD, 0.9).await;
    let (code, link) = api.post(&format!("/detections/{d}/shares"), json!({})).await;
    assert!(code == 200 || code == 201, "{link}");
    let page = link["pageUrl"].as_str().expect("pageUrl");
    let page = &page[page.find("/share/").expect("a /share/ path")..];

    let friend = Browser::start(hub.http_addr.port(), "station-times-share").await;
    friend.client.issue_cmd(Zone("Asia/Tokyo")).await.expect("the browser moves to Tokyo");
    friend.goto(page).await;
    let zone = friend.js("return Intl.DateTimeFormat().resolvedOptions().timeZone;").await;
    assert_eq!(zone, "Asia/Tokyo", "the friend reads in Tokyo");
    assert!(text_has(&friend, ".share-facts", "09:18 EST").await, "{}", friend.text(".share-facts").await);
    let when = friend.text("#share-when").await;
    assert!(when.starts_with("Dec 6, 09:18 EST"), "the station's time first: {when}");
    assert!(when.contains("23:18") && when.contains("your time"), "and the reader's: {when}");
    fits(&friend, "the share page").await;
    friend.shot("share").await;
    friend.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hour_by_hour_figures_say_whose_hours_and_the_heatmap_fits_a_phone() {
    let hub = common::spawn_hub().await;
    let owner = hub.user("owner@example.com", false).await;
    let api = hub.login(&owner.email).await;
    let (status, _) = api.put("/settings/tenant", json!({ "public_page_enabled": true })).await;
    assert_eq!(status, 200);
    let london = seed::satellite(&hub, owner.tenant, "Garden").await;
    seed::place(&hub, owner.tenant, london, 51.5, -0.12).await;
    let ny = seed::satellite(&hub, owner.tenant, "Central Park").await;
    seed::place(&hub, owner.tenant, ny, 40.78, -73.97).await;
    seed::zone_settles(&hub, london, "Europe/London").await;
    seed::zone_settles(&hub, ny, "America/New_York").await;
    let now = Utc::now();
    for (i, hours) in [(0, 0), (1, 5), (2, 30), (3, 50)] {
        let at = (now - Duration::hours(hours) - Duration::minutes(i)).to_rfc3339();
        seed::heard(&hub, owner.tenant, london, &at, seed::BLACKBIRD, 0.9).await;
        seed::heard(&hub, owner.tenant, ny, &at, seed::WREN, 0.9).await;
    }

    let b = Browser::start(hub.http_addr.port(), "station-times-hours").await;
    b.sign_in(&owner.email, PASSWORD, None).await;
    b.goto("/").await;
    let note = b.text("#grid .local-hours").await;
    assert!(note.contains("local time") && note.contains("GMT") && note.contains("EST"), "Live: {note}");
    assert!(note.contains("Garden") && note.contains("Central Park"), "names the stations: {note}");
    b.shot("live").await;

    b.goto("/stats").await;
    b.find("#heatmap .heatmap .hm-row:nth-child(2)").await;
    let labels = b.js("return Array.from(document.querySelectorAll('#heatmap .hm-row:not(.hm-head) .hm-label')).map((e) => e.textContent);").await;
    let labels: Vec<&str> = labels.as_array().expect("labels").iter().filter_map(Value::as_str).collect();
    assert!(!labels.is_empty(), "the heatmap has days");
    // Days in words ("6 Dec"), never "12-06".
    let in_words = |l: &&&str| {
        l.split_once(' ').is_some_and(|(d, m)| {
            d.parse::<u32>().is_ok_and(|d| (1..=31).contains(&d)) && m.len() == 3 && m.chars().all(char::is_alphabetic)
        })
    };
    let bad_days: Vec<&&str> = labels.iter().filter(|l| !in_words(l)).collect();
    b.client.set_window_size(390, 900).await.expect("resize");
    // Labels on one line each at 390 px: no "0 / 0".
    let wrapped = "Array.from(document.querySelectorAll('#heatmap .hm-head .hm-hour, #heatmap .hm-label'))
        .filter((e) => e.textContent.trim() && getComputedStyle(e).visibility !== 'hidden')
        .filter((e) => e.getBoundingClientRect().height > 1.6 * parseFloat(getComputedStyle(e).fontSize))
        .map((e) => e.textContent)";
    let fit = b.wait_until(&format!("return {wrapped}.length === 0;"), 3).await;
    let wrapped = b.js(&format!("return {wrapped};")).await;
    assert!(bad_days.is_empty() && fit, "days not in words: {bad_days:?}; labels wrapping at 390 px: {wrapped}");
    let shown = b
        .js("return Array.from(document.querySelectorAll('#heatmap .hm-head .hm-hour')).filter((e) => e.textContent.trim() && getComputedStyle(e).visibility !== 'hidden').length;")
        .await;
    assert!(shown.as_u64().is_some_and(|n| n >= 4), "hours are still labelled at 390 px: {shown}");
    let note = b.text("#heatmap .local-hours").await;
    assert!(note.contains("GMT") && note.contains("EST"), "the heatmap says whose hours: {note}");
    fits(&b, "/stats").await;
    b.js("document.getElementById('heatmap').scrollIntoView(); return null;").await;
    b.shot("stats").await;

    b.goto(&format!("/public/{}", owner.tenant)).await;
    let public = b.js("const h = Array.from(document.querySelectorAll('h2')).find((h) => h.textContent === 'Today, hour by hour'); return h ? h.parentElement.textContent : '';").await;
    assert!(public.as_str().unwrap_or_default().contains("each station's own local time"), "public: {public}");
    b.shot("public").await;
    b.close().await;
}
