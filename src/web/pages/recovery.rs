//! Pages reached from links outside the dashboard, with no session: accepting an invite
//! (`/register?invite=...`, the link `POST /api/auth/invites` hands out: it names the team and
//! fills in the invite's email), signing up when the hub allows self registration (`/register`),
//! and forgotten passwords (`/forgot`, then `/reset-password?token=...` from the mail; sign-in then
//! says the password was changed).

use axum::{
    Router,
    extract::RawQuery,
    http::Method,
    response::{IntoResponse, Response},
    routing::get,
};
use maud::html;

use super::auth::{Anonymous, query_value};
use crate::web::layout;

pub fn routes() -> Router<WebState> {
    Router::new().route("/register", get(register)).route("/forgot", get(forgot)).route("/reset-password", get(reset))
}

use crate::web::WebState;

async fn register(anon: Anonymous, RawQuery(q): RawQuery) -> Response {
    let invite = query_value(q.as_deref(), "invite");
    let path = format!(
        "/auth/register/options?invite={}",
        url::form_urlencoded::byte_serialize(invite.as_bytes()).collect::<String>()
    );
    let options = anon.api.send(Method::GET, &path, None).await.ok();
    let open = options.as_ref().is_some_and(|a| a.ok() && a.body["selfRegistration"].as_bool() == Some(true));
    let offer = options.as_ref().filter(|a| a.ok()).map(|a| a.body["invite"].clone()).filter(|i| i.is_object());
    let refused = options.as_ref().filter(|a| !a.ok()).map(|a| a.error().1);
    let title = if offer.is_some() || !invite.is_empty() { "Join a team" } else { "Create an account" };
    layout::bare_with(
        title,
        &anon.csrf,
        &[],
        html! {
            main.narrow {
                section.card {
                    @if let Some(i) = &offer {
                        @let team = i["teamName"].as_str().unwrap_or_default();
                        @let email = i["email"].as_str();
                        h1 { "Join " (team) }
                        p #invite-team { "You are invited to join the team " strong { (team) } " as a " (i["role"].as_str().unwrap_or("member")) ". "
                            "Create your account to accept. Already have one? "
                            a href=(format!("/signin?next=%2Fregister%3Finvite%3D{invite}")) { "Sign in" } " first." }
                        form.stack data-api="POST /auth/register" data-then="/" {
                            input type="hidden" name="inviteToken" value=(invite);
                            label { "Your name" input type="text" name="name" autocomplete="name" required autofocus; }
                            @if let Some(e) = email {
                                label { "Email (the invite is for this address)" input type="email" name="email" value=(e) autocomplete="username" readonly required; }
                            } @else {
                                label { "Email" input type="email" name="email" autocomplete="username" required; }
                            }
                            (password_field())
                            p.error.form-error hidden role="alert" {}
                            button.primary type="submit" { "Create my account" }
                        }
                    } @else if !invite.is_empty() {
                        h1 { "Join a team" }
                        p.error role="alert" { "This invite link does not work: " (refused.unwrap_or_else(|| "it is not valid".into())) ". Ask the team's admin for a new one." }
                        p { a href="/signin" { "Sign in" } }
                    } @else if open {
                        h1 { "Create an account" }
                        p { "Your account comes with a team of your own; invite others to it later. Joining someone's team? Use the invite link they sent." }
                        form.stack data-api="POST /auth/register" data-then="/" {
                            label { "Your name" input type="text" name="name" autocomplete="name" required autofocus; }
                            label { "Email" input type="email" name="email" autocomplete="username" required; }
                            (password_field())
                            p.error.form-error hidden role="alert" {}
                            button.primary type="submit" { "Create my account" }
                        }
                        p.muted { "Have an account? " a href="/signin" { "Sign in" } }
                    } @else {
                        h1 { "Join the team" }
                        p { "Accounts on this hub are made by invitation. Ask a team admin for an invite link." }
                        p { a href="/signin" { "Sign in" } }
                    }
                }
            }
        },
    )
    .into_response()
}

/// A new password, with the server's own rule ([`crate::auth::password::MIN_LEN`]).
fn password_field() -> maud::Markup {
    let min = crate::auth::password::MIN_LEN;
    html! {
        label { "Password (at least " (min) " characters)"
            input type="password" name="password" minlength=(min) autocomplete="new-password" required; }
    }
}

async fn forgot(anon: Anonymous) -> Response {
    layout::bare_with(
        "Forgot password",
        &anon.csrf,
        &[],
        html! {
            main.narrow {
                section.card {
                    h1 { "Forgot your password?" }
                    p { "Enter your email. If it has an account, a reset link is mailed to it (the hub needs mail set up; otherwise ask the hub's admin for a link)." }
                    form.stack data-api="POST /auth/forgot-password" data-result="#sent" data-done="Sent" {
                        label { "Email" input type="email" name="email" autocomplete="username" required autofocus; }
                        p.error.form-error hidden role="alert" {}
                        button.primary type="submit" { "Send the link" }
                    }
                    p.notice #sent hidden { "If that email has an account, the link is on its way. It works for 60 minutes." }
                    p { a href="/signin" { "Back to sign-in" } }
                }
            }
        },
    )
    .into_response()
}

async fn reset(anon: Anonymous, RawQuery(q): RawQuery) -> Response {
    let token = query_value(q.as_deref(), "token");
    layout::bare_with(
        "Choose a new password",
        &anon.csrf,
        &[],
        html! {
            main.narrow {
                section.card {
                    h1 { "Choose a new password" }
                    @if token.is_empty() {
                        p { "This link has no token. Ask for a new one on " a href="/forgot" { "the forgot-password page" } "." }
                    } @else {
                        form.stack data-api="POST /auth/reset-password" data-then="/signin?reset=done" {
                            input type="hidden" name="token" value=(token);
                            (password_field())
                            p.error.form-error hidden role="alert" {}
                            button.primary type="submit" { "Save and sign in" }
                        }
                    }
                }
            }
        },
    )
    .into_response()
}
