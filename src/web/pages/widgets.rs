//! Generic pieces for the settings pages: a form for a settings object (one control per value,
//! nested objects as fieldsets, names dotted for `app.js`'s API forms) and a table of rows.

use maud::{Markup, html};
use serde_json::Value;

/// A field label from a camelCase key: `deviceReportsEnabled` → "Device reports enabled".
pub fn label(key: &str) -> String {
    let mut out = String::new();
    for (i, c) in key.chars().enumerate() {
        if c.is_uppercase() && i > 0 {
            out.push(' ');
            out.extend(c.to_lowercase());
        } else if c == '_' {
            out.push(' ');
        } else if i == 0 {
            out.extend(c.to_uppercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// Controls for every value of `obj` (`prefix` dotted before each name); read-only when not
/// `editable`. Secrets the API masks stay masked and are sent only when retyped.
pub fn fields(prefix: &str, obj: &Value, editable: bool) -> Markup {
    let Some(map) = obj.as_object() else { return html! {} };
    html! {
        @for (key, v) in map {
            @let name = if prefix.is_empty() { key.clone() } else { format!("{prefix}.{key}") };
            @let id = format!("f-{}", name.replace('.', "-"));
            @match v {
                Value::Bool(b) => label.check { input #(id) type="checkbox" name=(name) checked[*b] disabled[!editable]; (label(key)) },
                Value::Number(n) => label for=(id) { (label(key)) input #(id) type="number" step="any" name=(name) value=(n.to_string()) disabled[!editable]; },
                Value::String(s) if choices(key).is_some() => label for=(id) {
                    (label(key))
                    select #(id) name=(name) disabled[!editable] {
                        @for (value, text) in choices(key).unwrap_or_default() { option value=(value) selected[value == s] { (text) } }
                    }
                },
                Value::String(s) => label for=(id) { (label(key)) input #(id) type="text" name=(name) value=(s) disabled[!editable]; },
                Value::Array(items) if items.iter().all(Value::is_string) => label for=(id) {
                    (label(key)) " (comma-separated)"
                    input #(id) type="text" data-type="list" name=(name)
                        value=(items.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(", ")) disabled[!editable];
                },
                Value::Object(_) => fieldset { legend { (label(key)) } (fields(&name, v, editable)) },
                Value::Null => label for=(id) { (label(key)) input #(id) type="text" name=(name) placeholder="not set" disabled[!editable]; },
                other => label for=(id) {
                    (label(key))
                    textarea #(id) data-type="json" name=(name) rows="3" disabled[!editable] { (other.to_string()) }
                },
            }
        }
    }
}

/// The allowed values of a setting that is a choice, with their words.
fn choices(key: &str) -> Option<&'static [(&'static str, &'static str)]> {
    match key {
        "device_policy" => {
            Some(&[("members", "Members register satellites"), ("admins", "Only admins register satellites")])
        }
        _ => None,
    }
}

/// A cell's text for a JSON value.
pub fn cell(v: &Value) -> Markup {
    match v {
        Value::Null => html! { "—" },
        Value::Bool(true) => html! { "yes" },
        Value::Bool(false) => html! { "no" },
        Value::String(s) if s.len() > 19 && s.as_bytes().get(10) == Some(&b'T') => crate::web::layout::at(s),
        Value::String(s) => html! { (s) },
        other => html! { (other.to_string()) },
    }
}

/// A table of `rows` (RFC 3339 values become times in the viewer's format) with `(header, key)` columns and, per row, extra trailing cells.
/// When no row has an action, the table has no (empty) actions column.
pub fn table(rows: &[Value], cols: &[(&str, &str)], actions: impl Fn(&Value) -> Markup) -> Markup {
    let acts: Vec<Markup> = rows.iter().map(&actions).collect();
    let any = acts.iter().any(|a| !a.0.trim().is_empty());
    html! {
        div.table-scroll {
            table.list {
                thead { tr { @for (h, _) in cols { th scope="col" { (h) } } @if any { th { span.sr { "Actions" } } } } }
                tbody {
                    @for (r, a) in rows.iter().zip(acts) {
                        tr {
                            @for (_, k) in cols { td { (cell(r.pointer(&format!("/{}", k.replace('.', "/"))).unwrap_or(&Value::Null))) } }
                            @if any { td.row { (a) } }
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_read_like_words() {
        assert_eq!(label("deviceReportsEnabled"), "Device reports enabled");
        assert_eq!(label("min_confidence"), "Min confidence");
    }

    #[test]
    fn nested_settings_get_dotted_names_and_lists_stay_lists() {
        let v = serde_json::json!({ "alerts": { "enabled": true }, "languages": ["en", "de"], "name": "x<y" });
        let html = fields("", &v, true).into_string();
        assert!(html.contains(r#"name="alerts.enabled""#) && html.contains("checked"));
        assert!(html.contains(r#"data-type="list""#) && html.contains("en, de"));
        assert!(html.contains("x&lt;y"), "values are escaped");
        assert!(fields("", &v, false).into_string().contains("disabled"));
        let policy = fields("", &serde_json::json!({ "device_policy": "admins" }), true).into_string();
        assert!(policy.contains("<select") && policy.contains(r#"<option value="admins" selected>"#), "{policy}");
    }
}
