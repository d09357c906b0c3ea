//! The browser's side of the hub's security (issue 34, findings 12, 14 and 15), over real HTTP and
//! in a real headless chromium:
//! - every kind of answer (pages, the public page, the API, assets, errors, 404s) carries the
//!   Content-Security-Policy and the three other security headers;
//! - no page or fragment has an inline script, an `on*=` handler or a `javascript:` URL, so the
//!   policy can forbid them; in chromium the policy is enforced, and the dashboard works under it;
//! - an alert rule named `<!--<script …` leaves the alerts page and its JSON island whole;
//! - an export downloaded by chromium (which asks for gzip) arrives whole.
//!   (Every format with `Accept-Encoding: gzip` over HTTP is in `exports.rs`.)

mod common;

use std::time::Duration;

use birdhub::ids::{DetectionId, SatelliteId};
use common::{PASSWORD, TestUser, browser::Browser, seed};
use reqwest::{StatusCode, header::HeaderMap, redirect::Policy};
use serde_json::{Value, json};

/// A rule name that, unescaped inside `<script>`, makes the HTML parser swallow the rest of the
/// page: `<!--` then `<script ` turn the element's own `</script>` into text. (The API trims
/// names, so the space after `<script` needs a word after it.)
const WEIRD: &str = "<!--<script dawn chorus";

/// The directives the policy must hold, each exactly (so none is widened).
const DIRECTIVES: [&str; 6] = [
    "default-src 'self'",
    "script-src 'self'",
    "frame-ancestors 'none'",
    "base-uri 'self'",
    "form-action 'self'",
    "object-src 'none'",
];

struct World {
    hub: common::TestHub,
    ana: TestUser,
    sat: SatelliteId,
    det: DetectionId,
    rule: String,
    /// A second team of Ana's, for the team switcher.
    orchard: String,
}

/// Ana with two teams, Garden and Orchard; in Garden, a satellite, four detections today, the public page on and
/// an alert rule named [`WEIRD`].
async fn world() -> World {
    let hub = common::spawn_hub().await;
    let ana = hub.user("ana@example.org", false).await;
    // Teams are listed by name, and the first is the one a page opens in.
    hub.sql(|c| c.execute("UPDATE tenants SET name = 'Garden' WHERE id = ?1", [ana.tenant.to_string()]))
        .expect("named");
    let sat = seed::satellite(&hub, ana.tenant, "Garden").await;
    let now = hub.state().clock.now();
    let mut first = None;
    for (i, species) in [seed::ROBIN, seed::WREN, seed::WARBLER, seed::ROBIN].into_iter().enumerate() {
        let at = (now - chrono::Duration::minutes(5 * i as i64 + 1)).to_rfc3339();
        let (_, d) = seed::heard(&hub, ana.tenant, sat, &at, species, 0.8).await;
        first.get_or_insert(d);
    }
    let api = hub.login(&ana.email).await;
    let (status, body) = api.put("/settings/tenant", json!({ "public_page_enabled": true })).await;
    assert_eq!(status, 200, "{body}");
    let rule =
        api.create("/alert-rules/rules", json!({ "name": WEIRD, "trigger": "detection", "conditions": {} })).await;
    hub.allow_team_creation().await;
    let orchard = api.create("/auth/create-tenant", json!({ "name": "Orchard" })).await;
    World {
        ana,
        sat,
        det: first.expect("a detection"),
        rule: rule["id"].as_str().expect("rule id").to_owned(),
        orchard: orchard["id"].as_str().expect("team id").to_owned(),
        hub,
    }
}

/// A client like a browser: cookies kept, redirects shown rather than followed.
fn client() -> reqwest::Client {
    reqwest::Client::builder().cookie_store(true).redirect(Policy::none()).build().expect("client")
}

fn csrf_of(html: &str) -> String {
    let at = html.find("name=\"_csrf\" value=\"").expect("a CSRF field") + 20;
    html[at..at + 32].to_owned()
}

/// Signs in through the dashboard's form; the client then holds the session cookie.
async fn sign_in(base: &str, c: &reqwest::Client, email: &str) {
    let html = c.get(format!("{base}/signin")).send().await.expect("GET").text().await.expect("body");
    let form =
        [("_csrf", csrf_of(&html)), ("email", email.into()), ("password", PASSWORD.into()), ("next", "/".into())];
    let r = c.post(format!("{base}/signin")).form(&form).send().await.expect("POST");
    assert_eq!(r.status(), StatusCode::SEE_OTHER, "signed in");
}

#[track_caller]
fn assert_secure(what: &str, h: &HeaderMap) {
    let get = |n: &str| h.get(n).and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
    let csp = get("content-security-policy");
    let parts: Vec<&str> = csp.split(';').map(str::trim).collect();
    for d in DIRECTIVES {
        assert!(parts.contains(&d), "{what}: {d:?} in the policy {csp:?}");
    }
    assert!(!csp.contains("unsafe-eval"), "{what}: {csp}");
    assert_eq!(get("x-frame-options"), "DENY", "{what}");
    assert_eq!(get("x-content-type-options"), "nosniff", "{what}");
    assert_eq!(get("referrer-policy"), "same-origin", "{what}");
}

#[tokio::test]
async fn every_kind_of_answer_carries_the_browser_security_headers() {
    let w = world().await;
    let base = &w.hub.base_url;
    let anon = client();
    let signin = anon.get(format!("{base}/signin")).send().await.expect("GET").text().await.expect("body");
    let at = signin.find("/assets/app.").expect("app.css or app.js is linked");
    let asset = &signin[at..at + signin[at..].find('"').expect("end of the link")];
    let t = w.ana.tenant;
    // (what, method, path, status)
    let anonymous = [
        ("the home page, signed out", "GET", "/".to_owned(), 303),
        ("the sign-in page", "GET", "/signin".into(), 200),
        ("a team's public page", "GET", format!("/public/{t}"), 200),
        ("a public page fragment", "GET", format!("/public/{t}/recent"), 200),
        ("health", "GET", "/api/health".into(), 200),
        ("an API call without credentials", "GET", "/api/detections".into(), 401),
        ("an asset", "GET", asset.to_owned(), 200),
        ("a missing asset", "GET", "/assets/nope.0000000000.js".into(), 404),
        ("a page that does not exist", "GET", "/no-such-page".into(), 404),
        ("an API route that does not exist", "GET", "/api/no-such-route".into(), 404),
        ("a method the route lacks", "DELETE", "/api/health".into(), 405),
        ("the OpenAPI document", "GET", "/api/openapi.json".into(), 200),
        ("the API docs page", "GET", "/api/docs/index.html".into(), 200),
    ];
    for (what, method, path, status) in anonymous {
        let r = anon.request(method.parse().expect("method"), format!("{base}{path}")).send().await.expect("request");
        assert_eq!(r.status().as_u16(), status, "{what}: {path}");
        assert_secure(what, r.headers());
    }

    let refused = anon
        .post(format!("{base}/signin"))
        .form(&[("_csrf", "0123456789abcdef0123456789abcdef"), ("email", "x@example.org"), ("password", "x")])
        .send()
        .await
        .expect("POST");
    assert!(refused.status().is_client_error(), "a form post with a forged token: {}", refused.status());
    assert_secure("a refused form post", refused.headers());

    let c = client();
    sign_in(base, &c, &w.ana.email).await;
    let signed_in = [
        ("the live page", "/".to_owned()),
        ("a detection", format!("/detections/{}", w.det)),
        ("a satellite", format!("/satellites/{}", w.sat)),
        ("an htmx fragment", "/live/grid".into()),
        ("an export download", "/api/export/detections?format=csv".into()),
        ("a spectrogram", format!("/api/detections/{}/spectrogram.png", w.det)),
    ];
    for (what, path) in signed_in {
        let r = c.get(format!("{base}{path}")).header("accept-encoding", "gzip").send().await.expect("GET");
        assert_eq!(r.status(), StatusCode::OK, "{what}: {path}");
        assert_secure(what, r.headers());
    }
}

/// One start tag: its name and attributes (names lower-case), and for a `<script>` its text.
#[derive(Debug)]
struct Tag {
    name: String,
    attrs: Vec<(String, String)>,
    text: String,
}

/// The start tags of `html`, read the way the markup is written (quoted attribute values; raw
/// text inside `<script>` and `<style>` up to their end tag).
fn tags(html: &str) -> Vec<Tag> {
    let mut out = Vec::new();
    let mut rest = html;
    while let Some(open) = rest.find('<') {
        rest = &rest[open + 1..];
        if let Some(after) = rest.strip_prefix("!--") {
            rest = after.find("-->").map_or("", |e| &after[e + 3..]);
            continue;
        }
        let name: String = rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '-').collect();
        if name.is_empty() {
            continue;
        }
        rest = &rest[name.len()..];
        let mut attrs = Vec::new();
        loop {
            rest = rest.trim_start();
            if rest.is_empty() || rest.starts_with('>') || rest.starts_with("/>") {
                break;
            }
            let attr: String = rest.chars().take_while(|c| !c.is_whitespace() && !"=>/".contains(*c)).collect();
            rest = &rest[attr.len()..];
            let mut value = String::new();
            if let Some(v) = rest.strip_prefix('=') {
                if let Some(q) = v.strip_prefix('"') {
                    let end = q.find('"').unwrap_or(q.len());
                    value = q[..end].to_owned();
                    rest = &q[(end + 1).min(q.len())..];
                } else {
                    let end = v.find(|c: char| c.is_whitespace() || c == '>').unwrap_or(v.len());
                    value = v[..end].to_owned();
                    rest = &v[end..];
                }
            } else if attr.is_empty() {
                rest = &rest[1..];
            }
            if !attr.is_empty() {
                attrs.push((attr.to_ascii_lowercase(), value));
            }
        }
        let name = name.to_ascii_lowercase();
        let mut text = String::new();
        if name == "script" || name == "style" {
            let body = rest.find('>').map_or("", |e| &rest[e + 1..]);
            let end = body.find(&format!("</{name}")).unwrap_or(body.len());
            text = body[..end].to_owned();
            rest = &body[end..];
        }
        out.push(Tag { name, attrs, text });
    }
    out
}

/// Fails on anything the policy forbids; returns the page's JSON islands by id.
#[track_caller]
fn assert_no_inline_code(path: &str, html: &str) -> Vec<(String, Value)> {
    let mut islands = Vec::new();
    for tag in tags(html) {
        let attr = |n: &str| tag.attrs.iter().find(|(k, _)| k == n).map(|(_, v)| v.as_str());
        for (k, v) in &tag.attrs {
            assert!(!k.starts_with("on"), "{path}: an inline handler <{} {k}=\"{v}\">", tag.name);
            assert!(!k.starts_with("hx-on"), "{path}: htmx would eval <{} {k}=\"{v}\">", tag.name);
            assert!(!v.trim().to_ascii_lowercase().starts_with("javascript:"), "{path}: a javascript: URL in {k}");
        }
        assert_ne!(tag.name, "style", "{path}: an inline <style> element");
        if tag.name == "script" {
            match (attr("src"), attr("type")) {
                (Some(src), _) => {
                    assert!(src.starts_with("/assets/"), "{path}: a script from {src}");
                    assert!(tag.text.trim().is_empty(), "{path}: a script with both src and text");
                }
                (None, Some("application/json")) => {
                    for c in ['<', '>', '&', '\u{2028}', '\u{2029}'] {
                        assert!(!tag.text.contains(c), "{path}: {c:?} raw in a JSON island: {}", tag.text);
                    }
                    let v = serde_json::from_str(&tag.text).unwrap_or_else(|e| panic!("{path}: island: {e}"));
                    islands.push((attr("id").unwrap_or_default().to_owned(), v));
                }
                _ => panic!("{path}: an inline script: {}", tag.text),
            }
        }
    }
    islands
}

/// The local URLs of a page's `hx-get` fragments.
fn fragments(html: &str) -> Vec<String> {
    tags(html)
        .into_iter()
        .filter_map(|t| t.attrs.into_iter().find(|(k, _)| k == "hx-get").map(|(_, v)| v.replace("&amp;", "&")))
        .filter(|u| u.starts_with('/'))
        .collect()
}

/// Every fragment `html` loads with htmx passes [`assert_no_inline_code`] too.
async fn check_fragments(c: &reqwest::Client, base: &str, html: &str) {
    for frag in fragments(html) {
        let r = c.get(format!("{base}{frag}")).header("hx-request", "true").send().await.expect("GET");
        assert_eq!(r.status(), StatusCode::OK, "{frag}");
        assert_no_inline_code(&frag, &r.text().await.expect("body"));
    }
}

#[tokio::test]
async fn no_page_or_fragment_has_an_inline_script_or_handler_and_the_alerts_island_survives_its_names() {
    // The first-run page, before there is any account.
    let fresh = common::spawn_hub().await;
    let setup = client().get(format!("{}/", fresh.base_url)).send().await.expect("GET").text().await.expect("body");
    assert!(setup.contains("setup code"), "the first-run page");
    assert_no_inline_code("/ (first run)", &setup);
    drop(fresh);

    let w = world().await;
    let base = &w.hub.base_url;
    let t = w.ana.tenant;
    let anon = client();
    for path in [
        "/signin".to_owned(),
        "/forgot".into(),
        "/register?invite=abc".into(),
        format!("/public/{t}"),
        format!("/public/{t}/species/{}", seed::ROBIN.0),
        "/no-such-page".into(),
    ] {
        let html = anon.get(format!("{base}{path}")).send().await.expect("GET").text().await.expect("body");
        assert!(html.contains("</html>"), "{path} is a page");
        assert_no_inline_code(&path, &html);
        check_fragments(&anon, base, &html).await;
    }

    let c = client();
    sign_in(base, &c, &w.ana.email).await;
    let pages = [
        "/".to_owned(),
        "/detections".into(),
        format!("/detections/{}", w.det),
        "/species".into(),
        format!("/species/{}", seed::ROBIN.0),
        "/stats".into(),
        "/sessions".into(),
        "/quality".into(),
        "/satellites".into(),
        "/satellites/new".into(),
        format!("/satellites/{}", w.sat),
        "/alerts".into(),
        "/exports".into(),
        "/team".into(),
        "/account".into(),
    ];
    let mut alerts_islands = Vec::new();
    for path in &pages {
        let r = c.get(format!("{base}{path}")).send().await.expect("GET");
        assert_eq!(r.status(), StatusCode::OK, "{path}");
        let html = r.text().await.expect("body");
        assert!(html.contains("data-autosubmit"), "{path}: Ana has two teams, so the switcher is there");
        let islands = assert_no_inline_code(path, &html);
        if path == "/alerts" {
            alerts_islands = islands;
        }
        check_fragments(&c, base, &html).await;
    }
    let (_, rules) = alerts_islands.iter().find(|(id, _)| id == "rules-data").expect("the rules island");
    let names: Vec<&str> = rules.as_array().expect("rules").iter().filter_map(|r| r["name"].as_str()).collect();
    assert!(names.contains(&WEIRD), "the rule's name comes back whole from the island: {names:?}");
}

#[test]
fn the_tag_reader_finds_what_the_checks_look_for() {
    let html = r#"<p class="a">x</p><!-- <script>no</script> --><select name=t onchange="go()"><script>alert(1)</script><script type="application/json" id="d">{"a":1}</script>"#;
    let t = tags(html);
    let names: Vec<&str> = t.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["p", "select", "script", "script"]);
    assert_eq!(t[1].attrs, [("name".to_owned(), "t".to_owned()), ("onchange".to_owned(), "go()".to_owned())]);
    assert_eq!((t[2].text.as_str(), t[3].text.as_str()), ("alert(1)", r#"{"a":1}"#));
    let inline = std::panic::catch_unwind(|| assert_no_inline_code("x", r#"<script>alert(1)</script>"#));
    let handler = std::panic::catch_unwind(|| assert_no_inline_code("x", r#"<a href="/" onclick="x()">a</a>"#));
    let url = std::panic::catch_unwind(|| assert_no_inline_code("x", r#"<a href=" JavaScript:x()">a</a>"#));
    assert!(inline.is_err() && handler.is_err() && url.is_err(), "each is refused");
    assert_eq!(assert_no_inline_code("x", r#"<script src="/assets/a.js" defer></script>"#), []);
}

/// Waits until htmx's load fragments are in and charts had their turn.
async fn settle(b: &Browser) {
    b.find("main").await;
    b.wait_until("return document.readyState === 'complete' && !document.querySelector('.htmx-request');", 10).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_chromium_the_policy_blocks_inline_script_and_the_dashboard_works_under_it() {
    let w = world().await;
    let b = Browser::start(w.hub.http_addr.port(), "csp").await;
    b.sign_in(&w.ana.email, PASSWORD, None).await;

    // The main pages: the recorder of `assets/errors.js` is there, and nothing was refused
    // (a refusal is a `securitypolicyviolation`, which it records).
    for path in [
        "/".to_owned(),
        "/detections".into(),
        format!("/detections/{}", w.det),
        format!("/species/{}", seed::ROBIN.0),
        "/stats".into(),
        format!("/satellites/{}", w.sat),
        "/alerts".into(),
        "/exports".into(),
        "/team".into(),
        "/account".into(),
    ] {
        b.goto(&path).await;
        settle(&b).await;
        assert_eq!(b.js("return Array.isArray(window.__bhErrors);").await, json!(true), "{path}: the recorder ran");
        b.assert_no_js_errors().await;
    }
    // The live page's WebSocket to the same host is allowed by `connect-src 'self'`.
    b.goto("/").await;
    assert!(
        b.wait_until("return document.getElementById('live-state').classList.contains('on');", 10).await,
        "the live feed connects under the policy"
    );

    // The policy is enforced, and a refusal is recorded (so every browser test fails on one).
    b.js("var s = document.createElement('script'); s.textContent = 'window.__inlineRan = true;'; document.head.appendChild(s); return null;").await;
    assert!(
        b.wait_until(
            "return window.__bhErrors.some(function (e) { return e.indexOf('content security policy') >= 0; });",
            5
        )
        .await,
        "the refusal is recorded: {:?}",
        b.js_errors().await
    );
    assert_eq!(
        b.js("return window.__inlineRan === true;").await,
        json!(false),
        "an injected inline script does not run"
    );

    // The team switcher submits from a script file now, not an `onchange=` attribute.
    let team_is =
        |id: &str| format!("return (document.querySelector('meta[name=bh-team]') || {{}}).content === '{id}';");
    let garden = w.ana.tenant.to_string();
    for to in [&w.orchard, &garden] {
        b.goto("/").await;
        settle(&b).await;
        b.find("#team-select").await.select_by_value(to).await.expect("choose a team");
        assert!(b.wait_until(&team_is(to), 10).await, "the switcher changed the team to {to}");
        b.assert_no_js_errors().await;
    }

    // A rule named like the start of a comment and a script leaves the alerts page whole: the
    // row shows it, the island parses, and the edit form after the island works.
    b.goto("/alerts").await;
    settle(&b).await;
    assert_eq!(b.text(&format!("#rule-{} th", w.rule)).await.trim(), WEIRD);
    let names = b.js("return JSON.parse(document.getElementById('rules-data').textContent).map(function (r) { return r.name; });").await;
    assert!(names.as_array().is_some_and(|n| n.contains(&json!(WEIRD))), "{names}");
    assert!(b.has("#rule-form").await && b.has("footer, nav.bottombar").await, "the page after the island is there");
    b.click(&format!("[data-edit-rule='{}']", w.rule)).await;
    assert_eq!(b.js("return document.getElementById('rule-name').value;").await, json!(WEIRD));
    b.assert_no_js_errors().await;
    b.shot("alerts-weird-rule").await;

    // The API docs page (Swagger UI, the hub's own files) renders under the same policy.
    b.goto("/api/docs/index.html").await;
    b.find(".swagger-ui .info .title").await;
    b.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_export_downloaded_by_chromium_from_the_exports_page_is_whole() {
    let w = world().await;
    let downloads = tempfile::tempdir().expect("download dir");
    let b = Browser::start_downloading_to(w.hub.http_addr.port(), "export-download", downloads.path()).await;
    b.sign_in(&w.ana.email, PASSWORD, None).await;
    b.goto("/exports").await;
    settle(&b).await;

    for (link, ext) in [("a[href*='format=csv']", "csv"), ("a[href*='format=json']", "json")] {
        b.click(link).await;
        let file = wait_for_download(downloads.path(), ext).await;
        let text = std::fs::read_to_string(&file).expect("the saved file");
        assert!(!text.is_empty(), "{} was saved empty", file.display());
        if ext == "csv" {
            let mut lines = text.lines();
            assert_eq!(lines.next(), Some(birdhub::usecases::exports::detections::HEADER.join(",").as_str()));
            assert_eq!(lines.count(), 4, "the four detections:\n{text}");
        } else {
            let rows: Value = serde_json::from_str(&text).expect("the saved JSON");
            assert_eq!(rows.as_array().map(Vec::len), Some(4), "{text}");
        }
    }
    b.assert_no_js_errors().await;
    b.close().await;
}

/// The finished download ending in `.ext` in `dir` (chromium writes `.crdownload` until done).
async fn wait_for_download(dir: &std::path::Path, ext: &str) -> std::path::PathBuf {
    for _ in 0..200 {
        let names: Vec<std::path::PathBuf> =
            std::fs::read_dir(dir).expect("download dir").filter_map(|e| e.ok().map(|e| e.path())).collect();
        let busy = names.iter().any(|p| p.extension().is_some_and(|e| e == "crdownload"));
        if let Some(done) = names.iter().find(|p| p.extension().is_some_and(|e| e == ext))
            && !busy
        {
            return done.clone();
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("no .{ext} download in {}", dir.display());
}
