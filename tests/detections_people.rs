//! Detections as people meet them, over real HTTP (issue 36):
//! - defect 12: the species filter finds a bird by its common name in the reader's language and
//!   in the team's languages, by its scientific name and by its code as people write it;
//! - defect 20: a team's first record of a species is "new for the team", not rare; rare means
//!   not expected here, and a `special: rare` alert rule fires only for that;
//! - defect 1: a share link gives a browser a page and a script JSON; the page's spectrogram and
//!   audio open with the share token alone, and the station's place is rounded.

mod common;

use birdhub::{
    domain::Role,
    ids::{DetectionId, SatelliteId, TenantId},
    usecases::{alerting, detections},
};
use common::{TestHub, assert_error, seed};
use reqwest::{StatusCode, header};
use serde_json::{Value, json};

const GREAT_TIT: seed::Species = ("parus_major", "Great Tit", "Parus major");
const ROBIN: seed::Species = ("erithacus_rubecula", "European Robin", "Erithacus rubecula");

/// A detection of `species` at `at`, judged like the workers judge one (range verdict
/// `expected_here`), with the team's detection alert rules run on it; returns it and how many
/// alerts it raised.
async fn heard(
    hub: &TestHub,
    (tenant, sat): (TenantId, SatelliteId),
    at: &str,
    species: seed::Species,
    expected_here: Option<bool>,
) -> (DetectionId, usize) {
    let chunk = seed::chunk(hub, tenant, sat, at).await;
    let new = seed::new_detection((tenant, sat, chunk), at, species, 0.9, expected_here);
    let ctx = hub.state().alerts.clone();
    let now = hub.state().clock.stamp();
    hub.state()
        .store
        .call(move |c| {
            let d = detections::record(c, &new, now)?.expect("new");
            let raised = alerting::on_detections(c, std::slice::from_ref(&d), &ctx, now)?;
            Ok((d.id, raised.len()))
        })
        .await
        .expect("detection")
}

fn codes(list: &Value) -> Vec<String> {
    let mut out: Vec<String> = list["detections"]
        .as_array()
        .expect("detections")
        .iter()
        .map(|d| d["species_code"].as_str().expect("code").to_owned())
        .collect();
    out.sort();
    out.dedup();
    out
}

#[tokio::test]
async fn the_species_filter_finds_the_names_people_read() {
    let hub = common::spawn_hub_with(common::with_model).await;
    let ana = hub.user("ana@example.org", false).await;
    let bob = hub.member_of("bob@example.org", ana.tenant, Role::Member).await;
    let sat = seed::satellite(&hub, ana.tenant, "Garden").await;
    heard(&hub, (ana.tenant, sat), "2026-05-01T05:00:00.000Z", GREAT_TIT, Some(true)).await;
    heard(&hub, (ana.tenant, sat), "2026-05-01T05:10:00.000Z", ROBIN, Some(true)).await;

    let ana_api = hub.login(&ana.email).await;
    let bob_api = hub.login(&bob.email).await;
    assert_eq!(ana_api.put("/auth/me/preferences", json!({"language": "de"})).await.0, 200);
    let (status, _) = ana_api.put("/settings/tenant", json!({"secondary_language": "fr"})).await;
    assert_eq!(status, 200);

    // Ana reads German: "Kohlmeise" (any case, any part) is the Great Tit.
    for q in ["Kohlmeise", "kohlm", "MEISE"] {
        let (status, list) = ana_api.get(&format!("/detections?speciesSearch={q}")).await;
        assert_eq!(status, 200, "{list}");
        assert_eq!(codes(&list), ["parus_major"], "{q} for a German reader");
        assert_eq!(list["total"], 1, "{q}: the total counts the match");
    }
    // The team's secondary language is French: everyone finds the "Mésange charbonnière".
    for api in [&ana_api, &bob_api] {
        let (_, list) = api.get("/detections?speciesSearch=m%C3%A9sange").await;
        assert_eq!(codes(&list), ["parus_major"], "the team's languages");
    }
    // The list's export finds what the list found.
    let (status, rows) = ana_api.get("/export/detections?format=json&speciesSearch=Kohlmeise").await;
    assert_eq!(status, 200, "{rows}");
    let exported: Vec<&str> =
        rows.as_array().expect("rows").iter().filter_map(|r| r["species_code"].as_str()).collect();
    assert_eq!(exported, ["parus_major"], "the export of a German reader's search");
    // Bob reads English, and the team does not use German: Kohlmeise is nothing to him.
    let (_, list) = bob_api.get("/detections?speciesSearch=Kohlmeise").await;
    assert_eq!(codes(&list), Vec::<String>::new(), "not the other reader's language");
    // Scientific names, English names and codes work for everyone.
    for q in ["Parus major", "parus", "great tit", "parus_major"] {
        let (_, list) = bob_api.get(&format!("/detections?speciesSearch={q}")).await;
        assert_eq!(codes(&list), ["parus_major"], "{q}");
    }
    // The code filter takes a code as people write it.
    for code in ["parus_major", "Parus major", "parus-major"] {
        let (status, list) = bob_api.get(&format!("/detections?species={code}")).await;
        assert_eq!(status, 200, "{list}");
        assert_eq!(codes(&list), ["parus_major"], "species={code}");
    }
}

#[tokio::test]
async fn a_first_record_is_new_for_the_team_and_only_the_unexpected_is_rare() {
    let hub = common::spawn_hub().await;
    let ana = hub.user("ana@example.org", false).await;
    let api = hub.login(&ana.email).await;
    let (status, _) = api
        .post(
            "/alert-rules/rules",
            json!({"name": "Rarities", "trigger": "detection", "conditions": {"special": ["rare"]}}),
        )
        .await;
    assert!(status.is_success(), "{status}");
    let sat = seed::satellite(&hub, ana.tenant, "London garden").await;
    let team = (ana.tenant, sat);

    // A Great Tit in a London garden on the team's first day: new, expected, no rare alert.
    let (tit, alerts) = heard(&hub, team, "2026-05-01T05:00:00.000Z", GREAT_TIT, Some(true)).await;
    assert_eq!(alerts, 0, "a garden bird's first record raises no rare alert");
    let (_, d) = api.get(&format!("/detections/{tit}")).await;
    assert_eq!(
        (&d["is_first_for_team"], &d["is_rare"], &d["rare_reason"]),
        (&json!(true), &json!(false), &Value::Null),
        "{d}"
    );
    // A first record without a location (no range verdict) is not rare either.
    let (robin, alerts) = heard(&hub, team, "2026-05-01T05:05:00.000Z", ROBIN, None).await;
    assert_eq!(alerts, 0);
    let (_, d) = api.get(&format!("/detections/{robin}")).await;
    assert_eq!((&d["is_first_for_team"], &d["is_rare"]), (&json!(true), &json!(false)), "{d}");
    // The second Great Tit is neither new nor rare.
    let (again, _) = heard(&hub, team, "2026-05-01T06:00:00.000Z", GREAT_TIT, Some(true)).await;
    let (_, d) = api.get(&format!("/detections/{again}")).await;
    assert_eq!((&d["is_first_for_team"], &d["is_rare"]), (&json!(false), &json!(false)), "{d}");

    // A Wren the range model does not expect here: rare, and the rule fires.
    let wren = ("troglodytes_troglodytes", "Eurasian Wren", "Troglodytes troglodytes");
    let (first_wren, alerts) = heard(&hub, team, "2026-05-01T07:00:00.000Z", wren, Some(false)).await;
    assert_eq!(alerts, 1, "not expected here: rare");
    let (_, d) = api.get(&format!("/detections/{first_wren}")).await;
    assert_eq!(
        (&d["is_first_for_team"], &d["is_rare"], &d["rare_reason"]),
        (&json!(true), &json!(true), &json!("not_expected_here")),
        "new and rare at once: {d}"
    );
    let (_, list) = api.get("/alerts").await;
    let alerts = list["alerts"].as_array().expect("alerts");
    assert_eq!(alerts.len(), 1, "{list}");
    let text = format!("{} {}", alerts[0]["title"], alerts[0]["message"]);
    assert!(text.contains("Rare: Eurasian Wren"), "{text}");
    assert!(text.contains("does not expect it") && text.contains("first record"), "why, in words: {text}");
    assert!(!text.contains('_'), "no field names: {text}");
}

#[tokio::test]
async fn a_rule_for_species_new_to_the_team_fires_on_first_records_only() {
    let hub = common::spawn_hub().await;
    let ana = hub.user("ana@example.org", false).await;
    let api = hub.login(&ana.email).await;
    let rule = json!({"name": "New birds", "trigger": "detection", "conditions": {"special": ["first_for_team"]}});
    let (status, made) = api.post("/alert-rules/rules", rule).await;
    assert!(status.is_success(), "{made}");
    let team = (ana.tenant, seed::satellite(&hub, ana.tenant, "London garden").await);

    let (_, alerts) = heard(&hub, team, "2026-05-01T05:00:00.000Z", GREAT_TIT, Some(true)).await;
    assert_eq!(alerts, 1, "the team's first Great Tit");
    let (_, alerts) = heard(&hub, team, "2026-05-02T05:00:00.000Z", GREAT_TIT, Some(true)).await;
    assert_eq!(alerts, 0, "the second is not new");
    let (_, list) = api.get("/alerts").await;
    let alert = &list["alerts"][0];
    assert_eq!(alert["type"], "first_for_team", "{list}");
    assert!(alert["title"].as_str().is_some_and(|t| t.starts_with("New for the team: Great Tit")), "{alert}");
}

#[tokio::test]
async fn a_share_link_is_a_page_for_people_and_json_for_scripts() {
    let hub = common::spawn_hub_with(common::with_model).await;
    let ana = hub.user("ana@example.org", false).await;
    let sat = seed::satellite(&hub, ana.tenant, "Garden").await;
    seed::place(&hub, ana.tenant, sat, 51.501_234, -0.124_567).await;
    let (id, _) = heard(&hub, (ana.tenant, sat), "2026-05-01T05:00:00.000Z", GREAT_TIT, Some(true)).await;
    let api = hub.login(&ana.email).await;
    assert_eq!(api.put("/auth/me/preferences", json!({"language": "de"})).await.0, 200);
    let (status, share) = api.get(&format!("/detections/{id}/share")).await;
    assert_eq!(status, 200, "{share}");
    let token = share["token"].as_str().expect("token").to_owned();
    let page_url = share["pageUrl"].as_str().expect("pageUrl");
    assert!(page_url.ends_with(&format!("/share/{id}/{token}?lang=de")), "the sharer's language: {page_url}");

    let anon = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().expect("client");
    let base = &hub.base_url;
    let json_url = format!("{base}/api/share/detection/{id}/{token}");
    // A browser opening the JSON link is sent to the page.
    let browser_accept = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8";
    let r = anon.get(&json_url).header(header::ACCEPT, browser_accept).send().await.expect("GET");
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert_eq!(r.headers()[header::LOCATION], format!("/share/{id}/{token}").as_str());
    // Scripts get the JSON: asking for it, for anything, or saying nothing.
    for accept in [Some("application/json"), Some("*/*"), Some("application/json, text/html;q=0.5"), None] {
        let mut req = anon.get(&json_url);
        if let Some(a) = accept {
            req = req.header(header::ACCEPT, a);
        }
        let r = req.send().await.expect("GET");
        assert_eq!(r.status(), StatusCode::OK, "{accept:?}");
        let body: Value = r.json().await.expect("json");
        assert_eq!(body["species_code"], "parus_major", "{accept:?}: {body}");
        assert!(body.get("tenant_id").is_none() && body.get("storage_key").is_none());
    }

    // The page: names in the sharer's language, the time as a <time>, the place rounded.
    let page_path = &page_url[page_url.find("/share/").expect("a /share/ path")..];
    let r = anon.get(format!("{base}{page_path}")).send().await.expect("page");
    assert_eq!(r.status(), StatusCode::OK);
    let csp = r.headers()[header::CONTENT_SECURITY_POLICY].to_str().expect("csp").to_owned();
    assert!(csp.contains("script-src 'self'"), "{csp}");
    let html = r.text().await.expect("html");
    assert!(html.contains("Kohlmeise") && html.contains("Parus major"), "German and scientific names");
    assert!(html.contains("In English: Great Tit"));
    assert!(html.contains("<time class=\"at\" datetime=\"2026-05-01T05:00:00"), "the time for app.js to write");
    assert!(html.contains("Garden, near 51.50° N, 0.12° W"), "rounded as on the public page");
    assert!(!html.contains("51.5012") && !html.contains("0.1245"), "never the exact place");
    assert!(!html.contains("<script>") && !html.contains("onclick"), "no inline scripts");
    let spectrogram = format!("/api/share/spectrogram/{id}/{token}");
    let audio = format!("/api/share/audio/{id}/{token}");
    assert!(
        html.contains(&spectrogram) && html.contains(&format!("data-audio=\"{audio}\"")),
        "picture and play button"
    );
    // Without the token's lang the page names the bird in the team's language.
    let plain = anon.get(format!("{base}/share/{id}/{token}")).send().await.expect("page").text().await.expect("html");
    assert!(plain.contains("Great Tit") && !plain.contains("Kohlmeise"));

    // What the page loads opens with the token alone (this client has no session).
    let png = anon.get(format!("{base}{spectrogram}")).send().await.expect("png");
    assert_eq!(png.status(), StatusCode::OK);
    assert_eq!(png.headers()[header::CONTENT_TYPE], "image/png");
    assert!(png.bytes().await.expect("bytes").starts_with(b"\x89PNG"));
    assert_eq!(anon.get(format!("{base}{audio}")).send().await.expect("wav").status(), StatusCode::OK);

    // A changed token opens nothing: the page says so in words, the API in JSON.
    let (expiry, tag) = token.split_once('.').expect("dot");
    let forged = format!("{expiry}.{}", "0".repeat(tag.len()));
    let r = anon.get(format!("{base}/share/{id}/{forged}")).send().await.expect("page");
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
    assert!(r.text().await.expect("html").contains("does not open anything"));
    let r = anon.get(format!("{base}/share/not-an-id/{token}")).send().await.expect("page");
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
    assert_error(&hub.anon().get(&format!("/share/spectrogram/{id}/{forged}")).await, 404, "share_not_found");
}
