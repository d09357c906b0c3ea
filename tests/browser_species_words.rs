//! Issue 51, defect 15, on the species pages in a real headless chromium: "first heard" in the
//! catalogue and "first seen" on a species' page are days in words, and the range model's week
//! is its days ("this week (1–7 Dec)"), never BirdNET's "week 45" of 48. Screenshots at 390 and
//! 1280 px.

mod common;

use common::{PASSWORD, browser::Browser, seed};

/// `2026-05-01` and the like, anywhere in `text`.
fn has_iso_date(text: &str) -> bool {
    text.as_bytes()
        .windows(10)
        .any(|w| w.iter().enumerate().all(|(i, c)| if i == 4 || i == 7 { *c == b'-' } else { c.is_ascii_digit() }))
}

/// A day written in words: a month's name, and no raw date.
fn in_words(text: &str) -> bool {
    let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
    months.iter().any(|m| text.contains(m)) && !has_iso_date(text)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn species_pages_write_days_and_weeks_in_words() {
    let hub = common::spawn_hub_with(common::with_model).await;
    let owner = hub.user("owner@example.org", false).await;
    let t = owner.tenant;
    let ny = seed::satellite(&hub, t, "Central Park").await;
    let london = seed::satellite(&hub, t, "Garden").await;
    seed::place(&hub, t, ny, 40.7812, -73.9665).await;
    seed::place(&hub, t, london, 51.5072, -0.1276).await;
    let recent =
        (hub.state().clock.now() - chrono::Duration::hours(2)).to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    seed::heard(&hub, t, ny, "2026-05-01T10:00:00.000Z", seed::ROBIN, 0.9).await;
    seed::heard(&hub, t, ny, &recent, seed::ROBIN, 0.9).await;
    seed::heard(&hub, t, london, &recent, seed::ROBIN, 0.9).await;

    let b = Browser::start(hub.http_addr.port(), "species-words").await;
    b.sign_in(&owner.email, PASSWORD, None).await;

    // The species catalogue: "first heard" is a day in words.
    b.goto("/species").await;
    let seen = b.text("span.species-seen").await;
    assert!(seen.contains("first heard") && in_words(&seen), "no raw date in the catalogue: {seen:?}");
    b.shot_at("species-list", &[390, 1280]).await;

    // The species page: its first day, and the range model's week as days.
    b.goto(&format!("/species/{}", seed::ROBIN.0)).await;
    let numbers = b.text(".species-numbers").await;
    assert!(numbers.contains("first seen") && in_words(&numbers), "first seen in words: {numbers:?}");
    let expected = b.text("ul.expected").await;
    let now = hub.state().clock.now().date_naive();
    let week = birdhub::inference::range::week_of(now);
    let (first, last) = birdhub::inference::range::week_days(chrono::Datelike::year(&now), week).expect("a week");
    let days = format!("{}–{} {}", chrono::Datelike::day(&first), chrono::Datelike::day(&last), first.format("%b"));
    assert!(expected.contains(&format!("this week ({days}")), "the week as its days ({days}): {expected:?}");
    assert!(!expected.contains("(week "), "never BirdNET's week number: {expected:?}");
    b.shot_at("species", &[390, 1280]).await;

    b.assert_no_js_errors().await;
    b.close().await;
}
