//! The Detections list: every filter of `GET /api/detections` as a labelled control in a GET
//! form (so the filters live in the URL and survive a reload or a shared link), the matching
//! detections as cards, pagination, and links to export the same list (members and admins).

use axum::{
    Router,
    extract::RawQuery,
    response::{IntoResponse, Redirect, Response},
    routing::get,
};
use maud::{Markup, html};
use serde_json::Value;

use super::{
    common::{self, DetectionPage},
    species_pick,
};
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

    /// The query of the API list call: every filter and the sort, passed through so the API
    /// validates them, and the page as numbers (junk there reads as the first page).
    fn api_query(&self) -> String {
        let mut names: Vec<&str> = FILTERS.to_vec();
        names.extend(["sortBy", "sortDir"]);
        self.query(&names, &[("limit", self.limit().to_string()), ("offset", self.number("offset", 0).to_string())])
    }

    /// Cards per page: the URL's, within 1 to 100.
    fn limit(&self) -> u32 {
        self.number("limit", DEFAULT_LIMIT).clamp(1, 100)
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
        Ok(r) => r,
        Err(e) => e.respond(&ctx.uri),
    }
}

/// The list's total as the API gave it: exact, or at least this many (the count stopped at its
/// cap rather than read every matching row).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Total {
    n: u32,
    at_least: bool,
}

impl Total {
    /// `2,000,000`, or `10,000+` for a lower bound.
    fn text(self) -> String {
        format!("{}{}", layout::grouped(u64::from(self.n)), if self.at_least { "+" } else { "" })
    }
}

/// Where the pager stands: the first and last card shown (1-based), the page and the pages (at
/// least that many when the total is a lower bound).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Position {
    first: u32,
    last: u32,
    page: u32,
    pages: Total,
    has_prev: bool,
    has_next: bool,
}

/// The pager's numbers for `shown` cards at `offset` of `total`; `None` past the end (nothing
/// shown although there are detections), which the page answers with a way back. Past a lower
/// bound the cards shown count too, and a full page means there may be a next one.
fn position(offset: u32, limit: u32, shown: u32, total: Total) -> Option<Position> {
    let limit = limit.max(1);
    if shown == 0 && total.n > 0 {
        return None;
    }
    let end = offset.saturating_add(shown);
    let known = if total.at_least { total.n.max(end) } else { total.n };
    let pages = known.div_ceil(limit).max(1);
    let last = end.min(known);
    Some(Position {
        first: offset.saturating_add(1).min(last),
        last,
        page: (offset.div_ceil(limit) + 1).min(pages),
        pages: Total { n: pages, at_least: total.at_least },
        has_prev: offset > 0,
        has_next: last < known || (total.at_least && shown == limit),
    })
}

/// The results' heading: "21–40 of 2,000", "1–20 of 10,000+", or "No detections".
fn heading(at: &Position, total: Total) -> String {
    if at.last == 0 {
        return "No detections".to_owned();
    }
    let total = if total.at_least { Total { n: total.n.max(at.last), at_least: true } } else { total };
    format!("{}–{} of {}", layout::grouped(u64::from(at.first)), layout::grouped(u64::from(at.last)), total.text())
}

async fn render(ctx: &Ctx, f: Filters) -> Result<Response, PageError> {
    ctx.team_id()?;
    let path = format!("/detections?{}", f.api_query());
    let (page, sats) =
        tokio::try_join!(ctx.api.get::<DetectionPage>(&path), ctx.api.get::<Value>("/satellites?limit=500"),)?;
    let (limit, offset) = (f.limit(), f.number("offset", 0));
    let total =
        Total { n: page.total.unwrap_or(0).clamp(0, i64::from(u32::MAX)) as u32, at_least: page.total_is_lower_bound };
    let shown = page.detections.len() as u32;
    let last_page = (total.n.saturating_sub(1) / limit) * limit;
    let at = match position(offset, limit, shown, total) {
        Some(at) => at,
        // Past the end ("Page 101 of 3"): the last page, with the other choices kept.
        None if offset != last_page => return Ok(Redirect::to(&f.page_url(last_page)).into_response()),
        // The last page itself came back empty (rows went meanwhile): say so, with a way back.
        None => Position {
            first: 0,
            last: 0,
            page: 1,
            pages: Total { n: 1, at_least: false },
            has_prev: false,
            has_next: false,
        },
    };
    let images = common::images(&ctx.api, page.detections.iter().map(|d| d.species_code.clone())).await?;
    let sats = sats.get("satellites").and_then(Value::as_array).cloned().unwrap_or_default();
    let example = species_pick::named(ctx, &species_pick::lang(ctx), EXAMPLE_CODE);
    let body = html! {
        h1 { "Detections" }
        (filter_form(ctx, &f, &sats, &example))
        section.card {
            div.card-head {
                h2 #results-title { (heading(&at, total)) }
                @if ctx.can_edit() && total.n > 0 {
                    div.export-links {
                        span.muted.small { "Export this list: " }
                        a href=(format!("/api/export/detections?{}", f.query(&FILTERS, &[("format", "csv".to_owned())]))) download { "CSV" }
                        " · "
                        a href=(format!("/api/export/detections?{}", f.query(&FILTERS, &[("format", "json".to_owned())]))) download { "JSON" }
                    }
                }
            }
            @if page.detections.is_empty() {
                @if total.n > 0 {
                    (layout::empty("Nothing on this page", html! {
                        "The list is shorter than this page. " a href=(f.page_url(0)) { "Back to the first page" }
                    }))
                } @else if f.any() {
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
            @if at.pages.n > 1 || at.has_next {
                nav.pager aria-label="Pages" {
                    @if at.has_prev { a rel="prev" href=(f.page_url(offset.saturating_sub(limit))) { "← Previous" } }
                    @else { span.muted aria-disabled="true" { "← Previous" } }
                    span.page-of { "Page " (at.page) " of " (at.pages.text()) }
                    @if at.has_next { a rel="next" href=(f.page_url(offset.saturating_add(shown))) { "Next →" } }
                    @else { span.muted aria-disabled="true" { "Next →" } }
                }
            }
        }
    };
    Ok(layout::page(ctx, "Detections", "detections", &["detections.css"], body).into_response())
}

/// The species the filters' placeholders name as an example (people see its name in their
/// language, "Kohlmeise" for a German reader; the code is what the code field takes).
const EXAMPLE_CODE: &str = "parus_major";

/// The filters as a GET form: submitting it puts them in the URL.
fn filter_form(ctx: &Ctx, f: &Filters, sats: &[Value], example: &species_pick::Named) -> Markup {
    let sort_by = f.get("sortBy");
    let sort_dir = f.get("sortDir");
    let chosen =
        Some(f.get("species")).filter(|c| !c.is_empty()).map(|c| species_pick::named(ctx, &species_pick::lang(ctx), c));
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
                input #f-search type="search" name="speciesSearch" value=(f.get("speciesSearch"))
                    placeholder=(format!("{}, {}", example.common, example.scientific)) maxlength="100"
                    title="part of a common name (in your language or the team's) or of a scientific name";
            }
            div.field {
                label for="f-species" { "Species code" }
                input #f-species type="text" name="species" value=(f.get("species")) placeholder=(EXAMPLE_CODE)
                    aria-describedby="f-species-name";
                @if let Some(n) = &chosen {
                    span.small.muted #f-species-name { (species_pick::label(n)) }
                }
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
                        option value=(n) selected[n == f.limit()] { (n) }
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

#[cfg(test)]
mod tests {
    use super::{Position, Total, heading, position};

    fn exact(n: u32) -> Total {
        Total { n, at_least: false }
    }

    fn at_least(n: u32) -> Total {
        Total { n, at_least: true }
    }

    #[test]
    fn the_pager_never_counts_past_the_end() {
        let p = |first, last, page, pages, has_prev, has_next| Position {
            first,
            last,
            page,
            pages: exact(pages),
            has_prev,
            has_next,
        };
        assert_eq!(position(0, 20, 20, exact(25)), Some(p(1, 20, 1, 2, false, true)));
        assert_eq!(position(20, 20, 5, exact(25)), Some(p(21, 25, 2, 2, true, false)));
        assert_eq!(position(0, 20, 0, exact(0)), Some(p(0, 0, 1, 1, false, false)));
        assert_eq!(
            position(24, 20, 1, exact(25)),
            Some(p(25, 25, 2, 2, true, false)),
            "an odd offset still ends at the last page"
        );
        assert_eq!(position(2000, 20, 0, exact(25)), None, "past the end: the page goes back");
        assert_eq!(position(25, 25, 0, exact(25)), None);
    }

    #[test]
    fn a_lower_bound_reads_n_plus_and_the_pager_goes_on_while_pages_are_full() {
        let total = at_least(10_000);
        let first = position(0, 20, 20, total).expect("first page");
        assert_eq!(heading(&first, total), "1–20 of 10,000+");
        assert_eq!(first.pages.text(), "500+");
        assert!(first.has_next);
        // Past the bound the rows keep coming: the page still offers the next one.
        let beyond = position(10_000, 20, 20, total).expect("page past the bound");
        assert_eq!(heading(&beyond, total), "10,001–10,020 of 10,020+");
        assert_eq!((beyond.page, beyond.pages.text(), beyond.has_next), (501, "501+".to_owned(), true));
        // A short page is the real end, even of a lower bound.
        let end = position(10_020, 20, 7, total).expect("last page");
        assert!(!end.has_next && end.has_prev);
        // An exact total keeps its plain figure, with thousands grouped.
        let exact_total = exact(2_000_000);
        let page = position(40, 20, 20, exact_total).expect("page");
        assert_eq!(heading(&page, exact_total), "41–60 of 2,000,000");
        assert_eq!(page.pages.text(), "100,000");
    }
}
