//! The Alerts page in a real headless chromium (issue 36): the rule form is fields, not JSON —
//! a species picker in the viewer's language that stores codes, satellite checkboxes, special
//! kinds, confidence, hours and cooldown within the API's limits — and the rules table speaks
//! names (5); the system rule saves as shown and says when it last fired (6); an alert raised
//! while the page is open appears without a reload (7); the channel form shows only the chosen
//! type's fields and channels can be edited (18); an alert links to its detection and its text
//! has no raw ISO time (22). Every step fits 360 and 390 px; any script error fails.

mod common;

use std::time::Duration;

use common::{PASSWORD, browser::Browser, receiver::Receiver, seed};
use serde_json::json;

async fn fits_phones(b: &Browser, what: &str) {
    for width in [360, 390] {
        b.client.set_window_size(width, 800).await.expect("resize");
        let fits = b.wait_until("return document.documentElement.scrollWidth <= window.innerWidth;", 5).await;
        let wide = b.js("return document.documentElement.scrollWidth;").await;
        assert!(fits, "{what} is {wide} px wide at {width} px");
    }
    b.client.set_window_size(1280, 900).await.expect("resize");
}

const ISO: &str = r"/\d{4}-\d\d-\d\dT\d\d:|\+00:00/";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rules_and_channels_are_made_with_fields_and_read_in_words() {
    let hub = common::spawn_hub_with(common::with_model).await;
    let owner = hub.user("owner@example.com", false).await;
    let sat = seed::satellite(&hub, owner.tenant, "Backyard").await;
    seed::satellite(&hub, owner.tenant, "Orchard").await;
    let rx = Receiver::start(None).await;
    let api = hub.login(&owner.email).await;
    let b = Browser::start(hub.http_addr.port(), "alerts").await;
    b.sign_in(&owner.email, PASSWORD, None).await;
    b.goto("/alerts").await;

    // 18: the channel form shows only the chosen type's fields.
    b.click("#channel-add summary").await;
    let shown = |id: &str| format!("return document.getElementById('{id}').offsetParent !== null;");
    assert_eq!(b.js(&shown("ch-url")).await, json!(true));
    assert_eq!(b.js(&shown("ch-to")).await, json!(false), "email addresses hidden for a webhook");
    assert_eq!(b.js(&shown("ch-token")).await, json!(false), "bot token hidden for a webhook");
    b.find("#ch-type").await.select_by_value("email").await.expect("email");
    assert_eq!(b.js(&shown("ch-to")).await, json!(true));
    for hidden in ["ch-url", "ch-secret", "ch-token", "ch-chat"] {
        assert_eq!(b.js(&shown(hidden)).await, json!(false), "{hidden} hidden for email");
    }
    b.shot("email-channel-form").await;
    b.find("#ch-type").await.select_by_value("webhook").await.expect("webhook");
    b.fill("#ch-name", "Receiver").await;
    b.fill("#ch-url", &rx.url("/hook")).await;
    b.click("#channel-submit").await;
    b.find("button[data-edit-channel]").await;

    // 18: a channel can be edited: renamed, its URL kept.
    b.click("button[data-edit-channel]").await;
    assert_eq!(b.js("return document.getElementById('ch-name').value;").await, json!("Receiver"));
    assert_eq!(b.js("return document.getElementById('ch-type').disabled;").await, json!(true));
    b.fill("#ch-name", "Home Assistant").await;
    b.click("#channel-submit").await;
    assert!(
        b.wait_until(
            "return document.querySelector('#channels .channel strong')?.textContent === 'Home Assistant';",
            10
        )
        .await,
        "the renamed channel is listed"
    );
    let (_, channels) = api.get("/alert-rules/channels").await;
    assert_eq!(channels["channels"][0]["name"], "Home Assistant");
    assert_eq!(channels["channels"][0]["config"]["url"], json!(rx.url("/hook")), "{channels}");

    // 5: a rule from fields: a species chosen by its name, a satellite, a special kind, limits.
    b.click("#rule-add summary").await;
    assert!(!b.has("#rule-conditions").await, "no JSON to type");
    let limits = b.js("const c = document.getElementById('rule-cooldown'); return [c.min, c.max, c.value];").await;
    assert_eq!(limits, json!(["1", "43200", "30"]), "the cooldown's limits are the API's");
    b.fill("#rule-name", "Blackbirds at dawn").await;
    b.fill("#pick-rule-species", "Blackbird").await;
    b.find("#pick-rule-species-results li.option").await;
    let picked = b
        .js("const o = document.querySelector('#pick-rule-species-results li.option'); return [o.dataset.code, o.dataset.common];")
        .await;
    let (code, common) = (picked[0].as_str().expect("code").to_owned(), picked[1].as_str().expect("name").to_owned());
    b.click("#pick-rule-species-results li.option").await;
    b.find("#rule-form li.chip").await;
    b.click(&format!("input[name=rule-sat][value='{sat}']")).await;
    b.click("input[name=rule-special][value=rare]").await;
    b.fill("#rule-confidence", "0.8").await;
    b.find("#rule-hours-from").await.select_by_value("4").await.expect("from");
    b.find("#rule-hours-to").await.select_by_value("9").await.expect("to");
    b.click("input[name=rule-channel]").await;
    fits_phones(&b, "/alerts with the rule form open").await;
    b.shot("rule-form").await;
    // A cooldown the API refuses is caught by the form, in words.
    b.fill("#rule-cooldown", "0").await;
    b.click("#rule-submit").await;
    assert!(b.wait_until("return !document.getElementById('rule-error').hidden;", 5).await);
    let error = b.text("#rule-error").await;
    assert!(error.contains("Cooldown") && error.contains("1 to 43200"), "{error}");
    b.fill("#rule-cooldown", "45").await;
    b.click("#rule-submit").await;
    assert!(
        b.wait_until("return [...document.querySelectorAll('#rules tbody tr')].length === 3;", 10).await,
        "the new rule is listed after the two system rules"
    );
    let (_, rules) = api.get("/alert-rules/rules").await;
    let rule = rules["rules"][2].clone();
    assert_eq!(
        rule["conditions"],
        json!({"species": [code], "special": ["rare"], "minConfidence": 0.8, "satelliteIds": [sat.to_string()],
               "hours": {"from": 4, "to": 9}}),
        "{rule}"
    );
    assert_eq!(
        (rule["cooldownMinutes"].clone(), rule["channelIds"].clone()),
        (json!(45), json!([channels["channels"][0]["id"]]))
    );
    let row = b.text(&format!("#rule-{}", rule["id"].as_str().expect("id"))).await;
    assert!(row.contains(&common) && row.contains("Backyard") && row.contains("rare"), "names in the table: {row}");
    assert!(
        !row.contains(&code) && !row.contains(&sat.to_string()) && !row.contains('{'),
        "no codes, UUIDs or JSON: {row}"
    );

    // Editing fills the form with names, and a change is saved.
    b.click(&format!("[data-edit-rule='{}']", rule["id"].as_str().expect("id"))).await;
    assert_eq!(b.text("#rule-form li.chip .common").await, common);
    assert_eq!(
        b.js(&format!("return document.querySelector(\"input[name=rule-sat][value='{sat}']\").checked;")).await,
        json!(true)
    );
    b.click("input[name=rule-special][value=first_of_season]").await;
    b.click("#rule-submit").await;
    assert!(b.wait_until("return document.querySelector('#rules tbody tr:nth-child(3) .when-text')?.textContent.includes('first of the season');", 10).await);
    fits_phones(&b, "/alerts").await;
    b.shot("rules").await;

    // 6: the system rule saves as the form shows it.
    let system = rules["rules"][0]["id"].as_str().expect("system").to_owned();
    b.click(&format!("[data-edit-rule='{system}']")).await;
    assert_eq!(b.js(&shown("rule-name")).await, json!(false), "the system rule's name is fixed");
    b.click("input[name=rule-channel]").await;
    b.click("#rule-submit").await;
    let hook = channels["channels"][0]["id"].clone();
    let mut saved = false;
    for _ in 0..50 {
        let (_, rules) = api.get("/alert-rules/rules").await;
        if rules["rules"][0]["channelIds"] == json!([hook]) {
            saved = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(saved, "the system rule was saved: {}", b.text("#rule-error").await);
    b.assert_no_js_errors().await;
    b.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn alerts_arrive_live_link_to_their_detection_and_the_system_rule_says_when_it_fired() {
    let hub = common::spawn_hub().await;
    let owner = hub.user("owner@example.com", false).await;
    let sat = seed::satellite(&hub, owner.tenant, "Backyard").await;
    let api = hub.login(&owner.email).await;
    api.create("/alert-rules/rules", json!({"name": "Every bird", "trigger": "detection"})).await;
    let b = Browser::start(hub.http_addr.port(), "alerts-live").await;
    b.sign_in(&owner.email, PASSWORD, None).await;
    b.goto("/alerts").await;
    b.find("#alert-list").await;
    assert!(
        b.wait_until("return document.getElementById('alerts-live').classList.contains('on');", 10).await,
        "connected"
    );
    b.js("window.__samePage = true; return true;").await;

    // 7 and 22: a bird alert appears without a reload, links to its detection, reads a local time.
    seed::bird_alert(&hub, owner.tenant, sat).await;
    assert!(
        b.wait_until("return document.querySelectorAll('#alert-list li.alert-item').length === 1;", 15).await,
        "the alert appears"
    );
    assert_eq!(b.js("return window.__samePage === true;").await, json!(true), "without a reload");
    let href = b.js("return document.querySelector('#alert-list a.alert-link').getAttribute('href');").await;
    let (_, alerts) = api.get("/alerts").await;
    assert_eq!(
        href,
        json!(format!("/detections/{}", alerts["alerts"][0]["data"]["detectionId"].as_str().expect("id")))
    );
    let text = b.text("#alert-list").await;
    assert_eq!(
        b.js(&format!("return {ISO}.test(document.getElementById('alert-list').innerText);")).await,
        json!(false),
        "{text}"
    );
    assert!(text.contains(&birdhub::time::readable("2026-11-27T04:10:41.685Z".parse().expect("time"))), "{text}");
    b.click("#alert-list a.alert-link").await;
    b.find("h1").await;
    assert!(b.path().await.starts_with("/detections/"), "the link opens the detection");

    // 6 and 7: a satellite outage appears live too, and the system rule says when it fired.
    b.goto("/alerts").await;
    b.find("#alert-list").await;
    assert!(b.wait_until("return document.getElementById('alerts-live').classList.contains('on');", 10).await);
    b.js("window.__samePage = true; return true;").await;
    let s = hub.state();
    let now = s.clock.stamp();
    s.store.call(move |c| birdhub::store::satellites::seen(c, owner.tenant, sat, now)).await.expect("seen");
    s.clock.advance(Duration::from_secs(6 * 60));
    birdhub::usecases::monitor::check(&s.store, &s.bus, &s.clock, &s.alerts).await.expect("pass");
    assert!(
        b.wait_until("return document.querySelectorAll('#alert-list li.alert-item').length === 2;", 15).await,
        "the outage appears"
    );
    assert_eq!(b.js("return window.__samePage === true;").await, json!(true), "without a reload");
    assert!(b.text("#alert-list li.alert-item").await.contains("Backyard is offline"));
    fits_phones(&b, "/alerts with alerts").await;
    b.shot("live").await;
    b.goto("/alerts").await;
    let system = b.text("#rules tbody tr:first-child .last-fired").await;
    assert!(!system.contains("never") && !system.trim().is_empty(), "last fired: {system:?}");
    b.assert_no_js_errors().await;
    b.close().await;
}
