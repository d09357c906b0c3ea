//! The Stats page's sections, each rendered on its own from one or two `/api/stats/*` answers
//! (the page loads them with htmx as `/stats/part/{name}`). Charts are inline JSON that
//! `charts.js` draws with uPlot; the heatmap and migration grids are plain HTML.

use maud::{Markup, html};
use serde::Deserialize;
use serde_json::json;

use super::{
    common,
    stats::{self, Filters},
    stats_map,
};
use crate::{
    time::hours::HourFormat,
    web::{ctx::Ctx, error::PageError, layout, words},
};

/// Names as the stats answers give them (camelCase, flattened).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Named {
    pub species_code: String,
    pub common_name: String,
    pub scientific_name: String,
}

/// The species' name in the viewer's language, linked to its page.
pub fn species_link(ctx: &Ctx, n: &Named) -> Markup {
    let name = common::common_name(ctx, &n.species_code, &n.common_name);
    html! { a href=(format!("/species/{}", n.species_code)) { (layout::names(&name, &n.scientific_name)) } }
}

/// A chart container and its data: `charts.js` draws `spec` into the container.
pub fn chart(id: &str, label: &str, spec: serde_json::Value) -> Markup {
    let data_id = format!("{id}-data");
    html! {
        figure.chart-box {
            div.chart #(id) data-chart=(data_id) role="img" aria-label=(label) {}
            (layout::json_script(&data_id, &spec))
        }
    }
}

/// A `p.empty` line saying why a part has nothing to show.
fn nothing(title: &str, hint: &str) -> Markup {
    layout::empty(title, html! { (hint) })
}

/// Shading level 0 to 5 of `n` against `max` (the Live grid's classes).
pub fn level(n: i64, max: i64) -> i64 {
    if n <= 0 { 0 } else { 1 + ((n as f64 / max.max(1) as f64) * 4.0).ceil().min(4.0) as i64 }
}

/// The section `name`, or a 404 for an unknown name.
pub async fn render(ctx: &Ctx, name: &str, f: &Filters) -> Result<Markup, PageError> {
    match name {
        "trends" => trends(ctx, f).await,
        "heatmap" => heatmap(ctx, f).await,
        "top" => top(ctx, f).await,
        "biodiversity" => biodiversity(ctx, f).await,
        "compare" => compare(ctx, f).await,
        "migration" => migration(ctx, f).await,
        "verification" => verification(ctx, f).await,
        "leaderboard" => leaderboard(ctx, f).await,
        "map" => stats_map::render(ctx, f).await,
        _ => Err(PageError::NotFound(String::new())),
    }
}

#[derive(Debug, Deserialize)]
struct Day {
    date: String,
    detections: i64,
    species: i64,
}

#[derive(Debug, Deserialize)]
struct Trends {
    daily: Vec<Day>,
    total: i64,
}

async fn trends(ctx: &Ctx, f: &Filters) -> Result<Markup, PageError> {
    let t: Trends = ctx.api.get(&format!("/stats/trends?{}", f.api())).await?;
    if t.total == 0 {
        return Ok(nothing(
            &format!("No detections in {}", f.range_words()),
            "The chart fills in as satellites hear birds.",
        ));
    }
    let spec = json!({
        "type": "line",
        "time": true,
        "x": t.daily.iter().map(|d| &d.date).collect::<Vec<_>>(),
        "series": [
            { "label": "Detections", "values": t.daily.iter().map(|d| d.detections).collect::<Vec<_>>() },
            { "label": "Species", "values": t.daily.iter().map(|d| d.species).collect::<Vec<_>>(), "second": true },
        ],
    });
    Ok(html! {
        @let total = words::count(t.total, "detection", "detections");
        p.muted.small { (total) " in " (f.range_words()) "." }
        (chart("trend-chart", &format!("Detections and species per day: {total} in {}", f.range_words()), spec))
    })
}

#[derive(Debug, Deserialize)]
struct Heatmap {
    days: Vec<(String, Vec<i64>)>,
    max: i64,
}

/// Days as rows, hours as columns; past 92 days the rows are weeks. Hours are each station's
/// local hours, and the part says whose; days are written in words ("6 Dec").
async fn heatmap(ctx: &Ctx, f: &Filters) -> Result<Markup, PageError> {
    let path = format!("/stats/activity-heatmap?{}", f.api());
    let (h, sats) = tokio::try_join!(ctx.api.get::<Heatmap>(&path), stats::satellites(ctx))?;
    if h.max == 0 {
        return Ok(nothing(
            &format!("No detections in {}", f.range_words()),
            "Each cell counts the detections of one hour.",
        ));
    }
    let weekly = h.days.len() > 92;
    let rows: Vec<(String, Vec<i64>)> = if weekly {
        h.days
            .chunks(7)
            .map(|w| {
                let mut sum = vec![0i64; 24];
                for (_, hours) in w {
                    for (i, n) in hours.iter().enumerate().take(24) {
                        sum[i] += n;
                    }
                }
                (w.first().map(|d| d.0.clone()).unwrap_or_default(), sum)
            })
            .collect()
    } else {
        h.days
    };
    let max = rows.iter().flat_map(|r| r.1.iter()).copied().max().unwrap_or(0);
    let stations: Vec<(&str, Option<&str>)> = sats
        .iter()
        .filter(|s| f.satellite.is_empty() || f.satellite == s.id)
        .map(|s| (s.name.as_str(), s.time_zone.as_deref()))
        .collect();
    let clock = ctx.hours();
    Ok(html! {
        p.muted.small { "Detections per hour of each " (if weekly { "week (rows start on the date shown)" } else { "day" }) ", darker is more." }
        (stats::local_hours(ctx.app.clock.now(), &stations))
        div.heatmap role="table" aria-label="Detections by hour and day" {
            div.hm-row.hm-head role="row" {
                span.hm-label role="columnheader" { (if weekly { "Week of" } else { "Day" }) }
                // A label every 3 hours spans its 3 columns; a phone shows those of every 6.
                @for hr in (0..24).step_by(3) {
                    span.hm-hour.(if hr % 6 == 0 { "major" } else { "minor" }) role="columnheader" { (hour_label(clock, hr)) }
                }
            }
            @for (date, hours) in rows.iter().rev() {
                @let (short, long) = day_words(date);
                div.hm-row role="row" {
                    span.hm-label role="rowheader" title=(long) { (short) }
                    @for (hr, n) in hours.iter().enumerate() {
                        @if *n > 0 {
                            @let tip = format!("{long}, {}: {}", clock.hour(hr as u32), words::count(*n, "detection", "detections"));
                            i.(format!("hm l{}", level(*n, max))) role="cell" title=(tip) {}
                        } @else {
                            i.hm role="cell" {}
                        }
                    }
                }
            }
        }
    })
}

/// An hour on the heatmap's axis, on the viewer's clock: "06", or "6 AM".
fn hour_label(clock: HourFormat, hr: u32) -> String {
    match clock {
        HourFormat::H24 => format!("{hr:02}"),
        HourFormat::H12 => clock.hour(hr),
    }
}

/// A heatmap day (`2026-12-06`) in words: "6 Dec" for its row and "Sun 6 Dec 2026" for its cells.
fn day_words(date: &str) -> (String, String) {
    match chrono::NaiveDate::parse_from_str(date, "%Y-%m-%d") {
        Ok(d) => (d.format("%-d %b").to_string(), d.format("%a %-d %b %Y").to_string()),
        Err(_) => (date.to_owned(), date.to_owned()),
    }
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Ranked {
    rank: usize,
    #[serde(flatten)]
    species: Named,
    detections: i64,
    share: f64,
    satellites: i64,
}

#[derive(Debug, Deserialize)]
struct TopSpecies {
    species: Vec<Ranked>,
}

async fn top(ctx: &Ctx, f: &Filters) -> Result<Markup, PageError> {
    let t: TopSpecies = ctx.api.get(&format!("/stats/top-species?limit=10&{}", f.api())).await?;
    if t.species.is_empty() {
        return Ok(nothing(&format!("No species in {}", f.range_words()), "The most heard species show here."));
    }
    Ok(html! {
        ol.top-list {
            @for r in &t.species {
                li {
                    span.rank { (r.rank) }
                    span.top-name { (species_link(ctx, &r.species)) }
                    span.top-bar aria-hidden="true" { span style=(format!("width:{:.0}%", (r.share * 100.0).clamp(1.0, 100.0))) {} }
                    span.top-n { (r.detections) " " span.muted.small { "(" (format!("{:.0}", r.share * 100.0)) "%, " (r.satellites) " sat.)" } }
                }
            }
        }
    })
}

#[derive(Debug, Deserialize)]
struct Diversity {
    species: i64,
    individuals: i64,
    shannon: f64,
    simpson: f64,
    evenness: Option<f64>,
}

#[derive(Debug, Deserialize)]
struct Community {
    name: String,
    #[serde(flatten)]
    diversity: Diversity,
}

#[derive(Debug, Deserialize)]
struct Biodiversity {
    overall: Diversity,
    satellites: Vec<Community>,
}

async fn biodiversity(ctx: &Ctx, f: &Filters) -> Result<Markup, PageError> {
    let b: Biodiversity = ctx.api.get(&format!("/stats/biodiversity?{}", f.api())).await?;
    if b.satellites.is_empty() {
        return Ok(nothing("No satellites yet", "Register a satellite to see its diversity."));
    }
    let row = |name: Markup, d: &Diversity| {
        html! {
            tr {
                th scope="row" { (name) }
                td.n { (d.species) }
                td.n { (d.individuals) }
                td.n { (format!("{:.2}", d.shannon)) }
                td.n { (format!("{:.2}", d.simpson)) }
                td.n { @if let Some(e) = d.evenness { (format!("{e:.2}")) } @else { span.muted title="needs two species or more" { "–" } } }
            }
        }
    };
    Ok(html! {
        div.table-scroll {
            table.list.nums {
                caption.sr { "Species richness and diversity indices per satellite over " (f.range_words()) }
                thead { tr {
                    th scope="col" { "Satellite" }
                    th scope="col" { "Species" }
                    th scope="col" { "Detections" }
                    th scope="col" { abbr title="Shannon index H′: higher is more diverse" { "Shannon" } }
                    th scope="col" { abbr title="Simpson index 1 − D: the chance two detections are different species" { "Simpson" } }
                    th scope="col" { abbr title="Pielou evenness J′: 1 when every species is heard equally often" { "Evenness" } }
                } }
                tbody {
                    @for c in &b.satellites { (row(html! { (c.name) }, &c.diversity)) }
                    @if b.satellites.len() > 1 { (row(html! { strong { "All together" } }, &b.overall)) }
                }
            }
        }
    })
}

#[derive(Debug, Deserialize)]
struct Compared {
    name: String,
    detections: i64,
    species: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Pair {
    shared: usize,
    jaccard: Option<f64>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Comparison {
    satellites: Vec<Compared>,
    shared_by_all: Vec<Named>,
    unique: Vec<(String, Named)>,
    pairs: Vec<Pair>,
}

async fn compare(ctx: &Ctx, f: &Filters) -> Result<Markup, PageError> {
    let sats = stats::satellites(ctx).await?;
    if sats.len() < 2 {
        return Ok(nothing(
            "Comparing needs two satellites",
            "Register a second satellite to compare what each one hears.",
        ));
    }
    let a = if f.a.is_empty() { sats[0].id.clone() } else { f.a.clone() };
    let b = if f.b.is_empty() { sats[1].id.clone() } else { f.b.clone() };
    if a == b {
        return Ok(html! { p.notice { "Pick two different satellites." } });
    }
    let ids: String =
        url::form_urlencoded::Serializer::new(String::new()).append_pair("satelliteIds", &format!("{a},{b}")).finish();
    let days: String = url::form_urlencoded::Serializer::new(String::new()).append_pair("days", &f.days).finish();
    let c: Comparison = ctx.api.get(&format!("/stats/compare?{ids}&{days}")).await?;
    let (Some(sa), Some(sb)) = (c.satellites.first(), c.satellites.get(1)) else {
        return Ok(nothing("Nothing to compare", "Neither satellite has detections in this range."));
    };
    let pair = c.pairs.first();
    let only = |which: &str| c.unique.iter().filter(|(s, _)| s == which).map(|(_, n)| n).collect::<Vec<_>>();
    let (only_a, only_b) = (only(&a), only(&b));
    let list = |names: &[&Named]| {
        html! {
            @if names.is_empty() { p.muted.small { "None." } }
            @else { ul.species-chips { @for n in names.iter().take(40) { li { (species_link(ctx, n)) } } } }
        }
    };
    Ok(html! {
        div.compare-grid {
            div.number { span.n { (sa.species.len()) } span.l { "species at " (sa.name) " (" (words::count(sa.detections, "detection", "detections")) ")" } }
            div.number { span.n { (sb.species.len()) } span.l { "species at " (sb.name) " (" (words::count(sb.detections, "detection", "detections")) ")" } }
            div.number {
                span.n { (pair.map(|p| p.shared).unwrap_or(0)) }
                span.l {
                    "shared"
                    @if let Some(j) = pair.and_then(|p| p.jaccard) {
                        " · " abbr title="Jaccard index: shared species over all species of the two" { "similarity" } " " (format!("{:.0}", j * 100.0)) "%"
                    }
                }
            }
        }
        div.compare-lists {
            div { h3 { "Both heard" } (list(&c.shared_by_all.iter().collect::<Vec<_>>())) }
            div { h3 { "Only " (sa.name) } (list(&only_a)) }
            div { h3 { "Only " (sb.name) } (list(&only_b)) }
        }
    })
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Presence {
    #[serde(flatten)]
    species: Named,
    monthly: Vec<i64>,
    months_present: usize,
}

/// A month column's header (`2026-10`): "Oct", with the year under the first column and under
/// every January, so "26-10" is never read as a day and a month.
fn month_head(month: &str, first: bool) -> Markup {
    let (year, name) = chrono::NaiveDate::parse_from_str(&format!("{month}-01"), "%Y-%m-%d").map_or_else(
        |_| (String::new(), month.to_owned()),
        |d| (d.format("%Y").to_string(), d.format("%b").to_string()),
    );
    let full = chrono::NaiveDate::parse_from_str(&format!("{month}-01"), "%Y-%m-%d")
        .map_or_else(|_| month.to_owned(), |d| d.format("%B %Y").to_string());
    html! {
        th scope="col" title=(full) {
            abbr title=(full) { (name) }
            @if first || name == "Jan" { br; span.year { (year) } }
        }
    }
}

#[derive(Debug, Deserialize)]
struct Migration {
    months: Vec<String>,
    species: Vec<Presence>,
}

async fn migration(ctx: &Ctx, f: &Filters) -> Result<Markup, PageError> {
    let m: Migration = ctx.api.get(&format!("/stats/migration?{}", f.api())).await?;
    if m.species.is_empty() {
        return Ok(nothing(
            &format!("No species in {}", f.range_words()),
            "Monthly presence needs detections; a longer range shows the seasons.",
        ));
    }
    let max = m.species.iter().flat_map(|s| s.monthly.iter()).copied().max().unwrap_or(0);
    Ok(html! {
        p.muted.small { "Species heard in the fewest months first: those are the visitors." }
        div.grid-scroll {
            table.activity.migration {
                caption.sr { "Detections per species and month" }
                thead { tr { th scope="col" { "Species" } @for (i, mo) in m.months.iter().enumerate() { (month_head(mo, i == 0)) } th scope="col" { "Months" } } }
                tbody {
                    @for s in m.species.iter().take(60) {
                        @let name = common::common_name(ctx, &s.species.species_code, &s.species.common_name);
                        tr {
                            th scope="row" { a href=(format!("/species/{}", s.species.species_code)) title=(s.species.scientific_name) { (name) } }
                            @for (i, n) in s.monthly.iter().enumerate() {
                                td.(format!("l{}", level(*n, max))) title=(format!("{name}, {}: {n}", m.months.get(i).map(String::as_str).unwrap_or(""))) { @if *n > 0 { (n) } }
                            }
                            td.total { (s.months_present) }
                        }
                    }
                }
            }
        }
        @if m.species.len() > 60 { p.muted.small { "Showing 60 of " (m.species.len()) " species." } }
    })
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Verification {
    total: i64,
    unverified: i64,
    pending_review: i64,
    confirmed: i64,
    rejected: i64,
    reviewed_share: f64,
}

async fn verification(ctx: &Ctx, f: &Filters) -> Result<Markup, PageError> {
    let v: Verification = ctx.api.get(&format!("/stats/verification?{}", f.api())).await?;
    if v.total == 0 {
        return Ok(nothing(
            &format!("No detections to review in {}", f.range_words()),
            "Votes on detections show up here.",
        ));
    }
    let pct = |n: i64| n as f64 * 100.0 / v.total.max(1) as f64;
    Ok(html! {
        p { strong { (format!("{:.0}", v.reviewed_share * 100.0)) "%" } " of " (words::count(v.total, "detection", "detections")) " reviewed." }
        div.progress role="img" aria-label=(format!("{} confirmed, {} rejected, {} pending review, {} unverified", v.confirmed, v.rejected, v.pending_review, v.unverified)) {
            span.seg.ok style=(format!("width:{:.2}%", pct(v.confirmed))) {}
            span.seg.no style=(format!("width:{:.2}%", pct(v.rejected))) {}
            span.seg.pending style=(format!("width:{:.2}%", pct(v.pending_review))) {}
        }
        ul.legend {
            li { span.key.ok {} "Confirmed " strong { (v.confirmed) } }
            li { span.key.no {} "Rejected " strong { (v.rejected) } }
            li { span.key.pending {} "Pending review " strong { (v.pending_review) } }
            li { span.key {} "Unverified " strong { (v.unverified) } }
        }
        p.small { a href="/detections?verificationStatus=unverified" { "Review unverified detections" } }
    })
}

#[derive(Debug, Deserialize)]
struct Contributor {
    rank: usize,
    name: String,
    votes: i64,
    confirm: i64,
    reject: i64,
    unsure: i64,
}

#[derive(Debug, Deserialize)]
struct Leaderboard {
    contributors: Vec<Contributor>,
}

async fn leaderboard(ctx: &Ctx, f: &Filters) -> Result<Markup, PageError> {
    let l: Leaderboard = ctx.api.get(&format!("/stats/leaderboard?limit=10&{}", f.api())).await?;
    if l.contributors.is_empty() {
        return Ok(nothing(
            &format!("No votes in {}", f.range_words()),
            "Confirm or reject detections to appear here.",
        ));
    }
    Ok(html! {
        div.table-scroll {
            table.list.nums {
                thead { tr { th scope="col" { "#" } th scope="col" { "Name" } th scope="col" { "Votes" } th scope="col" { "Confirm" } th scope="col" { "Reject" } th scope="col" { "Unsure" } } }
                tbody {
                    @for c in &l.contributors {
                        tr { td.n { (c.rank) } td { (c.name) } td.n { strong { (c.votes) } } td.n { (c.confirm) } td.n { (c.reject) } td.n { (c.unsure) } }
                    }
                }
            }
        }
    })
}
