//! The share links of one detection, on its page: who made each live link, when, until when, and
//! a Revoke button for the maker or a team admin (`DELETE /api/detections/{id}/shares/{shareId}`,
//! done by `detection.js`). The fragment `/detections/{id}/shares` reloads after a change. When
//! links start with a host name the hub could not look up, the card carries it (`data-link-host`)
//! and the share button's toast says so.

use axum::{
    Router,
    extract::Path,
    response::{IntoResponse, Response},
    routing::get,
};
use maud::{Markup, html};
use serde_json::Value;

use crate::web::{WebState, ctx::Ctx, error::PageError, layout};

pub fn routes() -> Router<WebState> {
    Router::new().route("/detections/{id}/shares", get(fragment))
}

async fn fragment(ctx: Ctx, Path(id): Path<String>) -> Response {
    let result = async {
        let id = uuid::Uuid::parse_str(&id).map_err(|_| PageError::NotFound("no such detection".into()))?.to_string();
        card(&ctx, &id).await
    }
    .await;
    match result {
        Ok(m) => m.into_response(),
        Err(e) => e.respond(&ctx.uri),
    }
}

/// The card of detection `id`'s live links.
pub async fn card(ctx: &Ctx, id: &str) -> Result<Markup, PageError> {
    let list: Value = ctx.api.get(&format!("/detections/{id}/shares")).await?;
    let links = list.as_array().cloned().unwrap_or_default();
    let state = ctx.api_state();
    // The share button's script warns when links start with a name the hub could not look up.
    let unresolved = state.links.unresolved_host(&state.settings).await;
    Ok(html! {
        section.card #shares hx-get=(format!("/detections/{id}/shares")) hx-trigger="refresh" hx-swap="outerHTML"
            data-link-host=[unresolved.as_deref()] {
            h2 { "Share links" }
            @if let Some(host) = &unresolved {
                p.small.link-problem {
                    "Share links start with " code { (host) } ", a name this hub could not look up, so they may not open on other devices. "
                    "After “Share”, the second box has the link at the address you opened this page with."
                }
            }
            @if links.is_empty() {
                p.muted { "No live share links. “Share” above makes one that works without an account for 30 days." }
            } @else {
                p.muted.small { "Anyone with one of these links sees this detection, hears it and sees its spectrogram. A link ends when it is revoked, after 30 days, or when its maker leaves the team." }
                ul.share-links {
                    @for l in &links {
                        @let s = |k: &str| l.get(k).and_then(Value::as_str).unwrap_or_default().to_owned();
                        li.share-link data-share=(s("id")) {
                            span.share-who { strong { (s("madeByName")) } }
                            span.muted { " made " (layout::ago(&s("createdAt"))) ", ends " (s("expiresAt").get(..10).unwrap_or_default()) }
                            @if s("madeBy") == ctx.user.id || ctx.is_admin() {
                                " "
                                button.linkish.revoke-share type="button" data-id=(id) data-share=(s("id")) { "Revoke" }
                            }
                        }
                    }
                }
            }
        }
    })
}
