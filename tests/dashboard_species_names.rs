//! The species page names a bird in its team's languages (the model's label files): a change of
//! the team's language shows on the very next render, and two teams on one hub each see their
//! own languages, never the other team's.

mod common;

use common::{TestHub, seed};
use serde_json::json;

/// The model's own code for the American Robin (the label files are keyed by it).
const ROBIN: seed::Species = ("turdus_migratorius", "American Robin", "Turdus migratorius");

async fn species_page(hub: &TestHub, api: &common::Api) -> String {
    let r = api.client.get(format!("{}/species/{}", hub.base_url, ROBIN.0)).send().await.expect("page");
    assert_eq!(r.status(), 200, "the species page renders");
    r.text().await.expect("body")
}

async fn team_language(api: &common::Api, primary: &str) {
    let (status, body) = api.put("/settings/tenant", json!({ "primary_language": primary })).await;
    assert_eq!(status, 200, "{body}");
}

#[tokio::test]
async fn the_species_page_follows_each_teams_language_at_once() {
    let hub = common::spawn_hub_with(common::with_model).await;
    let (a, b) = (hub.user("a@example.org", false).await, hub.user("b@example.org", false).await);
    for (team, name) in [(a.tenant, "garden"), (b.tenant, "meadow")] {
        let sat = seed::satellite(&hub, team, name).await;
        seed::heard(&hub, team, sat, "2026-05-14T06:00:00.000Z", ROBIN, 0.9).await;
    }
    let (api_a, api_b) = (hub.login(&a.email).await, hub.login(&b.email).await);
    team_language(&api_a, "de").await;
    team_language(&api_b, "es").await;

    let page_a = species_page(&hub, &api_a).await;
    assert!(page_a.contains("Deutsch") && page_a.contains("Wanderdrossel"), "team A reads German");
    assert!(!page_a.contains("Zorzal Americano"), "never team B's language");
    let page_b = species_page(&hub, &api_b).await;
    assert!(page_b.contains("Español") && page_b.contains("Zorzal Americano"), "team B reads Spanish");
    assert!(!page_b.contains("Wanderdrossel"), "never team A's language");

    // A changes its language: the next render names the bird in French, B's stays Spanish.
    team_language(&api_a, "fr").await;
    let page_a = species_page(&hub, &api_a).await;
    assert!(page_a.contains("Merle d"), "the new language at once");
    assert!(!page_a.contains("Wanderdrossel"), "the old language is gone");
    assert!(species_page(&hub, &api_b).await.contains("Zorzal Americano"));
}
