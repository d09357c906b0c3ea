//! Species names (SPEC 4.9) from the real model's 38 label files: the public language list, and
//! translating by code, scientific name or a common name in any language, one or in bulk.

mod common;

use common::assert_error;
use serde_json::json;

#[tokio::test]
async fn names_translate_from_any_form_into_any_installed_language() {
    let hub = common::spawn_hub_with(common::with_model).await;
    let owner = hub.user("owner@example.org", false).await;
    let api = hub.login(&owner.email).await;

    let (status, langs) = hub.anon().get("/species/languages").await;
    assert_eq!(status, 200, "public: {langs}");
    assert_eq!(langs["total"], 38);
    let german = langs["languages"].as_array().expect("list").iter().find(|l| l["code"] == "de").expect("de");
    assert_eq!((german["name"].clone(), german["nativeName"].clone()), (json!("German"), json!("Deutsch")));

    for (code, lang, common) in [
        ("leiothlypis_peregrina", "de", "Brauenwaldsänger"),
        ("Leiothlypis peregrina", "de", "Brauenwaldsänger"),
        ("tennessee warbler", "de", "Brauenwaldsänger"),
        ("Brauenwaldsänger", "en", "Tennessee Warbler"),
        ("灰冠虫森莺", "de", "Brauenwaldsänger"),
        ("Tennessee Warbler", "zh", "灰冠虫森莺"),
    ] {
        let (status, t) = api.get(&format!("/species/translate?code={}&lang={lang}", urlencode(code))).await;
        assert_eq!(status, 200, "{code} -> {lang}: {t}");
        assert_eq!(t["commonName"], common, "{code} -> {lang}");
        assert_eq!(t["speciesCode"], "leiothlypis_peregrina");
        assert_eq!(t["scientificName"], "Leiothlypis peregrina");
    }
    let (_, pt) = api.get("/species/translate?code=turdus_migratorius&lang=pt-br").await;
    assert_eq!(pt["lang"], "pt_BR");

    assert_error(&api.get("/species/translate?code=turdus_migratorius&lang=klingon").await, 422, "unknown_language");
    assert_error(&api.get("/species/translate?code=dodo&lang=de").await, 404, "species_not_found");
    assert_error(&api.get("/species/translate?lang=de").await, 400, "invalid_query");
    assert_error(&hub.anon().get("/species/translate?code=dodo&lang=de").await, 401, "unauthenticated");

    let (status, bulk) = api
        .post("/species/translate", json!({"names": ["Turdus migratorius", "dodo", "Brauenwaldsänger"], "lang": "fr"}))
        .await;
    assert_eq!(status, 200, "{bulk}");
    assert_eq!((bulk["total"].clone(), bulk["found"].clone()), (json!(3), json!(2)));
    assert_eq!(bulk["results"][0]["speciesCode"], "turdus_migratorius");
    assert_eq!(bulk["results"][0]["input"], "Turdus migratorius");
    assert_eq!(bulk["results"][1]["error"], "unknown species");
    assert!(bulk["results"][2]["commonName"].as_str().is_some_and(|n| !n.is_empty()));
    let too_many: Vec<String> = (0..501).map(|i| format!("bird {i}")).collect();
    assert_error(&api.post("/species/translate", json!({"names": too_many, "lang": "de"})).await, 422, "invalid_names");
    assert_error(&api.post("/species/translate", json!({"names": [], "lang": "de"})).await, 422, "invalid_names");
    assert_error(&api.post("/species/translate", json!({"names": "robin", "lang": "de"})).await, 422, "invalid_body");
}

#[tokio::test]
async fn without_a_model_the_list_is_empty_and_translating_says_why() {
    let hub = common::spawn_hub().await;
    let owner = hub.user("owner@example.org", false).await;
    let api = hub.login(&owner.email).await;
    let (status, langs) = hub.anon().get("/species/languages").await;
    assert_eq!((status.as_u16(), langs["total"].clone()), (200, json!(0)));
    assert_error(&api.get("/species/translate?code=turdus_migratorius&lang=de").await, 503, "model_unavailable");
}

fn urlencode(s: &str) -> String {
    s.bytes()
        .map(|b| if b.is_ascii_alphanumeric() || b == b'_' { (b as char).to_string() } else { format!("%{b:02X}") })
        .collect()
}
