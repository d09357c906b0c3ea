//! A newcomer plays a warbler recording to a satellite in Pennsylvania in December (issue 51,
//! defect 18): the hub leaves the bird out (`not_expected_action = drop`, the default), and Live
//! and the satellite's page say so, with a link to the setting, instead of showing nothing. The
//! first steps on Live mention it before any satellite exists.

mod common;

use common::{PASSWORD, browser::Browser, sat};
use serde_json::{Value, json};

const FITS: &str = "return document.documentElement.scrollWidth <= window.innerWidth;";

/// The warbler chunk, recorded now, sent from Harrisburg, Pennsylvania.
fn warbler_from_pennsylvania(r: &sat::Registered) -> String {
    let mut msg: Value = serde_json::from_str(&sat::warbler_message_now(r)).expect("message");
    msg["latitude"] = json!(40.27);
    msg["longitude"] = json!(-76.88);
    msg.to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bird_left_out_as_not_expected_is_explained_on_live_and_the_satellite_page() {
    let hub = common::spawn_hub_with(common::with_model).await;
    let owner = hub.user("owner@example.org", false).await;
    let api = hub.login(&owner.email).await;
    let b = Browser::start(hub.http_addr.port(), "not-expected").await;
    b.sign_in(&owner.email, PASSWORD, None).await;

    // Before any satellite: the first steps say a recording from elsewhere may be left out.
    b.goto("/").await;
    let welcome = b.text("section.welcome").await;
    assert!(welcome.contains("not expected"), "{welcome}");
    assert!(b.has("section.welcome a[href='/team/detection#ds-not_expected_action']").await, "{welcome}");
    b.shot("first-steps").await;

    let r = sat::register(&api, json!({ "name": "Harrisburg", "latitude": 40.27, "longitude": -76.88 })).await;
    let client = sat::connect(&hub, &r).await;
    client.publish(&r.topic("audio"), warbler_from_pennsylvania(&r)).await;
    let path = format!("/satellites/{}", r.id);
    let mut dropped = 0;
    for _ in 0..600 {
        let (_, v) = api.get(&path).await;
        dropped = v["hub_filter_stats"]["notExpectedDropped"].as_u64().unwrap_or(0);
        if dropped > 0 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(dropped > 0, "the warbler is not expected in Pennsylvania in December: it was dropped");
    let (_, list) = api.get("/detections").await;
    assert_eq!(list["detections"].as_array().map(Vec::len), Some(0), "nothing shows: {list}");

    // Live says why nothing shows, and where to change it.
    b.goto("/").await;
    let note = b.text("#left-out").await;
    let said = if dropped == 1 { "1 bird not expected here was" } else { "birds not expected here were" };
    assert!(note.contains(said) && note.contains("left out in the last 24 hours"), "{note}");
    let link = b.js("return document.querySelector('#left-out a').getAttribute('href');").await;
    assert_eq!(link, json!("/team/detection#ds-not_expected_action"));
    b.shot("live").await;
    for width in [360, 1280] {
        b.client.set_window_size(width, 900).await.expect("resize");
        assert_eq!(b.js(FITS).await, true, "Live fits {width} px");
    }
    b.client.set_window_size(1280, 900).await.expect("resize");
    b.click("#left-out a").await;
    assert_eq!(b.path().await, "/team/detection");
    assert!(b.has("#ds-not_expected_action").await, "the link lands on the setting");

    // So does the satellite's page, linking to its own setting.
    b.goto(&path).await;
    let note = b.text("#sat #left-out").await;
    assert!(note.contains(said), "{note}");
    let link = b.js("return document.querySelector('#left-out a').getAttribute('href');").await;
    assert_eq!(link, json!("#ov-not_expected_action"));
    assert!(b.has("#ov-not_expected_action").await, "the satellite's own setting is on its page");
    b.shot("satellite").await;
    b.assert_no_js_errors().await;
    b.close().await;
}
