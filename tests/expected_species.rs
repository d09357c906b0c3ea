//! `GET /stats/expected-species`: the real range model says which species to expect at a place
//! and week, offline, and each one is marked detected by the team or not.

mod common;

use common::{assert_error, seed};
use serde_json::json;

const WARBLER: seed::Species = ("leiothlypis_peregrina", "Tennessee Warbler", "Leiothlypis peregrina");

#[tokio::test]
async fn a_may_morning_in_pennsylvania_expects_the_warbler_the_team_already_heard() {
    let hub = common::spawn_hub_with(common::with_model).await;
    let owner = hub.user("owner@example.org", false).await;
    let other = hub.user("other@example.org", false).await;
    let api = hub.login(&owner.email).await;
    let sat = seed::satellite(&hub, owner.tenant, "ridge").await;
    seed::heard(&hub, owner.tenant, sat, "2026-05-14T06:00:00.000Z", WARBLER, 0.9).await;
    // Another team's record of the same bird does not count for this team.
    let theirs = seed::satellite(&hub, other.tenant, "theirs").await;
    seed::heard(&hub, other.tenant, theirs, "2026-05-14T06:00:00.000Z", seed::ROBIN, 0.9).await;

    let (status, body) = api.get("/stats/expected-species?lat=40.8&lon=-77.9&date=2026-05-15").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!((body["week"].clone(), body["threshold"].as_f64().map(|t| (t * 100.0).round())), (json!(19), Some(3.0)));
    let species = body["species"].as_array().expect("species");
    assert!(
        species.len() > 20 && species.len() == body["total"].as_u64().expect("total") as usize,
        "{}",
        species.len()
    );
    let scores: Vec<f64> = species.iter().map(|s| s["score"].as_f64().expect("score")).collect();
    assert!(
        scores.windows(2).all(|w| w[0] >= w[1]) && scores.iter().all(|s| *s >= 0.03),
        "highest first, all above the threshold"
    );
    let warbler = species
        .iter()
        .find(|s| s["speciesCode"] == "leiothlypis_peregrina")
        .expect("the warbler migrates through in May");
    assert_eq!(
        (warbler["detectedHere"].clone(), warbler["lastDetectedAt"].clone()),
        (json!(true), json!("2026-05-14T06:00:00.000Z"))
    );
    assert_eq!(warbler["commonName"], "Tennessee Warbler");
    assert_eq!(body["detected"], 1, "only this team's records count");
    assert!(species.iter().filter(|s| s["speciesCode"] != "leiothlypis_peregrina").all(|s| s["detectedHere"] == false));

    // In German, at the satellite's own place; a stricter threshold keeps fewer.
    hub.state()
        .store
        .call(move |c| birdhub::store::satellites::set_location(c, owner.tenant, sat, 40.8, -77.9))
        .await
        .expect("located");
    let (status, de) =
        api.get(&format!("/stats/expected-species?satelliteId={sat}&week=19&lang=de&threshold=0.2")).await;
    assert_eq!(status, 200, "{de}");
    assert_eq!((de["latitude"].clone(), de["longitude"].clone()), (json!(40.8), json!(-77.9)));
    assert!(de["total"].as_u64() < body["total"].as_u64());
    let top = &de["species"][0];
    assert_eq!(top["speciesCode"], species[0]["speciesCode"], "the same place and week, the same favourite");
    let code = top["speciesCode"].as_str().expect("code");
    let (_, german) = api.get(&format!("/species/translate?code={code}&lang=de")).await;
    assert_eq!(top["commonName"], german["commonName"], "named in German");

    // One species asked about (a species page): only it, with the team's record of it.
    let (status, one) =
        api.get(&format!("/stats/expected-species?satelliteId={sat}&date=2026-05-15&speciesCode={}", WARBLER.0)).await;
    assert_eq!(status, 200, "{one}");
    assert_eq!(one["species"].as_array().map(Vec::len), Some(1), "{one}");
    assert_eq!(one["species"][0]["score"], warbler["score"], "the same score as in the whole list");
    assert_eq!(one["species"][0]["lastDetectedAt"], json!("2026-05-14T06:00:00.000Z"));
    let unlikely = species.last().expect("species")["speciesCode"].as_str().expect("code");
    let (_, strict) = api
        .get(&format!("/stats/expected-species?satelliteId={sat}&date=2026-05-15&speciesCode={unlikely}&threshold=0.9"))
        .await;
    assert_eq!(strict["species"], json!([]), "below the threshold it is not listed: {strict}");

    let unplaced = seed::satellite(&hub, owner.tenant, "no gps").await;
    assert_error(&api.get(&format!("/stats/expected-species?satelliteId={unplaced}")).await, 422, "no_location");
    assert_error(&api.get(&format!("/stats/expected-species?satelliteId={theirs}")).await, 404, "satellite_not_found");
    assert_error(&api.get("/stats/expected-species?lat=95&lon=0").await, 422, "invalid_query");
    assert_error(&api.get("/stats/expected-species?lat=40&lon=-77&week=0").await, 422, "invalid_query");
    assert_error(&api.get("/stats/expected-species?lat=40&lon=-77&threshold=2").await, 422, "invalid_query");
    assert_error(&api.get("/stats/expected-species?lat=40").await, 400, "invalid_query");
    assert_error(&api.get("/stats/expected-species?lat=40&lon=-77&week=3&date=2026-01-01").await, 400, "invalid_query");
    assert_error(&api.get("/stats/expected-species?lat=40&lon=-77&date=yesterday").await, 400, "invalid_query");
    assert_error(&hub.anon().get("/stats/expected-species?lat=40&lon=-77").await, 401, "unauthenticated");
}

#[tokio::test]
async fn without_the_model_it_says_so() {
    let hub = common::spawn_hub().await;
    let owner = hub.user("owner@example.org", false).await;
    let api = hub.login(&owner.email).await;
    assert_error(&api.get("/stats/expected-species?lat=40.8&lon=-77.9").await, 503, "model_unavailable");
}
