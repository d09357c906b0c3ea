//! Satellites: the list (online state, last seen, version, telemetry sparklines, outbox and
//! filter bars), kept live by `sats_live.js` through one card's fragment (`/satellites/{id}/card`);
//! the register flow (`/satellites/new`, credentials shown once, with the shell lines that write
//! them to the Pi's `satellite.toml`) and the QR code of the registration for the Android app,
//! drawn on the hub (`POST /satellites/qr`). A platform admin also finds the remote workers
//! there ([`super::sat_workers`]).

use axum::{
    Router,
    body::Body,
    extract::{Path, Query},
    http::{HeaderMap, HeaderValue, StatusCode, header},
    response::{IntoResponse, Response},
    routing::{get, post},
};
use maud::{Markup, html};
use serde::Deserialize;

use super::sat_parts::{self, Sat, SatPage};
use crate::web::{WebState, csrf, ctx::Ctx, error::PageError, icons, layout, qr, words};

/// The longest text the QR route draws (a registration is about 600 bytes).
const MAX_QR_TEXT: usize = 2048;
/// Satellites whose sparklines the list draws (the rest link to their page).
const SPARK_LIMIT: usize = 24;

pub fn routes() -> Router<WebState> {
    Router::new()
        .route("/satellites", get(list_page))
        .route("/satellites/new", get(new_page))
        .route("/satellites/qr", post(qr_svg))
        .route("/satellites/{id}/card", get(card_fragment))
}

/// `id` when it is a satellite id's shape (hex digits and dashes), else none.
pub fn clean_id(raw: &str) -> Option<String> {
    let id: String = raw.chars().filter(|c| c.is_ascii_hexdigit() || *c == '-').take(36).collect();
    (id.len() == raw.len() && !id.is_empty()).then_some(id)
}

/// `GET /satellites/{id}/card`: one satellite's card of the list, for live redraws.
async fn card_fragment(ctx: Ctx, Path(raw): Path<String>) -> Response {
    let result = async {
        ctx.team_id()?;
        let id =
            clean_id(&raw).ok_or_else(|| PageError::NotFound("There is no such satellite in this team.".into()))?;
        let sat: Sat = ctx.api.get(&format!("/satellites/{id}")).await?;
        let points = sat_parts::telemetry(&ctx.api, &id).await?;
        Ok::<_, PageError>(sat_card(&sat, Some(&points)))
    }
    .await;
    match result {
        Ok(m) => m.into_response(),
        Err(e) => e.respond(&ctx.uri),
    }
}

#[derive(Debug, Deserialize)]
struct ListFilter {
    #[serde(default)]
    status: String,
    #[serde(default)]
    search: String,
}

async fn list_page(ctx: Ctx, Query(f): Query<ListFilter>) -> Response {
    match list(&ctx, &f).await {
        Ok(m) => m.into_response(),
        Err(e) => e.respond(&ctx.uri),
    }
}

fn enc(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

async fn list(ctx: &Ctx, f: &ListFilter) -> Result<Markup, PageError> {
    ctx.team_id()?;
    let path = format!("/satellites?limit=100&status={}&search={}", enc(&f.status), enc(&f.search));
    let page: SatPage = ctx.api.get(&path).await?;
    let telemetry = futures_util::future::try_join_all(
        page.satellites.iter().take(SPARK_LIMIT).map(|s| sat_parts::telemetry(&ctx.api, &s.id)),
    )
    .await?;
    let workers = super::sat_workers::card(ctx).await?;
    let filtered = !f.status.is_empty() || !f.search.trim().is_empty();
    let online = page.satellites.iter().filter(|s| s.is_online).count();
    // An imported station's history is no device: it is not counted among those that can be online.
    let histories = page.satellites.iter().filter(|s| s.history_only).count();
    let devices = page.satellites.len() - histories;
    let body = html! {
        section.card {
            div.card-head {
                h1 { "Satellites" }
                div {
                    @if ctx.is_admin() {
                        a.button #import-station href="/imports" { "Import a station" }
                        " "
                    }
                    @if ctx.can_edit() {
                        a.button.primary #register href="/satellites/new" { "Register a satellite" }
                    }
                }
            }
            p.muted #sat-count { span.online-n { (online) } " of " (devices) " shown online" @if page.total as usize > page.satellites.len() { " (" (page.total) " in all)" } "."
                @if histories > 0 { " " (words::count(histories, "imported station is", "imported stations are")) " history, not a device." } }
            form.filters.sat-filters method="get" action="/satellites" {
                label { "Search" input type="search" name="search" value=(f.search) placeholder="name"; }
                label { "State"
                    select name="status" {
                        option value="" selected[f.status.is_empty()] { "all" }
                        option value="online" selected[f.status == "online"] { "online" }
                        option value="offline" selected[f.status == "offline"] { "offline" }
                    }
                }
                button type="submit" { "Filter" }
            }
        }
        @if page.satellites.is_empty() {
            section.card {
                @if filtered {
                    (layout::empty("No satellite matches", html! { "Change the search or " a href="/satellites" { "show all satellites" } "." }))
                } @else {
                    (layout::empty("No satellites yet", html! {
                        ol.steps {
                            li { "Install birdhub on a Raspberry Pi with a USB microphone, or the Android app." }
                            li { "On the Pi, run " code { "birdhub satellite register" } "; it finds this hub by itself." }
                            li { "Or " a href="/satellites/new" { "register one here" } " and copy its credentials to the device." }
                        }
                    }))
                }
            }
        }
        div.sat-cards {
            @for (i, s) in page.satellites.iter().enumerate() {
                (sat_card(s, telemetry.get(i).map(Vec::as_slice)))
            }
        }
        (workers)
    };
    Ok(layout::page(ctx, "Satellites", "satellites", &["sats.css", "sats_live.js"], body))
}

fn sat_card(s: &Sat, points: Option<&[sat_parts::Point]>) -> Markup {
    html! {
        article.card.sat-card data-id=(s.id) {
            div.card-head {
                h2 { a href=(format!("/satellites/{}", s.id)) { (s.name) } }
                (sat_parts::state(s))
            }
            @if s.history_only {
                p.small.muted { "The detections of an old station, imported. No device records under this name." }
            } @else {
                (device_facts(s, points))
            }
        }
    }
}

/// What a device's card shows: last seen, version, kind, clock, sparklines and bars.
fn device_facts(s: &Sat, points: Option<&[sat_parts::Point]>) -> Markup {
    html! {
            dl.facts {
                div { dt { "Last seen" } dd { (sat_parts::last_seen(s)) } }
                div { dt { "Version" } dd { (sat_parts::version(s)) } }
                div { dt { "Kind" } dd { (if s.kind == "mobile" { "Android app" } else { "Raspberry Pi" }) } }
                @if s.clock_text.is_some() { div { dt { "Clock" } dd { (super::sat_clock::clock(s)) } } }
            }
            @if let Some(p) = points { (sat_parts::sparklines(s, p)) }
            div.bars {
                (sat_parts::outbox_bar(s))
                (sat_parts::filter_bar(s))
            }
    }
}

async fn new_page(ctx: Ctx) -> Response {
    let result = async {
        ctx.team_id()?;
        if !ctx.can_edit() {
            return Err(PageError::Forbidden("Viewers cannot register satellites. Ask a team admin.".into()));
        }
        Ok(new_form(&ctx))
    }
    .await;
    match result {
        Ok(m) => m.into_response(),
        Err(e) => e.respond(&ctx.uri),
    }
}

fn secret_row(id: &str, label: &str) -> Markup {
    html! {
        div.secret {
            span.secret-label { (label) }
            code #(id) {}
            button type="button" data-copy=(format!("#{id}")) aria-label=(format!("Copy {label}")) { (icons::copy()) "Copy" }
        }
    }
}

fn new_form(ctx: &Ctx) -> Markup {
    let body = html! {
        section.card.narrow-card #register-card {
            h1 { "Register a satellite" }
            p.muted { "Give the device a name. The hub answers with its MQTT login and API key, which you copy to the device (or scan with the Android app)." }
            form.stack #register-form novalidate {
                label { "Name" input #sat-name name="name" required maxlength="100" autocomplete="off" placeholder="Garden Pi"; }
                label { "Kind"
                    select #sat-kind name="kind" {
                        option value="satellite" { "Raspberry Pi satellite" }
                        option value="mobile" { "Android app" }
                    }
                }
                div.row.latlon {
                    label { "Latitude (optional)" input #sat-lat name="latitude" type="number" step="any" min="-90" max="90" inputmode="decimal"; }
                    label { "Longitude (optional)" input #sat-lon name="longitude" type="number" step="any" min="-180" max="180" inputmode="decimal"; }
                }
                p.small.muted { "The position gives the satellite its sunrise and sunset for scheduled recording." }
                div.error #register-error role="alert" hidden {}
                div.row {
                    button.primary type="submit" #register-submit { "Register" }
                    a href="/satellites" { "Cancel" }
                }
            }
        }
        section.card #register-result hidden {
            h2 { "Registered: " span #reg-name {} }
            p.notice.once { strong { "Shown once." } " Copy the password and API key now: the hub keeps only their hashes and cannot show them again. (Rotate the key on the satellite's page if it is lost.)" }
            div.secrets {
                (secret_row("reg-password", "MQTT password"))
                (secret_row("reg-apikey", "API key"))
                (secret_row("reg-username", "MQTT username"))
                (secret_row("reg-broker", "Broker URL"))
                (secret_row("reg-client", "Client id"))
                (secret_row("reg-topic", "Topic prefix"))
            }
            div #reg-pi {
                h3 { "Run this on the Pi" }
                p.small.muted {
                    "On a Raspberry Pi with birdhub installed, paste these lines into a terminal. They write "
                    code { "/etc/birdhub/satellite.toml" } " with the credentials above (readable by root only) and start the satellite. "
                    "Change " code { "source" } " for another microphone or a folder of recordings."
                }
                div.setup {
                    pre.setup #reg-setup tabindex="0" {}
                    button type="button" data-copy="#reg-setup" aria-label="Copy the setup lines" { (icons::copy()) "Copy" }
                }
                p.small.muted {
                    "Or skip this page: " code { "sudo birdhub satellite register" } " on the Pi registers it and writes the same file. "
                    "Manual setup is described in the satellites guide (docs/satellites.md)."
                }
            }
            h3 { "For the Android app" }
            p.small.muted { "Scan this code in the app's “Add to hub” screen. It holds the same credentials: do not share a photo of it." }
            div.qr-box #reg-qr aria-live="polite" { span.muted.small { "Drawing the QR code…" } }
            div.row {
                a.button.primary #reg-open href="/satellites" { "Open the satellite" }
                a.button href="/satellites/new" { "Register another" }
            }
        }
    };
    layout::page(ctx, "Register a satellite", "satellites", &["sats.css", "satellites.js"], body)
}

/// `POST /satellites/qr`: the posted text (at most 2 KB) as an SVG QR code. Only for a signed-in
/// page of this hub: the `X-CSRF-Token` header must equal the `bh_csrf` cookie. Nothing is kept.
async fn qr_svg(ctx: Ctx, headers: HeaderMap, body: Body) -> Response {
    let token = headers.get("x-csrf-token").and_then(|v| v.to_str().ok()).unwrap_or_default();
    if token.is_empty() || !csrf::verify(&headers, token) {
        return PageError::Forbidden("This request was not sent from this hub's own page.".into()).respond(&ctx.uri);
    }
    let Ok(bytes) = axum::body::to_bytes(body, MAX_QR_TEXT).await else {
        return PageError::Invalid(format!("The text for a QR code must be at most {MAX_QR_TEXT} bytes."))
            .respond(&ctx.uri);
    };
    let Ok(text) = std::str::from_utf8(&bytes) else {
        return PageError::Invalid("The text for a QR code must be UTF-8.".into()).respond(&ctx.uri);
    };
    if text.trim().is_empty() {
        return PageError::Invalid("There is no text to draw.".into()).respond(&ctx.uri);
    }
    match qr::svg(text, "QR code of the satellite's registration") {
        Ok(svg) => {
            let mut r = (StatusCode::OK, svg).into_response();
            let h = r.headers_mut();
            h.insert(header::CONTENT_TYPE, HeaderValue::from_static("image/svg+xml"));
            h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
            r
        }
        Err(e) => PageError::Invalid(e.to_string()).respond(&ctx.uri),
    }
}
