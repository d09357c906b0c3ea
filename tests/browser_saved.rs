//! Issue 51, defect 9, in a real headless chromium: saving Team settings or detection settings
//! reloads the page, and the reloaded page still says "Saved" (once: a later reload says
//! nothing). Screenshots at 390 and 1280 px.

mod common;

use common::{PASSWORD, browser::Browser, seed};
use serde_json::json;

/// The toasts on the page now, as their texts.
const TOASTS: &str = "return Array.from(document.querySelectorAll('#toasts .toast')).map(t => t.textContent);";

/// Clicks `submit`, waits for the page to reload, and returns the toasts the new page shows.
async fn save_and_read_toasts(b: &Browser, submit: &str) -> Vec<String> {
    b.js("window.__before_save = true; return true;").await;
    b.click(submit).await;
    assert!(
        b.wait_until("return window.__before_save !== true && document.readyState === 'complete';", 10).await,
        "the page reloads after saving"
    );
    // The toast is added once the new page's scripts have run.
    b.wait_until("return document.querySelectorAll('#toasts .toast').length > 0;", 3).await;
    serde_json::from_value(b.js(TOASTS).await).expect("toasts")
}

async fn no_toast_after_another_reload(b: &Browser) {
    b.client.refresh().await.expect("reload");
    b.find("main").await;
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    let toasts: Vec<String> = serde_json::from_value(b.js(TOASTS).await).expect("toasts");
    assert!(toasts.is_empty(), "the note is shown once, not on every reload: {toasts:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn saving_team_and_detection_settings_says_saved_after_the_reload() {
    let hub = common::spawn_hub().await;
    let owner = hub.user("owner@example.org", false).await;
    let sat = seed::satellite(&hub, owner.tenant, "Garden Pi").await;
    let api = hub.login(&owner.email).await;
    let b = Browser::start(hub.http_addr.port(), "saved").await;
    b.sign_in(&owner.email, PASSWORD, None).await;

    // Team settings: who registers satellites.
    b.goto("/team").await;
    b.find("form.team-settings select[name=device_policy] option[value=admins]").await.click().await.expect("pick");
    let toasts = save_and_read_toasts(&b, "form.team-settings button[type=submit]").await;
    assert_eq!(toasts, ["Saved"], "Team settings say they were saved, after the reload");
    let (_, s) = api.get("/settings/tenant").await;
    assert_eq!(s["settings"]["device_policy"], json!("admins"), "{s}");
    b.shot_at("team-settings", &[390, 1280]).await;
    no_toast_after_another_reload(&b).await;

    // Detection settings, the team's.
    b.goto("/team/detection").await;
    b.fill("#detection-form input[name=min_confidence]", "0.8").await;
    let toasts = save_and_read_toasts(&b, "#detection-form button[type=submit]").await;
    assert_eq!(toasts, ["Saved"], "detection settings say they were saved, after the reload");
    let (_, s) = api.get("/settings/tenant").await;
    assert_eq!(s["settings"]["min_confidence"], json!(0.8), "{s}");
    b.shot_at("detection-settings", &[390, 1280]).await;
    no_toast_after_another_reload(&b).await;

    // A satellite's detection settings: saved, and sent to it.
    b.goto(&format!("/satellites/{sat}")).await;
    b.fill("#ov-min_confidence", "0.9").await;
    let toasts = save_and_read_toasts(&b, "#sat-detection-form button[type=submit]").await;
    assert_eq!(toasts, ["Saved and sent to the satellite."]);
    b.assert_no_js_errors().await;
    b.close().await;
}
