//! The Detections pages in a real browser (headless Debian chromium): a real satellite sends the
//! warbler recording over MQTT, the real model names it, and a person opens it from the list,
//! plays its audio (the playhead moves), votes confirm (the consensus updates in place) and drags
//! an annotation box on the spectrogram, which the API then holds with the time and frequency
//! range the picture's mapping gives. Fails on any script error; screenshots at 390 and 1280 px.

mod common;

use std::time::Duration;

use common::{PASSWORD, browser::Browser, sat};
use fantoccini::actions::{InputSource, MOUSE_BUTTON_LEFT, MouseActions, PointerAction};
use serde_json::{Value, json};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_a_real_detection_play_it_vote_and_annotate_it() {
    let hub = common::spawn_hub_with(common::with_model).await;
    let user = hub.user("ana@example.org", false).await;
    let api = hub.login(&user.email).await;
    let r = sat::register(&api, json!({ "name": "Garden", "kind": "satellite" })).await;
    let client = sat::connect(&hub, &r).await;
    client.publish(&r.topic("audio"), sat::warbler_message_now(&r)).await;
    let mut detection = Value::Null;
    for _ in 0..300 {
        let (_, list) = api.get("/detections?limit=5").await;
        if let Some(d) = list["detections"].as_array().and_then(|a| a.first()) {
            detection = d.clone();
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(detection["common_name"], "Tennessee Warbler", "the real model names the warbler: {detection}");
    let id = detection["id"].as_str().expect("id").to_owned();

    let b = Browser::start(hub.http_addr.port(), "detections").await;
    b.sign_in(&user.email, PASSWORD, None).await;

    // The list, then its card opens the detail.
    b.goto("/detections").await;
    assert!(b.text(".det-list").await.contains("Tennessee Warbler"));
    b.shot("list").await;
    b.click(&format!("#det-{id} a.det-title")).await;
    b.find("#spectro").await;
    assert_eq!(b.path().await, format!("/detections/{id}"));
    assert!(
        b.wait_until(
            "const i = document.getElementById('spectro-img'); return i.complete && i.naturalWidth > 1000;",
            15
        )
        .await,
        "the spectrogram loads"
    );

    // Play: the audio element moves, and so does the playhead.
    b.js("document.getElementById('det-audio').play(); return null;").await;
    assert!(
        b.wait_until("const a = document.getElementById('det-audio'); return a.currentTime > 0.3 || a.ended;", 15)
            .await,
        "the audio plays"
    );
    assert!(
        b.wait_until("return parseFloat(document.getElementById('playhead').style.left) > 5;", 5).await,
        "the playhead follows the audio"
    );
    b.js("document.getElementById('det-audio').pause(); return null;").await;

    // Vote confirm: the tally and consensus refresh in place.
    b.js("window.__sameLoad = true; return null;").await;
    b.click("button[data-vote=confirm]").await;
    assert!(
        b.wait_until("return document.getElementById('tally-confirm').textContent.trim() === '1';", 10).await,
        "the tally shows the vote"
    );
    let (_, detail) = api.get(&format!("/detections/{id}")).await;
    let status = detail["verification_status"].as_str().expect("status").to_owned();
    assert!(
        b.wait_until(&format!("return document.getElementById('consensus').dataset.status === '{status}';"), 5).await,
        "the consensus on the page is the API's ({status})"
    );
    assert_eq!(b.js("return window.__sameLoad === true;").await, json!(true), "without a reload");

    // Drag a box from 25 % to 60 % across and 20 % to 50 % down the picture.
    let rect = b
        .js("const s = document.getElementById('spectro'); s.scrollIntoView({block: 'center'}); const r = s.getBoundingClientRect(); return [r.left, r.top, r.width, r.height];")
        .await;
    let n = |i: usize| rect[i].as_f64().expect("rect");
    let (left, top, width, height) = (n(0), n(1), n(2), n(3));
    let point = |fx: f64, fy: f64| ((left + fx * width).round(), (top + fy * height).round());
    let ((x0, y0), (x1, y1)) = (point(0.25, 0.2), point(0.6, 0.5));
    let drag = MouseActions::new("mouse".into())
        .then(PointerAction::MoveTo { duration: None, x: x0, y: y0 })
        .then(PointerAction::Down { button: MOUSE_BUTTON_LEFT })
        .then(PointerAction::MoveTo {
            duration: Some(Duration::from_millis(150)),
            x: (x0 + x1) / 2.0,
            y: (y0 + y1) / 2.0,
        })
        .then(PointerAction::MoveTo { duration: Some(Duration::from_millis(150)), x: x1, y: y1 })
        .then(PointerAction::Up { button: MOUSE_BUTTON_LEFT });
    b.client.perform_actions(drag).await.expect("drag");
    b.find("#box-form:not([hidden])").await;
    b.click("#box-form button[type=submit]").await;
    assert!(b.wait_until("return !!document.querySelector('#boxes .box');", 10).await, "the saved box is drawn");

    let (_, marks) = api.get(&format!("/detections/{id}/annotations")).await;
    let list = marks["annotations"].as_array().expect("annotations");
    assert_eq!(list.len(), 1, "{marks}");
    let a = &list[0];
    let span =
        b.js("return parseFloat(document.getElementById('spectro').dataset.span);").await.as_f64().expect("span");
    let (max_hz, min_hz) = (12_000.0, 0.0);
    let px = |x: f64| (x - left) / width;
    let py = |y: f64| (y - top) / height;
    let t0 = a["time_start_ms"].as_f64().expect("start") / 1000.0;
    let t1 = a["time_end_ms"].as_f64().expect("end") / 1000.0;
    let f0 = a["freq_low_hz"].as_f64().expect("low");
    let f1 = a["freq_high_hz"].as_f64().expect("high");
    assert!(0.0 <= t0 && t0 < t1 && t1 <= 3.0, "inside the chunk: {a}");
    assert!(min_hz <= f0 && f0 < f1 && f1 <= max_hz, "inside the picture: {a}");
    // The mapping: a column is a slice of time from the left, a row a band of Hz from the top.
    let one_px_s = span / width;
    let one_px_hz = (max_hz - min_hz) / height;
    assert!((t0 - px(x0) * span).abs() <= 2.0 * one_px_s + 0.002, "start {t0} s vs {}", px(x0) * span);
    assert!((t1 - px(x1) * span).abs() <= 2.0 * one_px_s + 0.002, "end {t1} s vs {}", px(x1) * span);
    assert!((f1 - (max_hz - py(y0) * (max_hz - min_hz))).abs() <= 2.0 * one_px_hz + 1.0, "high {f1} Hz");
    assert!((f0 - (max_hz - py(y1) * (max_hz - min_hz))).abs() <= 2.0 * one_px_hz + 1.0, "low {f0} Hz");
    assert_eq!(a["vote"], "confirm");

    b.shot("detail").await;
    b.goto("/sessions").await;
    assert!(b.text("main").await.contains("Garden"));
    b.shot("sessions").await;
    b.assert_no_js_errors().await;
    drop(client);
    b.close().await;
}
