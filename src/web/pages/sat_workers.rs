//! The Satellites page's "Remote workers" card, for a platform admin: the machines that lend
//! their cores to this hub (`birdhub worker`), whether each is connected, what it runs and how
//! much it does; adding one (its key, shown once, and the command to run) and revoking one.

use maud::{Markup, html};
use serde_json::{Value, json};

use super::widgets;
use crate::web::{ctx::Ctx, error::PageError, words};

/// The card, or nothing for anyone but a platform admin.
pub async fn card(ctx: &Ctx) -> Result<Markup, PageError> {
    if !ctx.user.is_platform_admin {
        return Ok(html! {});
    }
    let keys: Value = ctx.api.get("/workers/keys").await?;
    let rows: Vec<Value> = keys["keys"].as_array().cloned().unwrap_or_default().iter().map(row).collect();
    let live: Vec<&Value> = rows.iter().filter(|r| r["revoked"] != true).collect();
    let connected = live.iter().filter(|r| r["state"] == "connected").count();
    Ok(html! {
        section.card #remote-workers {
            div.card-head {
                h2 { "Remote workers" }
                span.muted { (connected) " of " (live.len()) " connected" }
            }
            p.muted.small {
                "Other computers can classify for this hub: a desktop, a second Pi. Each runs "
                code { "birdhub worker" } " with a key of its own and hears every team's audio. "
                "When one is worth adding: " code { "docs/scaling.md" } "."
            }
            div #worker-list {
                @if rows.is_empty() {
                    p.muted { "No remote workers yet: this hub classifies on its own cores." }
                } @else {
                    (widgets::table(&rows, &[("Name", "name"), ("State", "state"), ("Machine", "machine"), ("Runs", "runs"), ("Chunks per minute", "perMinute"), ("Last seen", "lastSeenAt")], |r| html! {
                        @if r["revoked"] != true {
                            button.danger type="button" data-api=(format!("DELETE /workers/keys/{}", r["id"].as_str().unwrap_or_default()))
                                data-confirm="Revoke this worker's key? It is disconnected at once and cannot come back."
                                data-done="Revoked" { "Revoke" }
                        }
                    }))
                }
            }
            h3 { "Add a worker machine" }
            form.stack data-api="POST /workers/keys" data-result="#new-worker" data-done="Worker key made" data-refresh="#worker-list" {
                label { "Name" input type="text" name="name" required maxlength="100" placeholder="e.g. study desktop"; }
                p.error.form-error hidden role="alert" {}
                div.row { button.primary type="submit" { "Make a worker key" } }
            }
            div.notice #new-worker hidden {
                p.notice.once { strong { "Shown once." } " Copy it now: the hub keeps only its hash and cannot show it again." }
                input #new-worker-key type="text" readonly data-field="key" aria-label="The new worker key";
                button type="button" data-copy="#new-worker-key" { "Copy" }
                p.small { "On the worker machine, with birdhub and the same model installed, save the key to a file and run:" }
                pre.small { "birdhub worker --hub " (broker(ctx)) " --key-file worker.key" }
            }
        }
    })
}

/// The broker as satellites reach it, `host:port` (for the command to copy).
fn broker(ctx: &Ctx) -> String {
    let url = &ctx.app.links().broker_url;
    url.split("://").nth(1).unwrap_or(url).trim_end_matches('/').to_owned()
}

/// One key as the table shows it.
fn row(k: &Value) -> Value {
    let w = &k["worker"];
    let revoked = k["revokedAt"].is_string();
    let state = match (revoked, k["connected"].as_bool().unwrap_or(false)) {
        (true, _) => "revoked",
        (false, true) => "connected",
        (false, false) if k["lastSeenAt"].is_string() => "offline",
        (false, false) => "never joined",
    };
    let runs = if w.is_object() {
        let threads = w["threads"].as_u64().unwrap_or(0);
        Value::String(format!(
            "{} {}, {}, batch {}",
            w["model"].as_str().unwrap_or(""),
            w["precision"].as_str().unwrap_or(""),
            words::count(threads, "thread", "threads"),
            w["batch"].as_u64().unwrap_or(0)
        ))
    } else {
        Value::Null
    };
    json!({
        "id": k["id"], "name": k["name"], "state": state, "revoked": revoked,
        "machine": k["machine"], "runs": runs,
        "perMinute": if w.is_object() { w["jobsPerMinute"].clone() } else { Value::Null },
        "lastSeenAt": if w.is_object() { w["lastSeenAt"].clone() } else { k["lastSeenAt"].clone() },
    })
}
