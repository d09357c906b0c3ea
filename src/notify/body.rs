//! The default webhook body (SPEC 2.20), and the `data` object that templates see as well.

use serde_json::{Map, Value, json};

use super::Notice;

/// The keys SPEC 2.20 names under `data`; they are always present, `null` when they do not apply
/// (a satellite going offline has no species), so receivers can rely on the shape.
pub const SPEC_DATA_KEYS: [&str; 5] = ["species", "commonName", "confidence", "satelliteName", "detectionId"];

/// The JSON bytes POSTed to a webhook channel without a `payload_template`:
/// `{"event", "timestamp", "tenantId", "alertId", "title", "message", "link", "data": {...}}`.
pub fn webhook_default(n: &Notice) -> Vec<u8> {
    let body = json!({
        "event": n.event,
        "timestamp": n.timestamp,
        "tenantId": n.tenant_id,
        "alertId": n.alert_id,
        "title": n.title,
        "message": n.message,
        "link": n.link,
        "data": data(n),
    });
    body.to_string().into_bytes()
}

/// The `data` object: every [`NoticeData`](super::NoticeData) field under its camelCase name plus
/// the event's extra entries. An extra entry never replaces a named field, so `data.species` is
/// always the scientific name whatever an event adds.
pub fn data(n: &Notice) -> Map<String, Value> {
    let d = &n.data;
    let mut data = d.extra.clone();
    let named = [
        ("species", json!(d.species)),
        ("commonName", json!(d.common_name)),
        ("commonNames", json!(d.common_names)),
        ("speciesCode", json!(d.species_code)),
        ("confidence", json!(d.confidence)),
        ("satelliteId", json!(d.satellite_id)),
        ("satelliteName", json!(d.satellite_name)),
        ("detectionId", json!(d.detection_id)),
        ("detectedAt", json!(d.detected_at)),
    ];
    for (key, value) in named {
        data.insert(key.to_owned(), value);
    }
    data
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{
        ids::TenantId,
        notify::{NoticeData, sample},
    };

    fn parse(bytes: &[u8]) -> Value {
        serde_json::from_slice(bytes).expect("the body is JSON")
    }

    fn keys(v: &Value) -> Vec<&str> {
        let mut keys: Vec<&str> = v.as_object().expect("object").keys().map(String::as_str).collect();
        keys.sort_unstable();
        keys
    }

    #[test]
    fn a_detection_alert_carries_every_field_with_its_value() {
        let mut n = sample(TenantId::new());
        n.event = "rare_species".to_owned();
        n.alert_id = Some("a1".to_owned());
        n.rule_name = Some("Rare birds".to_owned());
        n.link = Some("https://hub.example/detections/1".to_owned());
        n.data.extra.insert("rare".to_owned(), json!(true));
        let body = parse(&webhook_default(&n));

        assert_eq!(keys(&body), ["alertId", "data", "event", "link", "message", "tenantId", "timestamp", "title"]);
        assert_eq!(body["event"], "rare_species");
        assert_eq!(body["timestamp"], json!(n.timestamp.to_string()));
        assert!(body["timestamp"].as_str().expect("text").ends_with('Z'));
        assert_eq!(body["tenantId"], json!(n.tenant_id.to_string()));
        assert_eq!(body["alertId"], "a1");
        assert_eq!(body["title"], json!(n.title));
        assert_eq!(body["message"], json!(n.message));
        assert_eq!(body["link"], "https://hub.example/detections/1");

        let data = &body["data"];
        assert_eq!(
            keys(data),
            [
                "commonName",
                "commonNames",
                "confidence",
                "detectedAt",
                "detectionId",
                "rare",
                "satelliteId",
                "satelliteName",
                "species",
                "speciesCode"
            ]
        );
        let d = &n.data;
        assert_eq!(data["species"], "Cardinalis cardinalis");
        assert_eq!(data["commonName"], "Northern Cardinal");
        assert_eq!(data["commonNames"], json!({"de": "Rotkardinal", "en": "Northern Cardinal"}));
        assert_eq!(data["speciesCode"], "cardinalis_cardinalis");
        assert_eq!(data["confidence"], json!(0.92));
        assert_eq!(data["satelliteId"], json!(d.satellite_id.map(|s| s.to_string())));
        assert_eq!(data["satelliteName"], "Backyard");
        assert_eq!(data["detectionId"], json!(d.detection_id.map(|s| s.to_string())));
        assert_eq!(data["detectedAt"], json!(d.detected_at.map(|t| t.to_string())));
        assert_eq!(data["rare"], true);
    }

    #[test]
    fn a_satellite_offline_alert_keeps_the_spec_keys_as_null() {
        let mut n = sample(TenantId::new());
        n.event = "satellite_offline".to_owned();
        n.link = None;
        n.data = NoticeData { satellite_name: Some("Backyard".to_owned()), ..Default::default() };
        n.data.extra.insert("offlineMinutes".to_owned(), json!(5));
        let body = parse(&webhook_default(&n));
        assert_eq!(body["alertId"], Value::Null);
        assert_eq!(body["link"], Value::Null);
        for key in SPEC_DATA_KEYS {
            assert!(body["data"].get(key).is_some(), "data.{key} is present");
        }
        assert_eq!(body["data"]["species"], Value::Null);
        assert_eq!(body["data"]["commonName"], Value::Null);
        assert_eq!(body["data"]["confidence"], Value::Null);
        assert_eq!(body["data"]["detectionId"], Value::Null);
        assert_eq!(body["data"]["satelliteName"], "Backyard");
        assert_eq!(body["data"]["commonNames"], json!({}));
        assert_eq!(body["data"]["offlineMinutes"], 5);
    }

    #[test]
    fn an_extra_entry_cannot_replace_a_named_field() {
        let mut n = sample(TenantId::new());
        n.data.extra.insert("species".to_owned(), json!("Passer domesticus"));
        assert_eq!(parse(&webhook_default(&n))["data"]["species"], "Cardinalis cardinalis");
    }
}
