//! Sign-in (password, then a TOTP code, a backup code or a passkey, with "remember this device"),
//! sign-out, the team switch, and the first-run page that creates the first account.

use axum::{
    Router,
    extract::{FromRequestParts, RawQuery, State},
    http::{Method, StatusCode, Uri, header, request::Parts},
    response::{IntoResponse, Redirect, Response},
    routing::{get, post},
};
use maud::{Markup, html};
use serde_json::json;

use super::forms::{Fields, redirect_with_cookies, safe_next};
use crate::{
    usecases::first_run::{self, FirstAccount, FirstRunError},
    web::{WebState, client::Api, ctx, error::PageError, layout},
};

pub fn routes() -> Router<WebState> {
    Router::new()
        .route("/signin", get(signin_page).post(signin))
        .route("/signin/mfa", post(signin_mfa))
        .route("/signout", post(signout))
        .route("/team", post(switch_team))
        .route("/setup", post(setup))
}

/// The API client and CSRF token of a request that may not be signed in.
pub struct Anonymous {
    pub api: Api,
    pub csrf: String,
}

impl FromRequestParts<WebState> for Anonymous {
    type Rejection = std::convert::Infallible;
    async fn from_request_parts(parts: &mut Parts, state: &WebState) -> Result<Self, Self::Rejection> {
        let (api, csrf) = ctx::base(parts, state);
        Ok(Self { api, csrf })
    }
}

/// One value of a query string ("" when absent); a malformed query is no error here.
pub fn query_value(query: Option<&str>, key: &str) -> String {
    query
        .map(|q| url::form_urlencoded::parse(q.as_bytes()).find(|(k, _)| k == key).map(|(_, v)| v.into_owned()))
        .unwrap_or_default()
        .unwrap_or_default()
}

async fn signin_page(State(state): State<WebState>, anon: Anonymous, RawQuery(q): RawQuery) -> Response {
    if state.setup.still_needed(&state.app.store).await {
        return Redirect::to("/").into_response();
    }
    let next = query_value(q.as_deref(), "next");
    if anon.api.send(Method::GET, "/auth/me", None).await.is_ok_and(|a| a.ok()) {
        return Redirect::to(safe_next(&next)).into_response();
    }
    let notice = (query_value(q.as_deref(), "reset") == "done")
        .then_some("Your password was changed. Sign in with the new one.");
    let signup = signup_open(&anon.api).await;
    password_form(&anon.csrf, safe_next(&next), "", Extras { error: None, notice, signup }).into_response()
}

/// Whether the hub takes accounts without an invite (`allow_self_registration`).
async fn signup_open(api: &Api) -> bool {
    api.send(Method::GET, "/auth/register/options", None)
        .await
        .is_ok_and(|a| a.ok() && a.body.get("selfRegistration").and_then(|v| v.as_bool()) == Some(true))
}

/// What the sign-in form shows besides its fields.
#[derive(Default)]
struct Extras<'a> {
    error: Option<&'a str>,
    /// A message that is good news (the password was changed).
    notice: Option<&'a str>,
    /// Offer "Create an account" (the hub allows self registration).
    signup: bool,
}

fn password_form(csrf: &str, next: &str, email: &str, extras: Extras<'_>) -> Markup {
    let Extras { error, notice, signup } = extras;
    layout::bare_with(
        "Sign in",
        csrf,
        &[],
        html! {
            main.narrow {
                section.card {
                    h1 { "Sign in" }
                    @if let Some(n) = notice { p.notice role="status" #signin-notice { (n) } }
                    @if let Some(e) = error { p.error role="alert" { (e) } }
                    form.stack method="post" action="/signin" {
                        input type="hidden" name="_csrf" value=(csrf);
                        input type="hidden" name="next" value=(next);
                        label { "Email" input type="email" name="email" value=(email) autocomplete="username" required autofocus; }
                        label { "Password" input type="password" name="password" autocomplete="current-password" required; }
                        button.primary type="submit" { "Sign in" }
                    }
                    p.muted { "Forgot your password? " a href="/forgot" { "Reset it" } }
                    @if signup { p.muted #signup-link { "New here? " a href="/register" { "Create an account" } } }
                }
            }
        },
    )
}

async fn signin(anon: Anonymous, form: Fields) -> Response {
    let next = safe_next(form.get("next")).to_owned();
    let body = json!({ "email": form.get("email"), "password": form.get("password") });
    let answer = match anon.api.send(Method::POST, "/auth/login", Some(&body)).await {
        Ok(a) => a,
        Err(e) => return e.respond(&Uri::from_static("/signin")),
    };
    if !answer.ok() {
        let message = match answer.status {
            StatusCode::UNAUTHORIZED => "That email and password do not match an account.".to_owned(),
            _ => answer.error().1,
        };
        let signup = signup_open(&anon.api).await;
        let page = password_form(
            &anon.csrf,
            &next,
            form.get("email"),
            Extras { error: Some(&message), signup, ..Extras::default() },
        );
        return (answer.status, page).into_response();
    }
    if answer.body.get("mfaRequired").and_then(|v| v.as_bool()) == Some(true) {
        let token = answer.body.get("mfaToken").and_then(|v| v.as_str()).unwrap_or_default();
        let passkeys = answer.body.get("hasPasskeys").and_then(|v| v.as_bool()).unwrap_or(false);
        return mfa_form(&anon.csrf, &next, token, passkeys, None).into_response();
    }
    redirect_with_cookies(&next, &answer)
}

fn mfa_form(csrf: &str, next: &str, token: &str, passkeys: bool, error: Option<&str>) -> Markup {
    layout::bare_with(
        "Second step",
        csrf,
        &["signin.js"],
        html! {
            main.narrow {
                section.card {
                    h1 { "Second step" }
                    p.muted { "Enter the 6-digit code from your authenticator app, or one of your backup codes." }
                    @if let Some(e) = error { p.error role="alert" { (e) } }
                    form.stack method="post" action="/signin/mfa" {
                        input type="hidden" name="_csrf" value=(csrf);
                        input type="hidden" name="next" value=(next);
                        input type="hidden" name="mfaToken" value=(token);
                        // The `-` is escaped: browsers read `pattern` with the `v` flag, where a bare
                        // `-` in a class is a syntax error and the whole check is dropped.
                        label { "Code" input type="text" name="code" inputmode="text" autocomplete="one-time-code"
                            pattern="[0-9A-Za-z \\-]{6,20}" title="6 digits, or a backup code like k7m2p-x9q4r"
                            required autofocus; }
                        label.check { input type="checkbox" name="remember"; "Remember this device for 30 days" }
                        button.primary type="submit" { "Verify" }
                    }
                    @if passkeys {
                        p { button.secondary type="button" #passkey-signin data-mfa-token=(token) data-next=(next) { "Use a passkey" } }
                        p.error #passkey-error hidden role="alert" {}
                    }
                }
            }
        },
    )
}

async fn signin_mfa(anon: Anonymous, form: Fields) -> Response {
    let next = safe_next(form.get("next")).to_owned();
    let token = form.get("mfaToken");
    let code: String = form.get("code").chars().filter(|c| !c.is_whitespace()).collect();
    // Six digits is an authenticator code; anything else is tried as a backup code.
    let backup = !(code.len() == 6 && code.chars().all(|c| c.is_ascii_digit()));
    let route = if backup { "/auth/login/mfa/backup" } else { "/auth/login/mfa/totp" };
    let body = json!({ "mfaToken": token, "code": code, "rememberDevice": form.checked("remember") });
    let answer = match anon.api.send(Method::POST, route, Some(&body)).await {
        Ok(a) => a,
        Err(e) => return e.respond(&Uri::from_static("/signin")),
    };
    if answer.ok() {
        return redirect_with_cookies(&next, &answer);
    }
    let (code, message) = answer.error();
    if code == "invalid_mfa_token" || answer.status == StatusCode::GONE {
        let error = Some("That sign-in took too long. Start again.");
        let page = password_form(&anon.csrf, &next, "", Extras { error, ..Extras::default() });
        return (StatusCode::UNAUTHORIZED, page).into_response();
    }
    (answer.status, mfa_form(&anon.csrf, &next, token, false, Some(&sign_in_code_error(&code, backup, message))))
        .into_response()
}

/// What a refused second step says at sign-in, where backup codes exist (during set-up they do
/// not yet: `assets/account.js` words that case).
fn sign_in_code_error(code: &str, backup: bool, message: String) -> String {
    let words = match code {
        "backup_code_used" => {
            "That backup code was already used: each works once. Use another, or your authenticator app."
        }
        "mfa_code_reused" => "That code was already used. Wait for the next one.",
        "invalid_mfa_code" if backup => "That backup code is not right. Check it, or use your authenticator app.",
        "invalid_mfa_code" => "That code is not right. Try the newest one, or one of your backup codes.",
        _ => return capitalised(&message),
    };
    words.to_owned()
}

/// An API message as a sentence on a page: capital first letter.
fn capitalised(message: &str) -> String {
    let mut chars = message.chars();
    chars.next().map(|c| c.to_uppercase().chain(chars).collect()).unwrap_or_default()
}

async fn signout(anon: Anonymous, _form: Fields) -> Response {
    match anon.api.send(Method::POST, "/auth/logout", None).await {
        Ok(answer) => {
            let mut resp = redirect_with_cookies("/signin", &answer);
            if !answer.ok() {
                // Already signed out: still leave the cookie empty.
                resp = Redirect::to("/signin").into_response();
            }
            resp
        }
        Err(e) => e.respond(&Uri::from_static("/signout")),
    }
}

async fn switch_team(form: Fields) -> Response {
    let team: String = form.get("team").chars().filter(|c| c.is_ascii_hexdigit() || *c == '-').take(36).collect();
    let mut resp = Redirect::to(safe_next(form.get("next"))).into_response();
    let cookie = format!("{}={team}; Path=/; SameSite=Lax; Max-Age=31536000", ctx::TEAM_COOKIE);
    if let Ok(v) = cookie.parse() {
        resp.headers_mut().append(header::SET_COOKIE, v);
    }
    resp
}

/// The first-run page, shown at `/` while the hub has no account.
pub fn setup_page(csrf: &str, fields: (&str, &str), error: Option<&str>) -> Markup {
    setup_form(csrf, "", fields, false, error)
}

/// The first-run form with the setup `code` typed so far (kept after an error, as the name and email are).
fn setup_form(csrf: &str, code: &str, fields: (&str, &str), allow_teams: bool, error: Option<&str>) -> Markup {
    layout::bare_with(
        "Create the first account",
        csrf,
        &[],
        html! {
            main.narrow {
                section.card {
                    h1 { "Welcome to birdhub" }
                    p { "Create the first account. It can manage this hub and invite everyone else." }
                    p.muted {
                        "The setup code is in the hub's log: run "
                        code { "journalctl -u birdhub | grep setup" }
                        " on the hub, or read the file " code { "setup-code" } " in its data folder."
                    }
                    @if let Some(e) = error { p.error role="alert" { (e) } }
                    form.stack method="post" action="/setup" {
                        input type="hidden" name="_csrf" value=(csrf);
                        label { "Setup code" input type="text" name="code" value=(code) autocomplete="off" required autofocus placeholder="XXXXX-XXXXX"; }
                        label { "Your name" input type="text" name="name" value=(fields.0) autocomplete="name" required; }
                        label { "Email" input type="email" name="email" value=(fields.1) autocomplete="username" required; }
                        label { "Password (at least 10 characters)" input type="password" name="password" minlength="10" autocomplete="new-password" required; }
                        div {
                            label.check {
                                input #allow-teams type="checkbox" name="allow_tenant_creation" value="on" checked[allow_teams];
                                "Let the people I invite make teams of their own"
                            }
                            p.muted {
                                "Leave this off for a household hub: you invite people into your team. "
                                "Whoever makes a team is its admin and can upload imports, add channels and invite others. "
                                "You can change it later on the Platform admin page."
                            }
                        }
                        button.primary type="submit" { "Create the account" }
                    }
                }
            }
        },
    )
}

async fn setup(State(state): State<WebState>, anon: Anonymous, form: Fields) -> Response {
    let back = (form.get("name"), form.get("email"));
    let allow_teams = form.get("allow_tenant_creation") == "on";
    if !state.setup.pending() {
        return Redirect::to("/signin").into_response();
    }
    if !state.setup.matches(form.get("code")) {
        let page = setup_form(
            &anon.csrf,
            form.get("code"),
            back,
            allow_teams,
            Some("That setup code is not right. Copy it from the hub's log."),
        );
        return (StatusCode::FORBIDDEN, page).into_response();
    }
    let new = FirstAccount {
        email: form.get("email").to_owned(),
        name: form.get("name").to_owned(),
        password: form.get("password").to_owned(),
        allow_tenant_creation: allow_teams,
    };
    match first_run::create_first_account(&state.app.store, &state.app.passwords, new).await {
        Ok(created) => {
            state.setup.spend();
            tracing::info!(email = %created.email, "the first account was created from the dashboard");
            let body = json!({ "email": created.email, "password": form.get("password") });
            match anon.api.send(Method::POST, "/auth/login", Some(&body)).await {
                Ok(answer) if answer.ok() => redirect_with_cookies("/satellites", &answer),
                _ => Redirect::to("/signin").into_response(),
            }
        }
        Err(FirstRunError::AlreadySetUp) => {
            state.setup.spend();
            Redirect::to("/signin").into_response()
        }
        Err(FirstRunError::Invalid(m)) => {
            (StatusCode::UNPROCESSABLE_ENTITY, setup_form(&anon.csrf, form.get("code"), back, allow_teams, Some(&m)))
                .into_response()
        }
        Err(e) => PageError::Internal(e.into()).respond(&Uri::from_static("/setup")),
    }
}
