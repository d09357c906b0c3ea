//! The detection settings in a real headless chromium: an admin picks species by their German
//! names on the Team settings page (the API then holds their codes) and sees the hub's 422 for a
//! threshold of 1.5 with nothing saved; a detection page raises its species' threshold (never
//! lowers it: issue 51) and never records it here, at the satellite and at the team; the satellite page sets and clears an
//! override; a species page sets its own minimum; a viewer reads all of it and can change none.
//! Screenshots at 390 and 1280 px; no page is wider than a 360 or 390 px phone.

mod common;

use birdhub::domain::Role;
use common::{PASSWORD, TestHub, browser::Browser, seed};
use serde_json::{Value, json};

const BLACKBIRD: seed::Species = ("turdus_merula", "Eurasian Blackbird", "Turdus merula");

/// Labels of a few real classes in English and German (the species pickers search them).
fn labels() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(dir.path().join("labels")).expect("mkdir");
    let en = "Erithacus rubecula_European Robin\nStrix aluco_Tawny Owl\nTurdus merula_Eurasian Blackbird\n\
              Turdus philomelos_Song Thrush\nDog_Dog\nEngine_Engine\nHuman vocal_Human vocal\n";
    let de = "Erithacus rubecula_Rotkehlchen\nStrix aluco_Waldkauz\nTurdus merula_Amsel\n\
              Turdus philomelos_Singdrossel\nDog_Hund\nEngine_Motor\nHuman vocal_Menschliche Stimme\n";
    std::fs::write(dir.path().join("labels/en.txt"), en).expect("en");
    std::fs::write(dir.path().join("labels/de.txt"), de).expect("de");
    dir
}

struct World {
    hub: TestHub,
    team: birdhub::ids::TenantId,
    sat_id: birdhub::ids::SatelliteId,
    sat: String,
    det: String,
    _labels: tempfile::TempDir,
}

async fn world() -> World {
    let labels = labels();
    let dir = labels.path().display().to_string();
    let hub = common::spawn_hub_with(move |s| s.inference.model_dir = dir).await;
    let owner = hub.user("owner@example.org", false).await;
    hub.member_of("viewer@example.org", owner.tenant, Role::Viewer).await;
    let admin = hub.login("owner@example.org").await;
    let (status, prefs) = admin.put("/auth/me/preferences", json!({ "language": "de" })).await;
    assert_eq!(status, 200, "{prefs}");
    let sat = seed::satellite(&hub, owner.tenant, "Garden Pi").await;
    let (_, det) = seed::heard(&hub, owner.tenant, sat, "2026-05-02T05:10:00Z", BLACKBIRD, 0.8312).await;
    World { hub, team: owner.tenant, sat_id: sat, sat: sat.to_string(), det: det.to_string(), _labels: labels }
}

async fn team_settings(api: &common::Api) -> Value {
    let (status, body) = api.get("/settings/tenant").await;
    assert_eq!(status, 200, "{body}");
    body["settings"].clone()
}

/// Polls the API until `check` holds on the team's settings (a page save reloads the page).
async fn settings_until(api: &common::Api, check: impl Fn(&Value) -> bool) -> Value {
    for _ in 0..100 {
        let s = team_settings(api).await;
        if check(&s) {
            return s;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    team_settings(api).await
}

async fn overrides_until(api: &common::Api, sat: &str, check: impl Fn(&Value) -> bool) -> Value {
    for _ in 0..100 {
        let (status, body) = api.get(&format!("/satellites/{sat}/config")).await;
        assert_eq!(status, 200, "{body}");
        if check(&body["overrides"]) {
            return body["overrides"].clone();
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    api.get(&format!("/satellites/{sat}/config")).await.1["overrides"].clone()
}

/// The page is no wider than a 360 px and a 390 px phone (wide tables scroll in their card).
async fn fits_phones(b: &Browser, what: &str) {
    for width in [360, 390] {
        b.client.set_window_size(width, 800).await.expect("resize");
        let fits = b.wait_until("return document.documentElement.scrollWidth <= window.innerWidth;", 5).await;
        // On failure, the widest elements that stick out, to say what to fix.
        let measured = b
            .js("return [document.documentElement.scrollWidth, window.innerWidth, Array.from(document.querySelectorAll('main *'))\
                .filter(e => e.getBoundingClientRect().right > window.innerWidth + 1)\
                .map(e => e.tagName + '#' + e.id + '.' + e.className + ' ' + Math.round(e.getBoundingClientRect().right)).slice(0, 8)];")
            .await;
        assert!(fits, "{what} is wider than a {width} px window: {measured}");
    }
    b.client.set_window_size(common::browser::DESKTOP, 900).await.expect("resize");
}

/// Types `text` into a species picker and clicks the match with `code`.
async fn pick(b: &Browser, picker: &str, text: &str, code: &str) {
    b.fill(picker, text).await;
    b.click(&format!("{picker}-results li[data-code='{code}']")).await;
}

async fn reload(b: &Browser) {
    b.client.refresh().await.expect("reload");
}

/// The page has reloaded after a save: the marker set on the old page is gone.
async fn mark_then_wait_reload(b: &Browser, click: &str) {
    b.js("window.__before_save = true; return true;").await;
    b.click(click).await;
    assert!(
        b.wait_until("return window.__before_save !== true && document.readyState === 'complete';", 10).await,
        "the page reloads after saving"
    );
}

#[tokio::test]
async fn an_admin_sets_thresholds_and_lists_and_a_detection_page_changes_them() {
    let w = world().await;
    let api = w.hub.login("owner@example.org").await;
    let b = Browser::start(w.hub.http_addr.port(), "detection-settings").await;
    b.sign_in("owner@example.org", PASSWORD, None).await;

    // Team settings: a per-species minimum and an excluded species, picked by German names.
    b.goto("/team").await;
    b.find("#detection-form").await;
    let hub_default = format!("{:.2}", w.hub.state().settings.inference.threshold);
    assert!(
        b.text("#detection").await.contains(&format!("the hub's default, {hub_default}")),
        "blank shows the hub's value"
    );
    pick(&b, "#pick-species_min_confidence", "Amsel", "turdus_merula").await;
    b.fill("#species_min_confidence tr[data-code='turdus_merula'] input", "0.85").await;
    pick(&b, "#pick-exclude_species", "waldk", "strix_aluco").await;
    assert!(
        b.text("#exclude_species li.chip[data-code='strix_aluco']").await.contains("Waldkauz"),
        "a chip names the species"
    );
    pick(&b, "#pick-suppress_classes", "Motor", "engine").await;
    mark_then_wait_reload(&b, "#detection-form button[type=submit]").await;
    let s = settings_until(&api, |s| s["exclude_species"] == json!(["strix_aluco"])).await;
    assert_eq!(s["species_min_confidence"], json!({ "turdus_merula": 0.85 }), "{s}");
    assert_eq!(s["exclude_species"], json!(["strix_aluco"]));
    assert_eq!(s["suppress_classes"], json!(["dog", "engine"]), "the default dog and the engine picked");
    assert_eq!(s["min_confidence"], Value::Null, "a blank minimum stays the hub's");
    let row = b.text("#species_min_confidence tr[data-code='turdus_merula']").await;
    assert!(row.contains("Amsel") && row.contains("Turdus merula"), "names, never the code alone: {row}");
    assert!(b.text("#suppression").await.contains("Hund"), "the sound classes in German too");

    // A threshold of 1.5: the hub's 422 message beside the form, and nothing saved.
    b.fill("#species_min_confidence tr[data-code='turdus_merula'] input", "1.5").await;
    pick(&b, "#pick-exclude_species", "Rotkehl", "erithacus_rubecula").await;
    b.click("#detection-form button[type=submit]").await;
    // Issue 51: beside the species' row, naming it in the viewer's words, never by its code.
    let beside = "#species_min_confidence tr[data-code='turdus_merula'] .field-error";
    assert!(b.wait_until(&format!("return !!document.querySelector(\"{beside}\");"), 10).await, "an error shows");
    let error = b.text(beside).await;
    assert!(error.contains("0.99") && !error.contains("turdus_merula"), "the API's message: {error}");
    let s = team_settings(&api).await;
    assert_eq!(s["species_min_confidence"], json!({ "turdus_merula": 0.85 }), "nothing saved");
    assert_eq!(s["exclude_species"], json!(["strix_aluco"]), "nothing saved");
    reload(&b).await;
    b.find("#detection-form").await;
    b.shot("team").await;
    fits_phones(&b, "Team settings").await;
    b.goto("/team/detection").await;
    b.find("#detection-form button[type=submit]").await;
    fits_phones(&b, "Detection settings").await;

    // The detection page: the blackbird needs 0.85 already, more than this 0.8312 detection has,
    // so no raise is offered (issue 51: it offered 0.84, a lowering).
    b.goto(&format!("/detections/{}", w.det)).await;
    let said = b.text("#threshold-now").await;
    assert!(said.contains("Amsel already needs 0.85"), "{said}");
    assert!(!b.has("#raise-threshold").await, "no raise that lowers");
    // Without its own threshold (the hub's 0.70 applies), raise it to what hides this detection.
    let (status, body) = api.put("/settings/tenant", json!({ "species_min_confidence": {} })).await;
    assert_eq!(status, 200, "{body}");
    reload(&b).await;
    b.click("#raise-threshold").await;
    let asked = b.text("#det-confirm-text").await;
    assert!(asked.contains("0.84") && asked.contains("0.70"), "it asks first, naming the new and old values: {asked}");
    b.click("#det-confirm-ok").await;
    assert!(b.wait_until("return !document.getElementById('det-settings-result').hidden;", 10).await);
    assert!(b.text("#det-settings-result").await.contains("0.84"));
    assert!(b.has("#det-settings-result a[href='/team/detection#species_min_confidence']").await, "how to undo");
    let s = team_settings(&api).await;
    assert_eq!(s["species_min_confidence"], json!({ "turdus_merula": 0.84 }), "{s}");

    // "Never record this species here": this satellite only, then the whole team.
    b.click("input[name=never-scope][value=satellite]").await;
    b.click("#never-record").await;
    assert!(b.text("#det-confirm-text").await.contains("Garden Pi"));
    b.click("#det-confirm-ok").await;
    let shown = "const r = document.getElementById('det-settings-result'); return !r.hidden && r.textContent.includes('Garden Pi');";
    let said = b.wait_until(shown, 10).await;
    assert!(
        said,
        "the page says what changed: {}",
        b.js("return document.getElementById('det-confirm-error').textContent;").await
    );
    let link = format!("#det-settings-result a[href='/satellites/{}#detection']", w.sat);
    assert!(b.has(&link).await, "the undo link goes to the satellite's settings");
    let o = overrides_until(&api, &w.sat, |o| o["exclude_species"].is_array()).await;
    assert_eq!(o["exclude_species"], json!(["turdus_merula"]), "{o}");
    assert_eq!(team_settings(&api).await["exclude_species"], json!(["strix_aluco"]), "the team's list is untouched");
    b.shot("detection").await;
    fits_phones(&b, "the detection page").await;
    reload(&b).await;
    b.click("input[name=never-scope][value=team]").await;
    b.click("#never-record").await;
    b.click("#det-confirm-ok").await;
    assert!(b.wait_until("return !document.getElementById('det-settings-result').hidden;", 10).await);
    let s = team_settings(&api).await;
    assert_eq!(s["exclude_species"], json!(["strix_aluco", "turdus_merula"]), "{s}");

    // The satellite page: the excluded blackbird is an override; set a minimum, then clear it.
    b.goto(&format!("/satellites/{}", w.sat)).await;
    b.find("#sat-detection-form").await;
    let min = b.text("[data-override=min_confidence] .inherits").await;
    assert!(min.contains("inherits team") && min.contains(&hub_default), "{min}");
    assert!(b.text("[data-override=exclude_species] li.chip").await.contains("Amsel"));
    b.fill("#ov-min_confidence", "0.9").await;
    mark_then_wait_reload(&b, "#sat-detection-form button[type=submit]").await;
    let o = overrides_until(&api, &w.sat, |o| o["min_confidence"] == json!(0.9)).await;
    assert_eq!(o["min_confidence"], json!(0.9), "{o}");
    assert_eq!(o["exclude_species"], json!(["turdus_merula"]), "the other overrides stay");
    assert!(b.text("[data-override=min_confidence] .inherits").await.contains("set here"));
    let (_, sat) = api.get(&format!("/satellites/{}", w.sat)).await;
    let counted = sat.get("hubFilterStats").or(sat.get("hub_filter_stats")).is_some_and(Value::is_object);
    assert_eq!(b.has(".hub-filter").await, counted, "the hub's counters show when the hub has them: {sat}");
    b.shot("satellite").await;
    fits_phones(&b, "the satellite page").await;
    mark_then_wait_reload(&b, "button.clear-override[data-key=min_confidence]").await;
    let o = overrides_until(&api, &w.sat, |o| o.get("min_confidence").is_none_or(Value::is_null)).await;
    assert!(o.get("min_confidence").is_none_or(Value::is_null), "cleared: {o}");
    assert!(b.text("[data-override=min_confidence] .inherits").await.contains("inherits team"));

    // A species page: its own minimum, set and cleared.
    b.goto(&format!("/species/{}", BLACKBIRD.0)).await;
    assert!(b.text("#sp-threshold-now").await.contains("0.84"), "the value the detection page set");
    b.fill("#sp-threshold", "0.9").await;
    mark_then_wait_reload(&b, "#sp-threshold-save").await;
    let s = settings_until(&api, |s| s["species_min_confidence"]["turdus_merula"] == json!(0.9)).await;
    assert_eq!(s["species_min_confidence"], json!({ "turdus_merula": 0.9 }));
    b.shot("species").await;
    fits_phones(&b, "the species page").await;
    mark_then_wait_reload(&b, "#sp-threshold-clear").await;
    let s = settings_until(&api, |s| s["species_min_confidence"] == json!({})).await;
    assert_eq!(s["species_min_confidence"], json!({}), "cleared");
    assert!(b.text("#sp-threshold-now").await.contains("No minimum of its own"));
    b.assert_no_js_errors().await;
    b.close().await;
}

#[tokio::test]
async fn a_viewer_reads_the_detection_settings_and_can_change_none() {
    let w = world().await;
    let admin = w.hub.login("owner@example.org").await;
    let (status, body) =
        admin.put("/settings/tenant", json!({ "exclude_species": ["strix_aluco"], "min_confidence": 0.8 })).await;
    assert_eq!(status, 200, "{body}");
    let b = Browser::start(w.hub.http_addr.port(), "detection-settings-viewer").await;
    b.sign_in("viewer@example.org", PASSWORD, None).await;

    b.goto("/team/detection").await;
    b.find("#detection-form").await;
    assert!(b.text("#detection").await.contains("Only a team admin can change these."));
    assert!(b.text("#exclude_species").await.contains("Tawny Owl"), "names in the viewer's language (English)");
    assert_eq!(b.js("return document.getElementById('ds-min_confidence').value;").await, json!("0.8"));
    let editable = b
        .js("return Array.from(document.querySelectorAll('#detection-form input, #detection-form select')).filter(e => !e.disabled).length;")
        .await;
    assert_eq!(editable, json!(0), "every control is read-only");
    for absent in ["#detection-form button[type=submit]", ".picker", ".chip-remove"] {
        assert!(!b.has(absent).await, "a viewer has no {absent}");
    }
    b.shot("viewer").await;
    fits_phones(&b, "Detection settings (viewer)").await;

    // The other pages offer no changes either, and the API refuses them anyway.
    b.goto(&format!("/species/{}", BLACKBIRD.0)).await;
    assert!(b.text("#species-threshold").await.contains("0.80"), "the team's minimum applies");
    assert!(!b.has("#sp-threshold").await && !b.has("#sp-threshold-save").await);
    b.goto(&format!("/detections/{}", w.det)).await;
    b.find("#votes").await;
    assert!(!b.has("#det-settings").await, "no shortcuts for a viewer");
    b.goto(&format!("/satellites/{}", w.sat)).await;
    b.find("#sat-detection-form").await;
    assert!(!b.has("#sat-detection-form button").await, "no save or clear for a viewer");
    b.assert_no_js_errors().await;
    let viewer = w.hub.login("viewer@example.org").await;
    let (status, _) = viewer.put("/settings/tenant", json!({ "exclude_species": [] })).await;
    assert_eq!(status, 403);
    let (status, _) =
        viewer.put(&format!("/satellites/{}/config", w.sat), json!({ "overrides": { "min_confidence": 0.9 } })).await;
    assert_eq!(status, 403);
    assert_eq!(team_settings(&admin).await["exclude_species"], json!(["strix_aluco"]));
    b.close().await;
}

/// Issue 51, defect 1: "Raise this species' threshold" is offered only above what the species
/// needs now, at the level that hides the call, with the old value in the dialog; the hub
/// refuses a raise that a change made meanwhile turned into a lowering.
#[tokio::test]
async fn a_raise_is_offered_only_above_the_species_threshold_and_never_lowers_it() {
    let w = world().await;
    let api = w.hub.login("owner@example.org").await;
    let (team, sat) = (w.team, w.sat_id);
    let (_, at_85) = seed::heard(&w.hub, team, sat, "2026-05-02T05:20:00Z", BLACKBIRD, 0.85).await;
    let (_, sure) = seed::heard(&w.hub, team, sat, "2026-05-02T05:30:00Z", BLACKBIRD, 1.0).await;
    let (status, body) =
        api.put("/settings/tenant", json!({ "species_min_confidence": { "turdus_merula": 0.9 } })).await;
    assert_eq!(status, 200, "{body}");
    let b = Browser::start(w.hub.http_addr.port(), "detection-raise").await;
    b.sign_in("owner@example.org", PASSWORD, None).await;

    // The team keeps blackbirds from 0.90: an 85 % call offers no raise, and says so.
    b.goto(&format!("/detections/{at_85}")).await;
    let said = b.text("#threshold-now").await;
    assert!(said.contains("Amsel already needs 0.90"), "{said}");
    assert!(!b.has("#raise-threshold").await, "no raise to 0.85 or 0.86");
    b.shot("already-needs").await;

    // A 100 % call: no threshold hides it, and the page says so rather than offer 0.99.
    b.goto(&format!("/detections/{sure}")).await;
    let said = b.text("#threshold-now").await;
    assert!(said.contains("No threshold hides a call of 100 %"), "{said}");
    assert!(!b.has("#raise-threshold").await);

    // From 0.80, the 85 % call offers 0.86 (0.85 would keep it) and names the old value.
    let (status, body) =
        api.put("/settings/tenant", json!({ "species_min_confidence": { "turdus_merula": 0.8 } })).await;
    assert_eq!(status, 200, "{body}");
    b.goto(&format!("/detections/{at_85}")).await;
    assert!(b.text("#raise-threshold").await.contains("to 0.86"), "the level that hides this call");
    b.click("#raise-threshold").await;
    let asked = b.text("#det-confirm-text").await;
    assert!(asked.contains("0.86") && asked.contains("It needs 0.80 now"), "{asked}");
    b.shot("raise-dialog").await;

    // Meanwhile a learned 0.93 was applied: saving now would lower it, and the hub refuses.
    let (status, body) =
        api.put("/settings/tenant", json!({ "species_min_confidence": { "turdus_merula": 0.93 } })).await;
    assert_eq!(status, 200, "{body}");
    b.click("#det-confirm-ok").await;
    assert!(b.wait_until("return !document.getElementById('det-confirm-error').hidden;", 10).await, "refused");
    let error = b.text("#det-confirm-error").await;
    assert!(error.contains("Amsel already needs a confidence of 0.93"), "{error}");
    assert_eq!(team_settings(&api).await["species_min_confidence"], json!({ "turdus_merula": 0.93 }), "kept");
    b.click("#det-confirm-cancel").await;

    // From 0.80 again, the raise saves 0.86.
    let (status, body) =
        api.put("/settings/tenant", json!({ "species_min_confidence": { "turdus_merula": 0.8 } })).await;
    assert_eq!(status, 200, "{body}");
    reload(&b).await;
    b.click("#raise-threshold").await;
    b.click("#det-confirm-ok").await;
    assert!(b.wait_until("return !document.getElementById('det-settings-result').hidden;", 10).await);
    let result = b.text("#det-settings-result").await;
    assert!(result.contains("0.86") && result.contains("it needed 0.80"), "{result}");
    let s = settings_until(&api, |s| s["species_min_confidence"]["turdus_merula"] == json!(0.86)).await;
    assert_eq!(s["species_min_confidence"], json!({ "turdus_merula": 0.86 }), "{s}");
    b.shot("raised").await;
    fits_phones(&b, "the detection page").await;
    b.assert_no_js_errors().await;
    b.close().await;
}
