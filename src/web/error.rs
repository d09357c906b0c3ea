//! What a page shows when it cannot show itself: sign-in when the session is gone (and back to
//! the page after), a plain "not allowed" or "not found" page, never a stack trace or a blank.

use axum::{
    http::{StatusCode, Uri, header},
    response::{IntoResponse, Redirect, Response},
};
use maud::html;

use super::{client::Answer, layout};

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

/// A small standalone page for an error.
pub fn problem(status: StatusCode, title: &str, message: &str) -> Response {
    let body = layout::bare(
        title,
        html! {
            main.narrow {
                section.card {
                    h1 { (title) }
                    p { (if message.is_empty() { "There is nothing to show here." } else { message }) }
                    p { a href="/" { "Back to the dashboard" } }
                }
            }
        },
    );
    let mut r = (status, body).into_response();
    r.headers_mut().insert(header::CACHE_CONTROL, header::HeaderValue::from_static("no-store"));
    r
}
