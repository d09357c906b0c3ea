//! The species pickers of the detection settings in a real headless chromium, with the real
//! model's labels and range model (issue 51, defects 12 and 17):
//! - a London team that heard a Great Tit finds it first for "great t", and "blackbird" offers
//!   the Eurasian Blackbird (expected in London) before the Austral Blackbird;
//! - Enter with no match highlighted adds nothing;
//! - "Sounds that suppress" offers sounds (dog, engine, siren ...) before katydids;
//! - "Add every owl" comes back as soon as the owls are removed, without a reload.

mod common;

use common::{PASSWORD, browser::Browser, seed};
use serde_json::{Value, json};

const GREAT_TIT: seed::Species = ("parus_major", "Great Tit", "Parus major");

/// The codes the picker `picker` lists for `text`, once its answer for that text is in.
async fn listed(b: &Browser, picker: &str, text: &str) -> Vec<String> {
    b.fill(picker, text).await;
    let ready = format!(
        "const l = document.querySelector('{picker}-results'); return !l.hidden && \
         document.querySelector('{picker}').value === {text:?} && l.querySelector('li') !== null;"
    );
    assert!(b.wait_until(&ready, 10).await, "the picker answers {text:?}");
    // A later keystroke's answer may still replace an earlier one: let the list settle.
    tokio::time::sleep(std::time::Duration::from_millis(600)).await;
    let codes = b
        .js(&format!(
            "return Array.from(document.querySelectorAll('{picker}-results li.option')).map(li => li.dataset.code);"
        ))
        .await;
    codes.as_array().into_iter().flatten().filter_map(Value::as_str).map(str::to_owned).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_london_team_finds_its_own_birds_first_and_enter_alone_adds_nothing() {
    let hub = common::spawn_hub_with(common::with_model).await;
    let owner = hub.user("owner@example.org", false).await;
    let api = hub.login(&owner.email).await;
    let sat = seed::satellite(&hub, owner.tenant, "Garden").await;
    seed::place(&hub, owner.tenant, sat, 51.5, -0.12).await;
    seed::heard(&hub, owner.tenant, sat, "2026-12-06T09:18:00Z", GREAT_TIT, 0.9).await;

    let b = Browser::start(hub.http_addr.port(), "species-picker").await;
    b.sign_in(&owner.email, PASSWORD, None).await;
    b.goto("/team/detection").await;
    b.find("#detection-form").await;

    let tits = listed(&b, "#pick-exclude_species", "great t").await;
    assert_eq!(tits.first().map(String::as_str), Some("parus_major"), "the team's own Great Tit first: {tits:?}");
    let blackbirds = listed(&b, "#pick-exclude_species", "blackbird").await;
    assert_eq!(
        blackbirds.first().map(String::as_str),
        Some("turdus_merula"),
        "the blackbird of London first: {blackbirds:?}"
    );
    b.shot("blackbird").await;

    // Enter with nothing highlighted picks nothing.
    b.find("#pick-exclude_species").await.send_keys("\u{E007}").await.expect("enter");
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert!(!b.has("#exclude_species li.chip").await, "Enter alone added a species");
    // Arrow down highlights the first match; Enter then adds it.
    b.find("#pick-exclude_species").await.send_keys("\u{E015}").await.expect("arrow down");
    b.js("document.activeElement.dispatchEvent(new KeyboardEvent('keydown', {key: 'Enter', bubbles: true})); return true;")
        .await;
    assert!(
        b.wait_until("return !!document.querySelector(\"#exclude_species li.chip[data-code='turdus_merula']\");", 5)
            .await
    );

    // The sounds that suppress: the placeholder's kind of sound first, not katydids.
    b.click("#pick-suppress_classes").await;
    let ready = "const l = document.getElementById('pick-suppress_classes-results'); return !l.hidden && !!l.querySelector('li.option');";
    assert!(b.wait_until(ready, 10).await, "focusing the sounds picker lists them");
    let sounds = b
        .js("return Array.from(document.querySelectorAll('#pick-suppress_classes-results li.option')).map(li => li.textContent);")
        .await;
    let first: Vec<&str> = sounds.as_array().into_iter().flatten().filter_map(Value::as_str).take(3).collect();
    let made = ["Dog", "Engine", "Siren", "Gun", "Fireworks", "Power tools", "Human"];
    assert!(
        first.len() == 3 && first.iter().all(|s| made.iter().any(|m| s.starts_with(m))),
        "sounds like a dog, an engine or a siren first: {first:?}"
    );
    b.shot("sounds").await;

    b.find("#pick-suppress_classes").await.send_keys("\u{E00C}").await.expect("escape closes the list");

    // Add every owl: remove the owls, and the button is back at once.
    assert!(!b.has("button.add-owls:not([hidden])").await, "the owls are in the list already");
    b.click("#suppression [data-key=suppress_species] li.chip[data-code=owls] .chip-remove").await;
    assert!(
        b.wait_until("const o = document.querySelector('button.add-owls'); return !!o && !o.hidden;", 5).await,
        "\"Add every owl\" shows without a reload"
    );
    b.click("button.add-owls").await;
    assert!(b.has("#suppression [data-key=suppress_species] li.chip[data-code=owls]").await);
    assert!(!b.has("button.add-owls:not([hidden])").await, "added: the button goes");
    b.click("#detection-form button[type=submit]").await;
    for _ in 0..100 {
        if api.get("/settings/tenant").await.1["settings"]["exclude_species"] == json!(["turdus_merula"]) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let (_, s) = api.get("/settings/tenant").await;
    assert_eq!(s["settings"]["exclude_species"], json!(["turdus_merula"]), "{s}");
    assert_eq!(s["settings"]["suppress_species"], json!(["owls"]), "{s}");
    b.assert_no_js_errors().await;
    b.close().await;
}
