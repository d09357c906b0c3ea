//! Platform admin: users (block, reset link), the audit log, platform settings, mobile app
//! releases and the system status. The API allows these to platform admins only; everyone else
//! gets the "not allowed" page.

use axum::{
    Router,
    extract::RawQuery,
    response::{IntoResponse, Response},
    routing::get,
};
use maud::{Markup, html};
use serde_json::Value;

use super::{admin_audit, auth::query_value, platform_settings, widgets};
use crate::web::{WebState, ctx::Ctx, error::PageError, layout};

pub fn routes() -> Router<WebState> {
    Router::new().route("/admin", get(page))
}

async fn page(ctx: Ctx, RawQuery(q): RawQuery) -> Response {
    let audit = admin_audit::Filter::from_query(q.as_deref());
    match render(&ctx, &query_value(q.as_deref(), "search"), &audit).await {
        Ok(m) => m.into_response(),
        Err(e) => e.respond(&ctx.uri),
    }
}

fn enc(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

async fn render(ctx: &Ctx, search: &str, audit_filter: &admin_audit::Filter) -> Result<Markup, PageError> {
    if !ctx.user.is_platform_admin {
        return Err(PageError::Forbidden("Platform admin is for the hub's administrators.".into()));
    }
    let users_path = format!("/admin/users?limit=50&search={}", enc(search));
    let (users, audit, platform, releases, status) = tokio::try_join!(
        ctx.api.get::<Value>(&users_path),
        admin_audit::card(ctx, audit_filter),
        ctx.api.get::<Value>("/settings/platform"),
        ctx.api.get::<Value>("/mobile/releases"),
        ctx.api.send(axum::http::Method::GET, "/system/status", None),
    )?;
    let list = users["users"].as_array().cloned().unwrap_or_default();
    let releases = releases["releases"].as_array().cloned().unwrap_or_default();
    let body = html! {
        h1 { "Platform admin" }
        section.card {
            div.card-head { h2 { "System status" } }
            @if status.ok() {
                @let infra = status.body["infrastructure"].as_object().cloned().unwrap_or_default();
                @let services = status.body["services"].as_array().cloned().unwrap_or_default();
                ul.sat-list {
                    @for (name, v) in &infra {
                        @let ok = v["status"].as_str().is_some_and(|s| s == "ok" || s == "healthy" || s == "up");
                        li { span.dot.(if ok { "on" } else { "off" }) {} strong { (part_name(name)) } span.muted.small { (v["status"].as_str().unwrap_or("")) } }
                    }
                }
                @if !services.is_empty() {
                    (widgets::table(&services, &[("Service", "name"), ("Status", "status"), ("Version", "version"), ("Last seen", "lastSeenAt")], |_| html! {}))
                }
            } @else {
                p.error { "The status is not available: " (status.error().1) }
            }
        }
        section.card {
            div.card-head {
                h2 { "Users" }
                form.row method="get" action="/admin" {
                    label.sr for="user-search" { "Search users" }
                    input #user-search type="search" name="search" value=(search) placeholder="name or email";
                    button type="submit" { "Search" }
                }
            }
            (widgets::table(&list, &[("Name", "name"), ("Email", "email"), ("Admin", "isPlatformAdmin"), ("Blocked", "isBlocked"), ("Last sign-in", "lastLoginAt")], |u| {
                let id = u["id"].as_str().unwrap_or_default();
                let blocked = u["isBlocked"].as_bool().unwrap_or(false);
                html! {
                    @if id != ctx.user.id {
                        button type="button" data-api=(format!("POST /admin/users/{id}/block"))
                            data-confirm=(if blocked { "Unblock this user?" } else { "Block this user? Their sessions end at once." }) {
                            (if blocked { "Unblock" } else { "Block" })
                        }
                        button type="button" data-api=(format!("POST /admin/users/{id}/reset-password")) data-then="toast"
                            data-result="#reset-link" data-done="Reset link made" { "Reset link" }
                    }
                }
            }))
            div.notice #reset-link hidden {
                p { "Give this link to the person (also mailed when mail is set up). It works once, for 60 minutes." }
                input #reset-url type="text" readonly data-field="resetUrl" aria-label="Reset link";
                button type="button" data-copy="#reset-url" { "Copy" }
            }
        }
        (audit)
        section.card {
            h2 { "Mobile app releases" }
            @if releases.is_empty() { p.muted { "No releases uploaded. Upload APKs with " code { "POST /api/mobile/upload" } "." } }
            @else { (widgets::table(&releases, &[("Version", "version"), ("Channel", "channel"), ("Size", "sizeBytes"), ("Uploaded", "createdAt")], |_| html! {})) }
        }
        section.card {
            h2 { "Platform settings" }
            (platform_settings::form(&platform))
        }
    };
    Ok(layout::page(ctx, "Platform admin", "", &["settings.css"], body))
}

/// A part of the hub as its system status names it, in words ("MQTT broker", not "Mqtt").
fn part_name(key: &str) -> String {
    match key {
        "mqtt" => "MQTT broker".into(),
        "database" => "Database (SQLite)".into(),
        "cache" => "Cache".into(),
        "objectStorage" => "Audio and file storage".into(),
        other => widgets::label(other),
    }
}
