//! Species: the team's catalogue (`/species`, a card per species heard with its image where one
//! is cached, names, counts, first and last seen, and a search box) and one species' page
//! (`/species/{code}`: image with attribution, names in the team's languages, the SPEC 4.8
//! profile charts, its expected-here status this week and the newest detections).

use axum::{
    Router,
    extract::{Path, RawQuery},
    http::Method,
    response::{IntoResponse, Response},
    routing::get,
};
use maud::{Markup, html};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{
    common, detection_settings,
    stats::{self, Filters},
    stats_parts::Named,
    stats_species::{self, Profile},
};
use crate::{
    domain::languages,
    web::{WebState, ctx::Ctx, error::PageError, layout, words},
};

pub fn routes() -> Router<WebState> {
    Router::new().route("/species", get(catalogue_page)).route("/species/{code}", get(species_page))
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Entry {
    #[serde(flatten)]
    species: Named,
    detections: i64,
    satellites: i64,
    confirmed: i64,
    first_detected_at: Option<String>,
    last_detected_at: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Catalogue {
    species: Vec<Entry>,
}

/// The search words of `q` (from the URL), lower case.
fn query_text(raw: Option<&str>) -> String {
    url::form_urlencoded::parse(raw.unwrap_or_default().as_bytes())
        .filter(|(k, _)| k == "q")
        .map(|(_, v)| v.trim().to_lowercase())
        .last()
        .unwrap_or_default()
}

async fn catalogue_page(ctx: Ctx, RawQuery(raw): RawQuery) -> Response {
    match catalogue(&ctx, raw.as_deref()).await {
        Ok(m) => m.into_response(),
        Err(e) => e.respond(&ctx.uri),
    }
}

async fn catalogue(ctx: &Ctx, raw: Option<&str>) -> Result<Markup, PageError> {
    ctx.team_id()?;
    let q = query_text(raw);
    let cat: Catalogue = ctx.api.get("/stats/species").await?;
    let images = common::images(&ctx.api, cat.species.iter().map(|e| e.species.species_code.clone())).await?;
    let total = cat.species.len();
    let body = html! {
        div.species-head {
            h1 { "Species" }
            p.muted { (total) " species heard in the last year, most heard first." }
        }
        @if cat.species.is_empty() {
            section.card {
                (layout::empty("No species yet", html! {
                    "Species appear here after a satellite's first detection. "
                    a href="/satellites" { "Check your satellites" } "."
                }))
            }
        } @else {
            form.species-search role="search" method="get" action="/species" {
                label for="species-q" { "Search species" }
                input #species-q type="search" name="q" value=(q) placeholder="Name, scientific name or code" autocomplete="off";
                noscript { button type="submit" { "Search" } }
            }
            p.muted.small #species-none hidden[q.is_empty() || cat.species.iter().any(|e| matches(ctx, e, &q))] {
                "No species match your search."
            }
            ul.species-grid #species-list {
                @for e in &cat.species {
                    @let name = common::common_name(ctx, &e.species.species_code, &e.species.common_name);
                    @let words = format!("{} {} {}", name, e.species.scientific_name, e.species.species_code).to_lowercase();
                    li.species-card data-search=(words) hidden[!q.is_empty() && !words.contains(&q)] {
                        a.species-link href=(format!("/species/{}", e.species.species_code)) {
                            (common::thumb(images.get(&e.species.species_code), &name))
                            span.species-text {
                                (layout::names(&name, &e.species.scientific_name))
                                span.species-counts {
                                    strong { (e.detections) } " " (words::noun(e.detections, "detection", "detections")) " · "
                                    (words::count(e.satellites, "satellite", "satellites"))
                                    @if e.confirmed > 0 { " · " (e.confirmed) " confirmed" }
                                }
                                span.species-seen.small.muted {
                                    @if let Some(l) = &e.last_detected_at { "Last " (layout::ago(l)) }
                                    @if let Some(fst) = &e.first_detected_at { " · first heard " (layout::day(fst.get(..10).unwrap_or(fst))) }
                                }
                            }
                        }
                    }
                }
            }
        }
    };
    Ok(layout::page(ctx, "Species", "species", &["stats.css", "species.js"], body))
}

fn matches(ctx: &Ctx, e: &Entry, q: &str) -> bool {
    let name = common::common_name(ctx, &e.species.species_code, &e.species.common_name);
    format!("{} {} {}", name, e.species.scientific_name, e.species.species_code).to_lowercase().contains(q)
}

async fn species_page(ctx: Ctx, Path(code): Path<String>, RawQuery(raw): RawQuery) -> Response {
    match species(&ctx, &code, Filters::parse(raw.as_deref())).await {
        Ok(m) => m.into_response(),
        Err(e) => e.respond(&ctx.uri),
    }
}

/// The URL-safe form of a path segment.
fn seg(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

async fn species(ctx: &Ctx, code: &str, f: Filters) -> Result<Markup, PageError> {
    ctx.team_id()?;
    let days: String = url::form_urlencoded::Serializer::new(String::new()).append_pair("days", &f.days).finish();
    let p: Profile = ctx.api.get(&format!("/stats/species/{}?{days}", seg(code))).await?;
    let code = p.species.species_code.clone();
    let sats_and_expected = async {
        let sats = stats::satellites(ctx).await?;
        let expected = expected(ctx, &code, &sats).await?;
        Ok::<_, PageError>((sats, expected))
    };
    let (image, (sats, expected), team) =
        tokio::try_join!(image(ctx, &code), sats_and_expected, ctx.api.get::<Value>("/settings/tenant"))?;
    let names = names(ctx, &code, &team["settings"]);
    let name = common::common_name(ctx, &code, &p.species.common_name);
    let body = html! {
        div.species-hero {
            @if let Some(img) = &image {
                figure.species-photo {
                    img src=(img.url) alt=(name) width="320" height="240";
                    figcaption.small.muted {
                        @if !img.attribution.is_empty() { "© " (img.attribution) }
                        @if !img.license.is_empty() { " · " (img.license) }
                        @if let Some(src) = &img.source { " · " a href=(src) rel="noopener" { "source" } }
                    }
                }
            } @else {
                div.species-photo.none aria-hidden="true" { (common::thumb(None, &name)) }
            }
            div.species-about {
                h1 { (layout::names(&name, &p.species.scientific_name)) }
                @if !names.is_empty() {
                    dl.species-names {
                        @for (lang, n) in &names { dt { (lang) } dd { (n) } }
                    }
                }
                (stats_species::expected_here(&expected))
                div.numbers.species-numbers {
                    div.number { span.n { (p.detections) } span.l { (words::noun(p.detections, "detection", "detections")) " in " (f.range_words()) } }
                    div.number { span.n { (p.confirmed) } span.l { "confirmed" } }
                    div.number {
                        span.n.small-n { @if let Some(fst) = &p.first_detected_at { (layout::day(fst.get(..10).unwrap_or(fst))) } @else { "–" } }
                        span.l { "first seen" }
                    }
                    div.number {
                        span.n.small-n { @if let Some(l) = &p.last_detected_at { (layout::ago(l)) } @else { "–" } }
                        span.l { "last seen" }
                    }
                }
                p { a.button href=(format!("/detections?species={}", seg(&code))) { "All detections of " (name) } }
            }
        }
        (threshold_card(ctx, &code, &name, &team["settings"]))
        (stats_species::range_selector(&f, &code))
        (stats_species::charts(&p, &f, ctx.hours()))
        (stats_species::recent(ctx, &p, &sats))
    };
    Ok(layout::page(
        ctx,
        &name,
        "species",
        &[
            "vendor/uPlot.min.css",
            "stats.css",
            "vendor/uPlot.min.js",
            "charts.js",
            detection_settings::ASSETS[0],
            detection_settings::ASSETS[1],
        ],
        body,
    ))
}

/// "Minimum confidence for this species": the team's value for it, else the minimum that
/// applies; admins set or clear it (`detection_settings.js`).
fn threshold_card(ctx: &Ctx, code: &str, name: &str, s: &Value) -> Markup {
    let own = detection_settings::species_map(s, "species_min_confidence").get(code).copied();
    let hub = detection_settings::hub_threshold(ctx);
    let team = s["min_confidence"].as_f64();
    html! {
        section.card.sp-threshold #species-threshold data-code=(code) {
            h2 { "Minimum confidence for this species" }
            @match own {
                Some(v) => p #sp-threshold-now { (name) " is kept from a confidence of " strong.mono { (format!("{v:.2}")) } " (its own minimum)." },
                None => p #sp-threshold-now {
                    "No minimum of its own: the team's minimum applies, " strong.mono { (format!("{:.2}", team.unwrap_or(hub))) }
                    @if team.is_none() { " (the hub's default)" } "."
                },
            }
            @if ctx.is_admin() {
                div.row {
                    label.sr for="sp-threshold" { "Minimum confidence for " (name) }
                    input #sp-threshold type="number" min="0.01" max="0.99" step="0.01"
                        value=(own.map(|v| v.to_string()).unwrap_or_default()) placeholder=(format!("{:.2}", team.unwrap_or(hub)));
                    button.primary #sp-threshold-save type="button" { "Set" }
                    @if own.is_some() { button #sp-threshold-clear type="button" { "Clear" } }
                }
                p.error #sp-threshold-error hidden role="alert" {}
                p.small.muted { "All per-species minimums are in the " a href="/team/detection#species_min_confidence" { "detection settings" } "." }
            } @else {
                p.small.muted { "A team admin can change it in the " a href="/team/detection#species_min_confidence" { "detection settings" } "." }
            }
        }
    }
}

/// The cached picture of a species and its credits.
struct Image {
    url: String,
    attribution: String,
    license: String,
    source: Option<String>,
}

async fn image(ctx: &Ctx, code: &str) -> Result<Option<Image>, PageError> {
    let answer = ctx.api.send(Method::POST, "/species/images", Some(&json!({ "codes": [code] }))).await?;
    let Some(info) = answer.body.get("images").and_then(|m| m.get(code)) else { return Ok(None) };
    let s = |k: &str| info.get(k).and_then(Value::as_str).map(str::to_owned);
    Ok(s("url").map(|url| Image {
        url,
        attribution: s("attribution").unwrap_or_default(),
        license: s("license").unwrap_or_default(),
        source: s("sourcePage").filter(|u| u.starts_with("https://") || u.starts_with("http://")),
    }))
}

/// The species' common name in each of the team's languages (`settings`, the team's settings)
/// and the viewer's, labelled with the language's own name; languages without an installed label
/// file are left out. Read from the model's label files, which the hub holds in memory, like every
/// species name on the dashboard (`common::common_name`).
fn names(ctx: &Ctx, code: &str, settings: &Value) -> Vec<(String, String)> {
    let mut wanted: Vec<String> = Vec::new();
    for l in
        [settings["primary_language"].as_str(), settings["secondary_language"].as_str(), Some(ctx.language.as_str())]
            .into_iter()
            .flatten()
    {
        // The code as the label files name it (`pt-br` is `pt_BR`).
        let l = languages::find(l).map_or_else(|| l.trim().to_owned(), |known| known.code.to_owned());
        if !l.is_empty() && !wanted.contains(&l) {
            wanted.push(l);
        }
    }
    let labels = &ctx.api_state().names;
    wanted
        .into_iter()
        .filter_map(|lang| {
            let name = labels.common_name(&lang, code)?;
            let label = languages::find(&lang).map_or_else(|| lang.clone(), |l| l.native_name.to_owned());
            Some((label, name))
        })
        .collect()
}

/// Whether the range model expects the species this week at each placed satellite of `sats` (at
/// most 3), asked about this species alone.
async fn expected(ctx: &Ctx, code: &str, sats: &[stats::Sat]) -> Result<stats_species::Expected, PageError> {
    let placed: Vec<_> = sats.iter().filter(|s| s.latitude.is_some() && s.longitude.is_some()).take(3).collect();
    if placed.is_empty() {
        return Ok(stats_species::Expected::NoPlace);
    }
    let mut out = Vec::new();
    for s in placed {
        // English names: the page reads only the score, so the team's language need not be looked up.
        let path = format!("/stats/expected-species?satelliteId={}&speciesCode={}&lang=en", seg(&s.id), seg(code));
        let answer = ctx.api.send(Method::GET, &path, None).await?;
        if !answer.ok() {
            if answer.status.is_server_error() || answer.status.as_u16() == 503 {
                return Ok(stats_species::Expected::Unavailable(answer.error().1));
            }
            continue;
        }
        // The range model's week is BirdNET's 48th of a year: the page names its days instead.
        let week = answer.body["week"].as_u64().and_then(|w| u32::try_from(w).ok()).unwrap_or(0);
        let days = words::birdnet_week(week, chrono::Datelike::year(&ctx.app.clock.now()));
        let hit = answer.body["species"]
            .as_array()
            .and_then(|l| l.iter().find(|e| e["speciesCode"].as_str() == Some(code)))
            .map(|e| e["score"].as_f64().unwrap_or(0.0));
        out.push(stats_species::Place { satellite: s.name.clone(), days, score: hit });
    }
    Ok(stats_species::Expected::Places(out))
}
