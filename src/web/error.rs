//! What a page shows when it cannot show itself: sign-in when the session is gone (and back to
//! the page after), a plain "not allowed" or "not found" page, never a stack trace or a blank.

use axum::{
    body::Body,
    extract::{FromRequestParts, Request, State},
    http::{StatusCode, Uri, header},
    middleware::Next,
    response::{IntoResponse, Redirect, Response},
};
use maud::{Markup, html};

use super::{WebState, client::Answer, csrf, ctx::Ctx, layout};
use crate::auth::{context::cookie, tokens::SESSION_COOKIE};

/// Why a page could not be rendered.
#[derive(Debug)]
pub enum PageError {
    /// No valid session: sign in, then come back to `next`.
    SignIn,
    /// Signed in but not allowed (a viewer on an admin page, a forged form).
    Forbidden(String),
    /// Unknown, or another team's.
    NotFound(String),
    /// The API refused the input (shown on the page that sent it).
    Invalid(String),
    /// A bug or an outage; the details go to the log only.
    Internal(anyhow::Error),
}

impl PageError {
    /// The page error for an API error answer.
    pub fn from_answer(answer: &Answer) -> Self {
        let (_, message) = answer.error();
        match answer.status {
            StatusCode::UNAUTHORIZED => Self::SignIn,
            StatusCode::FORBIDDEN => Self::Forbidden(message),
            StatusCode::NOT_FOUND => Self::NotFound(message),
            s if s.is_client_error() => Self::Invalid(message),
            s => Self::Internal(anyhow::anyhow!("API answered {s}: {message}")),
        }
    }

    /// The response for a page at `uri`.
    pub fn respond(self, uri: &Uri) -> Response {
        match self {
            Self::SignIn => {
                let next = uri.path_and_query().map(|p| p.as_str()).unwrap_or("/");
                let to = format!(
                    "/signin?next={}",
                    url::form_urlencoded::byte_serialize(next.as_bytes()).collect::<String>()
                );
                let mut r = Redirect::to(&to).into_response();
                // htmx follows this header instead of swapping a sign-in page into a fragment.
                if let Ok(v) = to.parse() {
                    r.headers_mut().insert("hx-redirect", v);
                }
                r
            }
            Self::Forbidden(m) => problem(StatusCode::FORBIDDEN, "Not allowed", &m),
            Self::NotFound(m) => problem(StatusCode::NOT_FOUND, "Not found", &m),
            Self::Invalid(m) => problem(StatusCode::UNPROCESSABLE_ENTITY, "That did not work", &m),
            Self::Internal(e) => {
                tracing::error!(error = %format!("{e:#}"), "a dashboard page failed");
                problem(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "Something went wrong",
                    "The hub could not show this page. The details are in the hub's log (journalctl -u birdhub).",
                )
            }
        }
    }
}

impl From<anyhow::Error> for PageError {
    fn from(e: anyhow::Error) -> Self {
        Self::Internal(e)
    }
}

/// What an error page says, kept on its response so [`with_shell`] can put it in the signed-in
/// shell.
#[derive(Debug, Clone)]
struct Problem {
    title: String,
    message: String,
}

/// The problem and the way on: back to the dashboard when signed in, else to the sign-in page.
fn problem_body(title: &str, message: &str, signed_in: bool) -> Markup {
    html! {
        section.card.problem {
            h1 { (title) }
            p { (if message.is_empty() { "There is nothing to show here." } else { message }) }
            @if signed_in { p { a href="/" { "Back to the dashboard" } } }
            @else { p { a href="/signin" { "Sign in" } } }
        }
    }
}

/// A small standalone page for an error (signed-in visitors get it inside the shell: [`with_shell`]).
pub fn problem(status: StatusCode, title: &str, message: &str) -> Response {
    let body = layout::bare(title, html! { main.narrow { (problem_body(title, message, false)) } });
    let mut r = (status, body).into_response();
    r.headers_mut().insert(header::CACHE_CONTROL, header::HeaderValue::from_static("no-store"));
    r.extensions_mut().insert(Problem { title: title.to_owned(), message: message.to_owned() });
    r
}

/// Error and not-found pages keep the navigation for a signed-in person: an error page made by
/// [`problem`] is drawn again in the page shell (tabs, account menu, bottom bar) when the request
/// carries a valid session. Signed-out visitors keep the bare page.
pub async fn with_shell(State(state): State<WebState>, req: Request, next: Next) -> Response {
    let signed_in = cookie(req.headers(), SESSION_COOKIE).is_some();
    let (parts, body) = req.into_parts();
    let mut saved = parts.clone();
    let resp = next.run(Request::from_parts(parts, body)).await;
    let Some(p) = resp.extensions().get::<Problem>().cloned() else { return resp };
    if !signed_in {
        return resp;
    }
    // The page's CSRF token: the cookie's, or the one this response sets.
    let token = cookie(&saved.headers, csrf::COOKIE).map(str::to_owned).or_else(|| {
        resp.headers().get_all(header::SET_COOKIE).iter().filter_map(|v| v.to_str().ok()).find_map(|c| {
            c.strip_prefix(csrf::COOKIE)
                .and_then(|r| r.strip_prefix('='))
                .and_then(|r| r.split(';').next())
                .map(str::to_owned)
        })
    });
    let Some(token) = token else { return resp };
    saved.extensions.insert(csrf::Token(token));
    let Ok(ctx) = Ctx::from_request_parts(&mut saved, &state).await else { return resp };
    let page = layout::page(&ctx, &p.title, "", &[], problem_body(&p.title, &p.message, true));
    let (mut head, _) = resp.into_parts();
    head.headers.remove(header::CONTENT_ENCODING);
    head.headers.remove(header::CONTENT_LENGTH);
    head.headers.insert(header::CONTENT_TYPE, header::HeaderValue::from_static("text/html; charset=utf-8"));
    Response::from_parts(head, Body::from(page.into_string()))
}
