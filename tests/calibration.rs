//! Calibration over real HTTP: admins' verdicts become an isotonic curve, the curve shows up as
//! `calibrated_confidence` in the list, coverage counts, and who may do what.

mod common;

use birdhub::domain::Role;
use common::{assert_error, seed};
use serde_json::{Value, json};

/// 24 detections: low confidences mostly rejected, high ones mostly confirmed, by the team admin.
async fn verified_world() -> (common::TestHub, common::Api, birdhub::ids::TenantId) {
    let hub = common::spawn_hub().await;
    let owner = hub.user("owner@example.org", false).await;
    let api = hub.login(&owner.email).await;
    let sat = seed::satellite(&hub, owner.tenant, "garden").await;
    for i in 0..24u32 {
        let confidence = 0.5 + 0.02 * i as f32; // 0.50 .. 0.96
        let at = format!("2026-05-01T05:{:02}:00.000Z", i);
        let (_, d) = seed::heard(&hub, owner.tenant, sat, &at, seed::ROBIN, confidence).await;
        // Wrong below 0.7 except one lucky call; right from 0.7 except one miss at 0.8.
        let right = (confidence >= 0.7 && i != 15) || i == 3;
        let vote = if right { "confirm" } else { "reject" };
        let (code, body) = api.post(&format!("/detections/{d}/verify"), json!({"vote": vote})).await;
        assert_eq!(code, 200, "{body}");
    }
    (hub, api, owner.tenant)
}

fn calibrated(buckets: &Value) -> Vec<f64> {
    buckets.as_array().expect("buckets").iter().map(|b| b["calibrated"].as_f64().expect("value")).collect()
}

#[tokio::test]
async fn a_refresh_fits_a_monotone_curve_that_calibrates_the_list() {
    let (_hub, api, tenant) = verified_world().await;
    let (_, before) = api.get("/calibration/curve").await;
    assert_eq!(before["buckets"], json!([]), "nothing fitted yet");
    let (_, list) = api.get("/detections?limit=1").await;
    assert!(list["detections"][0]["calibrated_confidence"].is_null());

    let (code, body) = api.post("/calibration/refresh", json!({})).await;
    assert_eq!(code, 200, "{body}");
    let r = &body["refreshed"][0];
    assert_eq!(
        (r["tenantId"].as_str(), r["samples"].as_u64(), r["fitted"].as_bool()),
        (Some(tenant.to_string().as_str()), Some(24), Some(true))
    );

    let (code, curve) = api.get("/calibration/curve?modelId=birdnet-v2.4").await;
    assert_eq!(code, 200);
    let values = calibrated(&curve["buckets"]);
    assert_eq!(values.len(), 20);
    assert!(values.windows(2).all(|w| w[0] <= w[1]), "monotone: {values:?}");
    assert!(values[10] < 0.5 && values[19] > 0.8, "low calls rarely right, high ones mostly: {values:?}");
    assert_eq!(curve["samples"], 24);
    assert!(curve["fittedAt"].is_string());

    let (_, list) = api.get("/detections?sortBy=confidence&limit=500").await;
    for d in list["detections"].as_array().expect("rows") {
        let raw = d["confidence"].as_f64().expect("raw");
        let bucket = ((raw + 1e-9) * 20.0).floor().min(19.0) as usize;
        let got = d["calibrated_confidence"].as_f64().expect("calibrated after the refresh");
        assert!((got - values[bucket]).abs() < 1e-9, "{raw} -> {got}, bucket {bucket} is {}", values[bucket]);
    }
    let id = list["detections"][0]["id"].as_str().expect("id");
    let (_, detail) = api.get(&format!("/detections/{id}")).await;
    assert!(detail["calibrated_confidence"].is_number());
}

#[tokio::test]
async fn coverage_and_permissions() {
    let (hub, api, tenant) = verified_world().await;
    let (code, cov) = api.get("/calibration/coverage").await;
    assert_eq!(code, 200, "{cov}");
    let row = &cov["coverage"][0];
    assert_eq!(
        (row["confirmed"].as_u64(), row["rejected"].as_u64(), row["hasCurve"].as_bool()),
        (Some(14), Some(10), Some(false))
    );
    api.post("/calibration/refresh", json!({"modelId": "birdnet-v2.4"})).await;
    let (_, cov) = api.get("/calibration/coverage").await;
    assert_eq!(cov["coverage"][0]["hasCurve"], true);

    let member = hub.member_of("mem@example.org", tenant, Role::Member).await;
    let m = hub.login(&member.email).await;
    assert_error(&m.post("/calibration/refresh", json!({})).await, 403, "insufficient_role");
    assert_error(&m.get("/calibration/coverage").await, 403, "insufficient_role");
    assert_eq!(m.get("/calibration/curve").await.0, 200, "viewers and members read the curve");
    assert_error(&api.post("/calibration/refresh", json!({"tenantId": "nope"})).await, 422, "invalid_body");
    let stranger = hub.user("stranger@example.org", false).await;
    let s = hub.login(&stranger.email).await;
    assert_error(&s.post("/calibration/refresh", json!({"tenantId": tenant})).await, 404, "tenant_not_found");

    // A platform admin refreshes every team at once, here with an empty body.
    hub.user("root@example.org", true).await;
    let root = hub.login("root@example.org").await;
    let (code, body) = root.post_empty("/calibration/refresh").await;
    assert_eq!(code, 200, "{body}");
    let teams: Vec<&str> =
        body["refreshed"].as_array().expect("pairs").iter().filter_map(|r| r["tenantId"].as_str()).collect();
    assert_eq!(teams, [tenant.to_string().as_str()], "the only team with verified detections");
}

#[tokio::test]
async fn too_few_verdicts_give_no_curve() {
    let hub = common::spawn_hub().await;
    let owner = hub.user("owner@example.org", false).await;
    let api = hub.login(&owner.email).await;
    let sat = seed::satellite(&hub, owner.tenant, "garden").await;
    for i in 0..5u32 {
        let (_, d) =
            seed::heard(&hub, owner.tenant, sat, &format!("2026-05-01T05:0{i}:00.000Z"), seed::WREN, 0.8).await;
        api.post(&format!("/detections/{d}/verify"), json!({"vote": "confirm"})).await;
    }
    let (code, body) = api.post("/calibration/refresh", json!({})).await;
    assert_eq!(code, 200);
    assert_eq!(
        (body["refreshed"][0]["fitted"].as_bool(), body["refreshed"][0]["samples"].as_u64()),
        (Some(false), Some(5))
    );
    let (_, curve) = api.get("/calibration/curve").await;
    assert_eq!(curve["buckets"], json!([]));
    let (_, list) = api.get("/detections").await;
    assert!(list["detections"][0]["calibrated_confidence"].is_null());
}
