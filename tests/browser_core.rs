//! The dashboard in a real browser (headless Debian chromium): sign in with a TOTP code, watch a
//! detection made by the real model from a real MQTT chunk arrive on the Live page without a
//! reload, play its audio, and sign out. Fails on any script error on any page it visits.

mod common;

use std::time::Duration;

use common::{PASSWORD, browser::Browser, oathtool, sat};
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sign_in_with_totp_watch_a_real_detection_arrive_play_it_and_sign_out() {
    let hub = common::spawn_hub_with(common::with_model).await;
    let user = hub.user("ana@example.org", false).await;
    let api = hub.login(&user.email).await;

    // TOTP enrolment over the API; the browser signs in with a later code.
    let key = common::turn_on_totp(&hub, &api).await;
    hub.state().clock.advance(Duration::from_secs(31));
    let r = sat::register(&api, json!({ "name": "Garden", "kind": "satellite" })).await;

    let b = Browser::start(hub.http_addr.port(), "core").await;
    // Without a session the dashboard asks to sign in, and comes back to the page asked for.
    b.goto("/?from=bookmark").await;
    assert!(b.path().await.starts_with("/signin?next=%2F%3Ffrom%3Dbookmark"), "{}", b.path().await);
    b.shot("signin").await;
    b.fill("input[name=email]", &user.email).await;
    b.fill("input[name=password]", "not the password").await;
    b.click("form[action='/signin'] button[type=submit]").await;
    assert!(b.text("p.error").await.contains("do not match"), "a wrong password is said plainly");
    b.fill("input[name=password]", PASSWORD).await;
    b.click("form[action='/signin'] button[type=submit]").await;
    b.find("input[name=code]").await;
    b.shot("signin-code").await;
    b.fill("input[name=code]", &oathtool(&key, hub.state().clock.now())).await;
    b.click("form[action='/signin/mfa'] button[type=submit]").await;
    b.find("header.topbar nav.tabs").await;
    assert_eq!(b.path().await, "/?from=bookmark", "back where the person was going");

    // Live: connected over the WebSocket, then a real chunk comes in.
    b.goto("/").await;
    assert!(
        b.wait_until("return document.getElementById('live-state').classList.contains('on');", 10).await,
        "live connects"
    );
    b.js("window.__sameLoad = true; return null;").await;
    assert!(!b.has("#feed .det-card").await, "no detections yet");
    let client = sat::connect(&hub, &r).await;
    client.publish(&r.topic("audio"), sat::warbler_message_now(&r)).await;
    assert!(
        b.wait_until("return !!document.querySelector('#feed .det-card');", 30).await,
        "the detection arrives on the Live page"
    );
    assert_eq!(b.js("return window.__sameLoad === true;").await, json!(true), "without a reload");
    let card = b.text("#feed .det-card").await;
    assert!(card.contains("Tennessee Warbler"), "the real model's name: {card}");
    assert!(card.contains("Garden"), "the satellite: {card}");
    assert!(
        b.wait_until("return /\\b1\\b/.test(document.querySelector('#today .number .n').textContent);", 10).await,
        "today's species count updates"
    );

    assert!(
        b.wait_until("return /Tennessee Warbler/.test((document.querySelector('#grid table.activity') || {}).textContent || '');", 10).await,
        "the daily activity grid fills in without a reload"
    );

    // Play: the shared player loads the chunk and moves.
    b.click("#feed .det-card button.play").await;
    assert!(
        b.wait_until("return window.bh.player.currentTime > 0 || window.bh.player.ended;", 15).await,
        "the audio plays"
    );
    assert!(
        b.has("#feed .det-card button.play.playing").await
            || b.js("return window.bh.player.ended;").await == json!(true)
    );
    b.shot("live").await;

    // Sign out from the account menu; the dashboard then asks to sign in again.
    b.click("details.account summary").await;
    b.click("details.account form[action='/signout'] button").await;
    b.find("form[action='/signin']").await;
    b.goto("/").await;
    assert!(b.path().await.starts_with("/signin"), "signed out: {}", b.path().await);
    b.assert_no_js_errors().await;
    drop(client);
    b.close().await;
}
