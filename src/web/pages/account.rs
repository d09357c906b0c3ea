//! My account: profile, password, preferences (language first), two-factor sign-in (TOTP with
//! its QR code, backup codes, passkeys, remembered devices). Everything is saved through the
//! `/api/auth/...` routes by `app.js`'s API forms (turning two-factor on by `account.js`); secrets
//! are shown once.

use axum::{
    Router,
    response::{IntoResponse, Response},
    routing::get,
};
use maud::{Markup, html};
use serde_json::Value;

use super::{team_settings, widgets};
use crate::web::{WebState, ctx::Ctx, error::PageError, layout};

pub fn routes() -> Router<WebState> {
    Router::new().route("/account", get(page))
}

async fn page(ctx: Ctx) -> Response {
    match render(&ctx).await {
        Ok(m) => m.into_response(),
        Err(e) => e.respond(&ctx.uri),
    }
}

async fn render(ctx: &Ctx) -> Result<Markup, PageError> {
    let (me, langs, devices) = tokio::try_join!(
        ctx.api.get::<Value>("/auth/me"),
        ctx.api.get::<Value>("/species/languages"),
        ctx.api.get::<Value>("/auth/mfa/remembered-devices"),
    )?;
    let user = &me["user"];
    let prefs = &me["preferences"];
    let mfa = &me["mfa"];
    let enabled = mfa["enabled"].as_bool().unwrap_or(false);
    let languages = langs["languages"].as_array().cloned().unwrap_or_default();
    let passkeys = mfa["passkeys"].as_array().cloned().unwrap_or_default();
    let devices = devices["devices"].as_array().cloned().unwrap_or_default();
    let min_len = crate::auth::password::MIN_LEN;
    let methods: Vec<&str> = mfa["methods"]
        .as_array()
        .map(|m| m.iter().filter_map(Value::as_str).map(method_words).collect())
        .unwrap_or_default();
    let body = html! {
        h1 { "My account" }
        @if mfa["enrollmentRequired"].as_bool() == Some(true) {
            p.error role="alert" { "One of your teams requires two-factor sign-in. Set it up below to use the hub." }
        }
        section.card {
            h2 { "Profile" }
            form.stack data-api="PUT /auth/me/profile" data-then="reload" {
                label { "Name" input type="text" name="name" value=(user["name"].as_str().unwrap_or_default()) required; }
                label { "Email" input type="email" name="email" value=(user["email"].as_str().unwrap_or_default()) required; }
                label {
                    "Current password (needed only to change the email)"
                    input type="password" name="currentPassword" autocomplete="current-password";
                }
                p.muted.small { "A new email address needs your password; the old address is told of the change." }
                p.error.form-error hidden role="alert" {}
                div.row { button.primary type="submit" { "Save profile" } }
            }
        }
        section.card {
            h2 { "Preferences" }
            form.stack data-api="PUT /auth/me/preferences" data-then="reload" {
                label for="pref-language" {
                    "Language of species names"
                    (team_settings::language_select("pref-language", "language", prefs["language"].as_str(), &team_settings::language_choices(&languages), false))
                }
                label {
                    "Time format"
                    select name="timeFormat" {
                        @for f in ["24h", "12h"] { option value=(f) selected[prefs["timeFormat"].as_str() == Some(f)] { (f) } }
                    }
                }
                p.error.form-error hidden role="alert" {}
                div.row { button.primary type="submit" { "Save preferences" } }
            }
        }
        section.card {
            h2 { "Password" }
            form.stack data-api="PUT /auth/me/password" data-then="/signin" {
                label { "Current password" input type="password" name="currentPassword" autocomplete="current-password" required; }
                label { "New password (at least " (min_len) " characters)" input type="password" name="newPassword" minlength=(min_len) autocomplete="new-password" required; }
                p.muted.small { "Your other sessions end when the password changes." }
                p.error.form-error hidden role="alert" {}
                div.row { button.primary type="submit" { "Change password" } }
            }
        }
        section.card #mfa {
            h2 { "Two-factor sign-in" }
            @if enabled {
                p.notice #mfa-on { "On. You sign in with your password and "
                    (methods.join(", or "))
                    ". Backup codes left: " (mfa["backupCodesRemaining"].as_u64().unwrap_or(0)) "." }
                form.stack data-api="POST /auth/mfa/backup-codes/regenerate" data-result="#codes" data-done="New backup codes made" {
                    label { "Password" input type="password" name="password" autocomplete="current-password" required; }
                    p.error.form-error hidden role="alert" {}
                    div.row { button type="submit" { "New backup codes" } }
                }
                @if !user["isPlatformAdmin"].as_bool().unwrap_or(false) {
                    h3 { "Turn two-factor sign-in off" }
                    form.stack #mfa-off data-api="POST /auth/mfa/disable" data-then="reload"
                        data-confirm="Turn two-factor sign-in off? Your authenticator, backup codes, passkeys and remembered devices stop working." {
                        label { "Password" input type="password" name="password" autocomplete="current-password" required; }
                        p.error.form-error hidden role="alert" {}
                        div.row { button.danger type="submit" { "Turn off two-factor" } }
                    }
                } @else {
                    p.muted.small { "Platform admins keep two-factor sign-in on: it guards the whole hub." }
                }
            } @else {
                // Set-up: the QR code, the key and "Turn on" until the first code is right; then
                // `account.js` swaps them for "Two-factor sign-in is on" and the backup codes.
                div #mfa-setup {
                    p { "Add a code from an authenticator app (or a passkey) to your password." }
                    div.row { button.primary type="button" data-api="POST /auth/mfa/totp/begin" data-body="{}" data-result="#totp" data-then="toast" data-done="Scan the code" { "Set up an authenticator app" } }
                    div #totp hidden {
                        p { "Scan this with your authenticator app, or type the key." }
                        img.qr data-field="qrDataUrl" data-attr="src" alt="QR code for the authenticator app" width="200" height="200";
                        p { "Key: " code data-field="manualKey" {} }
                        form.stack #totp-confirm {
                            label { "The 6-digit code it shows" input type="text" name="code" inputmode="numeric" autocomplete="one-time-code" required; }
                            p.error.form-error hidden role="alert" {}
                            div.row { button.primary type="submit" { "Turn on" } }
                        }
                    }
                }
                p.notice #mfa-now-on hidden role="status" tabindex="-1" {
                    strong { "Two-factor sign-in is on." }
                    " From your next sign-in the hub asks for a code from your authenticator app after your password. One thing left: save your backup codes."
                }
            }
            div #codes hidden {
                h3 { "Save your backup codes" }
                p.notice.once { strong { "Shown once." } " Keep them somewhere safe: each signs you in once without your phone." }
                pre.logs #backup-codes data-field="backupCodes" {}
                div.row { button type="button" data-copy="#backup-codes" { "Copy" } a.button href="/account" { "Done" } }
            }
            h3 { "Passkeys" }
            @if passkeys.is_empty() { p.muted { "No passkeys. Passkeys work when the hub is reached over https or on localhost." } }
            @else {
                (widgets::table(&passkeys, &[("Name", "name"), ("Added", "createdAt"), ("Last used", "lastUsedAt")], |p| html! {
                    button.danger type="button" data-api=(format!("DELETE /auth/mfa/passkeys/{}", p["id"].as_str().unwrap_or_default()))
                        data-confirm="Remove this passkey?" { "Remove" }
                }))
            }
            h3 { "Remembered devices" }
            @if devices.is_empty() { p.muted { "None. Tick \"Remember this device\" when you sign in to skip the code for 30 days." } }
            @else {
                (devices_table(&devices))
            }
        }
    };
    Ok(layout::page(ctx, "My account", "", &["settings.css", "account.js"], body))
}

/// A second factor's name in words (`GET /auth/me` lists them as `totp`, `backup_codes`, `passkey`).
fn method_words(m: &str) -> &str {
    match m {
        "totp" => "a code from your authenticator app",
        "backup_codes" => "a backup code",
        "passkey" => "a passkey",
        other => other,
    }
}

/// Remembered devices: the browser and system, when the device last skipped the code, until when.
fn devices_table(devices: &[Value]) -> Markup {
    let s = |d: &Value, k: &str| d[k].as_str().unwrap_or_default().to_owned();
    html! {
        div.table-scroll {
            table.list #devices {
                thead { tr { th scope="col" { "Device" } th scope="col" { "Last used" } th scope="col" { "Remembered until" } th { span.sr { "Actions" } } } }
                tbody {
                    @for d in devices {
                        tr {
                            td { (s(d, "device")) @if !s(d, "ip").is_empty() { br; span.muted.small { "from " (s(d, "ip")) } } }
                            td { @if s(d, "lastUsedAt").is_empty() { "Not yet (remembered " (layout::ago(&s(d, "createdAt"))) ")" } @else { (layout::ago(&s(d, "lastUsedAt"))) } }
                            td { (layout::at(&s(d, "expiresAt"))) }
                            td.row {
                                button type="button" data-api=(format!("DELETE /auth/mfa/remembered-devices/{}", s(d, "id")))
                                    data-confirm="Forget this device? It asks for the code at its next sign-in." { "Forget" }
                            }
                        }
                    }
                }
            }
        }
    }
}
