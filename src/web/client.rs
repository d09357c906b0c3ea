//! The dashboard reads and writes through the `/api` routes, in process: a page handler sends the
//! browser's own cookie and team to the API router and renders the JSON it gets. Every rule
//! (roles, tenant isolation, the device rule, validation) is the API's; pages repeat none of it.

use std::net::SocketAddr;

use axum::{
    Router,
    body::Body,
    extract::ConnectInfo,
    http::{HeaderMap, HeaderValue, Method, Request, StatusCode, header},
};
use serde::de::DeserializeOwned;
use serde_json::Value;
use tower::ServiceExt;

use super::error::PageError;

/// The biggest API answer a page reads (exports are linked, never read by a page).
const MAX_BODY: usize = 16 << 20;

/// The API router plus the caller's identity, for one page request.
#[derive(Clone)]
pub struct Api {
    router: Router,
    cookie: Option<HeaderValue>,
    team: Option<String>,
    peer: Option<ConnectInfo<SocketAddr>>,
    forwarded: Option<HeaderValue>,
    /// The browser's `User-Agent`, so what the API records (remembered devices, sessions) names it.
    user_agent: Option<HeaderValue>,
}

/// An API answer: status, headers and the JSON body (`Null` when there is none).
#[derive(Debug)]
pub struct Answer {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Value,
}

impl Answer {
    /// The `{code, message}` of an error answer.
    pub fn error(&self) -> (String, String) {
        let s = |k: &str| self.body.get(k).and_then(Value::as_str).unwrap_or_default().to_owned();
        (s("code"), s("message"))
    }

    pub fn ok(&self) -> bool {
        self.status.is_success()
    }
}

impl Api {
    pub fn new(
        router: Router,
        headers: &HeaderMap,
        team: Option<String>,
        peer: Option<ConnectInfo<SocketAddr>>,
    ) -> Self {
        Self {
            router,
            cookie: headers.get(header::COOKIE).cloned(),
            team,
            peer,
            forwarded: headers.get("x-forwarded-for").cloned(),
            user_agent: headers.get(header::USER_AGENT).cloned(),
        }
    }

    /// The team the dashboard acts in (the team switcher's choice), if any.
    pub fn team(&self) -> Option<&str> {
        self.team.as_deref()
    }

    /// A copy that acts in `team`.
    pub fn in_team(&self, team: Option<String>) -> Self {
        Self { team, ..self.clone() }
    }

    /// Sends one request and returns whatever the API answered, errors included.
    pub async fn send(&self, method: Method, path: &str, body: Option<&Value>) -> Result<Answer, PageError> {
        let mut req = Request::builder().method(method).uri(format!("/api{path}"));
        if let Some(c) = &self.cookie {
            req = req.header(header::COOKIE, c.clone());
        }
        if let Some(t) = &self.team {
            req = req.header("x-tenant-id", t.as_str());
        }
        if let Some(f) = &self.forwarded {
            req = req.header("x-forwarded-for", f.clone());
        }
        if let Some(ua) = &self.user_agent {
            req = req.header(header::USER_AGENT, ua.clone());
        }
        let body = match body {
            Some(v) => {
                req = req.header(header::CONTENT_TYPE, "application/json");
                Body::from(serde_json::to_vec(v).map_err(|e| PageError::Internal(e.into()))?)
            }
            None => Body::empty(),
        };
        let mut req = req.body(body).map_err(|e| PageError::Internal(e.into()))?;
        if let Some(peer) = self.peer {
            req.extensions_mut().insert(peer);
        }
        let resp = self.router.clone().oneshot(req).await.map_err(|e| PageError::Internal(anyhow::anyhow!("{e}")))?;
        let (parts, body) = resp.into_parts();
        let bytes = axum::body::to_bytes(body, MAX_BODY).await.map_err(|e| PageError::Internal(e.into()))?;
        let body = if bytes.is_empty() { Value::Null } else { serde_json::from_slice(&bytes).unwrap_or(Value::Null) };
        Ok(Answer { status: parts.status, headers: parts.headers, body })
    }

    /// `GET /api{path}` as `T`; an error answer becomes the matching page error.
    pub async fn get<T: DeserializeOwned>(&self, path: &str) -> Result<T, PageError> {
        let answer = self.send(Method::GET, path, None).await?;
        Self::typed(answer)
    }

    /// `GET` that turns a 404 into `None` (optional panels).
    pub async fn get_opt<T: DeserializeOwned>(&self, path: &str) -> Result<Option<T>, PageError> {
        let answer = self.send(Method::GET, path, None).await?;
        if answer.status == StatusCode::NOT_FOUND {
            return Ok(None);
        }
        Self::typed(answer).map(Some)
    }

    fn typed<T: DeserializeOwned>(answer: Answer) -> Result<T, PageError> {
        if !answer.ok() {
            return Err(PageError::from_answer(&answer));
        }
        serde_json::from_value(answer.body)
            .map_err(|e| PageError::Internal(anyhow::anyhow!("unexpected API answer: {e}")))
    }
}
