//! Detections in a real browser (headless chromium), as issue 36 found them:
//! - defect 1: a share link opened signed out is a page (names in the sharer's language, the
//!   time written by the browser, the place rounded, the spectrogram and a play button that
//!   plays), fitting 360 px, with no script error or policy violation;
//! - defect 12: the filter placeholders name a real species (`parus_major`, "Kohlmeise" for a
//!   German reader);
//! - defect 17: paging past the end lands on the last page ("21–25 of 25", "Page 3 of 3"), with
//!   "Next" inactive;
//! - defect 20: a first record is badged "New for the team", not "Rare"; tooltips are words;
//! - defect 21: your own vote is pressed, and your annotation box follows it to "unsure".
//!
//! Screenshots at 390 and 1280 px.

mod common;

use birdhub::{
    ids::{DetectionId, SatelliteId, TenantId},
    usecases::detections,
};
use common::{PASSWORD, TestHub, browser::Browser, seed};
use serde_json::{Value, json};

const GREAT_TIT: seed::Species = ("parus_major", "Great Tit", "Parus major");
const WREN: seed::Species = ("troglodytes_troglodytes", "Eurasian Wren", "Troglodytes troglodytes");

/// A detection judged as the workers judge one, with the range model's verdict.
async fn heard(
    hub: &TestHub,
    (tenant, sat): (TenantId, SatelliteId),
    at: &str,
    species: seed::Species,
    expected_here: Option<bool>,
) -> DetectionId {
    let chunk = seed::chunk(hub, tenant, sat, at).await;
    let new = seed::new_detection((tenant, sat, chunk), at, species, 0.9, expected_here);
    let now = hub.state().clock.stamp();
    hub.state().store.call(move |c| Ok(detections::record(c, &new, now)?.expect("new").id)).await.expect("detection")
}

/// The page fits `width` px without sideways scrolling.
async fn fits(b: &Browser, width: u32) -> bool {
    b.client.set_window_size(width, 800).await.expect("resize");
    b.wait_until("return document.documentElement.scrollWidth <= window.innerWidth;", 3).await
}

async fn attr(b: &Browser, css: &str, name: &str) -> Option<String> {
    b.find(css).await.attr(name).await.expect("attribute")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn detections_as_a_person_meets_them() {
    let hub = common::spawn_hub_with(common::with_model).await;
    let ana = hub.user("ana@example.org", false).await;
    let sat = seed::satellite(&hub, ana.tenant, "Garden").await;
    seed::place(&hub, ana.tenant, sat, 51.501_234, -0.124_567).await;
    let team = (ana.tenant, sat);
    let first = heard(&hub, team, "2026-05-01T05:00:00.000Z", GREAT_TIT, Some(true)).await;
    for i in 1..24 {
        heard(&hub, team, &format!("2026-05-01T06:{i:02}:00.000Z"), GREAT_TIT, Some(true)).await;
    }
    let wren = heard(&hub, team, "2026-05-01T07:00:00.000Z", WREN, Some(false)).await;
    let api = hub.login(&ana.email).await;
    assert_eq!(api.put("/auth/me/preferences", json!({"language": "de"})).await.0, 200);
    // Ana drew a box and called it "confirm".
    let box_body =
        json!({"vote": "confirm", "timeStartMs": 500, "timeEndMs": 2000, "freqLowHz": 2000.0, "freqHighHz": 6000.0});
    let (code, body) = api.post(&format!("/detections/{first}/annotate"), box_body).await;
    assert_eq!(code, 201, "{body}");

    let b = Browser::start(hub.http_addr.port(), "share").await;
    b.sign_in(&ana.email, PASSWORD, None).await;

    // 17: a page far past the end shows the last page, and nothing claims more.
    b.goto("/detections?limit=10&offset=2000").await;
    b.find("#results-title").await;
    assert!(b.path().await.contains("offset=20"), "the last page: {}", b.path().await);
    assert_eq!(b.text("#results-title").await, "21–25 of 25");
    assert_eq!(b.text(".pager .page-of").await, "Page 3 of 3");
    assert!(!b.has(".pager a[rel=next]").await, "no active Next on the last page");
    assert_eq!(attr(&b, ".pager span[aria-disabled]", "aria-disabled").await.as_deref(), Some("true"));
    assert!(b.has(".pager a[rel=prev]").await);
    // One page too far by one card count is the last page too, never "25–25 of 25".
    b.goto("/detections?limit=25&offset=25").await;
    b.find("#results-title").await;
    assert_eq!(b.text("#results-title").await, "1–25 of 25");
    assert!(!b.has(".pager").await, "one page: no pager");

    // 12: the placeholders name a real species, in Ana's language.
    assert_eq!(attr(&b, "#f-species", "placeholder").await.as_deref(), Some("parus_major"));
    let hint = attr(&b, "#f-search", "placeholder").await.unwrap_or_default();
    assert!(hint.contains("Kohlmeise") && hint.contains("Parus major"), "{hint}");
    b.fill("#f-search", "Kohlmeise").await;
    b.click(".det-filters button[type=submit]").await;
    assert!(b.wait_until("return /of 24/.test(document.getElementById('results-title').textContent);", 10).await);
    assert!(fits(&b, 360).await, "the list fits 360 px");
    b.client.set_window_size(1280, 900).await.expect("resize");
    b.shot("list").await;

    // 20: the first record is new, not rare; the unexpected wren is rare; tooltips are words.
    b.goto(&format!("/detections/{first}")).await;
    let badges = b.text(".det-head .badges").await;
    assert!(badges.contains("New for the team") && !badges.contains("Rare"), "{badges}");
    b.goto(&format!("/detections/{wren}")).await;
    let badges = b.text(".det-head .badges").await;
    assert!(badges.contains("Rare") && badges.contains("New for the team"), "{badges}");
    let tips = b.js("return [...document.querySelectorAll('.badge[title]')].map(e => e.title).join('|');").await;
    let tips = tips.as_str().unwrap_or_default().to_owned();
    assert!(tips.contains("not expected") && !tips.contains('_'), "tooltips in words: {tips}");

    // 21: Ana's vote is pressed; after "Unsure", the button and her box say so.
    b.goto(&format!("/detections/{first}")).await;
    b.find("#votes").await;
    assert_eq!(attr(&b, "button[data-vote=confirm]", "aria-pressed").await.as_deref(), Some("true"));
    assert_eq!(attr(&b, "button[data-vote=unsure]", "aria-pressed").await.as_deref(), Some("false"));
    assert!(b.has("#boxes .box.confirm").await, "the box drawn as confirm");
    b.click("button[data-vote=unsure]").await;
    assert!(
        b.wait_until("const u = document.querySelector('button[data-vote=unsure]'); return u && u.getAttribute('aria-pressed') === 'true';", 10).await,
        "the new vote is pressed"
    );
    assert_eq!(attr(&b, "button[data-vote=confirm]", "aria-pressed").await.as_deref(), Some("false"));
    assert!(b.text("#my-vote").await.contains("Unsure"));
    assert!(
        b.wait_until(
            "return !!document.querySelector('#boxes .box.unsure') && !document.querySelector('#boxes .box.confirm');",
            10
        )
        .await,
        "the box follows the vote"
    );
    b.goto(&format!("/detections/{first}")).await;
    assert!(b.has("#boxes .box.unsure").await && !b.has("#boxes .box.confirm").await, "after a reload too");
    assert_eq!(attr(&b, "button[data-vote=unsure]", "aria-pressed").await.as_deref(), Some("true"));
    b.shot("votes").await;

    // 1: Share gives a page link; a signed-out browser opens it as a page.
    b.click("#share").await;
    assert!(b.wait_until("return /\\/share\\//.test(document.getElementById('share-url').value);", 10).await);
    let link: String = b.js("return document.getElementById('share-url').value;").await.as_str().expect("link").into();
    let path = link[link.find("/share/").expect("a /share/ path")..].to_owned();
    assert!(path.starts_with(&format!("/share/{first}/")) && path.ends_with("?lang=de"), "{path}");
    b.assert_no_js_errors().await;
    b.close().await;

    let friend = Browser::start(hub.http_addr.port(), "share-friend").await;
    friend.goto(&path).await;
    assert!(friend.text("h1").await.contains("Kohlmeise"), "the sharer's language");
    assert!(friend.text("h1").await.contains("Parus major"));
    let when = friend.text(".share-facts time.at").await;
    assert!(
        friend
            .wait_until(
                "const t = document.querySelector('.share-facts time.at'); return !/T\\d\\d:|UTC/.test(t.textContent);",
                5
            )
            .await,
        "the browser writes the time: {when}"
    );
    assert!(friend.text("#share-place").await.contains("near 51.50° N, 0.12° W"));
    assert!(
        friend
            .wait_until(
                "const i = document.querySelector('img.share-spectro'); return i.complete && i.naturalWidth > 100;",
                15
            )
            .await,
        "the spectrogram loads with the token alone"
    );
    friend.click("#share-play").await;
    assert!(
        friend.wait_until("return window.bh.player.currentTime > 0 || window.bh.player.ended;", 15).await,
        "the recording plays with the token alone"
    );
    for width in [360, 390] {
        assert!(fits(&friend, width).await, "the share page fits {width} px");
    }
    friend.client.set_window_size(1280, 900).await.expect("resize");
    friend.shot("page").await;
    // The JSON link, opened by a browser, lands on the page too.
    friend
        .goto(&format!(
            "/api/share/detection/{first}/{}",
            path.split('/').nth(3).and_then(|t| t.split('?').next()).expect("token")
        ))
        .await;
    friend.find("h1").await;
    assert!(friend.path().await.starts_with(&format!("/share/{first}/")), "{}", friend.path().await);
    let Value::String(title) = friend.js("return document.title;").await else { panic!("title") };
    assert!(title.contains("shared"), "{title}");
    friend.assert_no_js_errors().await;
    friend.close().await;
}

/// Issue 48: the detection's page lists its live share links (who made each, when, until when)
/// and "Revoke" ends one at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_detection_page_lists_its_share_links_and_revokes_one() {
    let hub = common::spawn_hub().await;
    let ana = hub.user("ana@example.org", false).await;
    let sat = seed::satellite(&hub, ana.tenant, "Garden").await;
    let (_, detection) = seed::heard(&hub, ana.tenant, sat, "2026-05-01T05:00:00.000Z", seed::ROBIN, 0.8).await;

    let b = Browser::start(hub.http_addr.port(), "share-links").await;
    b.sign_in(&ana.email, PASSWORD, None).await;
    b.goto(&format!("/detections/{detection}")).await;
    assert!(b.text("#shares").await.contains("No live share links"), "{}", b.text("#shares").await);

    b.click("#share").await;
    assert!(b.wait_until("return document.querySelectorAll('#shares .share-link').length === 1;", 10).await);
    let row = b.text("#shares .share-link").await;
    assert!(row.contains("ana") && row.contains("made") && row.contains("ends"), "{row}");
    assert!(b.has("#shares button.revoke-share").await, "the maker may revoke");
    let link: String = b.js("return document.getElementById('share-url').value;").await.as_str().expect("link").into();
    let token = link.rsplit('/').next().and_then(|t| t.split('?').next()).expect("token").to_owned();
    let json_path = format!("/share/detection/{detection}/{token}");
    assert_eq!(hub.anon().get(&json_path).await.0, 200, "the link opens");
    b.shot("listed").await;

    b.js("window.confirm = () => true; return null;").await;
    b.click("#shares button.revoke-share").await;
    assert!(b.wait_until("return document.querySelectorAll('#shares .share-link').length === 0;", 10).await);
    assert!(b.text("#shares").await.contains("No live share links"));
    common::assert_error(&hub.anon().get(&json_path).await, 404, "share_not_found");
    b.shot("revoked").await;
    b.close().await;
}
