//! Stats: the team's numbers over a range (7, 30, 90 or 365 days) and one satellite or all, both
//! kept in the URL. The page renders the headline numbers at once; every other section
//! (trends, heatmap, top species, biodiversity, comparison, migration, verification, map) loads
//! itself from a fragment route (`/stats/part/{name}`, see `stats_parts.rs`) so the first
//! render stays fast.

use axum::{
    Router,
    extract::{Path, RawQuery},
    response::{IntoResponse, Response},
    routing::get,
};
use chrono::{DateTime, Utc};
use maud::{Markup, html};
use serde::Deserialize;

use super::stats_parts;
use crate::{
    domain::zone,
    web::{WebState, ctx::Ctx, error::PageError, layout, words},
};

pub fn routes() -> Router<WebState> {
    Router::new().route("/stats", get(page)).route("/stats/part/{name}", get(part))
}

/// The ranges the selector offers.
pub const RANGES: [i64; 4] = [7, 30, 90, 365];

/// The page's filters as the URL gives them (`days`, `satellite`, and `a`/`b` for the
/// comparison), kept as text: the API checks them, and its refusal becomes the 4xx page.
#[derive(Debug, Clone, Default)]
pub struct Filters {
    pub days: String,
    pub satellite: String,
    pub a: String,
    pub b: String,
}

impl Filters {
    /// Reads a raw query string; the last value of a repeated key wins.
    pub fn parse(raw: Option<&str>) -> Self {
        let mut f = Self { days: "30".into(), ..Self::default() };
        for (k, v) in url::form_urlencoded::parse(raw.unwrap_or_default().as_bytes()) {
            let v = v.trim().to_owned();
            match k.as_ref() {
                "days" if !v.is_empty() => f.days = v,
                "satellite" => f.satellite = v,
                "a" => f.a = v,
                "b" => f.b = v,
                _ => {}
            }
        }
        f
    }

    /// The API's query for these filters (`days=30&satelliteId=...`).
    pub fn api(&self) -> String {
        let mut q = url::form_urlencoded::Serializer::new(String::new());
        q.append_pair("days", &self.days);
        if !self.satellite.is_empty() {
            q.append_pair("satelliteId", &self.satellite);
        }
        q.finish()
    }

    /// The page's own query for these filters (for fragment and page links).
    pub fn page(&self) -> String {
        let mut q = url::form_urlencoded::Serializer::new(String::new());
        q.append_pair("days", &self.days);
        for (k, v) in [("satellite", &self.satellite), ("a", &self.a), ("b", &self.b)] {
            if !v.is_empty() {
                q.append_pair(k, v);
            }
        }
        q.finish()
    }

    /// "the last 30 days".
    pub fn range_words(&self) -> String {
        match self.days.as_str() {
            "1" => "today".into(),
            d => format!("the last {d} days"),
        }
    }
}

/// A satellite of the team, for selects and names.
#[derive(Debug, Clone, Deserialize)]
pub struct Sat {
    pub id: String,
    pub name: String,
    pub latitude: Option<f64>,
    pub longitude: Option<f64>,
    /// Its effective IANA zone: the clock its hours of the day are counted on.
    #[serde(default)]
    pub time_zone: Option<String>,
}

#[derive(Debug, Deserialize)]
struct SatList {
    satellites: Vec<Sat>,
}

/// The team's satellites (first 100, by name).
pub async fn satellites(ctx: &Ctx) -> Result<Vec<Sat>, PageError> {
    Ok(ctx.api.get::<SatList>("/satellites?limit=100&sortBy=name").await?.satellites)
}

/// Whose hours a figure counts when its stations' zones are not known (or not shown).
pub const EACH_OWN_HOURS: &str = "Hours are each station's own local time.";

/// The most station names [`local_hours`] lists; past it, only their zones.
const NAMED_STATIONS: usize = 6;

/// Whose hours a figure by hour of the day counts: each detection counts in its station's local
/// hour (docs/statistics.md), so a team's 09 is nine in the morning wherever the bird was.
/// `stations` are the (name, IANA zone) of the stations the figure adds up; zones are named as
/// people read them at `now` ("GMT", "EST"), one name per clock.
pub fn local_hours(now: DateTime<Utc>, stations: &[(&str, Option<&str>)]) -> Markup {
    let mut clocks: Vec<(String, Vec<&str>)> = Vec::new();
    for (name, tz) in stations {
        let Some(tz) = tz.and_then(|z| zone::parse(z).ok()) else { continue };
        let short = zone::abbreviation(now, tz);
        match clocks.iter_mut().find(|(s, _)| *s == short) {
            Some((_, names)) => names.push(name),
            None => clocks.push((short, vec![name])),
        }
    }
    let named = clocks.iter().map(|(_, n)| n.len()).sum::<usize>() <= NAMED_STATIONS;
    let text = match clocks.as_slice() {
        [] => EACH_OWN_HOURS.to_owned(),
        [(short, names)] if names.len() == 1 => format!("Hours are local time at {} ({short}).", names[0]),
        [(short, _)] => format!("Hours are the stations' local time ({short})."),
        many if named => {
            let each: Vec<String> =
                many.iter().map(|(short, names)| format!("{short} at {}", names.join(", "))).collect();
            format!("Hours are each station's own local time: {}.", each.join("; "))
        }
        many => {
            let each: Vec<&str> = many.iter().map(|(short, _)| short.as_str()).collect();
            format!("Hours are each station's own local time ({}).", each.join(", "))
        }
    };
    html! { p.muted.small.local-hours { (text) } }
}

#[derive(Debug, Deserialize)]
struct Counts {
    species: i64,
    detections: i64,
    chunks: i64,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Dashboard {
    #[serde(flatten)]
    range: Counts,
    all_time: Counts,
}

/// The sections, in page order: (fragment name, heading).
const SECTIONS: [(&str, &str); 9] = [
    ("trends", "Detections per day"),
    ("heatmap", "Activity by hour and day"),
    ("top", "Top species"),
    ("biodiversity", "Biodiversity per satellite"),
    ("compare", "Compare two satellites"),
    ("migration", "Migration: monthly presence"),
    ("verification", "Verification"),
    ("leaderboard", "Leaderboard"),
    ("map", "Map"),
];

async fn page(ctx: Ctx, RawQuery(raw): RawQuery) -> Response {
    match render(&ctx, Filters::parse(raw.as_deref())).await {
        Ok(m) => m.into_response(),
        Err(e) => e.respond(&ctx.uri),
    }
}

async fn render(ctx: &Ctx, f: Filters) -> Result<Markup, PageError> {
    ctx.team_id()?;
    // The headline numbers come first and check the filters: a bad `days` is the API's 4xx.
    let dash_path = format!("/stats/dashboard?{}", f.api());
    let (dash, sats, moves) =
        tokio::try_join!(ctx.api.get::<Dashboard>(&dash_path), satellites(ctx), super::zones::moves(&ctx.api))?;
    let query = f.page();
    let body = html! {
        h1.sr { "Statistics" }
        (super::zones::moves_line(&moves))
        (selector(&f, &sats))
        section.numbers.stats-numbers aria-label="Totals" {
            div.number { span.n { (dash.range.species) } span.l { "species in " (f.range_words()) } }
            div.number { span.n { (dash.range.detections) } span.l { (words::noun(dash.range.detections, "detection", "detections")) " in " (f.range_words()) } }
            div.number { span.n { (dash.range.chunks) } span.l { (words::noun(dash.range.chunks, "recording", "recordings")) " in " (f.range_words()) } }
            div.number { span.n { (dash.all_time.species) } span.l { "species all time" } }
        }
        nav.stats-jump aria-label="Sections" {
            @for (name, title) in SECTIONS { a href=(format!("#{name}")) { (title) } }
        }
        @for (name, title) in SECTIONS {
            section.card.stats-part #(name) aria-labelledby=(format!("{name}-h")) {
                div.card-head { h2 #(format!("{name}-h")) { (title) } }
                div hx-get=(format!("/stats/part/{name}?{query}")) hx-trigger="load" hx-swap="innerHTML" {
                    p.muted.small.loading { "Loading…" }
                }
                @if name == "compare" { (compare_form(&f, &sats)) }
            }
        }
    };
    Ok(layout::page(
        ctx,
        "Stats",
        "stats",
        &["vendor/uPlot.min.css", "stats.css", "vendor/uPlot.min.js", "charts.js", "stats.js"],
        body,
    ))
}

/// The range and satellite selector: a GET form, so the choice stays in the URL.
pub fn selector(f: &Filters, sats: &[Sat]) -> Markup {
    html! {
        form.stats-filter #stats-filter method="get" action="/stats" {
            label { "Range"
                select name="days" {
                    @for d in RANGES {
                        option value=(d) selected[f.days == d.to_string()] { "Last " (d) " days" }
                    }
                }
            }
            label { "Satellite"
                select name="satellite" {
                    option value="" selected[f.satellite.is_empty()] { "All satellites" }
                    @for s in sats { option value=(s.id) selected[f.satellite == s.id] { (s.name) } }
                }
            }
            @if !f.a.is_empty() { input type="hidden" name="a" value=(f.a); }
            @if !f.b.is_empty() { input type="hidden" name="b" value=(f.b); }
            button.primary type="submit" { "Show" }
        }
    }
}

/// Two satellites to compare; the choice stays in the URL with the range.
fn compare_form(f: &Filters, sats: &[Sat]) -> Markup {
    if sats.len() < 2 {
        return html! {};
    }
    let pick = |name: &str, label: &str, chosen: &str, fallback: usize| {
        let chosen =
            if chosen.is_empty() { sats.get(fallback).map(|s| s.id.as_str()).unwrap_or_default() } else { chosen };
        html! {
            label { (label)
                select name=(name) {
                    @for s in sats { option value=(s.id) selected[chosen == s.id] { (s.name) } }
                }
            }
        }
    };
    html! {
        form.stats-filter.compare-form method="get" action="/stats#compare" {
            input type="hidden" name="days" value=(f.days);
            @if !f.satellite.is_empty() { input type="hidden" name="satellite" value=(f.satellite); }
            (pick("a", "First satellite", &f.a, 0))
            (pick("b", "Second satellite", &f.b, 1))
            button type="submit" { "Compare" }
        }
    }
}

/// One section's HTML. Errors show inside the section (htmx does not swap error answers), except
/// a lost session, which sends the browser to sign-in.
async fn part(ctx: Ctx, Path(name): Path<String>, RawQuery(raw): RawQuery) -> Response {
    let f = Filters::parse(raw.as_deref());
    let result = match ctx.team_id() {
        Ok(_) => stats_parts::render(&ctx, &name, &f).await,
        Err(e) => Err(e),
    };
    match result {
        Ok(m) => m.into_response(),
        Err(PageError::SignIn) => PageError::SignIn.respond(&ctx.uri),
        Err(PageError::NotFound(m)) if m.is_empty() => {
            html! { p.error { "There is no such section." } }.into_response()
        }
        Err(PageError::Forbidden(m) | PageError::NotFound(m) | PageError::Invalid(m)) => {
            html! { p.error { (m) } }.into_response()
        }
        Err(e @ PageError::Internal(_)) => {
            let _ = e.respond(&ctx.uri);
            html! { p.error { "The hub could not load this part. The details are in its log." } }.into_response()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type Stations<'a> = &'a [(&'a str, Option<&'a str>)];

    fn text(stations: Stations) -> String {
        let december: DateTime<Utc> = "2026-12-06T14:18:00Z".parse().expect("time");
        local_hours(december, stations).into_string()
    }

    #[test]
    fn hours_say_whose_they_are() {
        let (london, ny) = (Some("Europe/London"), Some("America/New_York"));
        let cases: [(Stations, &str); 6] = [
            (&[], "Hours are each station's own local time."),
            (&[("Attic", None)], "Hours are each station's own local time."),
            (&[("Garden", london)], "Hours are local time at Garden (GMT)."),
            (&[("Garden", london), ("Shed", london)], "Hours are the stations' local time (GMT)."),
            (
                &[("Garden", london), ("Central Park", ny), ("Shed", london)],
                "Hours are each station's own local time: GMT at Garden, Shed; EST at Central Park.",
            ),
            (
                &[("a", london), ("b", london), ("c", london), ("d", london), ("e", london), ("f", ny), ("g", ny)],
                "Hours are each station's own local time (GMT, EST).",
            ),
        ];
        for (stations, want) in cases {
            assert!(text(stations).contains(want), "{stations:?}: {}", text(stations));
        }
    }
}
