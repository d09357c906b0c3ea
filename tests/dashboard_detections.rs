//! The Detections pages of the dashboard over HTTP, as a browser with a cookie jar sees them:
//! the list with its filters in the URL, the detail with votes, boxes and comments, roles,
//! tenant isolation, the sessions page and the sign-in redirect.

mod common;

use birdhub::domain::Role;
use common::{TestHub, api::Api, seed};
use reqwest::StatusCode;
use serde_json::json;

/// A page as the signed-in browser of `api` gets it: status and HTML.
async fn page(hub: &TestHub, api: &Api, path: &str) -> (StatusCode, String) {
    let resp = api.client.get(format!("{}{path}", hub.base_url)).send().await.expect("page");
    let status = resp.status();
    (status, resp.text().await.expect("html"))
}

/// An RFC 3339 time `minutes` before the hub's clock.
fn ago(hub: &TestHub, minutes: i64) -> String {
    (hub.state().clock.now() - chrono::Duration::minutes(minutes)).to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// The number of detection cards on a list page.
fn cards(html: &str) -> usize {
    html.matches("class=\"det-card\"").count()
}

#[tokio::test]
async fn the_list_shows_seeded_detections_and_its_url_filters_narrow_it() {
    let hub = common::spawn_hub().await;
    let owner = hub.user("owner@example.com", false).await;
    let garden = seed::satellite(&hub, owner.tenant, "Garden").await;
    let orchard = seed::satellite(&hub, owner.tenant, "Orchard").await;
    seed::heard(&hub, owner.tenant, garden, &ago(&hub, 50), seed::ROBIN, 0.91).await;
    seed::heard(&hub, owner.tenant, orchard, &ago(&hub, 40), seed::WREN, 0.62).await;
    seed::heard(&hub, owner.tenant, garden, &ago(&hub, 30), seed::WARBLER, 0.41).await;
    let api = hub.login("owner@example.com").await;

    let (status, html) = page(&hub, &api, "/detections").await;
    assert_eq!(status, 200, "{html}");
    assert_eq!(cards(&html), 3);
    for name in ["American Robin", "House Wren", "Tennessee Warbler", "<em class=\"sci\">Turdus migratorius</em>"] {
        assert!(html.contains(name), "the list names {name}");
    }
    assert!(html.contains("1–3 of 3"), "the total is shown");
    assert!(
        html.contains(&format!("<option value=\"{orchard}\">Orchard</option>")),
        "the satellite select lists the team's satellites"
    );
    for label in ["Satellite", "Species name", "Species code", "Min. confidence", "Verification", "Sort by", "Per page"]
    {
        assert!(html.contains(&format!(">{label}")), "a labelled control for {label}");
    }
    assert!(html.contains("Export this list"), "members and admins get the export links");

    // One satellite: only its detection, the select keeps the choice, the export keeps the filter.
    let (_, html) = page(&hub, &api, &format!("/detections?satelliteId={orchard}")).await;
    assert_eq!(cards(&html), 1);
    assert!(html.contains("House Wren") && !html.contains("American Robin"));
    assert!(html.contains(&format!("<option value=\"{orchard}\" selected>Orchard</option>")));
    assert!(html.contains(&format!("/api/export/detections?satelliteId={orchard}&amp;format=csv")), "{html}");

    let (_, html) = page(&hub, &api, "/detections?minConfidence=0.5").await;
    assert_eq!(cards(&html), 2);
    assert!(!html.contains("Tennessee Warbler"), "below the minimum confidence");

    let (_, html) = page(&hub, &api, "/detections?speciesSearch=wren").await;
    assert_eq!(cards(&html), 1);
    assert!(html.contains("House Wren"));

    let (_, html) = page(&hub, &api, "/detections?species=turdus-migratorius").await;
    assert_eq!(cards(&html), 1);
    assert!(html.contains("American Robin"));

    // Pages of one, highest confidence first; "Next" keeps the sort.
    let (_, html) = page(&hub, &api, "/detections?sortBy=confidence&sortDir=desc&limit=1").await;
    assert_eq!(cards(&html), 1);
    assert!(html.contains("American Robin"));
    assert!(html.contains("Page 1 of 3"));
    assert!(
        html.contains("href=\"/detections?sortBy=confidence&amp;sortDir=desc&amp;limit=1&amp;offset=1\""),
        "{html}"
    );
    let (_, html) = page(&hub, &api, "/detections?sortBy=confidence&sortDir=desc&limit=1&offset=1").await;
    assert!(html.contains("House Wren") && html.contains("Page 2 of 3"));

    // Nothing matches: an empty state that says what to do.
    let (_, html) = page(&hub, &api, "/detections?verificationStatus=confirmed").await;
    assert_eq!(cards(&html), 0);
    assert!(html.contains("No detections match these filters"));

    // A bad value is the API's message on a 422 page, never a 500.
    let (status, html) = page(&hub, &api, "/detections?minConfidence=7").await;
    assert_eq!(status, 422);
    assert!(html.contains("minConfidence must be between 0 and 1"), "{html}");
}

#[tokio::test]
async fn the_detail_shows_votes_boxes_and_comments_and_viewers_get_no_controls() {
    let hub = common::spawn_hub().await;
    let owner = hub.user("owner@example.com", false).await;
    hub.member_of("viewer@example.com", owner.tenant, Role::Viewer).await;
    let garden = seed::satellite(&hub, owner.tenant, "Garden").await;
    let (chunk, robin) = seed::heard(&hub, owner.tenant, garden, &ago(&hub, 20), seed::ROBIN, 0.88).await;
    let api = hub.login("owner@example.com").await;

    let (status, html) = page(&hub, &api, &format!("/detections/{robin}")).await;
    assert_eq!(status, 200, "{html}");
    assert!(html.contains("American Robin") && html.contains("Turdus migratorius"));
    assert!(html.contains(&format!("src=\"/api/detections/{robin}/spectrogram.png\"")));
    assert!(html.contains(&format!("src=\"/api/audio/{chunk}\"")), "the audio element plays the chunk");
    assert!(html.contains("data-seconds-per-pixel=\"0.00266666"), "the mapping from the image's headers");
    assert!(html.contains("data-max-hz=\"12000\""));
    assert!(html.contains("href=\"/species/turdus-migratorius\""), "links to the species page");
    assert!(html.contains(&format!("href=\"/sessions?satelliteId={garden}\"")), "links to the sessions");
    for control in [
        "data-vote=\"confirm\"",
        "data-vote=\"reject\"",
        "data-vote=\"unsure\"",
        "id=\"comment-form\"",
        "id=\"box-form\"",
        "id=\"share\"",
    ] {
        assert!(html.contains(control), "the owner sees {control}");
    }
    assert!(html.contains("Not verified yet"));

    // A vote through the API, then the fragment the page reloads shows the new tally.
    let (status, voted) = api.post(&format!("/detections/{robin}/verify"), json!({"vote": "confirm"})).await;
    assert_eq!(status, 200, "{voted}");
    let (status, votes) = page(&hub, &api, &format!("/detections/{robin}/votes")).await;
    assert_eq!(status, 200);
    assert!(votes.contains("id=\"tally-confirm\">1<"), "{votes}");
    let consensus = voted["verificationStatus"].as_str().expect("status");
    assert!(votes.contains(&format!("data-status=\"{consensus}\"")), "the consensus after the vote: {votes}");

    // An annotation box from 0.5 to 1.5 s and 3 to 6 kHz sits where the mapping puts it.
    let body =
        json!({"vote": "confirm", "timeStartMs": 500, "timeEndMs": 1500, "freqLowHz": 3000.0, "freqHighHz": 6000.0});
    let (status, made) = api.post(&format!("/detections/{robin}/annotate"), body).await;
    assert_eq!(status, 201, "{made}");
    let (_, boxes) = page(&hub, &api, &format!("/detections/{robin}/boxes")).await;
    // 1125 columns of 128/48000 s = 3 s; 12 kHz tall: top at (12-6)/12 = 50 %, height 25 %.
    assert!(boxes.contains("left:16.667%;top:50.000%;width:33.333%;height:25.000%"), "{boxes}");

    // A comment shows with its author and a delete button for them.
    let (status, _) =
        api.post(&format!("/detections/{robin}/comments"), json!({"body": "Heard it by the fence"})).await;
    assert_eq!(status, 201);
    let (_, comments) = page(&hub, &api, &format!("/detections/{robin}/comments")).await;
    assert!(comments.contains("Heard it by the fence") && comments.contains("data-comment="), "{comments}");

    // A viewer reads everything but gets no vote, annotation, comment or export controls.
    let viewer = hub.login("viewer@example.com").await;
    let (status, html) = page(&hub, &viewer, &format!("/detections/{robin}")).await;
    assert_eq!(status, 200);
    assert!(html.contains("American Robin") && html.contains("Heard it by the fence"));
    for control in ["data-vote=", "id=\"comment-form\"", "id=\"box-form\"", "data-comment="] {
        assert!(!html.contains(control), "a viewer must not see {control}");
    }
    assert!(html.contains("data-annotation="), "viewers see the boxes");
    let (_, list) = page(&hub, &viewer, "/detections").await;
    assert!(list.contains("American Robin") && !list.contains("Export this list"));
}

#[tokio::test]
async fn another_teams_detection_is_not_found_and_no_session_goes_to_sign_in() {
    let hub = common::spawn_hub().await;
    let owner = hub.user("owner@example.com", false).await;
    hub.user("other@example.com", false).await;
    let garden = seed::satellite(&hub, owner.tenant, "Garden").await;
    let (_, robin) = seed::heard(&hub, owner.tenant, garden, &ago(&hub, 20), seed::ROBIN, 0.88).await;

    let other = hub.login("other@example.com").await;
    for path in
        [format!("/detections/{robin}"), format!("/detections/{robin}/votes"), "/detections/not-an-id".to_owned()]
    {
        let (status, html) = page(&hub, &other, &path).await;
        assert_eq!(status, 404, "{path}: {html}");
        assert!(html.contains("Not found"));
        assert!(!html.contains("American Robin"));
    }
    let (status, html) = page(&hub, &other, "/detections").await;
    assert_eq!(status, 200);
    assert_eq!(cards(&html), 0);
    assert!(html.contains("No detections yet"), "an empty team gets an empty state");

    let anon = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().expect("client");
    for (path, next) in [
        (format!("/detections/{robin}"), format!("%2Fdetections%2F{robin}")),
        ("/detections?species=x".to_owned(), "%2Fdetections%3Fspecies%3Dx".to_owned()),
        ("/sessions".to_owned(), "%2Fsessions".to_owned()),
    ] {
        let resp = anon.get(format!("{}{path}", hub.base_url)).send().await.expect("page");
        assert_eq!(resp.status(), 303, "{path}");
        let to = resp.headers().get("location").and_then(|v| v.to_str().ok()).unwrap_or_default();
        assert_eq!(to, format!("/signin?next={next}"));
    }
}

#[tokio::test]
async fn sessions_show_the_list_and_the_timeline() {
    let hub = common::spawn_hub().await;
    let owner = hub.user("owner@example.com", false).await;
    let api = hub.login("owner@example.com").await;
    let (status, html) = page(&hub, &api, "/sessions").await;
    assert_eq!(status, 200, "{html}");
    assert!(html.contains("No recording sessions yet") && html.contains("Nothing recorded in the last 24 hours"));

    let garden = seed::satellite(&hub, owner.tenant, "Garden").await;
    seed::heard(&hub, owner.tenant, garden, &ago(&hub, 90), seed::ROBIN, 0.88).await;
    seed::heard(&hub, owner.tenant, garden, &ago(&hub, 89), seed::WREN, 0.7).await;
    let (status, html) = page(&hub, &api, "/sessions").await;
    assert_eq!(status, 200);
    assert!(!html.contains("No recording sessions yet"), "{html}");
    assert_eq!(html.matches("class=\"tl-chunk\"").count(), 2, "a bar per chunk");
    assert_eq!(html.matches("class=\"tl-det\"").count(), 2, "a tick per detection");
    assert!(html.contains("American Robin") && html.contains("House Wren"), "top species of the session");
    assert!(html.contains("<span class=\"tl-name\">Garden</span>"));
}
