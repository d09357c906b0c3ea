//! Share links with a record (issue 48), over real HTTP: a link names its maker, the team lists
//! and revokes its links, a revoked link or one whose maker left opens nothing, and another
//! team's ids are 404.

mod common;

use birdhub::domain::Role;
use common::{Api, TestHub, assert_error, seed};

struct Team {
    hub: TestHub,
    owner: Api,
    tenant: birdhub::ids::TenantId,
    detection: String,
}

async fn team() -> Team {
    let hub = common::spawn_hub().await;
    let owner = hub.user("owner@example.org", false).await;
    let sat = seed::satellite(&hub, owner.tenant, "garden").await;
    let (_, detection) = seed::heard(&hub, owner.tenant, sat, "2026-05-01T05:00:00.000Z", seed::ROBIN, 0.8).await;
    let api = hub.login(&owner.email).await;
    Team { owner: api, tenant: owner.tenant, detection: detection.to_string(), hub }
}

impl Team {
    async fn member(&self, email: &str, role: Role) -> (birdhub::ids::UserId, Api) {
        let user = self.hub.member_of(email, self.tenant, role).await;
        (user.id, self.hub.login(email).await)
    }

    /// Statuses of the link's JSON, audio, spectrogram and page, fetched without an account.
    async fn public_statuses(&self, token: &str) -> [u16; 4] {
        let d = &self.detection;
        let client = reqwest::Client::new();
        let mut out = [0; 4];
        let urls = [
            self.hub.api(&format!("/share/detection/{d}/{token}")),
            self.hub.api(&format!("/share/audio/{d}/{token}")),
            self.hub.api(&format!("/share/spectrogram/{d}/{token}")),
            format!("{}/share/{d}/{token}", self.hub.base_url),
        ];
        for (i, url) in urls.iter().enumerate() {
            out[i] = client.get(url).send().await.expect("request").status().as_u16();
        }
        out
    }
}

fn token(made: &serde_json::Value) -> String {
    made["token"].as_str().expect("token").to_owned()
}

#[tokio::test]
async fn a_link_is_recorded_given_back_listed_and_revoked_at_once() {
    let t = team().await;
    let d = &t.detection;
    let (status, made) = t.owner.post_empty(&format!("/detections/{d}/shares")).await;
    assert_eq!(status, 201, "{made}");
    assert_eq!(made["madeByName"], "owner");
    let (status, again) = t.owner.post_empty(&format!("/detections/{d}/shares")).await;
    assert_eq!(status, 200, "the live link is given back: {again}");
    assert_eq!((again["id"].clone(), token(&again)), (made["id"].clone(), token(&made)));
    let (status, old_client) = t.owner.get(&format!("/detections/{d}/share")).await;
    assert_eq!(status, 200, "the first route still works: {old_client}");
    assert_eq!(old_client["id"], made["id"]);
    let links = t.hub.sql(|c| c.query_row("SELECT count(*) FROM share_links", [], |r| r.get::<_, i64>(0)).expect("n"));
    assert_eq!(links, 1, "asking three times made one link");

    let (status, list) = t.owner.get(&format!("/detections/{d}/shares")).await;
    assert_eq!(status, 200, "{list}");
    assert_eq!(list.as_array().expect("list").len(), 1);
    assert_eq!(list[0]["id"], made["id"]);
    assert!(list[0].get("token").is_none(), "tokens are never listed: {list}");

    let tok = token(&made);
    assert_eq!(t.public_statuses(&tok).await, [200, 200, 200, 200]);
    let (status, _) = t.owner.delete(&format!("/detections/{d}/shares/{}", made["id"].as_str().expect("id"))).await;
    assert_eq!(status, 204);
    assert_eq!(t.public_statuses(&tok).await, [404, 404, 404, 404], "revoked: nothing opens");
    assert_error(&t.hub.anon().get(&format!("/share/spectrogram/{d}/{tok}")).await, 404, "share_not_found");
    let (_, list) = t.owner.get(&format!("/detections/{d}/shares")).await;
    assert_eq!(list.as_array().expect("list").len(), 0);
    let (status, fresh) = t.owner.post_empty(&format!("/detections/{d}/shares")).await;
    assert_eq!(status, 201, "a new link after the revoked one: {fresh}");
    assert_ne!(fresh["id"], made["id"]);

    // A token of the first shape (expiry and tag, no record) opens no page any more.
    let secret = t.hub.state().settings.security.jwt_secret.expose().to_owned();
    let id: birdhub::ids::DetectionId = d.parse().expect("id");
    let expiry = t.hub.state().clock.now().timestamp() + 86_400;
    let old = birdhub::auth::share::sign_audio(&secret, id, expiry);
    assert_error(&t.hub.anon().get(&format!("/share/detection/{d}/{old}")).await, 404, "share_not_found");
    assert_error(&t.hub.anon().get(&format!("/share/spectrogram/{d}/{old}")).await, 404, "share_not_found");
}

#[tokio::test]
async fn a_link_ends_when_its_maker_leaves_and_stays_ended() {
    let t = team().await;
    let d = &t.detection;
    let (_, member) = t.member("mate@example.org", Role::Member).await;
    let (status, made) = member.post_empty(&format!("/detections/{d}/shares")).await;
    assert_eq!(status, 201, "{made}");
    let tok = token(&made);
    assert_eq!(t.public_statuses(&tok).await, [200, 200, 200, 200]);

    assert_eq!(member.post_empty(&format!("/tenants/{}/leave", t.tenant)).await.0, 204);
    assert_eq!(t.public_statuses(&tok).await, [404, 404, 404, 404], "the maker left");
    let (_, list) = t.owner.get(&format!("/detections/{d}/shares")).await;
    assert_eq!(list.as_array().expect("list").len(), 0, "{list}");

    // Coming back does not bring the link back.
    let store = t.hub.state().store.clone();
    let mate: birdhub::ids::UserId = made["madeBy"].as_str().expect("maker").parse().expect("id");
    let tenant = t.tenant;
    birdhub::usecases::membership::add_member(&store, mate, tenant, Role::Member).await.expect("back");
    assert_eq!(t.public_statuses(&tok).await, [404, 404, 404, 404], "ended for good");
}

#[tokio::test]
async fn a_member_cannot_revoke_another_members_link_but_an_admin_can() {
    let t = team().await;
    let d = &t.detection;
    let (_, ada) = t.member("ada@example.org", Role::Member).await;
    let (_, bob) = t.member("bob@example.org", Role::Viewer).await;
    let (_, made) = ada.post_empty(&format!("/detections/{d}/shares")).await;
    let link = made["id"].as_str().expect("id").to_owned();
    let (status, bobs) = bob.post_empty(&format!("/detections/{d}/shares")).await;
    assert_eq!(status, 201, "a viewer may share: {bobs}");
    assert_ne!(bobs["id"], made["id"], "each person has their own link");

    assert_error(&bob.delete(&format!("/detections/{d}/shares/{link}")).await, 403, "not_your_share_link");
    assert_eq!(t.public_statuses(&token(&made)).await[0], 200, "still live");
    let (status, _) = bob.delete(&format!("/detections/{d}/shares/{}", bobs["id"].as_str().expect("id"))).await;
    assert_eq!(status, 204, "a viewer revokes their own link");
    let (status, _) = t.owner.delete(&format!("/detections/{d}/shares/{link}")).await;
    assert_eq!(status, 204, "an admin revokes anyone's link");
    assert_eq!(t.public_statuses(&token(&made)).await[0], 404);
    assert_error(&t.owner.delete(&format!("/detections/{d}/shares/{link}")).await, 404, "share_not_found");
}

#[tokio::test]
async fn another_teams_detections_and_links_are_404_and_lists_are_the_teams_own() {
    let t = team().await;
    let d = &t.detection;
    let (_, made) = t.owner.post_empty(&format!("/detections/{d}/shares")).await;
    let link = made["id"].as_str().expect("id").to_owned();

    let stranger = t.hub.user("stranger@example.org", false).await;
    let sat = seed::satellite(&t.hub, stranger.tenant, "porch").await;
    let (_, theirs) = seed::heard(&t.hub, stranger.tenant, sat, "2026-05-01T06:00:00.000Z", seed::WREN, 0.8).await;
    let other = t.hub.login(&stranger.email).await;
    assert_error(&other.get(&format!("/detections/{d}/shares")).await, 404, "detection_not_found");
    assert_error(&other.post_empty(&format!("/detections/{d}/shares")).await, 404, "detection_not_found");
    assert_error(&other.delete(&format!("/detections/{d}/shares/{link}")).await, 404, "share_not_found");
    // Their own detection with our link's id: still not theirs.
    assert_error(&other.delete(&format!("/detections/{theirs}/shares/{link}")).await, 404, "share_not_found");
    let (status, own) = other.get(&format!("/detections/{theirs}/shares")).await;
    assert_eq!((status.as_u16(), own.as_array().map(Vec::len)), (200, Some(0)), "{own}");
    assert_eq!(t.public_statuses(&token(&made)).await[0], 200, "our link is untouched");

    // Our token on their detection opens nothing.
    let tok = token(&made);
    assert_error(&t.hub.anon().get(&format!("/share/detection/{theirs}/{tok}")).await, 404, "share_not_found");
}

#[tokio::test]
async fn retention_keeps_audio_only_while_a_link_is_live() {
    let t = team().await;
    let d = &t.detection;
    let state = t.hub.state();
    let policy = birdhub::usecases::audio_retention::Policy { keep_audio_days: 30, min_free_bytes: 0 };
    let sweep = || {
        birdhub::usecases::audio_retention::sweep(&state.store, &state.objects, &state.clock, policy, &t.hub.data_dir)
    };
    let expired = || {
        t.hub.sql(|c| {
            c.query_row("SELECT count(*) FROM audio_chunks WHERE audio_expired_at IS NOT NULL", [], |r| {
                r.get::<_, i64>(0)
            })
            .expect("n")
        })
    };
    // The recording is months old, classified and plain (not rare): only a live link keeps it.
    t.hub
        .sql(|c| {
            c.execute("UPDATE inference_jobs SET status = 'done', finished_at = '2026-01-01T00:00:00.000Z'", [])?;
            c.execute("UPDATE detections SET is_rare = 0, rare_reason = NULL", [])
        })
        .expect("plain");
    let (_, made) = t.owner.post_empty(&format!("/detections/{d}/shares")).await;
    assert_eq!(sweep().await.expect("sweep").expired_by_age, 0);
    assert_eq!(expired(), 0, "kept while the link is live");
    let (status, _) = t.owner.delete(&format!("/detections/{d}/shares/{}", made["id"].as_str().expect("id"))).await;
    assert_eq!(status, 204);
    assert_eq!(sweep().await.expect("sweep").expired_by_age, 1, "a revoked link keeps nothing");
    assert_eq!(expired(), 1);
}
