//! Alert rules and channels over HTTP (SPEC 4.6): who may change them, what is refused and how,
//! secrets that never come back, test sends through the real pipeline to a real receiver (signed
//! webhooks, the four chat shapes field by field, a payload template) and email to an SMTP sink.

mod common;

use common::{Api, assert_error, receiver::Receiver, smtp};
use serde_json::{Value, json};

async fn test_send(api: &Api, id: &Value) -> Value {
    let (status, report) = api.post_empty(&format!("/alert-rules/channels/{}/test", id.as_str().expect("id"))).await;
    assert_eq!(status, 200, "{report}");
    report
}

#[tokio::test]
async fn viewers_read_admins_write_and_the_system_rule_is_always_there() {
    let hub = common::spawn_hub().await;
    let owner = hub.user("owner@example.org", false).await;
    let viewer = hub.member_of("viewer@example.org", owner.tenant, birdhub::domain::Role::Viewer).await;
    let member = hub.member_of("member@example.org", owner.tenant, birdhub::domain::Role::Member).await;
    let (admin, view, memb) =
        (hub.login(&owner.email).await, hub.login(&viewer.email).await, hub.login(&member.email).await);

    let (status, rules) = view.get("/alert-rules/rules").await;
    assert_eq!(status, 200, "{rules}");
    let system = &rules["rules"][0];
    assert_eq!(
        (system["systemKey"].clone(), system["name"].clone()),
        (json!("satellite_offline"), json!("Satellite offline"))
    );

    let body = json!({"name": "Rarities", "trigger": "detection", "conditions": {"special": ["rare"]}});
    assert_error(&view.post("/alert-rules/rules", body.clone()).await, 403, "insufficient_role");
    assert_error(&memb.post("/alert-rules/rules", body.clone()).await, 403, "insufficient_role");
    assert_error(
        &memb
            .post("/alert-rules/channels", json!({"type": "webhook", "name": "x", "config": {"url": "http://x.org"}}))
            .await,
        403,
        "insufficient_role",
    );
    let (status, rule) = admin.post("/alert-rules/rules", body).await;
    assert_eq!(status, 201, "{rule}");
    assert_eq!((rule["cooldownMinutes"].clone(), rule["enabled"].clone()), (json!(30), json!(true)));
    assert_eq!(rule["conditions"], json!({"special": ["rare"]}));

    // The system rule takes channels and a cooldown, but keeps its name and cannot go.
    let hook = admin
        .create(
            "/alert-rules/channels",
            json!({"type": "webhook", "name": "Home", "config": {"url": "http://hass.local:8123/api/webhook/birds"}}),
        )
        .await;
    let sys_path = format!("/alert-rules/rules/{}", system["id"].as_str().expect("id"));
    let (status, wired) = admin.put(&sys_path, json!({"channelIds": [hook["id"], hook["id"]]})).await;
    assert_eq!(status, 200, "{wired}");
    assert_eq!(wired["channelIds"], json!([hook["id"]]), "a channel named twice is wired once");
    assert_error(&admin.put(&sys_path, json!({"name": "Renamed"})).await, 409, "system_rule");
    assert_error(&admin.delete(&sys_path).await, 409, "system_rule");

    let rule_path = format!("/alert-rules/rules/{}", rule["id"].as_str().expect("id"));
    let (status, changed) = admin.put(&rule_path, json!({"enabled": false, "cooldownMinutes": 5})).await;
    assert_eq!(status, 200, "{changed}");
    assert_eq!(
        (changed["enabled"].clone(), changed["cooldownMinutes"].clone(), changed["name"].clone()),
        (json!(false), json!(5), json!("Rarities"))
    );
    assert_eq!(admin.delete(&rule_path).await.0, 204);
    assert_error(&admin.delete(&rule_path).await, 404, "rule_not_found");

    // Deleting a channel unhooks it from the rules.
    assert_eq!(admin.delete(&format!("/alert-rules/channels/{}", hook["id"].as_str().expect("id"))).await.0, 204);
    let (_, rules) = view.get("/alert-rules/rules").await;
    assert_eq!(rules["rules"][0]["channelIds"], json!([]));

    let actions: Vec<String> = hub.sql(|c| {
        let mut s = c.prepare("SELECT action FROM audit_log ORDER BY rowid").expect("sql");
        s.query_map([], |r| r.get(0)).expect("rows").collect::<Result<_, _>>().expect("actions")
    });
    for a in [
        "admin.alert_rule_created",
        "admin.alert_rule_updated",
        "admin.alert_rule_deleted",
        "admin.webhook_created",
        "admin.webhook_deleted",
    ] {
        assert!(actions.iter().any(|x| x == a), "{a} in {actions:?}");
    }
}

#[tokio::test]
async fn bad_rules_and_channels_get_clear_4xx_errors() {
    let hub = common::spawn_hub().await;
    let owner = hub.user("owner@example.org", false).await;
    let other = hub.user("other@example.org", false).await;
    let (admin, them) = (hub.login(&owner.email).await, hub.login(&other.email).await);
    let theirs = them
        .create(
            "/alert-rules/channels",
            json!({"type": "webhook", "name": "Theirs", "config": {"url": "http://x.org/h"}}),
        )
        .await;
    let their_sat = common::seed::satellite(&hub, other.tenant, "their pi").await;

    for (body, code) in [
        (json!({"type": "webhook", "name": "a", "config": {"url": "file:///etc/passwd"}}), "invalid_channel"),
        (json!({"type": "webhook", "name": "a", "config": {"url": "ftp://x.org/a"}}), "invalid_channel"),
        (json!({"type": "webhook", "name": "a", "config": {"url": ""}}), "invalid_channel"),
        (json!({"type": "webhook", "name": "a", "config": {}}), "invalid_channel"),
        (json!({"type": "pager", "name": "a", "config": {}}), "unknown_channel_type"),
        (json!({"type": "email", "name": "a", "config": {"to": "not-an-address"}}), "invalid_channel"),
        (json!({"type": "chat_bot", "name": "a", "config": {"token": "123:abc"}}), "invalid_channel"),
        (
            json!({"type": "webhook", "name": "a", "config": {"url": "http://x.org"}, "payload_template": "{% if %}"}),
            "invalid_template",
        ),
        (
            json!({"type": "webhook", "name": "a", "config": {"url": "http://x.org"}, "payload_template": "{{ data.species"}),
            "invalid_template",
        ),
        (
            json!({"type": "chat_embed", "name": "a", "config": {"url": "https://d.com/x"}, "payload_template": "{}"}),
            "invalid_template",
        ),
    ] {
        assert_error(&admin.post("/alert-rules/channels", body.clone()).await, 422, code);
    }
    assert_error(&admin.post("/alert-rules/channels", json!({"type": 5})).await, 422, "invalid_body");

    for (body, code) in [
        (json!({"name": "x", "trigger": "detection", "channelIds": [theirs["id"]]}), "unknown_channel"),
        (
            json!({"name": "x", "trigger": "detection", "conditions": {"satelliteIds": [their_sat]}}),
            "unknown_satellite",
        ),
        (json!({"name": "x", "trigger": "absence", "conditions": {"minutes": 0}}), "invalid_rule"),
        (json!({"name": "x", "trigger": "absence", "conditions": {"minutes": -10}}), "invalid_rule"),
        (json!({"name": "x", "trigger": "detection", "cooldownMinutes": 0}), "invalid_rule"),
        (json!({"name": "x", "trigger": "detection", "cooldownMinutes": -5}), "invalid_rule"),
        (json!({"name": "x", "trigger": "sometimes"}), "invalid_rule"),
        (
            json!({"name": "x", "trigger": "trend", "conditions": {"metric": "species", "direction": "rise", "percent": -3}}),
            "invalid_rule",
        ),
        (json!({"name": "", "trigger": "detection"}), "invalid_rule"),
    ] {
        assert_error(&admin.post("/alert-rules/rules", body.clone()).await, 422, code);
    }
    // A satellite deleted after the rule was made does not block switching the rule off.
    let mine = common::seed::satellite(&hub, owner.tenant, "my pi").await;
    let (status, rule) = admin
        .post(
            "/alert-rules/rules",
            json!({"name": "mine", "trigger": "detection", "conditions": {"satelliteIds": [mine]}}),
        )
        .await;
    assert_eq!(status, 201, "{rule}");
    let now = hub.state().clock.stamp();
    hub.state()
        .store
        .call(move |c| birdhub::store::satellites::soft_delete(c, owner.tenant, mine, now))
        .await
        .expect("deleted");
    let (status, off) =
        admin.put(&format!("/alert-rules/rules/{}", rule["id"].as_str().expect("id")), json!({"enabled": false})).await;
    assert_eq!((status.as_u16(), off["enabled"].clone()), (200, json!(false)), "{off}");

    // Another team's channel is invisible, and so is an unknown one.
    let path = format!("/alert-rules/channels/{}", theirs["id"].as_str().expect("id"));
    assert_error(&admin.get(&path).await, 404, "channel_not_found");
    assert_error(&admin.put(&path, json!({"name": "mine"})).await, 404, "channel_not_found");
    assert_error(&admin.delete(&path).await, 404, "channel_not_found");
    assert_error(&admin.post_empty(&format!("{path}/test")).await, 404, "channel_not_found");
    assert_error(&admin.get("/alert-rules/channels/not-a-uuid").await, 400, "invalid_path");
}

#[tokio::test]
async fn secrets_are_sealed_never_returned_and_kept_across_updates() {
    let hub = common::spawn_hub().await;
    let owner = hub.user("owner@example.org", false).await;
    let admin = hub.login(&owner.email).await;
    let hook = admin.create("/alert-rules/channels", json!({"type": "webhook", "name": "Signed", "config": {"url": "http://x.org/h", "secret": "hunter2-very-secret"}})).await;
    assert_eq!(hook["config"], json!({"url": "http://x.org/h", "secret": "set"}));
    let slack = admin.create("/alert-rules/channels", json!({"type": "chat_block", "name": "Slack", "config": {"url": "https://hooks.slack.com/services/T1/B2/sekrit"}})).await;
    assert_eq!(slack["config"], json!({"url": "https://hooks.slack.com/…"}));
    let bot = admin
        .create(
            "/alert-rules/channels",
            json!({"type": "chat_bot", "name": "Bot", "config": {"token": "4242:bot-token-xyz", "chatId": -100777}}),
        )
        .await;
    assert_eq!(bot["config"]["token"], "set");

    let id = hook["id"].as_str().expect("id");
    let (status, renamed) = admin
        .put(&format!("/alert-rules/channels/{id}"), json!({"name": "Renamed", "config": {"url": "http://x.org/2"}}))
        .await;
    assert_eq!(status, 200, "{renamed}");
    assert_eq!(renamed["config"]["secret"], "set", "a secret left out is kept");
    let (_, cleared) = admin
        .put(&format!("/alert-rules/channels/{id}"), json!({"config": {"url": "http://x.org/2", "secret": null}}))
        .await;
    assert_eq!(cleared["config"]["secret"], Value::Null);

    let viewer = hub.member_of("viewer@example.org", owner.tenant, birdhub::domain::Role::Viewer).await;
    let (status, seen) = hub.login(&viewer.email).await.get(&format!("/alert-rules/channels/{id}")).await;
    assert_eq!(status, 200, "{seen}");
    assert_eq!(seen["config"]["url"], "http://x.org/…", "a viewer sees only where a webhook goes");
    let (_, list) = admin.get("/alert-rules/channels").await;
    let everything = format!("{list}{hook}{slack}{bot}{renamed}");
    for secret in ["hunter2", "sekrit", "bot-token-xyz"] {
        assert!(!everything.contains(secret), "{secret} leaked: {everything}");
    }
    let stored: Vec<String> = hub.sql(|c| {
        let mut s = c.prepare("SELECT config_json || coalesce(secret_enc, '') FROM alert_channels").expect("sql");
        s.query_map([], |r| r.get(0)).expect("rows").collect::<Result<_, _>>().expect("rows")
    });
    for secret in ["sekrit", "bot-token-xyz"] {
        assert!(!stored.concat().contains(secret), "{secret} is stored in the clear");
    }
}

#[tokio::test]
async fn a_signed_test_send_reaches_the_receiver_and_a_tampered_body_is_refused() {
    let hub = common::spawn_hub().await;
    let owner = hub.user("owner@example.org", false).await;
    let admin = hub.login(&owner.email).await;
    let rx = Receiver::start(Some("s3cret")).await;
    let hook = admin
        .create(
            "/alert-rules/channels",
            json!({"type": "webhook", "name": "Signed", "config": {"url": rx.url("/hook"), "secret": "s3cret"}}),
        )
        .await;

    let report = test_send(&admin, &hook["id"]).await;
    assert_eq!((report["delivered"].clone(), report["httpStatus"].clone()), (json!(true), json!(200)), "{report}");
    assert!(report["durationMs"].is_u64());
    let got = rx.received();
    assert_eq!(got.len(), 1);
    let sent = &got[0];
    assert_eq!(sent.status, 200, "the receiver accepted the signature");
    let signature = sent.header("x-service-signature").expect("signed");
    assert!(signature.starts_with("sha256=") && signature.len() == 7 + 64, "{signature}");
    let body = sent.json();
    assert_eq!(body["event"], "test");
    for key in ["species", "commonName", "confidence", "satelliteName", "detectionId"] {
        assert!(body["data"].get(key).is_some(), "data.{key} in {body}");
    }

    // The same signature over other bytes is refused, as is no signature at all.
    let client = reqwest::Client::new();
    let mut tampered = sent.body.to_vec();
    tampered[10] ^= 1;
    let r = client
        .post(rx.url("/hook"))
        .header("X-Service-Signature", signature)
        .body(tampered)
        .send()
        .await
        .expect("post");
    assert_eq!(r.status(), 401);
    let r = client.post(rx.url("/hook")).body(sent.body.clone()).send().await.expect("post");
    assert_eq!(r.status(), 401);
    let r = client
        .post(rx.url("/hook"))
        .header("X-Service-Signature", signature)
        .body(sent.body.clone())
        .send()
        .await
        .expect("post");
    assert_eq!(r.status(), 200);

    // A receiver that rejects the signature (wrong secret) shows up in the report and the log.
    let wrong = admin
        .create(
            "/alert-rules/channels",
            json!({"type": "webhook", "name": "Wrong", "config": {"url": rx.url("/hook"), "secret": "other"}}),
        )
        .await;
    let report = test_send(&admin, &wrong["id"]).await;
    assert_eq!((report["delivered"].clone(), report["httpStatus"].clone()), (json!(false), json!(401)), "{report}");
    let (_, one) = admin.get(&format!("/alert-rules/channels/{}", wrong["id"].as_str().expect("id"))).await;
    assert_eq!(one["log"][0]["status"], "test");
    assert_eq!(one["log"][0]["httpStatus"], 401);
}

#[tokio::test]
async fn a_payload_template_changes_the_body() {
    let hub = common::spawn_hub().await;
    let owner = hub.user("owner@example.org", false).await;
    let admin = hub.login(&owner.email).await;
    let rx = Receiver::start(None).await;
    let template = r#"{"text": {{ (data.commonName ~ " at " ~ data.satelliteName)|tojson }}, "kind": {{ event|tojson }}, "pct": {{ (data.confidence * 100)|round|int }}}"#;
    let hook = admin
        .create(
            "/alert-rules/channels",
            json!({"type": "webhook", "name": "HA", "config": {"url": rx.url("/ha")}, "payload_template": template}),
        )
        .await;
    assert_eq!(hook["payload_template"], template);
    assert_eq!(test_send(&admin, &hook["id"]).await["delivered"], true);
    let got = rx.received();
    assert_eq!(got[0].header("content-type"), Some("application/json"));
    assert_eq!(got[0].json(), json!({"text": "Northern Cardinal at Backyard", "kind": "test", "pct": 92}));

    // Plain text templates go as text.
    let id = hook["id"].as_str().expect("id");
    let (status, _) = admin
        .put(&format!("/alert-rules/channels/{id}"), json!({"payload_template": "Heard {{ data.species }}"}))
        .await;
    assert_eq!(status, 200);
    test_send(&admin, &hook["id"]).await;
    let got = rx.wait_for(2, 5).await;
    assert_eq!(got[1].body.as_ref(), b"Heard Cardinalis cardinalis");
    assert!(got[1].header("content-type").is_some_and(|c| c.starts_with("text/plain")));
}

#[tokio::test]
async fn each_chat_type_posts_the_shape_its_service_documents() {
    let hub = common::spawn_hub().await;
    let owner = hub.user("owner@example.org", false).await;
    let admin = hub.login(&owner.email).await;
    let rx = Receiver::start(None).await;
    for (kind, config) in [
        ("chat_block", json!({"url": rx.url("/slack/services/T/B/x")})),
        ("chat_bot", json!({"token": "777:tok", "chatId": "@birders", "apiBase": rx.url("/tg")})),
        ("chat_card", json!({"url": rx.url("/teams")})),
        ("chat_embed", json!({"url": rx.url("/discord/api/webhooks/1/abc")})),
    ] {
        let ch = admin.create("/alert-rules/channels", json!({"type": kind, "name": kind, "config": config})).await;
        let report = test_send(&admin, &ch["id"]).await;
        assert_eq!(report["delivered"], true, "{kind}: {report}");
    }
    let got = rx.received();
    assert_eq!(got.len(), 4);

    let slack = got[0].json();
    assert_eq!(got[0].path, "/slack/services/T/B/x");
    assert!(slack["text"].as_str().is_some_and(|t| t.contains("Northern Cardinal")), "fallback text: {slack}");
    let blocks = slack["blocks"].as_array().expect("blocks");
    assert!(!blocks.is_empty() && blocks.len() <= 50);
    assert_eq!(blocks[0]["type"], "section");
    assert_eq!(blocks[0]["text"]["type"], "mrkdwn");
    assert!(blocks[0]["text"]["text"].as_str().is_some_and(|t| t.contains("Northern Cardinal") && t.len() <= 3000));
    for b in blocks {
        assert!(
            ["section", "context", "image", "divider", "header", "actions"].contains(&b["type"].as_str().unwrap_or("")),
            "{b}"
        );
        if b["type"] == "context" {
            assert!(b["elements"].as_array().is_some_and(|e| !e.is_empty() && e.len() <= 10));
        }
    }

    assert_eq!(got[1].path, "/tg/bot777:tok/sendMessage");
    let tg = got[1].json();
    assert_eq!(tg["chat_id"], "@birders");
    assert_eq!(tg["parse_mode"], "HTML");
    let text = tg["text"].as_str().expect("text");
    assert!(text.contains("Northern Cardinal") && !text.is_empty() && text.chars().count() <= 4096, "{text}");

    let teams = got[2].json();
    assert_eq!(teams["type"], "message");
    let attachment = &teams["attachments"][0];
    assert_eq!(attachment["contentType"], "application/vnd.microsoft.card.adaptive");
    assert_eq!(attachment["contentUrl"], Value::Null);
    assert_eq!(attachment["content"]["type"], "AdaptiveCard");
    assert_eq!(attachment["content"]["$schema"], "http://adaptivecards.io/schemas/adaptive-card.json");
    assert!(attachment["content"]["version"].is_string());
    assert_eq!(attachment["content"]["body"][0]["type"], "TextBlock");
    assert!(got[2].body.len() <= 28 * 1024);

    let discord = got[3].json();
    let embed = &discord["embeds"][0];
    assert!(embed["title"].as_str().is_some_and(|t| t.contains("Northern Cardinal") && t.chars().count() <= 256));
    assert!(embed["color"].is_u64());
    assert!(embed["timestamp"].as_str().is_some_and(|t| chrono::DateTime::parse_from_rfc3339(t).is_ok()));
    let fields = embed["fields"].as_array().expect("fields");
    assert!(fields.len() <= 25 && fields.iter().all(|f| f["name"].is_string() && f["value"].is_string()));
    assert!(discord["content"].as_str().is_none_or(|c| c.chars().count() <= 2000));
}

#[tokio::test]
async fn email_channels_reach_an_smtp_sink_and_unreachable_receivers_are_reported() {
    let (hub, sink) = common::spawn_hub_with_mail().await;
    let owner = hub.user("owner@example.org", false).await;
    let admin = hub.login(&owner.email).await;
    let mail = admin
        .create(
            "/alert-rules/channels",
            json!({"type": "email", "name": "Me", "config": {"to": ["birder@example.org", "second@example.org"]}}),
        )
        .await;
    let report = test_send(&admin, &mail["id"]).await;
    assert_eq!(report["delivered"], true, "{report}");
    let got = sink.wait_for(1).await;
    let message = smtp::decoded(&got[0]);
    assert!(message.contains("birder@example.org") && message.contains("second@example.org"), "{message}");
    assert!(message.contains("Northern Cardinal"), "{message}");

    // Nobody listens on this port: the report says so, it is no error of the API.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port();
    let dead = admin
        .create(
            "/alert-rules/channels",
            json!({"type": "webhook", "name": "Dead", "config": {"url": format!("http://127.0.0.1:{closed}/x")}}),
        )
        .await;
    let report = test_send(&admin, &dead["id"]).await;
    assert_eq!(report["delivered"], false);
    assert!(report["error"].as_str().is_some_and(|e| !e.is_empty()), "{report}");

    // 50 MB back does not hurt the hub: the reply is read only so far.
    let rx = Receiver::start(None).await;
    let huge = admin
        .create("/alert-rules/channels", json!({"type": "webhook", "name": "Huge", "config": {"url": rx.url("/huge")}}))
        .await;
    let report = test_send(&admin, &huge["id"]).await;
    assert_eq!((report["delivered"].clone(), report["httpStatus"].clone()), (json!(true), json!(200)), "{report}");
    assert_eq!(admin.get("/health").await.0, 200);
}
