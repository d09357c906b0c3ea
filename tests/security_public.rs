//! The public account routes as a stranger sees them (issue 34, findings 2, 3, 6 and 8): over-long
//! input is refused before anything is written, budgets are taken before the work they pay for,
//! password hashing goes through one bounded pool, limits hold against requests sent all at once,
//! and signing in never sends the browser to another site.

mod common;

use common::{PASSWORD, TestHub, assert_error, oathtool};
use futures_util::future::join_all;
use reqwest::{StatusCode, redirect::Policy};
use serde_json::{Value, json};

/// How many answers had each status.
fn tally(answers: &[(StatusCode, Value)]) -> std::collections::BTreeMap<u16, usize> {
    let mut by = std::collections::BTreeMap::new();
    for (status, _) in answers {
        *by.entry(status.as_u16()).or_insert(0) += 1;
    }
    by
}

fn count(hub: &TestHub, sql: &str) -> i64 {
    hub.sql(|c| c.query_row(sql, [], |r| r.get(0)).expect("count"))
}

/// A client whose requests come from `ip` (the hub trusts `X-Forwarded-For` in these tests).
fn from(hub: &TestHub, ip: &str) -> common::Api {
    hub.anon().header("x-forwarded-for", ip)
}

/// A hub behind a (simulated) reverse proxy, so requests can come from many addresses.
async fn proxied_hub() -> TestHub {
    common::spawn_hub_with(|s| s.http.trust_proxy = true).await
}

// ---- finding 2: bounded input, the budget before any write, a bounded audit log ----

#[tokio::test]
async fn over_long_emails_passwords_and_tokens_are_refused_before_anything_is_written() {
    let hub = common::spawn_hub().await;
    let root = hub.user("root@example.org", true).await;
    let admin = hub.login(&root.email).await;
    let (ledger_before, audit_before) =
        (count(&hub, "SELECT count(*) FROM login_attempts"), count(&hub, "SELECT count(*) FROM audit_log"));
    let long = format!("{}@example.org", "a".repeat(300));
    let anon = hub.anon();
    let refused = [
        anon.post("/auth/login", json!({"email": long, "password": PASSWORD})).await,
        anon.post("/auth/login", json!({"email": root.email, "password": "p".repeat(2000)})).await,
        anon.post("/auth/forgot-password", json!({"email": long})).await,
        anon.post("/auth/register", json!({"email": long, "name": "Long", "password": PASSWORD})).await,
        anon.post("/auth/register", json!({"email": "x@example.org", "name": "X", "password": "p".repeat(2000)})).await,
        anon.post("/auth/reset-password", json!({"token": "ab".repeat(400), "password": PASSWORD})).await,
        anon.post("/auth/login/mfa/totp", json!({"mfaToken": "a".repeat(600), "code": "123456"})).await,
        admin.post("/auth/invites", json!({"role": "viewer", "email": long})).await,
        admin.put("/auth/me/profile", json!({"email": long})).await,
        admin.put(&format!("/admin/users/{}", root.id), json!({"email": long})).await,
    ];
    for got in &refused {
        assert_error(got, 400, "input_too_long");
    }
    // A body near the old 2 MB cap is not even read.
    let huge = format!("{}@example.org", "a".repeat(1_900_000));
    assert_error(&anon.post("/auth/forgot-password", json!({"email": huge})).await, 413, "payload_too_large");
    assert_error(&anon.post("/auth/login", json!({"email": huge, "password": "x"})).await, 413, "payload_too_large");
    assert_eq!(count(&hub, "SELECT count(*) FROM login_attempts"), ledger_before, "no ledger row");
    assert_eq!(count(&hub, "SELECT count(*) FROM audit_log"), audit_before, "no audit entry");
    assert_eq!(hub.state().passwords.stats().hashes, 0, "nothing was hashed");
    // The longest valid address is still fine.
    let longest = format!("{}@example.org", "b".repeat(254 - 12));
    assert_error(
        &anon.post("/auth/login", json!({"email": longest, "password": PASSWORD})).await,
        401,
        "invalid_credentials",
    );
}

#[tokio::test]
async fn forgot_password_takes_its_budget_before_it_writes_and_keeps_no_address() {
    let hub = common::spawn_hub().await;
    hub.user("ada@example.org", false).await;
    let api = hub.anon();
    for i in 0..12 {
        let email = if i % 2 == 0 { "ada@example.org".to_owned() } else { format!("stranger{i}@example.org") };
        assert_eq!(api.post("/auth/forgot-password", json!({"email": email})).await.0, 204);
    }
    assert_eq!(count(&hub, "SELECT count(*) FROM login_attempts WHERE kind = 'forgot_password'"), 5);
    assert_eq!(count(&hub, "SELECT count(*) FROM password_reset_tokens"), 3, "only requests within the budget");
    let kept: Vec<String> = hub.sql(|c| {
        let mut s = c.prepare("SELECT email FROM login_attempts").expect("q");
        s.query_map([], |r| r.get(0)).expect("rows").map(|r| r.expect("row")).collect()
    });
    assert!(kept.iter().all(|e| e.len() == 64 && !e.contains('@')), "a fixed-length hash, not the address: {kept:?}");
    // Logins keep a hash too, and the audit log at most the (bounded) address typed.
    assert_eq!(api.post("/auth/login", json!({"email": "who@example.org", "password": "wrong password"})).await.0, 401);
    let typed: i64 = count(&hub, "SELECT count(*) FROM login_attempts WHERE email LIKE '%@%'");
    assert_eq!(typed, 0);
}

#[tokio::test]
async fn the_audit_log_is_pruned_after_its_retention() {
    let keep = |s: &mut birdhub::config::Settings| s.retention.keep_audit_days = 30;
    let hub = common::spawn_hub_with(keep).await;
    let stamp =
        |days: i64| (chrono::Utc::now() - chrono::Duration::days(days)).format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string();
    let (old, recent) = (stamp(40), stamp(20));
    hub.sql(|c| {
        for (action, at) in [("test.old", &old), ("test.recent", &recent)] {
            c.execute("INSERT INTO audit_log (action, created_at) VALUES (?1, ?2)", [action, at.as_str()])
                .expect("insert");
        }
    });
    // The housekeeping runs at start and every hour: restart the hub on the same data.
    let dir = hub.stop_keeping_data().await;
    let hub = common::spawn_hub_in(dir, keep).await;
    let mut left = count(&hub, "SELECT count(*) FROM audit_log WHERE action = 'test.old'");
    for _ in 0..200 {
        if left == 0 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        left = count(&hub, "SELECT count(*) FROM audit_log WHERE action = 'test.old'");
    }
    assert_eq!(left, 0, "an entry older than 30 days is gone");
    assert_eq!(count(&hub, "SELECT count(*) FROM audit_log WHERE action = 'test.recent'"), 1, "a newer one stays");
}

// ---- finding 3: the gate before the hash, one bounded pool, a register budget ----

#[tokio::test]
async fn closed_registration_refuses_sixty_parallel_requests_without_hashing() {
    let hub = common::spawn_hub().await;
    hub.user("root@example.org", true).await;
    let api = hub.anon();
    let closed = (0..60).map(|i| {
        let api = api.clone();
        async move {
            let body = json!({"email": format!("new{i}@example.org"), "name": "New", "password": PASSWORD});
            api.post("/auth/register", body).await
        }
    });
    for got in join_all(closed).await {
        assert_error(&got, 403, "registration_closed");
    }
    let forged = (0..60).map(|i| {
        let api = api.clone();
        async move {
            let body = json!({"email": format!("inv{i}@example.org"), "name": "New", "password": PASSWORD,
                              "inviteToken": format!("{i:048x}")});
            api.post("/auth/register", body).await
        }
    });
    for got in join_all(forged).await {
        assert_error(&got, 400, "invalid_invite");
    }
    let stats = hub.state().passwords.stats();
    assert_eq!((stats.hashes, stats.verifications), (0, 0), "no password was hashed: {stats:?}");
    assert_eq!(count(&hub, "SELECT count(*) FROM users"), 1);
}

#[tokio::test]
async fn parallel_logins_never_run_more_hashes_than_the_pool_allows() {
    let hub = proxied_hub().await;
    let mut people = Vec::new();
    for i in 0..8 {
        people.push(hub.user(&format!("p{i}@example.org"), false).await.email);
    }
    let logins = (0..40).map(|i| {
        let (api, email) = (from(&hub, &format!("10.1.0.{i}")), people[i % 8].clone());
        async move { api.post("/auth/login", json!({"email": email, "password": PASSWORD})).await }
    });
    let answers = join_all(logins).await;
    assert_eq!(tally(&answers).get(&200), Some(&40), "{:?}", tally(&answers));
    let stats = hub.state().passwords.stats();
    assert_eq!(stats.verifications, 40, "every login verified once: {stats:?}");
    assert!(stats.peak >= 1 && stats.peak <= stats.limit, "at most {} at once: {stats:?}", stats.limit);
    let cores = std::thread::available_parallelism().map_or(2, std::num::NonZeroUsize::get);
    assert_eq!(stats.limit, cores, "about one argon2 run per core");
    assert_eq!(stats.running, 0);
}

#[tokio::test]
async fn registrations_from_one_address_beyond_the_limit_get_429() {
    let hub = common::spawn_hub().await;
    let root = hub.user("root@example.org", true).await;
    let admin = hub.login(&root.email).await;
    assert_eq!(admin.put("/settings/platform", json!({"allow_self_registration": true})).await.0, 200);
    let api = hub.anon();
    for i in 0..10 {
        let body = json!({"email": format!("new{i}@example.org"), "name": "New", "password": PASSWORD});
        assert_eq!(api.post("/auth/register", body).await.0, 201, "registration {i}");
    }
    let body = json!({"email": "eleventh@example.org", "name": "New", "password": PASSWORD});
    assert_error(&api.post("/auth/register", body).await, 429, "rate_limited");
    assert_eq!(hub.state().passwords.stats().hashes, 10, "the refused one was not hashed");
    assert_eq!(count(&hub, "SELECT count(*) FROM users"), 11);
}

// ---- finding 6: attempts are reserved before they are checked ----

#[tokio::test]
async fn forty_parallel_logins_from_one_address_evaluate_at_most_twenty() {
    let hub = common::spawn_hub().await;
    let api = hub.anon();
    let logins = (0..40).map(|i| {
        let api = api.clone();
        async move { api.post("/auth/login", json!({"email": format!("n{i}@example.org"), "password": PASSWORD})).await }
    });
    let answers = join_all(logins).await;
    let by = tally(&answers);
    assert_eq!((by.get(&401), by.get(&429)), (Some(&20), Some(&20)), "{by:?}");
    // Each evaluated login verified a password (a decoy one: the addresses are unknown).
    assert_eq!(hub.state().passwords.stats().verifications, 20);
    assert_eq!(count(&hub, "SELECT count(*) FROM login_attempts WHERE kind = 'login'"), 20);
}

#[tokio::test]
async fn forty_parallel_wrong_passwords_get_at_most_five_guesses_before_the_lock() {
    let hub = proxied_hub().await;
    let ada = hub.user("ada@example.org", false).await;
    let guesses = (0..40).map(|i| {
        let (api, email) = (from(&hub, &format!("10.2.0.{i}")), ada.email.clone());
        async move { api.post("/auth/login", json!({"email": email, "password": format!("guess number {i}")})).await }
    });
    let answers = join_all(guesses).await;
    let by = tally(&answers);
    assert_eq!((by.get(&401), by.get(&423)), (Some(&4), Some(&36)), "{by:?}");
    assert_eq!(hub.state().passwords.stats().verifications, 5, "five passwords were checked, no more");
    let right = from(&hub, "10.2.1.1").post("/auth/login", json!({"email": ada.email, "password": PASSWORD})).await;
    assert_error(&right, 423, "account_locked");
}

#[tokio::test]
async fn forty_parallel_codes_on_one_mfa_token_get_at_most_five_guesses() {
    let hub = proxied_hub().await;
    let ann = hub.user("ann@example.org", false).await;
    let enrolling = hub.login(&ann.email).await;
    let (status, setup) = enrolling.post("/auth/mfa/totp/begin", json!({})).await;
    assert_eq!(status, 200, "{setup}");
    let key = setup["manualKey"].as_str().expect("manualKey").to_owned();
    let code = oathtool(&key, hub.state().clock.now());
    assert_eq!(enrolling.post("/auth/mfa/totp/confirm", json!({"code": code})).await.0, 200);
    let (status, challenge) = hub.anon().post("/auth/login", json!({"email": ann.email, "password": PASSWORD})).await;
    assert_eq!((status.as_u16(), challenge["mfaRequired"].clone()), (200, json!(true)), "{challenge}");
    let token = challenge["mfaToken"].as_str().expect("mfaToken").to_owned();
    let wrong = oathtool(&key, hub.state().clock.now() + chrono::Duration::minutes(10));

    let guesses = (0..40).map(|i| {
        let (api, body) = (from(&hub, &format!("10.3.0.{i}")), json!({"mfaToken": token, "code": wrong}));
        async move { api.post("/auth/login/mfa/totp", body).await }
    });
    let answers = join_all(guesses).await;
    let by = tally(&answers);
    assert_eq!(by.get(&200), None, "{by:?}");
    assert_eq!(by.get(&401), Some(&4), "four wrong codes answered as such: {by:?}");
    let checked = count(
        &hub,
        "SELECT count(*) FROM audit_log WHERE action = 'user.login_failed' AND details_json LIKE '%invalid_mfa%'",
    );
    assert_eq!(checked, 5, "five codes were checked, no more");
    let right = oathtool(&key, hub.state().clock.now());
    assert_error(
        &hub.anon().post("/auth/login/mfa/totp", json!({"mfaToken": token, "code": right})).await,
        423,
        "account_locked",
    );
}

// ---- finding 8: no open redirect after sign-in ----

fn browser() -> reqwest::Client {
    reqwest::Client::builder().cookie_store(true).redirect(Policy::none()).build().expect("client")
}

fn csrf_of(html: &str) -> String {
    let at = html.find("name=\"_csrf\" value=\"").expect("a CSRF field") + 20;
    html[at..at + 32].to_owned()
}

fn location(r: &reqwest::Response) -> Option<String> {
    r.headers().get("location").and_then(|v| v.to_str().ok()).map(str::to_owned)
}

#[tokio::test]
async fn sign_in_never_sends_the_browser_to_another_site() {
    let hub = common::spawn_hub().await;
    let ana = hub.user("ana@example.org", false).await;
    let outside =
        ["/%09/evil.example", "//evil.example", "/%5Cevil.example", "https://evil.example", "/%0A/evil.example"];
    for query in outside {
        let decoded: String = url::form_urlencoded::parse(format!("n={query}").as_bytes())
            .next()
            .map(|(_, v)| v.into_owned())
            .expect("value");
        let c = browser();
        let r = c.get(format!("{}/signin?next={query}", hub.base_url)).send().await.expect("GET");
        let html = r.text().await.expect("page");
        assert!(html.contains("name=\"next\" value=\"/\""), "{query}: the form carries / only");
        let csrf = csrf_of(&html);
        // The second step's form keeps only a local path too.
        let step = [
            ("_csrf", csrf.clone()),
            ("mfaToken", "garbage".into()),
            ("code", "123456".into()),
            ("next", decoded.clone()),
        ];
        let r = c.post(format!("{}/signin/mfa", hub.base_url)).form(&step).send().await.expect("POST");
        let page = r.text().await.expect("page");
        assert!(page.contains("name=\"next\" value=\"/\"") && !page.contains("evil.example"), "{query}: {page}");
        let form =
            [("_csrf", csrf), ("email", ana.email.clone()), ("password", PASSWORD.into()), ("next", decoded.clone())];
        let r = c.post(format!("{}/signin", hub.base_url)).form(&form).send().await.expect("POST");
        assert_eq!(r.status(), StatusCode::SEE_OTHER);
        assert_eq!(location(&r).as_deref(), Some("/"), "{decoded:?} after the password");
        // Already signed in, the sign-in page sends the browser on at once.
        let r = c.get(format!("{}/signin?next={query}", hub.base_url)).send().await.expect("GET");
        assert_eq!(location(&r).as_deref(), Some("/"), "{query} when signed in");
    }
    let c = browser();
    let html = c.get(format!("{}/signin", hub.base_url)).send().await.expect("GET").text().await.expect("page");
    let form =
        [("_csrf", csrf_of(&html)), ("email", ana.email), ("password", PASSWORD.into()), ("next", "/stats?x=1".into())];
    let r = c.post(format!("{}/signin", hub.base_url)).form(&form).send().await.expect("POST");
    assert_eq!(location(&r).as_deref(), Some("/stats?x=1"), "a local path is still followed");
}
