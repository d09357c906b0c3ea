//! Team settings (Admin+): members and their roles, invites, API keys (shown once), and the
//! team's settings (device policy, languages, thresholds ...), all through `/api`.

use axum::{
    Router,
    http::{HeaderMap, header},
    response::{IntoResponse, Response},
    routing::get,
};
use maud::{Markup, html};
use serde_json::Value;

use super::{detection_settings, team_settings, widgets};
use crate::web::{WebState, ctx::Ctx, error::PageError, layout};

pub fn routes() -> Router<WebState> {
    Router::new().route("/team", get(page))
}

async fn page(ctx: Ctx, headers: HeaderMap) -> Response {
    let here = crate::links::page_base(headers.get(header::HOST).and_then(|h| h.to_str().ok()));
    match render(&ctx, here).await {
        Ok(m) => m.into_response(),
        Err(e) => e.respond(&ctx.uri),
    }
}

const ROLES: [&str; 3] = ["viewer", "member", "admin"];

fn role_select(name: &str, current: &str) -> Markup {
    html! { select name=(name) { @for r in ROLES { option value=(r) selected[r == current] { (r) } } } }
}

/// Links start with a name the hub could not look up: say so, and offer the address this page
/// was opened with (`here`) when it differs.
struct LinkProblem {
    /// The links' base, `http://garden.local:8080`.
    base: String,
    /// Its host name, `garden.local`.
    host: String,
    /// The address this page was opened with, when it is another one.
    here: Option<String>,
}

impl LinkProblem {
    /// `link` (made with the hub's base) at this page's address.
    fn here(&self, link: &str) -> Option<String> {
        Some(format!("{}{}", self.here.as_deref()?, link.strip_prefix(&self.base)?))
    }
}

async fn link_problem(ctx: &Ctx, here: Option<String>) -> Option<LinkProblem> {
    let state = ctx.api_state();
    let host = state.links.unresolved_host(&state.settings).await?;
    let base = state.links().http_base.trim_end_matches('/').to_owned();
    let here = here.filter(|h| *h != base);
    Some(LinkProblem { base, host, here })
}

/// The notice at the top of the page: which links may not open, and what works instead.
fn link_notice(p: &LinkProblem, platform_admin: bool) -> Markup {
    html! {
        div.notice.warn #link-problem role="note" {
            p {
                strong { "Links may not open on other devices." }
                " Invite, share and public-page links start with " code { (p.base) } ", and this hub could not look up "
                code { (p.host) } " on the network, so phones and computers may not find it either."
            }
            @if let Some(here) = &p.here {
                p { "You opened this page at " code { (here) } ". Links at that address open wherever this page does: use it in place of the start of a link." }
            }
            p.muted.small {
                @if platform_admin {
                    "To fix it for every link, give the hub its address: set " code { "http.public_url" } " in "
                    code { "/etc/birdhub/birdhub.toml" } " (or " code { "BIRDHUB_HTTP__PUBLIC_URL" } ") and restart the hub."
                } @else {
                    "The hub's owner can fix it for every link by giving the hub its address."
                }
            }
        }
    }
}

/// The public page: off by default; once on, its link to share.
fn public_card(ctx: &Ctx, team: &str, s: &Value, problem: Option<&LinkProblem>) -> Markup {
    let on = |k: &str| s[k].as_bool().unwrap_or(false);
    let url = format!("{}/public/{team}", ctx.api_state().links().http_base.trim_end_matches('/'));
    let here = problem.and_then(|p| p.here(&url));
    html! {
        section.card #public-page {
            h2 { "Public page" }
            p.muted.small {
                "A read-only page for anyone with its link, without an account: today's species hour by hour, "
                "the newest detections, a page per species and the station map. It never shows members, "
                "satellites' settings or credentials, or detections voted down."
            }
            form.stack data-api="PUT /settings/tenant" data-then="reload" data-done="Saved" {
                label for="pp-title" {
                    "Title on the page (\"Birds heard at ...\")"
                    span.hint.muted.small { "Left empty, the page uses the team's name, or \"our station\" while that is still named after its owner." }
                    input #pp-title type="text" name="public_page_title" maxlength="100"
                        value=(s["public_page_title"].as_str().unwrap_or_default()) placeholder="e.g. Oak Lane garden";
                }
                label.check { input #pp-on type="checkbox" name="public_page_enabled" checked[on("public_page_enabled")]; "Turn on the public page" }
                label.check {
                    input #pp-audio type="checkbox" name="public_page_audio" checked[on("public_page_audio")];
                    "Let visitors play the recordings (anyone with the link can then download them)"
                }
                label.check {
                    input #pp-exact type="checkbox" name="public_page_exact_locations" checked[on("public_page_exact_locations")];
                    "Show the stations' exact positions (otherwise rounded to about 1 km)"
                }
                p.error.form-error hidden role="alert" {}
                div.row { button.primary type="submit" { "Save" } }
            }
            @if on("public_page_enabled") {
                div.notice {
                    p { "The public page is on. Share this link:" }
                    input #public-url type="text" readonly value=(url) aria-label="Public page link";
                    div.row {
                        button type="button" data-copy="#public-url" { "Copy" }
                        a.button href=(format!("/public/{team}")) target="_blank" rel="noopener" { "Open it" }
                    }
                    @if let Some(here) = &here {
                        p.small { "The same link at the address you opened this page with:" }
                        input #public-url-here type="text" readonly value=(here) aria-label="Public page link at this page's address";
                        div.row { button type="button" data-copy="#public-url-here" { "Copy" } }
                    }
                }
            } @else {
                p.muted.small { "The page is off: its link answers \"No public page here\"." }
            }
        }
    }
}

async fn render(ctx: &Ctx, here: Option<String>) -> Result<Markup, PageError> {
    let team = ctx.team_id()?.to_owned();
    if !ctx.is_admin() {
        return Err(PageError::Forbidden("Team settings are for the team's admins.".into()));
    }
    let (problem, answers) = tokio::join!(link_problem(ctx, here), async {
        tokio::try_join!(
            ctx.api.get::<Value>("/auth/members"),
            ctx.api.get::<Value>("/auth/invites"),
            ctx.api.get::<Value>("/api-keys"),
            ctx.api.get::<Value>("/settings/tenant"),
            ctx.api.get::<Value>("/species/languages"),
            super::zones::moves(&ctx.api),
        )
    });
    let (members, invites, keys, settings, langs, moves) = answers?;
    let languages = langs["languages"].as_array().cloned().unwrap_or_default();
    let members = members["members"].as_array().cloned().unwrap_or_default();
    let invites = invites["invites"].as_array().cloned().unwrap_or_default();
    let keys: Vec<Value> = keys["apiKeys"]
        .as_array()
        .map(|k| k.iter().filter(|k| k["revokedAt"].is_null() && k["satelliteId"].is_null()).cloned().collect())
        .unwrap_or_default();
    // The public page's switches and the detection settings have their own cards.
    let mut general = settings["settings"].clone();
    if let Some(map) = general.as_object_mut() {
        map.retain(|k, _| !k.starts_with("public_page_") && !crate::domain::detection_settings::is_detection_key(k));
    }
    let platform = ctx.user.is_platform_admin;
    let name = ctx.team.as_ref().map(|t| t.name.clone()).unwrap_or_default();
    let body = html! {
        h1 { "Team settings: " (name) }
        (super::zones::moves_line(&moves))
        @if let Some(p) = &problem { (link_notice(p, platform)) }
        section.card #team-name {
            h2 { "Team name" }
            form.row data-api=(format!("PUT /tenants/{team}/name")) data-then="reload" {
                label.sr for="team-name-input" { "Team name" }
                input #team-name-input type="text" name="name" value=(name) required maxlength="100";
                button.primary type="submit" { "Rename" }
                p.error.form-error hidden role="alert" {}
            }
            p.muted.small { "Members see this name. The public page has its own title (below)." }
        }
        section.card #members {
            h2 { "Members" }
            @if members.is_empty() { p.muted { "No members yet besides the hub's platform admins. Invite someone below." } }
            (widgets::table(&members, &[("Name", "name"), ("Email", "email"), ("Role", "role"), ("Owner", "isOwner"), ("Joined", "joinedAt")], |m| html! {
                @let id = m["id"].as_str().unwrap_or_default();
                @let who = m["name"].as_str().unwrap_or_default();
                @if platform && !m["isOwner"].as_bool().unwrap_or(false) {
                    form.row data-api=(format!("PUT /admin/members/{id}/role")) data-then="reload" {
                        label.sr for=(format!("role-{id}")) { "Role" }
                        (role_select("role", m["role"].as_str().unwrap_or("viewer")))
                        button type="submit" { "Change" }
                    }
                }
                @if !m["isOwner"].as_bool().unwrap_or(false) && m["userId"].as_str() != Some(ctx.user.id.as_str()) {
                    button.danger type="button" data-api=(format!("DELETE /auth/members/{id}"))
                        data-confirm=(format!("Remove {who} from the team? Their satellites here stop until an admin takes them over; their keys and invites here are revoked."))
                        data-done="Removed" { "Remove" }
                }
            }))
            @if !platform { p.muted.small { "A platform admin changes roles. The owner cannot be removed; a platform admin can hand the team to someone else first." } }
        }
        section.card {
            h2 { "Invite someone" }
            form.stack data-api="POST /auth/invites" data-result="#invite-link" data-done="Invite made" data-refresh="#pending-invites" {
                input type="hidden" name="tenantId" value=(team);
                label { "Role" (role_select("role", "member")) }
                label { "Their email (optional: only they can use the link)" input type="email" name="email"; }
                p.error.form-error hidden role="alert" {}
                div.row { button.primary type="submit" { "Make an invite link" } }
            }
            div.notice #invite-link hidden {
                p { "Send this link. It works once, for 7 days." }
                input #invite-url type="text" readonly data-field="url" aria-label="Invite link";
                button type="button" data-copy="#invite-url" { "Copy" }
                @if let Some(p) = &problem {
                    p.muted.small {
                        "If it does not open on their device, replace " code { (p.base) }
                        @if let Some(here) = &p.here { " with " code { (here) } } @else { " with this hub's address on your network" }
                        "."
                    }
                }
            }
            div #pending-invites {
                @if !invites.is_empty() {
                    h3 { "Pending invites" }
                    (widgets::table(&invites, &[("Role", "role"), ("Email", "email"), ("Expires", "expiresAt")], |i| html! {
                        button.danger type="button" data-api=(format!("DELETE /auth/invites/{}", i["id"].as_str().unwrap_or_default())) { "Revoke" }
                    }))
                }
            }
        }
        section.card {
            h2 { "API keys" }
            p.muted.small { "For scripts and other programs. A key acts in this team with its role." }
            form.stack data-api="POST /api-keys" data-result="#new-key" data-done="Key made" data-refresh="#api-keys-list" {
                input type="hidden" name="tenantId" value=(team);
                label { "Name" input type="text" name="name" required placeholder="e.g. my export script"; }
                label { "Role" (role_select("role", "viewer")) }
                p.error.form-error hidden role="alert" {}
                div.row { button.primary type="submit" { "Make a key" } }
            }
            div.notice #new-key hidden {
                p.notice.once { strong { "Shown once." } " Copy it now: the hub keeps only its hash and cannot show it again." }
                input #new-key-value type="text" readonly data-field="key" aria-label="The new API key";
                button type="button" data-copy="#new-key-value" { "Copy" }
            }
            div #api-keys-list {
                @if keys.is_empty() { p.muted { "No keys yet." } }
                @else {
                    (widgets::table(&keys, &[("Name", "name"), ("Starts with", "keyPrefix"), ("Role", "role"), ("Last used", "lastUsedAt")], |k| html! {
                        button.danger type="button" data-api=(format!("DELETE /api-keys/{}", k["id"].as_str().unwrap_or_default()))
                            data-confirm="Revoke this key? Programs using it stop working." { "Revoke" }
                    }))
                }
            }
        }
        section.card {
            h2 { "Settings" }
            p.muted.small { "Defaults for every satellite of the team (a satellite's own overrides are on its page), the device policy and the team's languages." }
            (team_settings::form(&general, &languages))
        }
        (detection_settings::section(ctx, &settings["settings"], true))
        (public_card(ctx, &team, &settings["settings"], problem.as_ref()))
    };
    Ok(layout::page(ctx, "Team settings", "", &detection_settings::ASSETS, body))
}
