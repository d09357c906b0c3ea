//! What the `Idempotency-Key` cache keeps, over real HTTP (issue 48, findings 5 and 8): only the
//! answers of routes that create something, within a byte budget per caller; and never for a
//! credential that is no longer live.

mod common;

use common::Api;
use reqwest::StatusCode;
use serde_json::{Value, json};

/// A keyed POST: (status, replayed?, body).
async fn keyed(api: &Api, key: &str, path: &str, body: &Value) -> (StatusCode, bool, String) {
    let mut req = api.client.post(format!("{}/api{path}", api.base)).header("Idempotency-Key", key).json(body);
    if let Some(b) = &api.bearer {
        req = req.bearer_auth(b);
    }
    let resp = req.send().await.expect("request");
    let replayed = resp.headers().contains_key("idempotent-replayed");
    (resp.status(), replayed, resp.text().await.expect("body"))
}

/// This process's resident memory (the hub runs in it), in bytes.
fn rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("status");
    let kb = status.lines().find_map(|l| l.strip_prefix("VmRSS:")).expect("VmRSS");
    kb.trim().trim_end_matches("kB").trim().parse::<u64>().expect("kB") * 1024
}

fn count(hub: &common::TestHub, table: &str) -> i64 {
    hub.sql(|c| c.query_row(&format!("SELECT count(*) FROM {table}"), [], |r| r.get(0)).expect("count"))
}

#[tokio::test]
async fn large_answers_of_routes_that_create_nothing_are_not_kept() {
    let hub = common::spawn_hub_with(common::with_model).await;
    let owner = hub.user("owner@example.org", false).await;
    let viewer = hub.member_of("vic@example.org", owner.tenant, birdhub::domain::Role::Viewer).await;
    let api = hub.login(&viewer.email).await;
    // 500 unknown names of 400 characters: a ~220 KB answer echoing them.
    let names: Vec<String> = (0..500).map(|i| format!("{i:04}{}", "q".repeat(396))).collect();
    let body = json!({"names": names, "lang": "en"});

    // Warm up (connections, the allocator's arenas), then measure.
    for i in 0..20 {
        assert_eq!(api.post("/species/translate", body.clone()).await.0, 200, "warm-up {i}");
    }
    let before = rss();
    let mut answer_bytes = 0;
    for i in 0..220 {
        let (status, replayed, text) = keyed(&api, &format!("translate-{i}"), "/species/translate", &body).await;
        assert_eq!((status, replayed), (StatusCode::OK, false), "{i}");
        answer_bytes += text.len();
    }
    let grown = rss().saturating_sub(before);
    eprintln!("220 keyed answers of {answer_bytes} bytes in all; resident memory grew by {grown} bytes");
    assert!(answer_bytes > 40_000_000, "the answers were large: {answer_bytes}");
    assert!(grown < 12 * 1024 * 1024, "the answers were kept: resident memory grew by {grown} bytes");

    let (status, replayed, _) = keyed(&api, "translate-0", "/species/translate", &body).await;
    assert_eq!((status, replayed), (StatusCode::OK, false), "the repeat runs again: nothing was kept");
}

#[tokio::test]
async fn one_caller_keeps_at_most_its_share_and_another_callers_answers_stay() {
    let hub = common::spawn_hub().await;
    let ada = hub.user("ada@example.org", false).await;
    let ben = hub.user("ben@example.org", false).await;
    let (ada_api, ben_api) = (hub.login(&ada.email).await, hub.login(&ben.email).await);
    let invite = json!({"role": "member"});

    let (status, _, bens) = keyed(&ben_api, "ben-1", "/auth/invites", &invite).await;
    assert_eq!(status, StatusCode::CREATED, "{bens}");
    // More creations than one caller may keep (256).
    for i in 0..300 {
        let (status, replayed, text) = keyed(&ada_api, &format!("ada-{i}"), "/auth/invites", &invite).await;
        assert_eq!((status, replayed), (StatusCode::CREATED, false), "{i}: {text}");
    }
    let made = count(&hub, "invites");

    let (status, replayed, _) = keyed(&ada_api, "ada-299", "/auth/invites", &invite).await;
    assert_eq!((status, replayed), (StatusCode::CREATED, true), "ada's newest answer is kept");
    let (status, replayed, _) = keyed(&ada_api, "ada-0", "/auth/invites", &invite).await;
    assert_eq!((status, replayed), (StatusCode::CREATED, false), "ada's oldest answer was dropped: it runs again");
    assert_eq!(count(&hub, "invites"), made + 1);
    let (status, replayed, again) = keyed(&ben_api, "ben-1", "/auth/invites", &invite).await;
    assert_eq!((status, replayed), (StatusCode::CREATED, true), "ben's answer stays");
    assert_eq!(again, bens);
    assert_eq!(count(&hub, "invites"), made + 1);
}

#[tokio::test]
async fn a_signed_out_token_never_gets_a_kept_answer_back() {
    let hub = common::spawn_hub().await;
    hub.user("ada@example.org", false).await;
    let token = hub.token("ada@example.org").await;
    let api = Api::with_bearer(&hub.base_url, &token);
    let body = json!({"name": "weather station", "role": "viewer"});

    let (status, _, created) = keyed(&api, "key-1", "/api-keys", &body).await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let secret = serde_json::from_str::<Value>(&created).expect("json")["key"].as_str().expect("key").to_owned();
    let (status, replayed, again) = keyed(&api, "key-1", "/api-keys", &body).await;
    assert_eq!((status, replayed), (StatusCode::CREATED, true), "while signed in, the repeat gets the answer");
    assert!(again.contains(&secret));

    assert_eq!(api.post_empty("/auth/logout").await.0, 204);
    let (status, replayed, after) = keyed(&api, "key-1", "/api-keys", &body).await;
    assert_eq!((status, replayed), (StatusCode::UNAUTHORIZED, false), "{after}");
    assert!(!after.contains(&secret), "the key's secret was answered after sign-out: {after}");
    assert_eq!(count(&hub, "api_keys"), 1, "nothing more was made");
}
