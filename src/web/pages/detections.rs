//! The Detections list: every filter of `GET /api/detections` as a labelled control in a GET
//! form (so the filters live in the URL and survive a reload or a shared link), the matching
//! detections as cards, pagination, and links to export the same list (members and admins).

use axum::{
    Router,
    extract::RawQuery,
    response::{IntoResponse, Response},
    routing::get,
};
use maud::{Markup, html};
use serde_json::Value;

use super::common::{self, DetectionPage};
use crate::web::{WebState, ctx::Ctx, error::PageError, layout};

pub fn routes() -> Router<WebState> {
    Router::new().route("/detections", get(list_page))
}

/// Cards per page unless the URL asks otherwise.
const DEFAULT_LIMIT: u32 = 20;

/// The list filters the API takes, by query name; the export takes the first five too.
const FILTERS: [&str; 5] = ["satelliteId", "species", "speciesSearch", "minConfidence", "verificationStatus"];

/// The verification states the API filters on, with their labels.
const STATUSES: [(&str, &str); 4] = [
    ("pending_review", "Pending review"),
    ("confirmed", "Confirmed"),
    ("rejected", "Rejected"),
    ("unverified", "Unverified"),
];

/// The list's query as the browser sent it: filters, sort and page.
#[derive(Debug, Default, Clone)]
struct Filters {
    pairs: Vec<(String, String)>,
}

impl Filters {
    fn parse(raw: Option<&str>) -> Self {
        let pairs = url::form_urlencoded::parse(raw.unwrap_or_default().as_bytes())
            .map(|(k, v)| (k.into_owned(), v.trim().to_owned()))
            .filter(|(_, v)| !v.is_empty())
            .collect();
        Self { pairs }
    }

    fn get(&self, name: &str) -> &str {
        self.pairs.iter().rev().find(|(k, _)| k == name).map(|(_, v)| v.as_str()).unwrap_or_default()
    }

    /// A number from the URL; junk is left to the API, which names the bad value.
    fn number(&self, name: &str, default: u32) -> u32 {
        self.get(name).parse().unwrap_or(default)
    }

    /// A query string (without `?`) of `names` that are set, plus `extra`.
    fn query(&self, names: &[&str], extra: &[(&str, String)]) -> String {
        let mut out = url::form_urlencoded::Serializer::new(String::new());
        for name in names {
            let v = self.get(name);
            if !v.is_empty() {
                out.append_pair(name, v);
            }
        }
        for (k, v) in extra {
            out.append_pair(k, v);
        }
        out.finish()
    }

    /// The query of the API list call: every filter, the sort and the page, passed through so
    /// the API validates them.
    fn api_query(&self) -> String {
        let mut names: Vec<&str> = FILTERS.to_vec();
        names.extend(["sortBy", "sortDir", "limit", "offset"]);
        let mut q = self.query(&names, &[]);
        if self.get("limit").is_empty() {
            q.push_str(if q.is_empty() { "" } else { "&" });
            q.push_str(&format!("limit={DEFAULT_LIMIT}"));
        }
        q
    }

    /// This page's URL at another offset, keeping every other choice.
    fn page_url(&self, offset: u32) -> String {
        let mut names: Vec<&str> = FILTERS.to_vec();
        names.extend(["sortBy", "sortDir", "limit"]);
        let q = self.query(&names, &[("offset", offset.to_string())]);
        format!("/detections?{q}")
    }

    fn any(&self) -> bool {
        FILTERS.iter().any(|f| !self.get(f).is_empty())
    }
}

async fn list_page(ctx: Ctx, RawQuery(raw): RawQuery) -> Response {
    match render(&ctx, Filters::parse(raw.as_deref())).await {
        Ok(m) => m.into_response(),
        Err(e) => e.respond(&ctx.uri),
    }
}

async fn render(ctx: &Ctx, f: Filters) -> Result<Markup, PageError> {
    ctx.team_id()?;
    let path = format!("/detections?{}", f.api_query());
    let (page, sats) =
        tokio::try_join!(ctx.api.get::<DetectionPage>(&path), ctx.api.get::<Value>("/satellites?limit=500"),)?;
    let images = common::images(&ctx.api, page.detections.iter().map(|d| d.species_code.clone())).await?;
    let sats = sats.get("satellites").and_then(Value::as_array).cloned().unwrap_or_default();
    let (limit, offset) = (f.number("limit", DEFAULT_LIMIT).max(1), f.number("offset", 0));
    let total = page.total.unwrap_or(0).max(0) as u32;
    let shown = page.detections.len() as u32;
    let body = html! {
        h1 { "Detections" }
        (filter_form(&f, &sats))
        section.card {
            div.card-head {
                h2 #results-title {
                    @if total == 0 { "No detections" }
                    @else { (offset.saturating_add(1).min(total)) "–" (offset.saturating_add(shown).min(total)) " of " (total) }
                }
                @if ctx.can_edit() && total > 0 {
                    div.export-links {
                        span.muted.small { "Export this list: " }
                        a href=(format!("/api/export/detections?{}", f.query(&FILTERS, &[("format", "csv".to_owned())]))) download { "CSV" }
                        " · "
                        a href=(format!("/api/export/detections?{}", f.query(&FILTERS, &[("format", "json".to_owned())]))) download { "JSON" }
                    }
                }
            }
            @if page.detections.is_empty() {
                @if f.any() {
                    (layout::empty("No detections match these filters", html! {
                        "Lower the minimum confidence or clear a filter. " a href="/detections" { "Show all detections" }
                    }))
                } @else {
                    (layout::empty("No detections yet", html! {
                        "When a satellite hears a bird, its detection is listed here. "
                        a href="/satellites" { "Check your satellites" }
                    }))
                }
            } @else {
                div.feed.det-list aria-labelledby="results-title" {
                    @for d in &page.detections { (common::card(ctx, d, images.get(&d.species_code))) }
                }
            }
            @if total > limit {
                nav.pager aria-label="Pages" {
                    @if offset > 0 { a rel="prev" href=(f.page_url(offset.saturating_sub(limit))) { "← Previous" } }
                    @else { span.muted { "← Previous" } }
                    span.page-of { "Page " ((offset / limit) + 1) " of " (total.div_ceil(limit)) }
                    @if offset.saturating_add(limit) < total { a rel="next" href=(f.page_url(offset.saturating_add(limit))) { "Next →" } }
                    @else { span.muted { "Next →" } }
                }
            }
        }
    };
    Ok(layout::page(ctx, "Detections", "detections", &["detections.css"], body))
}

/// The filters as a GET form: submitting it puts them in the URL.
fn filter_form(f: &Filters, sats: &[Value]) -> Markup {
    let sort_by = f.get("sortBy");
    let sort_dir = f.get("sortDir");
    html! {
        form.filters.card.det-filters method="get" action="/detections" {
            div.field {
                label for="f-sat" { "Satellite" }
                select #f-sat name="satelliteId" {
                    option value="" { "All satellites" }
                    @for s in sats {
                        @let id = s.get("id").and_then(Value::as_str).unwrap_or_default();
                        option value=(id) selected[id == f.get("satelliteId")] { (s.get("name").and_then(Value::as_str).unwrap_or(id)) }
                    }
                }
            }
            div.field {
                label for="f-search" { "Species name" }
                input #f-search type="search" name="speciesSearch" value=(f.get("speciesSearch")) placeholder="robin, Turdus…" maxlength="100";
            }
            div.field {
                label for="f-species" { "Species code" }
                input #f-species type="text" name="species" value=(f.get("species")) placeholder="turdus-migratorius";
            }
            div.field {
                label for="f-conf" { "Min. confidence" }
                input #f-conf type="number" name="minConfidence" min="0" max="1" step="0.05" value=(f.get("minConfidence"));
            }
            div.field {
                label for="f-status" { "Verification" }
                select #f-status name="verificationStatus" {
                    option value="" { "Any" }
                    @for (v, label) in STATUSES { option value=(v) selected[v == f.get("verificationStatus")] { (label) } }
                }
            }
            div.field {
                label for="f-sort" { "Sort by" }
                select #f-sort name="sortBy" {
                    @for (v, label) in [("date", "Time"), ("confidence", "Confidence"), ("species", "Species")] {
                        option value=(v) selected[v == sort_by] { (label) }
                    }
                }
            }
            div.field {
                label for="f-dir" { "Order" }
                select #f-dir name="sortDir" {
                    option value="desc" selected[sort_dir != "asc"] { "Descending" }
                    option value="asc" selected[sort_dir == "asc"] { "Ascending" }
                }
            }
            div.field {
                label for="f-limit" { "Per page" }
                select #f-limit name="limit" {
                    @for n in [10u32, 20, 50, 100] {
                        option value=(n) selected[n == f.number("limit", DEFAULT_LIMIT)] { (n) }
                    }
                }
            }
            div.field.actions {
                button.primary type="submit" { "Apply filters" }
                a.clear href="/detections" { "Clear" }
            }
        }
    }
}
