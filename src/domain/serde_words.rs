//! Serde's messages in words a person reads: "`cooldownMinutes` must be a whole number of 0 or
//! more, not -1" instead of "invalid value: integer `-1`, expected u32 at line 1 column 20".
//! Every place that reads client JSON into a type says its errors through here (the API's
//! extractors, settings patches, alert rule conditions), so no serde wording reaches a person.
//! The field is named as the client sent it (`filters.days`, `species[0]`).

/// Reads `value` as a `T`; a failure is a sentence naming the field (under `prefix`, when given:
/// `conditions` for a rule's conditions).
pub fn from_value<T: serde::de::DeserializeOwned>(value: serde_json::Value, prefix: &str) -> Result<T, String> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        let path = match (prefix.is_empty(), path == ".") {
            (true, _) => path,
            (false, true) => prefix.to_owned(),
            (false, false) => format!("{prefix}.{path}"),
        };
        field_message(&path, &strip_position(&e.inner().to_string()))
    })
}

/// `msg` (a serde message) about the value at `path` (`.` for the whole document).
pub fn field_message(path: &str, msg: &str) -> String {
    let root = path.is_empty() || path == ".";
    let at = |name: &str| if root { format!("`{name}`") } else { format!("`{path}.{name}`") };
    let subject = if root { "the body".to_owned() } else { format!("`{path}`") };

    if let Some(name) = between(msg, "missing field `", "`") {
        return format!("{} is required", at(name));
    }
    if let Some(name) = between(msg, "duplicate field `", "`") {
        return format!("{} is given twice", at(name));
    }
    if let Some(name) = between(msg, "unknown field `", "`") {
        return format!("{} is not a field here", at(name));
    }
    if let Some(rest) = msg.strip_prefix("unknown variant `") {
        let (got, choices) = rest.split_once("`, expected ").unwrap_or((rest.trim_end_matches('`'), ""));
        let choices = choices.trim_start_matches("one of ").replace('`', "");
        return if choices.is_empty() || choices.starts_with("there are no") {
            format!("{subject} cannot be {got:?}")
        } else {
            format!("{subject} must be one of {choices} (not {got:?})")
        };
    }
    for prefix in ["invalid type: ", "invalid value: "] {
        if let Some((got, exp)) = msg.strip_prefix(prefix).and_then(|rest| rest.rsplit_once(", expected ")) {
            return format!("{subject} must be {}, not {}", expected(exp), unexpected(got));
        }
    }
    if let Some(rest) = msg.strip_prefix("invalid length ") {
        let (n, exp) = rest.split_once(", expected ").unwrap_or((rest, "another number of items"));
        return format!("{subject} has {n} items; it must have {exp}");
    }
    // Numbers and flags in query strings are parsed from text.
    let lower = msg.to_ascii_lowercase();
    if lower.contains("invalid digit") || lower.contains("parse integer") || lower.contains("fit in target type") {
        return format!("{subject} must be a whole number");
    }
    if lower.contains("float literal") {
        return format!("{subject} must be a number");
    }
    if lower.contains("`true` or `false`") {
        return format!("{subject} must be true or false");
    }
    format!("{subject} is not valid: {msg}")
}

/// What serde's "expected ..." means, in words.
pub fn expected(exp: &str) -> String {
    let exp = exp.trim();
    let bare = exp.rsplit("::").next().unwrap_or(exp);
    match bare {
        "u8" | "u16" | "u32" | "u64" | "u128" | "usize" => "a whole number of 0 or more".into(),
        "i8" | "i16" | "i32" | "i64" | "i128" | "isize" => "a whole number".into(),
        "f32" | "f64" => "a number".into(),
        "a string" | "a borrowed string" | "string" | "String" | "str" | "&str" => "text".into(),
        "a boolean" | "bool" => "true or false".into(),
        "a sequence" | "a list" => "a list".into(),
        "a map" => "an object with fields".into(),
        "a character" | "char" => "a single character".into(),
        "Uuid" | "a UUID string" => "an id".into(),
        _ if bare.starts_with("struct ") || bare.starts_with("a map") => "an object with fields".into(),
        _ if bare.starts_with("a tuple") || bare.starts_with("an array") => "a list".into(),
        _ if bare.starts_with("enum ") || bare.contains("variant") => "one of the allowed values".into(),
        _ => exp.to_owned(),
    }
}

/// What serde's "invalid type: ..." names, in words.
fn unexpected(got: &str) -> String {
    let got = got.trim();
    if let Some(v) = between(got, "`", "`") {
        return v.to_owned();
    }
    if let Some(s) = got.strip_prefix("string ") {
        return s.to_owned();
    }
    match got {
        "null" => "empty (null)".into(),
        "sequence" => "a list".into(),
        "map" => "an object".into(),
        "unit value" => "nothing".into(),
        other => other.to_owned(),
    }
}

/// The text between the first `open` in `s` and the next `close` after it.
fn between<'a>(s: &'a str, open: &str, close: &str) -> Option<&'a str> {
    let start = s.find(open)? + open.len();
    let rest = s.get(start..)?;
    Some(&rest[..rest.find(close)?])
}

/// serde_json ends its messages with " at line 1 column 20": the message without it.
pub fn strip_position(msg: &str) -> String {
    match msg.rfind(" at line ") {
        Some(i) if msg[i + 9..].split(" column ").all(|n| n.chars().all(|c| c.is_ascii_digit())) => msg[..i].to_owned(),
        _ => msg.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serde_messages_become_words_naming_the_field() {
        let cases = [
            (
                "cooldownMinutes",
                "invalid value: integer `-1`, expected u32",
                "`cooldownMinutes` must be a whole number of 0 or more, not -1",
            ),
            ("name", "invalid type: integer `5`, expected a string", "`name` must be text, not 5"),
            (
                "enabled",
                "invalid type: string \"yes\", expected a boolean",
                "`enabled` must be true or false, not \"yes\"",
            ),
            (".", "missing field `count`", "`count` is required"),
            ("filters", "missing field `days`", "`filters.days` is required"),
            (
                "format",
                "unknown variant `pdf`, expected one of `csv`, `json`",
                "`format` must be one of csv, json (not \"pdf\")",
            ),
            ("limit", "invalid digit found in string", "`limit` must be a whole number"),
            (".", "invalid type: sequence, expected struct Rule", "the body must be an object with fields, not a list"),
        ];
        for (path, msg, want) in cases {
            assert_eq!(field_message(path, msg), want);
        }
        assert_eq!(strip_position("missing field `x` at line 1 column 20"), "missing field `x`");
    }
}
