//! The dashboard's shell over real HTTP: first run with the setup code, sign-in and the way back
//! to the page asked for, CSRF refusals, an expired session in the middle of a page, and another
//! team's ids. (The browser flows are in `browser_core.rs`.)

mod common;

use common::{PASSWORD, seed};
use reqwest::{StatusCode, redirect::Policy};
use serde_json::{Value, json};

/// A cookie-keeping client that does not follow redirects, so tests see where they point.
fn browser() -> reqwest::Client {
    reqwest::Client::builder().cookie_store(true).redirect(Policy::none()).build().expect("client")
}

/// The `_csrf` value in a page's form.
fn csrf_of(html: &str) -> String {
    let at = html.find("name=\"_csrf\" value=\"").expect("a CSRF field") + 20;
    html[at..at + 32].to_owned()
}

async fn page(c: &reqwest::Client, url: &str) -> (StatusCode, String, Option<String>) {
    let r = c.get(url).send().await.expect("GET");
    let loc = r.headers().get("location").and_then(|v| v.to_str().ok()).map(str::to_owned);
    (r.status(), r.text().await.expect("body"), loc)
}

async fn sign_in(hub: &common::TestHub, c: &reqwest::Client, email: &str) {
    let (_, html, _) = page(c, &format!("{}/signin", hub.base_url)).await;
    let form =
        [("_csrf", csrf_of(&html)), ("email", email.into()), ("password", PASSWORD.into()), ("next", "/".into())];
    let r = c.post(format!("{}/signin", hub.base_url)).form(&form).send().await.expect("POST");
    assert_eq!(r.status(), StatusCode::SEE_OTHER, "signed in");
}

#[tokio::test]
async fn first_run_needs_the_setup_code_from_the_log_and_happens_once() {
    let hub = common::spawn_hub().await;
    let c = browser();
    let (status, html, _) = page(&c, &format!("{}/", hub.base_url)).await;
    assert_eq!(status, 200);
    assert!(html.contains("Create the first account") || html.contains("Welcome to birdhub"), "{html}");
    let code = std::fs::read_to_string(hub.data_dir.join("setup-code")).expect("the code file").trim().to_owned();
    let token = csrf_of(&html);
    let post = |code: String, email: &str| {
        let form = [
            ("_csrf", token.clone()),
            ("code", code),
            ("name", "Ana".into()),
            ("email", email.to_owned()),
            ("password", PASSWORD.into()),
        ];
        c.post(format!("{}/setup", hub.base_url)).form(&form).send()
    };
    let wrong = post("AAAAA-AAAAA".into(), "ana@example.org").await.expect("POST");
    assert_eq!(wrong.status(), StatusCode::FORBIDDEN);
    assert!(wrong.text().await.expect("body").contains("setup code is not right"));
    let weak = post(code.clone(), "not-an-email").await.expect("POST");
    assert_eq!(weak.status(), StatusCode::UNPROCESSABLE_ENTITY, "a bad email is said on the form");

    let ok = post(code.to_lowercase(), "ana@example.org").await.expect("POST");
    assert_eq!(ok.status(), StatusCode::SEE_OTHER);
    assert_eq!(ok.headers()["location"], "/satellites", "the next step is adding a satellite");
    let me: Value = c.get(hub.api("/auth/me")).send().await.expect("me").json().await.expect("json");
    assert_eq!(me["user"]["isPlatformAdmin"], json!(true), "the first account runs the hub: {me}");
    assert_eq!(me["tenants"][0]["name"], json!("Ana's team"));
    assert!(!hub.data_dir.join("setup-code").exists(), "the code is spent");

    // A second person with the same code gets nothing.
    let other = browser();
    let (_, html, loc) = page(&other, &format!("{}/", hub.base_url)).await;
    assert!(loc.is_some_and(|l| l.starts_with("/signin")), "no setup page any more: {html}");
    let again = other
        .post(format!("{}/setup", hub.base_url))
        .form(&[("_csrf", "x".repeat(32)), ("code", code), ("email", "eve@example.org".into())])
        .send()
        .await
        .expect("POST");
    assert_eq!(again.status(), StatusCode::FORBIDDEN, "no CSRF cookie: refused before anything");
    assert_eq!(hub.sql(|c| c.query_row("SELECT count(*) FROM users", [], |r| r.get::<_, i64>(0))).expect("count"), 1);
}

/// Issue 48: whoever makes a team is its admin, so a household hub lets nobody but its owner make
/// teams unless the owner says so on the first-run page. Both choices, as a person makes them.
#[tokio::test]
async fn the_first_run_page_decides_whether_invited_people_may_make_teams() {
    for allow in [false, true] {
        let hub = common::spawn_hub().await;
        let c = browser();
        let (_, html, _) = page(&c, &format!("{}/", hub.base_url)).await;
        assert!(html.contains("name=\"allow_tenant_creation\""), "the choice is on the page: {html}");
        assert!(!html.contains("checked"), "and off unless ticked");
        let code = std::fs::read_to_string(hub.data_dir.join("setup-code")).expect("code").trim().to_owned();
        let mut form = vec![
            ("_csrf", csrf_of(&html)),
            ("code", code),
            ("name", "Ana".to_owned()),
            ("email", "ana@example.org".to_owned()),
            ("password", PASSWORD.to_owned()),
        ];
        if allow {
            form.push(("allow_tenant_creation", "on".to_owned()));
        }
        let ok = c.post(format!("{}/setup", hub.base_url)).form(&form).send().await.expect("POST");
        assert_eq!(ok.status(), StatusCode::SEE_OTHER);
        let owner: Value = c.get(hub.api("/auth/me")).send().await.expect("me").json().await.expect("json");
        let team = owner["tenants"][0]["id"].as_str().expect("team").parse().expect("id");
        let guest = hub.member_of("guest@example.org", team, birdhub::domain::Role::Member).await;
        let (status, body) = hub.login(&guest.email).await.post("/auth/create-tenant", json!({"name": "Mine"})).await;
        let teams = hub.sql(|c| c.query_row("SELECT count(*) FROM tenants", [], |r| r.get::<_, i64>(0))).expect("n");
        if allow {
            assert_eq!((status.as_u16(), teams), (201, 2), "ticked: the guest made a team: {body}");
        } else {
            assert_eq!((status.as_u16(), teams), (403, 1), "not ticked: no team was made: {body}");
            assert_eq!(body["code"], "tenant_creation_disabled");
        }
    }
}

#[tokio::test]
async fn pages_send_people_to_sign_in_and_back_and_refuse_forged_posts() {
    let hub = common::spawn_hub().await;
    let ana = hub.user("ana@example.org", false).await;
    let c = browser();
    let (status, _, loc) = page(&c, &format!("{}/?x=1", hub.base_url)).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert_eq!(loc.as_deref(), Some("/signin?next=%2F%3Fx%3D1"));

    // The sign-in form goes back to `next`, but never to another site.
    let (_, html, _) = page(&c, &format!("{}/signin?next=//evil.example/", hub.base_url)).await;
    assert!(html.contains("name=\"next\" value=\"/\""), "an outside next becomes /");
    let form = [
        ("_csrf", csrf_of(&html)),
        ("email", ana.email.clone()),
        ("password", PASSWORD.into()),
        ("next", "/?x=1".into()),
    ];
    let r = c.post(format!("{}/signin", hub.base_url)).form(&form).send().await.expect("POST");
    assert_eq!(r.headers()["location"], "/?x=1");

    // Forged posts: a wrong token, or the right token from another site.
    let token = csrf_of(&page(&c, &format!("{}/", hub.base_url)).await.1);
    let forged =
        c.post(format!("{}/signout", hub.base_url)).form(&[("_csrf", "0".repeat(32))]).send().await.expect("POST");
    assert_eq!(forged.status(), StatusCode::FORBIDDEN);
    let body = forged.text().await.expect("body");
    assert!(body.contains("security token") && body.contains("<html"), "a page that says why: {body}");
    let cross = c
        .post(format!("{}/signout", hub.base_url))
        .header("origin", "http://evil.example")
        .form(&[("_csrf", token.clone())])
        .send()
        .await
        .expect("POST");
    assert_eq!(cross.status(), StatusCode::FORBIDDEN);
    assert_eq!(page(&c, &format!("{}/", hub.base_url)).await.0, 200, "still signed in after both");

    // The API refuses cookie writes from another site too, and takes them from our own page.
    let api_cross = c
        .put(hub.api("/auth/me/preferences"))
        .header("origin", "http://evil.example")
        .json(&json!({ "language": "de" }))
        .send()
        .await
        .expect("PUT");
    assert_eq!(api_cross.status(), StatusCode::FORBIDDEN);
    let body: Value = api_cross.json().await.expect("json");
    assert_eq!(body["code"], "cross_origin");
    let own = c
        .put(hub.api("/auth/me/preferences"))
        .header("origin", hub.base_url.clone())
        .json(&json!({ "language": "de" }))
        .send()
        .await
        .expect("PUT");
    assert_eq!(own.status(), StatusCode::OK);

    // Sign out with the right token: the next page asks to sign in again.
    let out = c.post(format!("{}/signout", hub.base_url)).form(&[("_csrf", token)]).send().await.expect("POST");
    assert_eq!(out.headers()["location"], "/signin");
    assert_eq!(page(&c, &format!("{}/", hub.base_url)).await.0, StatusCode::SEE_OTHER);
}

#[tokio::test]
async fn an_expired_session_mid_page_and_another_teams_ids_get_the_right_pages() {
    let hub = common::spawn_hub().await;
    let ana = hub.user("ana@example.org", false).await;
    let bob = hub.user("bob@example.org", false).await;
    let sat_b = seed::satellite(&hub, bob.tenant, "Bob's garden").await;
    let chunk = seed::chunk(&hub, bob.tenant, sat_b, "2026-05-15T06:30:00Z").await;
    let det_b = seed::detection(&hub, bob.tenant, sat_b, chunk, "2026-05-15T06:30:00Z", seed::ROBIN, 0.9).await;

    let c = browser();
    sign_in(&hub, &c, &ana.email).await;
    // Another team's detection, asked for as a Live card: the not-found page, never its data.
    let (status, html, _) = page(&c, &format!("{}/live/card/{det_b}", hub.base_url)).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(!html.contains("Bob's garden") && html.contains("Not found"), "{html}");
    // Unknown pages are pages; unknown API routes stay JSON.
    let (status, html, _) = page(&c, &format!("{}/no-such-page", hub.base_url)).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(html.contains("There is no page at /no-such-page"));
    let api404 = c.get(hub.api("/no-such-route")).send().await.expect("GET");
    assert_eq!(api404.status(), StatusCode::NOT_FOUND);
    assert!(api404.headers()["content-type"].to_str().unwrap_or("").starts_with("application/json"));

    // The session runs out while the Live page is open: its next partial update sends the
    // browser (through htmx's HX-Redirect) to sign in and back to the page, not the fragment.
    hub.state().clock.advance(std::time::Duration::from_secs(8 * 86_400));
    let r = c
        .get(format!("{}/live/today", hub.base_url))
        .header("hx-request", "true")
        .header("hx-current-url", format!("{}/?day=today", hub.base_url))
        .send()
        .await
        .expect("GET");
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert_eq!(r.headers()["hx-redirect"], "/signin?next=%2F%3Fday%3Dtoday");
}
