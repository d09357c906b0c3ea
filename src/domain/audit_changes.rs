//! What an audit entry may record of a change: which settings changed, from what to what, with
//! every secret masked. [`changes`] compares two settings objects; [`scrub`] masks what a caller
//! put in `details`, so a password, a token, a key or a webhook URL's secret path never reaches
//! the log whoever wrote the entry.

use serde_json::{Map, Value, json};

/// What a masked secret reads as in the log.
pub const HIDDEN: &str = "hidden";

/// Whether a field named `key` holds a secret: passwords, tokens, keys, shared secrets, codes.
pub fn is_secret_key(key: &str) -> bool {
    let k = key.to_ascii_lowercase().replace(['-', '_'], "");
    // An id names a secret without being one (`apiKeyId`, `revokedKeyIds`).
    if k.ends_with("id") || k.ends_with("ids") {
        return false;
    }
    ["password", "passwd", "secret", "token", "apikey", "privatekey", "passphrase", "credential"]
        .iter()
        .any(|s| k.contains(s))
        || matches!(k.as_str(), "key" | "code" | "codes" | "backupcodes" | "otp")
}

/// `https://hooks.example.org/services/T0/B0/xyz?token=1` → `https://hooks.example.org/…`: a
/// webhook's path and query often are its credential. Other text is kept.
pub fn mask_url(text: &str) -> String {
    let Some((scheme, rest)) = text.split_once("://") else { return text.to_owned() };
    if scheme.is_empty() || !scheme.chars().all(|c| c.is_ascii_alphanumeric() || c == '+') {
        return text.to_owned();
    }
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    // Credentials in the authority (`user:pass@host`) go too.
    let host = rest[..end].rsplit('@').next().unwrap_or_default();
    let tail = rest[end..].trim_start_matches('/');
    if tail.is_empty() && !rest[..end].contains('@') { text.to_owned() } else { format!("{scheme}://{host}/…") }
}

/// `value` as it may be logged under `key`: a secret reads [`HIDDEN`] (an empty one stays empty,
/// booleans say only whether there is one), URLs lose their path, objects and arrays are scrubbed.
pub fn masked(key: &str, value: &Value) -> Value {
    if is_secret_key(key) {
        return match value {
            Value::Null | Value::Bool(_) => value.clone(),
            Value::String(s) if s.is_empty() => value.clone(),
            _ => Value::from(HIDDEN),
        };
    }
    let mut v = value.clone();
    scrub(&mut v);
    v
}

/// Masks every secret in `details` in place (see [`masked`]).
pub fn scrub(details: &mut Value) {
    match details {
        Value::Object(map) => {
            for (k, v) in map.iter_mut() {
                if is_secret_key(k) {
                    *v = masked(k, v);
                } else {
                    scrub(v);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(scrub),
        Value::String(s) if s.contains("://") => *s = mask_url(s),
        _ => {}
    }
}

/// The settings that differ between `before` and `after` (two objects of the same kind), by key:
/// `{setting, from, to}` for a value, `{setting, item, from, to}` for each entry of a map that
/// changed (a per-species threshold), `{setting, added, removed}` for a list, and
/// `{setting, hidden: true}` for a secret. `name_of` names a map's or a list's items (species).
pub fn changes(before: &Value, after: &Value, name_of: &dyn Fn(&str) -> Option<String>) -> Vec<Value> {
    let (Some(old), Some(new)) = (before.as_object(), after.as_object()) else { return Vec::new() };
    let mut out = Vec::new();
    for (key, to) in new {
        let from = old.get(key).unwrap_or(&Value::Null);
        if from == to {
            continue;
        }
        if is_secret_key(key) {
            out.push(json!({ "setting": key, "hidden": true }));
            continue;
        }
        match (from, to) {
            (Value::Object(a), Value::Object(b)) => out.extend(map_changes(key, a, b, name_of)),
            (Value::Array(a), Value::Array(b)) => out.push(list_change(key, a, b, name_of)),
            _ => out.push(json!({ "setting": key, "from": masked(key, from), "to": masked(key, to) })),
        }
    }
    out
}

fn with_name(mut change: Value, item: &str, name_of: &dyn Fn(&str) -> Option<String>) -> Value {
    if let Some(name) = name_of(item) {
        change["name"] = Value::from(name);
    }
    change
}

fn map_changes(
    key: &str,
    a: &Map<String, Value>,
    b: &Map<String, Value>,
    name_of: &dyn Fn(&str) -> Option<String>,
) -> Vec<Value> {
    let mut items: Vec<&String> = a.keys().chain(b.keys()).collect();
    items.sort();
    items.dedup();
    items
        .into_iter()
        .filter(|i| a.get(*i) != b.get(*i))
        .map(|i| {
            let (from, to) = (a.get(i).cloned().unwrap_or(Value::Null), b.get(i).cloned().unwrap_or(Value::Null));
            with_name(json!({ "setting": key, "item": i, "from": masked(i, &from), "to": masked(i, &to) }), i, name_of)
        })
        .collect()
}

fn list_change(key: &str, a: &[Value], b: &[Value], name_of: &dyn Fn(&str) -> Option<String>) -> Value {
    let words = |v: &Value| {
        let text = v.as_str().map_or_else(|| v.to_string(), str::to_owned);
        name_of(&text).unwrap_or(text)
    };
    let added: Vec<String> = b.iter().filter(|v| !a.contains(v)).map(words).collect();
    let removed: Vec<String> = a.iter().filter(|v| !b.contains(v)).map(words).collect();
    json!({ "setting": key, "added": added, "removed": removed })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_names(_: &str) -> Option<String> {
        None
    }

    #[test]
    fn only_what_changed_is_listed_from_and_to() {
        let before = json!({"filter_enabled": false, "heartbeat_interval_sec": 30, "time_zone": "Europe/London"});
        let after = json!({"filter_enabled": true, "heartbeat_interval_sec": 30, "time_zone": "Europe/London"});
        assert_eq!(
            changes(&before, &after, &no_names),
            vec![json!({"setting": "filter_enabled", "from": false, "to": true})]
        );
    }

    #[test]
    fn maps_list_each_entry_with_its_name_and_lists_say_added_and_removed() {
        let names = |c: &str| (c == "parus_major").then(|| "Great Tit".to_owned());
        let before =
            json!({"species_min_confidence": {"parus_major": 0.9, "turdus_merula": 0.5}, "exclude_species": ["a"]});
        let after = json!({"species_min_confidence": {"parus_major": 0.93, "turdus_merula": 0.5}, "exclude_species": ["parus_major"]});
        let c = changes(&before, &after, &names);
        let of = |key: &str| c.iter().find(|x| x["setting"] == key).cloned().unwrap_or_default();
        assert_eq!(
            of("species_min_confidence"),
            json!({"setting": "species_min_confidence", "item": "parus_major", "name": "Great Tit", "from": 0.9, "to": 0.93})
        );
        assert_eq!(
            of("exclude_species"),
            json!({"setting": "exclude_species", "added": ["Great Tit"], "removed": ["a"]})
        );
    }

    #[test]
    fn secrets_never_appear() {
        let before =
            json!({"smtp_password": "old-pass", "webhook_url": "https://hooks.example.org/services/T0/B0/xyz"});
        let after =
            json!({"smtp_password": "new-pass", "webhook_url": "https://hooks.example.org/services/T0/B0/abc?token=t"});
        let c = changes(&before, &after, &no_names);
        let text = serde_json::to_string(&c).expect("json");
        for secret in ["old-pass", "new-pass", "xyz", "abc", "token=t"] {
            assert!(!text.contains(secret), "{secret} in {text}");
        }
        assert_eq!(c[0], json!({"setting": "smtp_password", "hidden": true}));
        let mut details = json!({"newToken": true, "config": {"url": "http://u:p@h.lan:8123/api/webhook/s3cr3t", "secret": "x"}, "apiKey": "bh_1"});
        scrub(&mut details);
        assert_eq!(
            details,
            json!({"newToken": true, "config": {"url": "http://h.lan:8123/…", "secret": HIDDEN}, "apiKey": HIDDEN})
        );
        assert_eq!(mask_url("https://birds.example.org"), "https://birds.example.org");
        assert_eq!(mask_url("not a url"), "not a url");
        assert!(!is_secret_key("speciesCode") && !is_secret_key("reason") && is_secret_key("mqtt_password"));
    }
}
