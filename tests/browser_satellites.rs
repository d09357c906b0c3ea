//! The Satellites, Alerts and Exports pages in a real headless chromium: register a satellite
//! through the form (one-time credentials and the hub-drawn QR code appear; the API lists it),
//! add a webhook channel pointing at a real local receiver and press "Send test" (the page shows
//! the receiver's status; the receiver got the POST). Screenshots of every page at 390 and 1280
//! px; any script error fails the test.

mod common;

use common::{PASSWORD, browser::Browser, receiver::Receiver, seed};

#[tokio::test]
async fn register_a_satellite_and_test_a_webhook_channel_in_a_browser() {
    let hub = common::spawn_hub().await;
    let owner = hub.user("owner@example.com", false).await;
    let seeded = seed::satellite(&hub, owner.tenant, "Garden Pi").await;
    let receiver = Receiver::start(None).await;
    let b = Browser::start(hub.http_addr.port(), "satellites").await;
    b.sign_in("owner@example.com", PASSWORD, None).await;

    b.goto("/satellites").await;
    b.find(&format!("article[data-id='{seeded}']")).await;
    b.shot("list").await;

    // Register through the form: the secrets are shown once, with a QR code drawn by the hub.
    b.click("#register").await;
    b.fill("#sat-name", "Orchard Pi").await;
    b.fill("#sat-lat", "52.37").await;
    b.fill("#sat-lon", "4.89").await;
    b.click("#register-submit").await;
    b.find("#register-result:not([hidden])").await;
    let password = b.text("#reg-password").await;
    let key = b.text("#reg-apikey").await;
    assert!(password.len() >= 16, "the MQTT password is shown: {password:?}");
    assert!(key.len() >= 16, "the API key is shown: {key:?}");
    assert!(b.text("#register-result").await.contains("Shown once."));
    b.find("#reg-qr svg.qr").await;
    b.shot("registered").await;
    let api = hub.login("owner@example.com").await;
    let (_, list) = api.get("/satellites").await;
    let orchard = list["satellites"]
        .as_array()
        .and_then(|a| a.iter().find(|s| s["name"] == "Orchard Pi"))
        .unwrap_or_else(|| panic!("the API lists the new satellite: {list}"));
    let orchard_id = orchard["id"].as_str().expect("id").to_owned();

    b.goto(&format!("/satellites/{orchard_id}")).await;
    b.find("#sat").await;
    assert!(b.text(".sun").await.contains("Sunrise"), "a positioned satellite has sun times");
    b.shot("detail").await;

    // A webhook channel to a real receiver, and its test send.
    b.goto("/alerts").await;
    b.click("#channel-add summary").await;
    b.fill("#ch-name", "Local receiver").await;
    b.fill("#ch-url", &receiver.url("/birds")).await;
    b.click("#channel-form button[type=submit]").await;
    b.find("button[data-test]").await;
    b.click("button[data-test]").await;
    assert!(
        b.wait_until(
            "const t = document.querySelector('.test-result'); return !!t && t.textContent.includes('HTTP 200');",
            15
        )
        .await,
        "the page shows the receiver's answer: {}",
        b.text(".test-result").await
    );
    let got = receiver.wait_for(1, 10).await;
    assert_eq!(got.len(), 1, "the receiver got the test POST");
    assert_eq!(got[0].path, "/birds");
    b.shot("alerts").await;

    b.goto("/exports").await;
    b.find("ul.export-links").await;
    b.shot("exports").await;
    b.close().await;
}
