//! Two-factor sign-in in a real headless chromium (issue 51):
//! - 10: turning it on says it is on and leaves only what is left to do (the backup codes, shown
//!   once as a notice, not an error); a wrong first code is told in words that fit a set-up (no
//!   backup codes exist yet);
//! - 11: the second step's code field checks what is typed (its `pattern` is one browsers can
//!   read), with no error in the browser's console.

mod common;

use std::time::Duration;

use common::{PASSWORD, browser::Browser, oathtool};
use serde_json::json;

/// Whether the element `css` takes space on the page now.
fn shown(css: &str) -> String {
    format!("const e = document.querySelector({css:?}); return !!e && e.getClientRects().length > 0;")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn turning_two_factor_on_says_it_is_on_and_leaves_only_the_backup_codes() {
    let hub = common::spawn_hub().await;
    let user = hub.user("ana@example.org", false).await;
    let b = Browser::start(hub.http_addr.port(), "two-factor").await;
    b.sign_in(&user.email, PASSWORD, None).await;
    b.goto("/account#mfa").await;
    b.click("button[data-api='POST /auth/mfa/totp/begin']").await;
    assert!(b.wait_until(&shown("#totp img.qr"), 10).await, "the QR code shows");
    let key = b.text("#totp code[data-field=manualKey]").await;
    let right = oathtool(&key, hub.state().clock.now());

    // A wrong code: a sentence that fits a set-up, where no backup code exists yet.
    b.fill("#totp input[name=code]", if right == "000000" { "111111" } else { "000000" }).await;
    b.click("#totp button[type=submit]").await;
    assert!(b.wait_until(&shown("#totp .form-error"), 10).await, "a wrong code is said");
    let said = b.text("#totp .form-error").await;
    assert!(said.starts_with(char::is_uppercase), "a sentence: {said:?}");
    assert!(!said.to_lowercase().contains("backup"), "no backup codes exist during the set-up: {said:?}");
    assert!(said.contains("not right"), "{said:?}");
    // The refusal is the API's 401, which the browser logs; nothing else may be in the console.
    let refused = "/api/auth/mfa/totp/confirm - Failed to load resource: the server responded with a status of 401";
    let console = b.console_errors().await;
    assert!(console.iter().all(|e| e.starts_with("network: ") && e.contains(refused)), "{console:#?}");
    b.shot("wrong-code").await;

    // The right code: the card says it is on; the QR code, the key and "Turn on" are gone.
    b.fill("#totp input[name=code]", &right).await;
    b.click("#totp button[type=submit]").await;
    assert!(b.wait_until(&shown("#backup-codes"), 10).await, "the backup codes show");
    let card = b.js("return document.getElementById('mfa').innerText;").await;
    let card = card.as_str().unwrap_or_default();
    assert!(card.contains("Two-factor sign-in is on"), "the card says it is on:\n{card}");
    for (css, what) in [
        ("#totp img.qr", "the QR code"),
        ("#totp code[data-field=manualKey]", "the key"),
        ("#totp button[type=submit]", "Turn on"),
        ("button[data-api='POST /auth/mfa/totp/begin']", "Set up an authenticator app"),
    ] {
        assert_eq!(b.js(&shown(css)).await, json!(false), "{what} is gone once two-factor is on:\n{card}");
    }
    assert!(!card.contains("Turn on") && !card.contains(&key), "{card}");
    let codes = b.text("#backup-codes").await;
    assert_eq!(codes.lines().filter(|l| !l.trim().is_empty()).count(), 10, "ten backup codes:\n{codes}");

    // "Shown once" is a notice to act on, not an error.
    let once = b
        .js("return Array.from(document.querySelectorAll('#codes p'))
              .filter((p) => /Shown once/.test(p.textContent)).map((p) => p.className);")
        .await;
    assert_eq!(once, json!(["notice once"]), "\"Shown once\" is a notice, said once");
    b.shot("on").await;
    b.assert_no_console_errors().await;

    // Done: the page as it now is, two-factor on.
    b.click("#codes a[href='/account']").await;
    assert!(b.text("#mfa-on").await.starts_with("On."), "after Done the card shows the state");
    b.assert_no_js_errors().await;
    b.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_second_step_checks_the_code_typed_with_no_console_error() {
    let hub = common::spawn_hub().await;
    let user = hub.user("ben@example.org", false).await;
    let api = hub.login(&user.email).await;
    let key = common::turn_on_totp(&hub, &api).await;
    hub.state().clock.advance(Duration::from_secs(31));

    let b = Browser::start(hub.http_addr.port(), "two-factor-signin").await;
    b.goto("/signin").await;
    b.fill("input[name=email]", &user.email).await;
    b.fill("input[name=password]", PASSWORD).await;
    b.click("form[action='/signin'] button[type=submit]").await;
    b.find("input[name=code]").await;

    // The field's pattern works: too short is refused by the browser; both kinds of code pass.
    let check = |typed: &str| {
        format!(
            "const i = document.querySelector('input[name=code]'); i.value = {typed:?};
             return [i.validity.patternMismatch, i.checkValidity()];"
        )
    };
    assert_eq!(b.js(&check("12")).await, json!([true, false]), "two characters are not a code");
    assert_eq!(b.js(&check("123 456")).await, json!([false, true]), "an authenticator code");
    assert_eq!(b.js(&check("k7m2p-x9q4r")).await, json!([false, true]), "a backup code");
    b.assert_no_console_errors().await;

    // A wrong code: said in a sentence that fits a sign-in, where backup codes exist. The page
    // answers 401, which the browser logs as the page's status; nothing else is in the console.
    let right = oathtool(&key, hub.state().clock.now());
    b.fill("input[name=code]", if right == "000000" { "111111" } else { "000000" }).await;
    b.click("form[action='/signin/mfa'] button[type=submit]").await;
    let said = b.text("p.error[role=alert]").await;
    assert!(said.starts_with("That code is not right") && said.contains("backup code"), "{said:?}");
    let own_status =
        format!("network: {}/signin/mfa - Failed to load resource: the server responded with a status of 401", b.base);
    let console = b.console_errors().await;
    assert!(console.iter().all(|e| e.starts_with(&own_status)), "{console:#?}");

    // A real sign-in: typed, sent, signed in; still nothing in the console.
    b.fill("input[name=code]", &right).await;
    b.shot("code").await;
    b.click("form[action='/signin/mfa'] button[type=submit]").await;
    b.find("header.topbar nav.tabs").await;
    b.assert_no_console_errors().await;
    b.assert_no_js_errors().await;
    b.close().await;
}
