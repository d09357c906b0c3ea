//! The signed-in person behind a page request: who they are (from `GET /api/auth/me`), the team
//! the dashboard acts in (the team switcher's `bh_team` cookie, else their default team) and the
//! request's CSRF token. A request without a valid session becomes a redirect to sign-in.

use std::net::SocketAddr;

use axum::{
    extract::{ConnectInfo, FromRequestParts},
    http::{Uri, request::Parts},
    response::{IntoResponse, Response},
};
use serde::Deserialize;

use super::{WebState, client::Api, csrf, error::PageError};
use crate::domain::Role;

pub const TEAM_COOKIE: &str = "bh_team";

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MeUser {
    pub id: String,
    pub name: String,
    pub is_platform_admin: bool,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MeTeam {
    pub id: String,
    pub name: String,
    pub role: Role,
}

#[derive(Debug, Clone, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct MePrefs {
    #[serde(default)]
    pub language: String,
    /// `24h` or `12h`: how every time on the dashboard is written.
    #[serde(default)]
    pub time_format: String,
}

#[derive(Debug, Clone, Deserialize)]
struct Me {
    user: MeUser,
    tenants: Vec<MeTeam>,
    #[serde(default)]
    preferences: MePrefs,
}

/// Everything a signed-in page needs to render.
#[derive(Clone)]
pub struct Ctx {
    pub api: Api,
    pub user: MeUser,
    pub teams: Vec<MeTeam>,
    /// The team the pages act in; `None` for a person in no team yet.
    pub team: Option<MeTeam>,
    pub language: String,
    /// `24h` or `12h` (the person's preference); `assets/app.js` writes every `<time>` with it.
    pub time_format: String,
    pub csrf: String,
    pub uri: Uri,
    pub app: crate::state::AppState,
}

impl Ctx {
    /// The hub's shared state, for presentation only (names in the viewer's language).
    pub fn api_state(&self) -> &crate::state::AppState {
        &self.app
    }

    /// The clock the person reads (their `timeFormat` preference), for times written on the server.
    pub fn hours(&self) -> crate::time::hours::HourFormat {
        crate::time::hours::HourFormat::from_preference(&self.time_format)
    }

    /// The person's role in the current team.
    pub fn role(&self) -> Option<Role> {
        self.team.as_ref().map(|t| t.role)
    }

    /// Member or above in the current team (may vote, annotate, manage satellites).
    pub fn can_edit(&self) -> bool {
        self.role().is_some_and(|r| r >= Role::Member)
    }

    pub fn is_admin(&self) -> bool {
        self.role().is_some_and(|r| r >= Role::Admin)
    }

    /// The current team's id, or a "join a team first" page.
    pub fn team_id(&self) -> Result<&str, PageError> {
        self.team
            .as_ref()
            .map(|t| t.id.as_str())
            .ok_or_else(|| PageError::NotFound("You are not in a team yet. Ask a team admin for an invite.".into()))
    }
}

/// A page's failure, rendered for the page's own address.
pub struct Rejection(PageError, Uri);

impl IntoResponse for Rejection {
    fn into_response(self) -> Response {
        self.0.respond(&self.1)
    }
}

/// The page a request belongs to: for an htmx fragment, the page it was loaded into (so a
/// sign-in comes back to the page, not to the fragment).
fn page_uri(parts: &Parts) -> Uri {
    parts
        .headers
        .get("hx-current-url")
        .and_then(|v| v.to_str().ok())
        .and_then(|u| url::Url::parse(u).ok())
        .and_then(|u| {
            let q = u.query().map(|q| format!("?{q}")).unwrap_or_default();
            format!("{}{q}", u.path()).parse().ok()
        })
        .unwrap_or_else(|| parts.uri.clone())
}

/// The pieces every page request has, signed in or not.
pub fn base(parts: &Parts, state: &WebState) -> (Api, String) {
    let token = parts.extensions.get::<csrf::Token>().map(|t| t.0.clone()).unwrap_or_default();
    let peer = parts.extensions.get::<ConnectInfo<SocketAddr>>().copied();
    let team = crate::auth::context::cookie(&parts.headers, TEAM_COOKIE).map(str::to_owned);
    (Api::new(state.api.clone(), &parts.headers, team, peer), token)
}

impl FromRequestParts<WebState> for Ctx {
    type Rejection = Rejection;

    async fn from_request_parts(parts: &mut Parts, state: &WebState) -> Result<Self, Self::Rejection> {
        let uri = parts.uri.clone();
        let (api, csrf) = base(parts, state);
        let me: Me = api.in_team(None).get("/auth/me").await.map_err(|e| Rejection(e, page_uri(parts)))?;
        let chosen = api.team().and_then(|id| me.tenants.iter().find(|t| t.id == id)).or(me.tenants.first()).cloned();
        let api = api.in_team(chosen.as_ref().map(|t| t.id.clone()));
        let MePrefs { language, time_format } = me.preferences;
        let language = if language.is_empty() { "en".into() } else { language };
        let time_format = if time_format == "12h" { time_format } else { "24h".into() };
        Ok(Ctx {
            api,
            user: me.user,
            teams: me.tenants,
            team: chosen,
            language,
            time_format,
            csrf,
            uri,
            app: state.app.clone(),
        })
    }
}
