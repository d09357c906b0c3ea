//! The page of a share link (`/share/{id}/{token}`), for a friend without an account: the
//! species with its names in the sharer's language (`?lang=`, else the team's primary language),
//! when it was heard (on the station's clock, with its zone, and on the reader's) and where (the
//! place rounded as on the team's public page), the spectrogram and a play button. Everything it loads (`/api/share/spectrogram/...`,
//! `/api/share/audio/...`) opens with the share token alone. A forged, altered, expired or
//! revoked link is a plain "not found" page; the page counts against the address's budget of
//! public reads like the API's share routes. Scripts read the same detection as JSON at
//! `/api/share/detection/{id}/{token}` ([`crate::api`]'s share routes).

use axum::{
    Router,
    extract::{FromRequestParts, Path, Query, State},
    http::{StatusCode, header, request::Parts},
    response::{IntoResponse, Response},
    routing::get,
};
use maud::{Markup, html};
use serde::Deserialize;

use crate::{
    auth::ClientIp,
    ids::DetectionId,
    usecases::{
        public_page,
        shared_detection::{self, ShareError, SharedView},
    },
    web::{WebState, error::problem, icons, layout, words},
};

pub fn routes() -> Router<WebState> {
    Router::new().route("/share/{id}/{token}", get(share_page))
}

#[derive(Debug, Deserialize)]
struct PageQuery {
    lang: Option<String>,
}

fn not_found() -> Response {
    problem(
        StatusCode::NOT_FOUND,
        "This link does not open anything",
        "The share link is incomplete, was changed, was revoked, or is older than 30 days. Ask whoever sent it for a new one.",
    )
}

async fn share_page(
    State(state): State<WebState>,
    Path((id, token)): Path<(String, String)>,
    Query(q): Query<PageQuery>,
    mut parts: Parts,
) -> Response {
    let app = &state.app;
    // The budget of public reads per address comes first, as on every public route.
    let Ok(ip) = ClientIp::from_request_parts(&mut parts, app).await;
    if !public_page::within_budget(app.public_ctx(), &ip.0).await {
        let mut r = problem(
            StatusCode::TOO_MANY_REQUESTS,
            "Slow down a little",
            "This page was asked for very often from your address. Try again in a minute.",
        );
        r.headers_mut().insert(header::RETRY_AFTER, header::HeaderValue::from_static("60"));
        return r;
    }
    let Ok(id) = id.parse::<DetectionId>() else { return not_found() };
    let secret = app.settings.security.jwt_secret.expose();
    let now = app.clock.stamp();
    match shared_detection::view(&app.store, &app.names, secret, now, (id, &token), q.lang.as_deref()).await {
        Ok(v) => page(&v, &token).into_response(),
        Err(ShareError::NotFound) => not_found(),
        Err(ShareError::Store(e)) => {
            tracing::error!(error = %e, "a share page failed");
            problem(
                StatusCode::INTERNAL_SERVER_ERROR,
                "Something went wrong",
                "The station could not show this detection just now. Try again later.",
            )
        }
    }
}

fn page(v: &SharedView, token: &str) -> Markup {
    let spectrogram = format!("/api/share/spectrogram/{}/{token}", v.id);
    let audio = format!("/api/share/audio/{}/{token}", v.id);
    let body = html! {
        main #main.share-page {
            section.card.share-head {
                p.share-kicker.muted.small { "A bird heard by a birdhub station, shared with you" }
                h1 { (layout::names(&v.common_name, &v.scientific_name)) }
                @if let Some(en) = &v.english_name { p.muted.small { "In English: " (en) } }
                dl.share-facts {
                    div { dt { "When" } dd #share-when {
                        (layout::at_in(&v.detected_at, Some(&v.time_zone)))
                        // The reader's own clock, when it reads otherwise (`app.js` fills it in).
                        " " time.here datetime=(v.detected_at) data-zone=(v.time_zone) hidden {}
                    } }
                    div { dt { "Where" } dd #share-place {
                        (v.station)
                        @if let (Some(lat), Some(lon)) = (v.latitude, v.longitude) {
                            ", " @if v.exact_location { "at " } @else { "near " } (words::place(lat, lon))
                        }
                    } }
                    div { dt { "Model confidence" } dd { (layout::confidence(v.confidence, false)) } }
                    @if v.verification_status == "confirmed" { div { dt { "Checked" } dd { span.badge.ok { "Confirmed by a person" } } } }
                }
            }
            section.card.share-recording {
                h2 { "The recording" }
                @if v.audio {
                    img.share-spectro src=(spectrogram) alt=(format!("Spectrogram of the recording of the {}: time left to right, pitch bottom to top", v.common_name));
                    div.share-play {
                        button.play.primary #share-play type="button" data-audio=(audio) data-start=(v.start_ms)
                            aria-label=(format!("Play the {}", v.common_name)) { (icons::play()) span { "Play" } }
                        span.muted.small { "The bird is heard from " (format!("{:.1}", v.start_ms as f64 / 1000.0)) " to " (format!("{:.1}", v.end_ms as f64 / 1000.0)) " s." }
                    }
                } @else {
                    p.notice { "The recording is no longer kept, so there is nothing to hear or see." }
                }
            }
            p.muted.small.share-foot {
                "Species are the classifier's suggestions (BirdNET, CC BY-NC-SA 4.0), not all checked by a person. "
                "This link works for 30 days from when it was made."
            }
        }
    };
    layout::bare_with(&format!("{} (shared)", v.common_name), "", &["share.css"], body)
}
