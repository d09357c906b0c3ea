//! People and teams in a real browser (headless chromium), issue 36: the Team page speaks words
//! and offers the language drop-down (10), renames the team and sets the public page's title so a
//! person's name is never shown by default, with species cards whole at 1280 px (9), lists an
//! owner who is a platform admin (16) and removes a member (15); the audit log names people and
//! teams, pages and filters (8); sign-up when the hub allows it (11); an invite names its team and
//! fills in its email, a reset says the password changed, the first-run page keeps its code (25);
//! remembered devices name the browser (13) and two-factor turns off (15). Every page fits 360 px.

mod common;

use std::time::Duration;

use birdhub::domain::Role;
use common::{PASSWORD, browser::Browser, oathtool, seed};
use serde_json::json;

const FITS: &str = "return document.documentElement.scrollWidth <= window.innerWidth;";
/// The elements that reach past the window's right edge (the failure message names them).
const WIDE: &str = "var out = []; document.querySelectorAll('body *').forEach(function (e) { var r = e.getBoundingClientRect(); if (r.right > window.innerWidth + 1 && out.length < 8) out.push(e.tagName + (e.id ? '#' + e.id : '') + '.' + e.className + ' ' + Math.round(r.right)); }); return out;";

/// The page has no sideways scroll at 360 and 390 px (then back to the desktop width).
async fn fits_phones(b: &Browser, what: &str) {
    for w in [360, 390] {
        b.client.set_window_size(w, 800).await.expect("resize");
        tokio::time::sleep(Duration::from_millis(200)).await;
        let width = b.js("return document.documentElement.scrollWidth;").await;
        let wide = b.js(WIDE).await;
        assert_eq!(b.js(FITS).await.as_bool(), Some(true), "{what} is {width} px wide at {w} px: {wide}");
    }
    b.client.set_window_size(common::browser::DESKTOP, 900).await.expect("resize");
}

/// Accepts the next `confirm()` dialogs (the test is the person saying yes).
async fn say_yes(b: &Browser) {
    b.js("window.confirm = function () { return true; }; return true;").await;
}

fn minutes_ago(hub: &common::TestHub, m: i64) -> String {
    let now = hub.state().clock.now();
    let since_midnight =
        i64::from(chrono::Timelike::num_seconds_from_midnight(&now.with_timezone(&chrono::Local))) / 60;
    let m = m.min(since_midnight.max(1) - 1).max(0);
    (now - chrono::Duration::minutes(m)).to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_team_page_speaks_words_renames_sets_a_public_title_and_removes_a_member() {
    let hub = common::spawn_hub().await;
    // The owner is the hub's platform admin, and the team still has sign-up's name for it.
    let root = hub.user("root@example.org", true).await;
    let t = root.tenant;
    hub.sql(move |c| {
        c.execute("UPDATE tenants SET name = 'root''s team' WHERE id = ?1", [t.to_string()]).expect("name")
    });
    hub.member_of("bea@example.org", t, Role::Member).await;
    let sat = seed::satellite(&hub, t, "Garden").await;
    for (m, sp) in [(3, seed::BLACKBURNIAN), (9, seed::WARBLER), (14, seed::ROBIN), (20, seed::WREN)] {
        seed::heard(&hub, t, sat, &minutes_ago(&hub, m), sp, 0.9).await;
    }
    let b = Browser::start(hub.http_addr.port(), "people-team").await;
    b.sign_in(&root.email, PASSWORD, None).await;
    b.goto("/team").await;

    // 16: the owner is listed although a platform admin.
    let members = b.text("#members").await;
    assert!(members.contains("root@example.org") && members.contains("bea@example.org"), "{members}");
    assert!(!members.contains("No members yet"), "{members}");
    // 10: words for labels, and the languages drop-down.
    let form = b.text("form.team-settings").await;
    for words in
        ["Two-factor required for members", "Minimum loudness (RMS)", "Main language", "Who registers satellites"]
    {
        assert!(form.contains(words), "{words} in {form}");
    }
    for raw in ["Mfa required", "Filter min rms", "Primary language", "Heartbeat interval sec"] {
        assert!(!form.contains(raw), "{raw} in {form}");
    }
    assert_eq!(b.js("return document.querySelector('#f-primary_language').tagName;").await, "SELECT");
    let german = b.js("return document.querySelector('#f-primary_language option[value=de]').textContent;").await;
    assert_eq!(german, "Deutsch (German)");
    assert_eq!(
        b.js("return document.querySelector('#f-primary_language option[value=en]').textContent;").await,
        "English"
    );
    b.js("document.querySelector('#f-primary_language').value = 'de'; return true;").await;
    b.click("form.team-settings button[type=submit]").await;
    assert!(
        b.wait_until("var s = document.querySelector('#f-primary_language'); return !!s && s.value === 'de';", 10)
            .await,
        "German saved and shown after the reload"
    );
    b.assert_no_js_errors().await;

    // 9: the public page is on; before any title it does not show the owner's name.
    b.click("#pp-on").await;
    b.click("#public-page button[type='submit']").await;
    b.find("#public-url").await;
    b.goto(&format!("/public/{t}")).await;
    let h1 = b.text("h1").await;
    assert!(h1.contains("Birds heard at") && !h1.contains("root"), "{h1}");
    // Species cards are whole at 1280 px: no name is cut off and no card leaves the window.
    b.client.set_window_size(common::browser::DESKTOP, 900).await.expect("resize");
    let cut = b
        .js("var bad = []; document.querySelectorAll('.species-tiles .tile-name strong, .species-tiles .tile-name em').forEach(function (e) { if (e.scrollWidth > e.clientWidth + 1) bad.push(e.textContent); }); document.querySelectorAll('.species-tiles a').forEach(function (a) { if (a.getBoundingClientRect().right > window.innerWidth) bad.push('card ' + a.textContent); }); return bad;")
        .await;
    assert_eq!(cut, json!([]), "cut-off species cards");
    assert_eq!(b.js("return document.querySelectorAll('.species-tiles li').length;").await, json!(4));
    b.shot("public").await;

    // Rename the team, then give the public page its own title.
    b.goto("/team").await;
    b.fill("#team-name-input", "Oak Lane garden").await;
    b.click("#team-name button[type=submit]").await;
    assert!(b.wait_until("return document.querySelector('h1').textContent.indexOf('Oak Lane garden') >= 0;", 10).await);
    b.fill("#pp-title", "Oak Lane birds").await;
    b.click("#public-page button[type='submit']").await;
    assert!(b.wait_until("var t = document.querySelector('#pp-title'); return !!t && t.value === 'Oak Lane birds' && document.readyState === 'complete';", 10).await);
    let (_, teams) = hub.login(&root.email).await.get("/tenants").await;
    assert!(teams["tenants"].as_array().expect("teams").iter().any(|x| x["name"] == "Oak Lane garden"), "{teams}");

    // 15: a member is removed after a confirmation.
    say_yes(&b).await;
    b.js("document.querySelector(\"#members button.danger[data-api^='DELETE /auth/members/']\").click(); return true;")
        .await;
    assert!(
        b.wait_until("return document.querySelector('#members').textContent.indexOf('bea@example.org') < 0;", 10).await,
        "bea is gone"
    );
    fits_phones(&b, "/team").await;
    b.shot("team").await;
    b.goto(&format!("/public/{t}")).await;
    assert!(b.text("h1").await.contains("Birds heard at Oak Lane birds"));
    b.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_audit_log_names_who_and_which_team_pages_through_and_filters() {
    let hub = common::spawn_hub().await;
    let root = hub.user("root@example.org", true).await;
    let ada = hub.user("ada@example.org", false).await;
    let t = ada.tenant;
    hub.sql(move |c| c.execute("UPDATE tenants SET name = 'Oak Lane' WHERE id = ?1", [t.to_string()]).expect("name"));
    let api = hub.login(&ada.email).await;
    for _ in 0..30 {
        assert_eq!(api.put("/settings/tenant", json!({"filter_enabled": true})).await.0, 200);
    }
    let b = Browser::start(hub.http_addr.port(), "people-audit").await;
    b.sign_in(&root.email, PASSWORD, None).await;
    b.goto("/admin#audit").await;
    let audit = b.text("#audit").await;
    assert!(audit.contains("ada@example.org") && audit.contains("Oak Lane"), "{audit}");
    assert!(audit.contains("Team settings updated"), "actions in words: {audit}");
    assert!(!audit.contains("admin.tenant_settings_updated"), "{audit}");
    // Every row names who and has no empty cell at its end.
    let rows = b
        .js("return Array.from(document.querySelectorAll('#audit tbody tr')).map(function (r) { return [r.cells.length, r.cells[2].textContent.trim(), r.cells[r.cells.length - 1].textContent.trim()]; });")
        .await;
    let rows = rows.as_array().expect("rows").clone();
    assert_eq!(rows.len(), 25, "a page of 25");
    for r in &rows {
        assert_eq!(r[0], 5, "five cells: {r}");
        assert!(r[1].as_str().is_some_and(|w| !w.is_empty() && w != "—"), "who: {r}");
    }
    assert_eq!(b.js("return document.querySelectorAll('#audit thead th').length;").await, 5);
    assert!(b.text("#audit .pager").await.contains("Page 1 of 2"));
    b.click("#audit a[rel=next]").await;
    assert!(
        b.wait_until("return document.querySelector('#audit .pager').textContent.indexOf('Page 2 of 2') >= 0;", 10)
            .await
    );
    // Filter by action and by person.
    b.js("document.querySelector('#audit-action').value = 'user.login'; return true;").await;
    b.click("form.audit-filter button[type=submit]").await;
    assert!(b.wait_until("return location.search.indexOf('action=user.login') >= 0;", 10).await);
    let whats = b.js("return Array.from(document.querySelectorAll('#audit tbody tr')).map(function (r) { return r.cells[1].textContent.trim(); });").await;
    assert!(whats.as_array().is_some_and(|w| !w.is_empty() && w.iter().all(|x| x == "Signed in")), "{whats}");
    b.js(&format!("document.querySelector('#audit-person').value = '{}'; return true;", root.id)).await;
    b.click("form.audit-filter button[type=submit]").await;
    assert!(b.wait_until(&format!("return location.search.indexOf('person={}') >= 0;", root.id), 10).await);
    let who = b.text("#audit tbody").await;
    assert!(who.contains("root@example.org") && !who.contains("ada@example.org"), "{who}");
    // And by day: nothing from the future.
    b.goto("/admin?from=2999-01-01#audit").await;
    assert!(b.text("#audit").await.contains("Nothing matches these filters"));
    b.goto("/admin#audit").await;
    fits_phones(&b, "/admin").await;
    b.shot("admin").await;
    b.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sign_up_invites_resets_and_first_run_keep_people_informed() {
    let (hub, _sink) = common::spawn_hub_with_mail().await;
    let b = Browser::start(hub.http_addr.port(), "people-signup").await;
    // First run: a refused password keeps the setup code typed.
    let code = std::fs::read_to_string(hub.data_dir.join("setup-code")).expect("setup code").trim().to_owned();
    b.goto("/").await;
    b.fill("form[action='/setup'] input[name=code]", &code).await;
    b.fill("form[action='/setup'] input[name=name]", "Root").await;
    b.fill("form[action='/setup'] input[name=email]", "root@example.org").await;
    b.js("var p = document.querySelector('form[action=\"/setup\"] input[name=password]'); p.removeAttribute('minlength'); p.value = 'aaaa'; return true;").await;
    b.click("form[action='/setup'] button[type=submit]").await;
    b.find("p.error").await;
    assert_eq!(
        b.js("return document.querySelector('form[action=\"/setup\"] input[name=code]').value;").await,
        json!(code)
    );
    assert!(b.text("form[action='/setup']").await.contains("at least 10 characters"));
    b.fill("form[action='/setup'] input[name=password]", PASSWORD).await;
    b.click("form[action='/setup'] button[type=submit]").await;
    b.find("header.topbar nav.tabs").await;
    let root = hub.login("root@example.org").await;
    let team = root.get("/tenants").await.1["tenants"][0]["id"].as_str().expect("team").to_owned();
    root.put(&format!("/tenants/{team}/name"), json!({"name": "Oak Lane"})).await;

    // 11: sign-in offers an account only when the hub allows it.
    let anon = Browser::start(hub.http_addr.port(), "people-signup-anon").await;
    anon.goto("/signin").await;
    assert!(!anon.has("#signup-link").await);
    anon.goto("/register").await;
    assert!(anon.text("main").await.contains("by invitation"));
    assert_eq!(root.put("/settings/platform", json!({"allow_self_registration": true})).await.0, 200);
    anon.goto("/signin").await;
    anon.click("#signup-link a").await;
    anon.find("form[data-api='POST /auth/register']").await;
    anon.fill("input[name=name]", "Kim").await;
    anon.fill("input[name=email]", "kim@example.org").await;
    anon.fill("input[name=password]", PASSWORD).await;
    fits_phones(&anon, "/register").await;
    anon.shot("register").await;
    anon.click("form[data-api='POST /auth/register'] button[type=submit]").await;
    anon.find("header.topbar nav.tabs").await;
    anon.click("details.account summary").await;
    anon.click("details.account form[action='/signout'] button").await;
    anon.find("form[action='/signin']").await;

    // 25: an invite names its team and fills in its email.
    let (_, invite) = root.post("/auth/invites", json!({"role": "member", "email": "bea@example.org"})).await;
    let url = invite["url"].as_str().expect("url");
    let path = &url[url.find("/register").expect("path")..];
    anon.goto(path).await;
    assert!(anon.text("#invite-team").await.contains("Oak Lane"), "the team it joins");
    assert_eq!(anon.js("return document.querySelector('input[name=email]').value;").await, "bea@example.org");
    fits_phones(&anon, "/register?invite").await;
    anon.shot("invite").await;

    // 25: after a reset, sign-in says the password changed.
    let (_, users) = root.get("/admin/users?search=kim").await;
    let kim = users["users"][0]["id"].as_str().expect("kim").to_owned();
    let (_, reset) = root.post(&format!("/admin/users/{kim}/reset-password"), json!({})).await;
    let link = reset["resetUrl"].as_str().expect("link");
    anon.goto(&link[link.find("/reset-password").expect("path")..]).await;
    assert!(anon.text("main").await.contains("at least 10 characters"));
    anon.fill("input[name=password]", "a brand new password").await;
    anon.click("form[data-api='POST /auth/reset-password'] button[type=submit]").await;
    anon.find("#signin-notice").await;
    assert!(anon.text("#signin-notice").await.contains("password was changed"));
    anon.shot("signin-after-reset").await;
    anon.close().await;
    b.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remembered_devices_name_the_browser_and_two_factor_turns_off() {
    let hub = common::spawn_hub().await;
    let ann = hub.user("ann@example.org", false).await;
    let api = hub.login(&ann.email).await;
    let (_, setup) = api.post("/auth/mfa/totp/begin", json!({})).await;
    let key = setup["manualKey"].as_str().expect("manualKey").to_owned();
    let (status, body) =
        api.post("/auth/mfa/totp/confirm", json!({ "code": oathtool(&key, hub.state().clock.now()) })).await;
    assert_eq!(status, 200, "{body}");
    hub.state().clock.advance(Duration::from_secs(31));

    let b = Browser::start(hub.http_addr.port(), "people-account").await;
    b.goto("/signin").await;
    b.fill("input[name=email]", &ann.email).await;
    b.fill("input[name=password]", PASSWORD).await;
    b.click("form[action='/signin'] button[type=submit]").await;
    b.fill("input[name=code]", &oathtool(&key, hub.state().clock.now())).await;
    b.click("input[name=remember]").await;
    b.click("form[action='/signin/mfa'] button[type=submit]").await;
    b.find("header.topbar nav.tabs").await;
    b.goto("/account#mfa").await;
    let devices = b.text("#devices").await;
    assert!(devices.contains("Chrome") && devices.contains("Linux"), "the browser in words: {devices}");
    assert!(!devices.contains("— — —") && !devices.contains("Unknown browser"), "{devices}");
    assert_eq!(
        b.js("return document.querySelectorAll('#devices tbody td time').length;").await,
        json!(2),
        "last used and until"
    );
    let mfa = b.text("#mfa-on").await;
    assert!(mfa.contains("authenticator app") && !mfa.contains("totp") && !mfa.contains("backup_codes"), "{mfa}");
    fits_phones(&b, "/account").await;
    b.shot("account").await;

    // 15: two-factor turns off with the password, after a confirmation.
    say_yes(&b).await;
    b.fill("#mfa-off input[name=password]", PASSWORD).await;
    b.click("#mfa-off button[type=submit]").await;
    assert!(
        b.wait_until("return !!document.querySelector('button[data-api=\"POST /auth/mfa/totp/begin\"]');", 10).await,
        "the set-up button is back"
    );
    assert_eq!(api.get("/auth/me").await.1["mfa"]["enabled"], false);
    b.assert_no_js_errors().await;
    b.close().await;
}
