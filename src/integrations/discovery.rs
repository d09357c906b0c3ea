//! Home Assistant MQTT discovery: the retained config messages that make one device per
//! satellite and one for the hub appear in Home Assistant, following its documented format
//! (`<prefix>/<component>/<node_id>/<object_id>/config`; full key names, not abbreviations).

use serde_json::{Value, json};

use super::feed::{OFFLINE, ONLINE, Topics};
use crate::{ids::SatelliteId, store::home_feed::SatelliteFacts};

/// What every config needs to know about the hub; built once when the integrations start.
pub struct Context {
    pub prefix: String,
    pub topics: Topics,
    /// Stable across restarts: the hub device's node id is derived from the team.
    pub team_id: String,
    pub team_name: String,
    pub version: String,
    /// The dashboard's address, for each device's "visit" link.
    pub dashboard_url: String,
}

/// One discovery message: its topic and its JSON body.
pub type Config = (String, Value);

/// The node id of a satellite's device (letters, digits and `_` only).
pub fn satellite_node(s: SatelliteId) -> String {
    format!("birdhub_{}", s.0.simple())
}

/// The sensors of a satellite's device and their component, for publishing and for removal.
const SATELLITE_ENTITIES: [(&str, &str); 6] = [
    ("sensor", "last_species"),
    ("sensor", "detections_today"),
    ("sensor", "species_today"),
    ("sensor", "cpu_temperature"),
    ("sensor", "free_storage"),
    ("binary_sensor", "online"),
];

impl Context {
    fn hub_node(&self) -> String {
        format!("birdhub_hub_{}", self.team_id.replace('-', ""))
    }

    fn topic(&self, component: &str, node: &str, object: &str) -> String {
        format!("{}/{component}/{node}/{object}/config", self.prefix)
    }

    fn origin(&self) -> Value {
        json!({ "name": "birdhub", "sw_version": self.version })
    }

    fn hub_device(&self) -> Value {
        json!({
            "identifiers": [self.hub_node()],
            "name": format!("birdhub {}", self.team_name),
            "manufacturer": "birdhub",
            "model": "Hub",
            "sw_version": self.version,
            "configuration_url": self.dashboard_url,
        })
    }

    /// The hub device: detections and species today, queue length and version.
    pub fn hub_configs(&self) -> Vec<Config> {
        let node = self.hub_node();
        let state = self.topics.hub_state();
        let availability = json!([{ "topic": self.topics.hub_availability() }]);
        let device = self.hub_device();
        let sensor = |object: &str, name: &str, extra: Value| {
            self.sensor(
                Sensor { node: &node, object, name, state: &state, availability: &availability, device: &device },
                extra,
            )
        };
        vec![
            sensor(
                "detections_today",
                "Detections today",
                json!({ "icon": "mdi:bird", "state_class": "total_increasing", "unit_of_measurement": "detections" }),
            ),
            sensor(
                "species_today",
                "Species today",
                json!({ "icon": "mdi:feather", "state_class": "measurement", "unit_of_measurement": "species" }),
            ),
            sensor(
                "queue_length",
                "Queue length",
                json!({ "icon": "mdi:tray-full", "state_class": "measurement", "unit_of_measurement": "chunks",
                        "entity_category": "diagnostic" }),
            ),
            sensor("version", "Version", json!({ "icon": "mdi:tag", "entity_category": "diagnostic" })),
        ]
    }

    /// A satellite's device: last species (with attributes), detections and species today,
    /// online, CPU temperature and free storage.
    pub fn satellite_configs(&self, s: &SatelliteFacts) -> Vec<Config> {
        let node = satellite_node(s.id);
        let state = self.topics.satellite_state(s.id);
        let sat_availability = self.topics.satellite_availability(s.id);
        let device = json!({
            "identifiers": [node],
            "name": s.name,
            "manufacturer": "birdhub",
            "model": if s.kind == "mobile" { "Android app" } else { "Satellite" },
            "sw_version": s.version,
            "via_device": self.hub_node(),
            "configuration_url": format!("{}/satellites/{}", self.dashboard_url, s.id),
        });
        // Values go unavailable when either the satellite or the hub is.
        let availability = json!([{ "topic": sat_availability }, { "topic": self.topics.hub_availability() }]);
        let sensor = |object: &str, name: &str, mut extra: Value| {
            merge(&mut extra, json!({ "availability_mode": "all" }));
            self.sensor(
                Sensor { node: &node, object, name, state: &state, availability: &availability, device: &device },
                extra,
            )
        };
        let online = (
            self.topic("binary_sensor", &node, "online"),
            json!({
                "name": "Online",
                "unique_id": format!("{node}_online"),
                "state_topic": sat_availability,
                "payload_on": ONLINE,
                "payload_off": OFFLINE,
                "device_class": "connectivity",
                // Online must stay readable while the satellite is not: only the hub gates it.
                "availability": [{ "topic": self.topics.hub_availability() }],
                "device": device,
                "origin": self.origin(),
            }),
        );
        vec![
            sensor(
                "last_species",
                "Last species",
                json!({ "icon": "mdi:bird", "json_attributes_topic": self.topics.last_detection(s.id) }),
            ),
            sensor(
                "detections_today",
                "Detections today",
                json!({ "icon": "mdi:counter", "state_class": "total_increasing", "unit_of_measurement": "detections" }),
            ),
            sensor(
                "species_today",
                "Species today",
                json!({ "icon": "mdi:feather", "state_class": "measurement", "unit_of_measurement": "species" }),
            ),
            online,
            sensor(
                "cpu_temperature",
                "CPU temperature",
                json!({ "device_class": "temperature", "state_class": "measurement", "unit_of_measurement": "°C",
                        "entity_category": "diagnostic" }),
            ),
            sensor(
                "free_storage",
                "Free storage",
                json!({ "device_class": "data_size", "state_class": "measurement", "unit_of_measurement": "MB",
                        "value_template": "{{ value_json.free_storage_mb }}", "entity_category": "diagnostic" }),
            ),
        ]
    }

    /// A sensor reading `value_json.<object>` from `state`, with `extra` keys added or replaced.
    fn sensor(&self, s: Sensor<'_>, extra: Value) -> Config {
        let mut body = json!({
            "name": s.name,
            "unique_id": format!("{}_{}", s.node, s.object),
            "state_topic": s.state,
            "value_template": format!("{{{{ value_json.{} }}}}", s.object),
            "availability": s.availability,
            "device": s.device,
            "origin": self.origin(),
        });
        merge(&mut body, extra);
        (self.topic("sensor", s.node, s.object), body)
    }

    /// The config topics of a satellite's device: an empty retained message on each removes it.
    pub fn satellite_config_topics(&self, s: SatelliteId) -> Vec<String> {
        let node = satellite_node(s);
        SATELLITE_ENTITIES.iter().map(|(component, object)| self.topic(component, &node, object)).collect()
    }
}

/// What tells one sensor from another of the same device.
struct Sensor<'a> {
    node: &'a str,
    object: &'a str,
    name: &'a str,
    state: &'a str,
    availability: &'a Value,
    device: &'a Value,
}

/// Adds (or replaces) the keys of `extra` in `body`.
fn merge(body: &mut Value, extra: Value) {
    if let (Some(body), Value::Object(extra)) = (body.as_object_mut(), extra) {
        body.extend(extra);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(name: &str) -> SatelliteFacts {
        SatelliteFacts {
            id: SatelliteId(uuid::Uuid::from_u128(7)),
            name: name.into(),
            kind: "satellite".into(),
            version: Some("1.2.0".into()),
            last_seen_at: None,
            offline_since: None,
            detections_today: 0,
            species_today: 0,
            last: None,
            cpu_temp: None,
            storage_free_bytes: None,
        }
    }

    #[test]
    fn every_satellite_config_sits_where_home_assistant_looks_and_names_its_device() {
        let topics = Topics::new("feed");
        let ctx = Context {
            prefix: "homeassistant".into(),
            topics,
            team_id: "00000000-0000-0000-0000-000000000001".into(),
            team_name: "Garden".into(),
            version: "1.0.0".into(),
            dashboard_url: "http://hub.local:8080".into(),
        };
        let configs = ctx.satellite_configs(&facts("Oak"));
        let mut published: Vec<&str> = configs.iter().map(|(t, _)| t.as_str()).collect();
        let removal = ctx.satellite_config_topics(SatelliteId(uuid::Uuid::from_u128(7)));
        let mut removed: Vec<&str> = removal.iter().map(String::as_str).collect();
        published.sort_unstable();
        removed.sort_unstable();
        assert_eq!(published, removed, "a deleted satellite's removal must clear every config it had");
        let mut ids = std::collections::HashSet::new();
        for (topic, body) in &configs {
            let parts: Vec<&str> = topic.split('/').collect();
            assert_eq!(parts.len(), 5, "{topic}");
            assert!(parts[2].chars().all(|c| c.is_ascii_alphanumeric() || c == '_'), "node id {topic}");
            assert!(ids.insert(body["unique_id"].as_str().expect("unique_id").to_owned()), "unique ids differ");
            assert_eq!(body["device"]["name"], "Oak");
            assert_eq!(body["device"]["via_device"], "birdhub_hub_00000000000000000000000000000001");
            assert!(body["state_topic"].as_str().is_some_and(|t| t.starts_with("feed/")));
        }
        assert_eq!(ctx.hub_configs().len(), 4);
    }
}
