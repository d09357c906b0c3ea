//! Votes, the consensus, comments and annotations over real HTTP.

mod common;

use birdhub::domain::Role;
use common::{assert_error, seed};
use serde_json::{Value, json};

struct World {
    hub: common::TestHub,
    admin: common::Api,
    alice: common::Api,
    bob: common::Api,
    carol: common::Api,
    viewer: common::Api,
    detection: String,
}

async fn world() -> World {
    let hub = common::spawn_hub().await;
    let owner = hub.user("owner@example.org", false).await;
    let t = owner.tenant;
    for (email, role) in [
        ("alice@example.org", Role::Member),
        ("bob@example.org", Role::Member),
        ("carol@example.org", Role::Member),
        ("vera@example.org", Role::Viewer),
    ] {
        hub.member_of(email, t, role).await;
    }
    let sat = seed::satellite(&hub, t, "garden").await;
    let (_, d) = seed::heard(&hub, t, sat, "2026-05-01T05:00:00.000Z", seed::ROBIN, 0.8).await;
    World {
        admin: hub.login("owner@example.org").await,
        alice: hub.login("alice@example.org").await,
        bob: hub.login("bob@example.org").await,
        carol: hub.login("carol@example.org").await,
        viewer: hub.login("vera@example.org").await,
        detection: d.to_string(),
        hub,
    }
}

async fn status(api: &common::Api, id: &str) -> Value {
    let (_, d) = api.get(&format!("/detections/{id}")).await;
    d["verification_status"].clone()
}

async fn vote(api: &common::Api, id: &str, vote: &str) -> (reqwest::StatusCode, Value) {
    api.post(&format!("/detections/{id}/verify"), json!({"vote": vote})).await
}

#[tokio::test]
async fn member_votes_reach_consensus_and_an_admin_decides() {
    let w = world().await;
    let id = w.detection.as_str();
    assert_eq!(status(&w.alice, id).await, "unverified");

    let (code, body) = vote(&w.alice, id, "confirm").await;
    assert_eq!(code, 200, "{body}");
    assert_eq!(body["verificationStatus"], "pending_review", "one vote is not a consensus");
    assert_eq!(body["votes"], json!({"confirm": 1, "reject": 0, "unsure": 0}));

    let (_, body) = vote(&w.bob, id, "reject").await;
    assert_eq!(body["verificationStatus"], "pending_review", "a tie");
    let (_, body) = vote(&w.carol, id, "confirm").await;
    assert_eq!(body["verificationStatus"], "confirmed", "two agreeing members outnumber one");
    assert_eq!(status(&w.viewer, id).await, "confirmed");

    // Changing a vote replaces it (one per person): alice now rejects, so it is 1-2.
    let (_, body) = vote(&w.alice, id, "reject").await;
    assert_eq!(body["votes"], json!({"confirm": 1, "reject": 2, "unsure": 0}));
    assert_eq!(body["verificationStatus"], "rejected");

    // The team admin's vote is decisive.
    let (_, body) = vote(&w.admin, id, "confirm").await;
    assert_eq!(body["verificationStatus"], "confirmed");
    let (_, list) = w.alice.get("/detections?verificationStatus=confirmed").await;
    assert_eq!(list["total"], 1);

    let audited: i64 = w.hub.sql(|c| {
        c.query_row("SELECT count(*) FROM audit_log WHERE action = 'detection.voted'", [], |r| r.get(0)).expect("audit")
    });
    assert_eq!(audited, 5);
}

#[tokio::test]
async fn votes_endpoint_returns_only_the_callers_votes() {
    let w = world().await;
    let id = w.detection.as_str();
    vote(&w.alice, id, "unsure").await;
    let other = uuid::Uuid::new_v4();
    let (code, body) = w.alice.get(&format!("/detections/votes?ids={id},{other}")).await;
    assert_eq!(code, 200, "{body}");
    assert_eq!(body["votes"].as_array().map(Vec::len), Some(1));
    assert_eq!(body["votes"][0]["detection_id"], id);
    assert_eq!(body["votes"][0]["vote"], "unsure");
    let (_, body) = w.bob.get(&format!("/detections/votes?ids={id}")).await;
    assert_eq!(body["votes"], json!([]), "bob has not voted");
    let (_, body) = w.bob.get("/detections/votes").await;
    assert_eq!(body["votes"], json!([]));
    assert_error(&w.bob.get("/detections/votes?ids=nope").await, 400, "invalid_id");
}

#[tokio::test]
async fn bad_votes_viewers_and_strangers_are_refused() {
    let w = world().await;
    let id = w.detection.as_str();
    assert_error(&vote(&w.alice, id, "yes").await, 422, "invalid_vote");
    assert_error(&w.alice.post(&format!("/detections/{id}/verify"), json!({"vote": 1})).await, 422, "invalid_body");
    assert_error(&w.alice.post(&format!("/detections/{id}/verify"), json!({})).await, 422, "invalid_body");
    assert_error(&vote(&w.viewer, id, "confirm").await, 403, "insufficient_role");
    assert_error(&vote(&w.alice, &uuid::Uuid::new_v4().to_string(), "confirm").await, 404, "detection_not_found");
    let stranger = w.hub.user("stranger@example.org", false).await;
    let s = w.hub.login(&stranger.email).await;
    assert_error(&vote(&s, id, "confirm").await, 404, "detection_not_found");
}

/// The voting mode is a preference of the dashboard, not a rule of the API: the Android app and
/// scripts vote with one call whatever the person chose (the SPEC has no `annotation_required`).
#[tokio::test]
async fn a_person_in_detailed_voting_mode_can_still_vote() {
    let w = world().await;
    let id = w.detection.as_str();
    let (code, _) = w.alice.put("/auth/me/preferences", json!({"votingMode": "detailed"})).await;
    assert_eq!(code, 200);
    let (code, body) = vote(&w.alice, id, "confirm").await;
    assert_eq!(code, 200, "{body}");
    assert_eq!(body["votes"]["confirm"], 1);
    let (_, mine) = w.alice.get(&format!("/detections/votes?ids={id}")).await;
    assert_eq!(mine["votes"][0]["vote"], "confirm", "{mine}");
}

#[tokio::test]
async fn comments_are_read_by_all_written_by_members_and_deleted_by_author_or_admin() {
    let w = world().await;
    let path = format!("/detections/{}/comments", w.detection);
    let (code, mine) = w.alice.post(&path, json!({"body": "  lovely song  "})).await;
    assert_eq!(code, 201, "{mine}");
    assert_eq!(mine["body"], "lovely song");
    assert_eq!(mine["user_name"], "alice");
    let (_, bobs) = w.bob.post(&path, json!({"body": "agreed"})).await;
    let (code, list) = w.viewer.get(&path).await;
    assert_eq!(code, 200);
    let bodies: Vec<&str> =
        list["comments"].as_array().expect("list").iter().map(|c| c["body"].as_str().expect("b")).collect();
    assert_eq!(bodies, ["lovely song", "agreed"], "oldest first");

    assert_error(&w.viewer.post(&path, json!({"body": "hi"})).await, 403, "insufficient_role");
    assert_error(&w.alice.post(&path, json!({"body": "   "})).await, 422, "invalid_comment");
    assert_error(&w.alice.post(&path, json!({"body": "x".repeat(2001)})).await, 422, "invalid_comment");

    let bob_comment = format!("{path}/{}", bobs["id"].as_str().expect("id"));
    assert_error(&w.alice.delete(&bob_comment).await, 403, "not_your_comment");
    assert_eq!(w.bob.delete(&bob_comment).await.0, 204, "the author deletes");
    assert_error(&w.bob.delete(&bob_comment).await, 404, "comment_not_found");
    let alice_comment = format!("{path}/{}", mine["id"].as_str().expect("id"));
    assert_eq!(w.admin.delete(&alice_comment).await.0, 204, "an admin deletes any");
    let (_, list) = w.viewer.get(&path).await;
    assert_eq!(list["comments"], json!([]));
    assert_error(&w.admin.delete(&format!("{path}/not-a-uuid")).await, 400, "invalid_path");
}

#[tokio::test]
async fn annotations_are_validated_against_the_chunk_and_mirror_a_vote() {
    let w = world().await;
    let path = format!("/detections/{}/annotate", w.detection);
    let good = json!({"vote": "confirm", "timeStartMs": 250, "timeEndMs": 1800, "freqLowHz": 2000.0,
                      "freqHighHz": 6500.5, "notes": "second phrase"});
    let (code, body) = w.alice.post(&path, good).await;
    assert_eq!(code, 201, "{body}");
    assert_eq!(body["annotation"]["time_start_ms"], 250);
    assert_eq!(body["annotation"]["freq_high_hz"], 6500.5);
    assert_eq!(body["verificationStatus"], "pending_review");
    let (_, votes) = w.alice.get(&format!("/detections/votes?ids={}", w.detection)).await;
    assert_eq!(votes["votes"][0]["vote"], "confirm", "the mirrored vote");
    assert_eq!(votes["votes"][0]["annotation_id"], body["annotation"]["id"]);
    let (_, body) = w.bob.post(&path, json!({"vote": "confirm", "timeStartMs": 0, "timeEndMs": 3000})).await;
    assert_eq!(body["verificationStatus"], "confirmed", "two annotations are two agreeing votes");

    let (code, list) = w.viewer.get(&format!("/detections/{}/annotations", w.detection)).await;
    assert_eq!(code, 200);
    assert_eq!(list["annotations"].as_array().map(Vec::len), Some(2));
    assert_eq!(list["annotations"][0]["user_name"], "alice");

    for bad in [
        json!({"vote": "confirm", "timeStartMs": 2000, "timeEndMs": 1000}),
        json!({"vote": "confirm", "timeStartMs": 1000, "timeEndMs": 1000}),
        json!({"vote": "confirm", "timeStartMs": -1, "timeEndMs": 1000}),
        json!({"vote": "confirm", "timeStartMs": 0, "timeEndMs": 3001}),
        json!({"vote": "confirm", "timeStartMs": 0, "timeEndMs": 1000, "freqLowHz": 5000, "freqHighHz": 4000}),
        json!({"vote": "confirm", "timeStartMs": 0, "timeEndMs": 1000, "freqHighHz": 24001}),
        json!({"vote": "confirm", "timeStartMs": 0, "timeEndMs": 1000, "freqLowHz": -5}),
    ] {
        assert_error(&w.alice.post(&path, bad.clone()).await, 422, "invalid_annotation");
    }
    assert_error(
        &w.alice.post(&path, json!({"vote": "maybe", "timeStartMs": 0, "timeEndMs": 10})).await,
        422,
        "invalid_vote",
    );
    assert_error(
        &w.alice.post(&path, json!({"vote": "confirm", "timeStartMs": "0", "timeEndMs": 10})).await,
        422,
        "invalid_body",
    );
    assert_error(
        &w.viewer.post(&path, json!({"vote": "confirm", "timeStartMs": 0, "timeEndMs": 10})).await,
        403,
        "insufficient_role",
    );
    let (_, list) = w.viewer.get(&format!("/detections/{}/annotations", w.detection)).await;
    assert_eq!(list["annotations"].as_array().map(Vec::len), Some(2), "nothing half-written");
    let audited: i64 = w.hub.sql(|c| {
        c.query_row("SELECT count(*) FROM audit_log WHERE action = 'detection.annotated'", [], |r| r.get(0)).expect("a")
    });
    assert_eq!(audited, 2);
}
