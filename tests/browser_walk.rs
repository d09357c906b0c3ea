//! The dashboard as a whole, in a real browser (headless chromium), for issue 36:
//! - the walk: every page at 360, 390 and 1280 px, signed out (with the second step of a
//!   two-factor sign-in) and signed in as a platform admin with a seeded team, failing (all
//!   failures listed at once) on sideways scroll, script errors, any error in the browser's
//!   console (issue 51, 11), an input `pattern` browsers cannot read, text that is a raw field
//!   name, JSON, an id, a serde message or an ISO timestamp (4), and an error message that says
//!   "null" or names a field;
//! - forms: a wrong two-factor code keeps the setup on screen (2); a double click on submit makes
//!   one comment, invite and scheduled export (3);
//! - the 12-hour preference on Admin, Recording sessions and Team (14); error pages keep the
//!   navigation, the menus name things plainly, Alerts is in the phone's bar (25).

mod common;

use chrono::{Duration, Utc};
use common::{PASSWORD, TestHub, TestUser, browser::Browser, oathtool, receiver::Receiver, seed};
use serde_json::{Value, json};

/// The widths every page must fit.
const WIDTHS: [u32; 3] = [360, 390, 1280];

/// What the walk checks on the page shown, as a list of findings (empty when all is well).
/// Text inside `pre`, `code`, `kbd`, `samp` and form fields is what a person copies (a config
/// file, a command), so only the prose around it is read.
const CHECK: &str = r#"
const out = [];
const vw = window.innerWidth;
const sw = document.documentElement.scrollWidth;
if (sw > vw) {
  const scrolls = (el) => { for (let p = el.parentElement; p; p = p.parentElement) {
    const o = getComputedStyle(p).overflowX; if (o === 'auto' || o === 'scroll' || o === 'hidden') return true; } return false; };
  const wide = Array.from(document.querySelectorAll('body *')).filter((el) => {
    const r = el.getBoundingClientRect(); return r.width > 0 && r.right > vw + 1 && !scrolls(el);
  });
  const leaves = wide.filter((el) => !wide.some((o) => o !== el && el.contains(o))).slice(0, 4);
  const name = (el) => el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') +
    (el.className && typeof el.className === 'string' ? '.' + el.className.trim().split(/\s+/).join('.') : '');
  out.push(`sideways scroll: ${sw} px wide in ${vw} px (${leaves.map((el) => name(el) + ' ' + Math.round(el.getBoundingClientRect().right) + 'px').join(', ')})`);
}
const skip = 'pre, code, kbd, samp, script, style, template, textarea, noscript';
const parts = [];
const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
for (let n = walker.nextNode(); n; n = walker.nextNode()) {
  const el = n.parentElement;
  if (!el || el.closest(skip) || !n.textContent.trim()) continue;
  if (el.checkVisibility && !el.checkVisibility()) continue;
  parts.push(n.textContent);
}
const text = parts.join(' ').replace(/https?:\/\/\S+/g, ' ');
const allowed = new Set(['eBird', 'iNaturalist', 'iOS', 'macOS', 'iPhone', 'iPad', 'uPlot', 'mDNS', 'birdhub', 'kHz']);
const rules = [
  ['ISO timestamp', /\d{4}-\d\d-\d\dT\d\d:|\+00:00/g],
  ['serde message', /invalid type|invalid value|expected [ui]\d+|at line \d+|unknown variant `|missing field `|Failed to deserialize/g],
  ['raw field name', /\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b/g],
  ['raw field name', /\b[a-z]+[A-Z][A-Za-z0-9]*\b/g],
  ['JSON', /[{\[]\s*"[A-Za-z_]+"\s*:/g],
  ['an id', /\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/g],
];
for (const [what, re] of rules) {
  const hits = Array.from(new Set((text.match(re) || []).filter((h) => !allowed.has(h))));
  if (hits.length) out.push(what + ': ' + hits.slice(0, 5).map((h) => JSON.stringify(h)).join(', '));
}
// Browsers read `pattern` with the `v` flag; one they cannot read is dropped, with a console error.
for (const input of document.querySelectorAll('input[pattern]')) {
  const p = input.getAttribute('pattern');
  try { new RegExp('^(?:' + p + ')$', 'v'); } catch (e) { out.push(`invalid pattern on ${input.name || input.id}: ${p}`); }
}
// Error messages shown on the page speak words: no "null", no field names before a colon, no
// API quoting.
const errorText = Array.from(document.querySelectorAll('.error, .form-error, [role=alert], .toast.bad, .bad'))
  .filter((el) => !el.checkVisibility || el.checkVisibility()).map((el) => el.textContent).join(' ');
const errorRules = [
  ['"null" in an error', /\bnull\b/gi],
  ['a field name in an error', /\b[a-z][a-z0-9]*(?:(?:_[a-z0-9]+)+|[A-Z][A-Za-z0-9]*|\[[^\]]*\])\s*:/g],
  ['API quoting in an error', /`[^`]*`/g],
];
for (const [what, re] of errorRules) {
  const hits = Array.from(new Set(errorText.match(re) || []));
  if (hits.length) out.push(what + ': ' + hits.slice(0, 5).map((h) => JSON.stringify(h)).join(', '));
}
return out;
"#;

/// A platform admin's team with everything the pages show: satellites, detections, an alert, a
/// scheduled export, an invite, a member, the public page on and a share link.
struct World {
    hub: TestHub,
    admin: TestUser,
    /// A person with two-factor sign-in on, and their authenticator key.
    two_factor: (TestUser, String),
    sat: String,
    detection: String,
    share_path: String,
}

async fn world() -> World {
    let hub = common::spawn_hub().await;
    let admin = hub.user("ada@example.org", true).await;
    let t = admin.tenant;
    let sat = seed::satellite(&hub, t, "Garden").await;
    seed::place(&hub, t, sat, 51.5, -0.12).await;
    let pond = seed::satellite(&hub, t, "Pond").await;
    let now = Utc::now();
    let mut first = None;
    for (i, (species, conf)) in
        [(seed::ROBIN, 0.91), (seed::WREN, 0.74), (seed::WARBLER, 0.83), (seed::ROBIN, 0.66)].into_iter().enumerate()
    {
        let at = (now - Duration::minutes(9 * i as i64 + 2)).to_rfc3339();
        let (_, d) = seed::heard(&hub, t, if i % 2 == 0 { sat } else { pond }, &at, species, conf).await;
        first.get_or_insert(d);
    }
    let detection = first.expect("a detection").to_string();
    let stamp = hub.state().clock.stamp();
    hub.state()
        .store
        .call(move |c| {
            birdhub::store::alerts::insert(
                c,
                &birdhub::store::alerts::NewAlert {
                    tenant_id: t,
                    rule_id: None,
                    kind: "satellite_offline",
                    title: "Pond is offline",
                    message: "No heartbeat for 20 minutes.",
                    data: &json!({}),
                },
                stamp,
            )
        })
        .await
        .expect("alert");
    hub.member_of("ben@example.org", t, birdhub::domain::Role::Member).await;

    let api = hub.login(&admin.email).await;
    let rx = Receiver::start(None).await;
    let channel = api
        .create("/alert-rules/channels", json!({"type": "webhook", "name": "Phone", "config": {"url": rx.url("/x")}}))
        .await;
    api.create(
        "/exports/scheduled",
        json!({"name": "Weekly list", "format": "csv", "filters": {"days": 7}, "cron": "0 6 * * 1",
            "timezone": "Europe/London", "channelId": channel["id"]}),
    )
    .await;
    api.create("/auth/invites", json!({"role": "viewer", "email": "cleo@example.org"})).await;
    let (status, body) = api.put("/settings/tenant", json!({ "public_page_enabled": true })).await;
    assert_eq!(status, 200, "{body}");
    let (status, share) = api.get(&format!("/detections/{detection}/share")).await;
    assert_eq!(status, 200, "{share}");
    let url = share["url"].as_str().expect("share url");
    let share_path = url.find("/api/").map(|i| url[i..].to_owned()).unwrap_or_else(|| url.to_owned());
    drop(rx);
    let two_factor = two_factor_user(&hub).await;
    World { hub, admin, two_factor, sat: sat.to_string(), detection, share_path }
}

/// A person who turned on two-factor sign-in (over the API), with the authenticator's key.
async fn two_factor_user(hub: &TestHub) -> (TestUser, String) {
    let user = hub.user("tom@example.org", false).await;
    let api = hub.login(&user.email).await;
    let key = common::turn_on_totp(hub, &api).await;
    (user, key)
}

/// Waits until the page is loaded and htmx has nothing in flight.
async fn settle(b: &Browser) {
    b.wait_until(
        "return document.readyState === 'complete' && !document.querySelector('.htmx-request, [aria-busy=true]');",
        10,
    )
    .await;
}

/// Checks the page at `path` at every width; returns the findings as "page @ width: what".
async fn walk_page(b: &Browser, name: &str, path: &str) -> Vec<String> {
    b.goto(path).await;
    check_page(b, name, path).await
}

/// Checks the page the browser is on, reached by `path` (a link or a form), at every width.
async fn check_page(b: &Browser, name: &str, path: &str) -> Vec<String> {
    let mut found = Vec::new();
    settle(b).await;
    for width in WIDTHS {
        b.client.set_window_size(width, 800).await.expect("resize");
        let fits = b.wait_until(&format!("return window.innerWidth <= {width};"), 5).await;
        assert!(fits, "the window became {width} px wide");
        settle(b).await;
        let v = b.js(CHECK).await;
        for f in v.as_array().into_iter().flatten() {
            found.push(format!("{name} ({path}) @ {width}px: {}", f.as_str().unwrap_or_default()));
        }
    }
    for e in b.js_errors().await {
        found.push(format!("{name} ({path}): script error: {e}"));
    }
    // A page that answers with an error status (a missing page, a refused code) logs that status
    // in the console; that is the page's answer, not a fault of the page. Anything else is one.
    let href = b.js("return location.href;").await.as_str().unwrap_or_default().to_owned();
    let own_status = format!("network: {href} - Failed to load resource: the server responded with a status of");
    for e in b.console_errors().await {
        if !e.starts_with(&own_status) {
            found.push(format!("{name} ({path}): console error: {e}"));
        }
    }
    b.shot_at(name, &WIDTHS).await;
    found
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_page_fits_phones_and_shows_words_not_field_names_ids_or_iso_times() {
    let w = world().await;
    let t = w.admin.tenant;
    let b = Browser::start(w.hub.http_addr.port(), "walk").await;
    let mut found = Vec::new();

    let signed_out: Vec<(&str, String)> = vec![
        ("signin", "/signin".into()),
        ("register", "/register".into()),
        ("forgot", "/forgot".into()),
        ("reset-password", "/reset-password?token=abc".into()),
        ("public", format!("/public/{t}")),
        ("public-species", format!("/public/{t}/species/{}", seed::ROBIN.0)),
        ("share", w.share_path.clone()),
        ("not-found-signed-out", "/no-such-page".into()),
    ];
    for (name, path) in &signed_out {
        found.extend(walk_page(&b, name, path).await);
    }

    // The second step of a two-factor sign-in, with a code typed (the browser checks it against
    // the field's pattern) and refused (the page then shows its error too).
    let (tom, key) = &w.two_factor;
    b.goto("/signin").await;
    b.fill("input[name=email]", &tom.email).await;
    b.fill("input[name=password]", PASSWORD).await;
    b.click("form[action='/signin'] button[type=submit]").await;
    let right = oathtool(key, w.hub.state().clock.now());
    b.fill("input[name=code]", if right == "000000" { "111111" } else { "000000" }).await;
    b.click("form[action='/signin/mfa'] button[type=submit]").await;
    b.find("p.error[role=alert]").await;
    found.extend(check_page(&b, "signin-code", "/signin/mfa").await);

    b.client.set_window_size(1280, 900).await.expect("resize");
    b.sign_in(&w.admin.email, PASSWORD, None).await;
    let signed_in: Vec<(&str, String)> = vec![
        ("live", "/".into()),
        ("detections", "/detections".into()),
        ("detection", format!("/detections/{}", w.detection)),
        ("species-list", "/species".into()),
        ("species", format!("/species/{}", seed::ROBIN.0)),
        ("stats", "/stats".into()),
        ("sessions", "/sessions".into()),
        ("satellites", "/satellites".into()),
        ("satellite-new", "/satellites/new".into()),
        ("satellite", format!("/satellites/{}", w.sat)),
        ("alerts", "/alerts".into()),
        ("exports", "/exports".into()),
        ("team", "/team".into()),
        ("detection-settings", "/team/detection".into()),
        ("account", "/account".into()),
        ("quality", "/quality".into()),
        ("admin", "/admin".into()),
        ("not-found", "/no-such-page".into()),
    ];
    for (name, path) in &signed_in {
        found.extend(walk_page(&b, name, path).await);
    }
    b.close().await;
    assert!(found.is_empty(), "{} problems on the walk:\n{}", found.len(), found.join("\n"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_two_factor_code_keeps_the_setup_and_double_clicks_make_one_of_each() {
    let w = world().await;
    let b = Browser::start(w.hub.http_addr.port(), "forms").await;
    b.sign_in(&w.admin.email, PASSWORD, None).await;

    // Defect 2: a wrong code says so; the key and the QR stay; the right code then works.
    b.goto("/account").await;
    b.click("button[data-api='POST /auth/mfa/totp/begin']").await;
    assert!(b.wait_until("return !document.getElementById('totp').hidden;", 10).await, "the setup shows");
    let key = b.text("#totp code[data-field=manualKey]").await;
    assert!(!key.is_empty(), "a key to type");
    let right = oathtool(&key, w.hub.state().clock.now());
    let wrong = if right == "000000" { "111111" } else { "000000" };
    b.fill("#totp input[name=code]", wrong).await;
    b.click("#totp button[type=submit]").await;
    assert!(
        b.wait_until("const e = document.querySelector('#totp .form-error'); return !!e && !e.hidden && e.textContent.length > 0;", 10)
            .await,
        "a wrong code is said"
    );
    assert_eq!(b.path().await, "/account", "still on the page, not sent to sign in");
    assert_eq!(b.text("#totp code[data-field=manualKey]").await, key, "the same key");
    let qr = b.js("const i = document.querySelector('#totp img.qr'); return !document.getElementById('totp').hidden && i.src.startsWith('data:');").await;
    assert_eq!(qr, json!(true), "the QR is still shown");
    b.shot("totp-wrong-code").await;
    b.fill("#totp input[name=code]", &right).await;
    b.click("#totp button[type=submit]").await;
    assert!(b.wait_until("return !document.getElementById('codes').hidden;", 10).await, "the right code turns it on");

    // Defect 3: a double click (and a second submit while the first runs) sends once.
    let double = r#"const f = document.querySelector(arguments[0]);
        const btn = f.querySelector('button[type=submit]');
        btn.click(); btn.click(); f.requestSubmit(); return true;"#;
    let count = |table: &'static str| {
        w.hub.sql(|c| c.query_row(&format!("SELECT count(*) FROM {table}"), [], |r| r.get::<_, i64>(0)).expect("count"))
    };

    b.goto(&format!("/detections/{}", w.detection)).await;
    b.fill("#comment-form textarea", "Heard it by the fence").await;
    let before = count("comments");
    b.client.execute(double, vec![json!("#comment-form")]).await.expect("double click");
    assert!(b.wait_until("return document.querySelectorAll('#comments .comment, #comments li, #comments article').length > 0 || /fence/.test(document.getElementById('comments').textContent);", 10).await);
    settle(&b).await;
    assert!(b.wait_until("return !document.querySelector('#comment-form[aria-busy]');", 10).await);
    assert_eq!(count("comments"), before + 1, "one comment");

    b.goto("/team").await;
    let before = count("invites");
    b.client.execute(double, vec![json!("form[data-api='POST /auth/invites']")]).await.expect("double click");
    assert!(b.wait_until("return !document.getElementById('invite-link').hidden;", 10).await, "the invite is made");
    assert!(b.wait_until("return !document.querySelector('form[aria-busy]');", 10).await);
    assert_eq!(count("invites"), before + 1, "one invite");

    b.goto("/exports").await;
    b.click("details.add summary").await;
    b.fill("#sched-name", "Daily list").await;
    let before = count("scheduled_exports");
    b.js("window.__sameLoad = true; return null;").await;
    b.client.execute(double, vec![json!("#sched-form")]).await.expect("double click");
    assert!(
        b.wait_until("return window.__sameLoad !== true && document.readyState === 'complete';", 10).await,
        "saved, the page reloads"
    );
    assert_eq!(count("scheduled_exports"), before + 1, "one scheduled export");
    b.assert_no_js_errors().await;
    b.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twelve_hour_times_error_pages_with_navigation_and_plain_menu_names() {
    let w = world().await;
    let api = w.hub.login(&w.admin.email).await;
    let (status, body) = api.put("/auth/me/preferences", json!({ "timeFormat": "12h" })).await;
    assert_eq!(status, 200, "{body}");
    let b = Browser::start(w.hub.http_addr.port(), "frame").await;
    b.sign_in(&w.admin.email, PASSWORD, None).await;

    // Defect 14: every time on these pages in the 12-hour format.
    for path in ["/admin", "/sessions", "/team"] {
        b.goto(path).await;
        settle(&b).await;
        let times: Value =
            b.js("return Array.from(document.querySelectorAll('time')).map((t) => t.textContent);").await;
        let times: Vec<String> =
            times.as_array().into_iter().flatten().filter_map(|t| t.as_str().map(str::to_owned)).collect();
        assert!(!times.is_empty(), "{path} shows times");
        assert!(times.iter().any(|t| t.contains("AM") || t.contains("PM")), "{path}: the 12-hour format: {times:?}");
        let h24 = b.js("return (document.body.innerText.match(/\\b(1[3-9]|2[0-3]):[0-5]\\d\\b/g) || []);").await;
        assert_eq!(h24, json!([]), "{path}: no 24-hour times");
    }

    // 25: an error page keeps the navigation, on a desktop and on a phone.
    b.goto("/no-such-page").await;
    assert!(b.text("main h1").await.contains("Not found"));
    assert!(b.has("header.topbar nav.tabs").await && b.has("details.account").await, "the navigation stays");
    b.goto(&format!("/detections/{}", uuid::Uuid::new_v4())).await;
    assert!(b.has("header.topbar nav.tabs").await, "a missing detection keeps the navigation");
    b.shot("not-found").await;

    // Alerts in the phone's bottom bar and the account menu; "Recording sessions" says what it is.
    let bar: Value = b
        .js("return Array.from(document.querySelectorAll('nav.bottombar a')).map((a) => a.getAttribute('href'));")
        .await;
    for href in ["/", "/detections", "/species", "/stats", "/satellites", "/alerts"] {
        assert!(bar.as_array().is_some_and(|a| a.contains(&json!(href))), "{href} in the phone's bar: {bar}");
    }
    let menu = b
        .js("return Array.from(document.querySelectorAll('details.account .menu a')).map((a) => a.textContent.trim());")
        .await;
    let menu: Vec<&str> = menu.as_array().into_iter().flatten().filter_map(Value::as_str).collect();
    assert!(
        menu.contains(&"Alerts") && menu.contains(&"Recording sessions") && !menu.contains(&"Sessions"),
        "{menu:?}"
    );
    b.client.set_window_size(360, 800).await.expect("resize");
    b.goto("/alerts").await;
    b.click("nav.bottombar a[href='/stats']").await;
    assert_eq!(b.path().await, "/stats", "the phone's bar leads to every main page");
    b.click("nav.bottombar a[href='/alerts']").await;
    assert_eq!(b.path().await, "/alerts");
    let bar_fits = b.js("const r = document.querySelector('nav.bottombar').getBoundingClientRect(); return r.left >= 0 && r.right <= window.innerWidth;").await;
    assert_eq!(bar_fits, json!(true), "the bottom bar stays inside the screen");

    // Languages by name, never "English (English)".
    b.goto("/account").await;
    let langs = b.js("return Array.from(document.querySelectorAll('select[name=language] option')).map((o) => o.textContent.trim());").await;
    let langs: Vec<&str> = langs.as_array().into_iter().flatten().filter_map(Value::as_str).collect();
    assert!(langs.iter().all(|l| !l.contains("English (English)")), "{langs:?}");
    b.assert_no_js_errors().await;
    b.close().await;
}
