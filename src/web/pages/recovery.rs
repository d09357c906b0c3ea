//! Pages reached from links outside the dashboard, with no session: accepting an invite
//! (`/register?invite=...`, the link `POST /api/auth/invites` hands out), and forgotten
//! passwords (`/forgot`, then `/reset-password?token=...` from the mail).

use axum::{
    Router,
    extract::RawQuery,
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
    layout::bare_with(
        "Join a team",
        &anon.csrf,
        &[],
        html! {
            main.narrow {
                section.card {
                    h1 { "Join the team" }
                    @if invite.is_empty() {
                        p { "Accounts on this hub are made by invitation. Ask a team admin for an invite link." }
                        p { a href="/signin" { "Sign in" } }
                    } @else {
                        p { "Create your account to accept the invitation. Already have one? "
                            a href=(format!("/signin?next=%2Fregister%3Finvite%3D{invite}")) { "Sign in" } " first." }
                        form.stack data-api="POST /auth/register" data-then="/" {
                            input type="hidden" name="inviteToken" value=(invite);
                            label { "Your name" input type="text" name="name" autocomplete="name" required autofocus; }
                            label { "Email" input type="email" name="email" autocomplete="username" required; }
                            label { "Password (at least 12 characters)" input type="password" name="password" minlength="12" autocomplete="new-password" required; }
                            p.error.form-error hidden role="alert" {}
                            button.primary type="submit" { "Create my account" }
                        }
                    }
                }
            }
        },
    )
    .into_response()
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
                        form.stack data-api="POST /auth/reset-password" data-then="/signin" {
                            input type="hidden" name="token" value=(token);
                            label { "New password (at least 12 characters)" input type="password" name="password" minlength="12" autocomplete="new-password" required autofocus; }
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
