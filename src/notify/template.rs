//! A channel's `payload_template` (SPEC 2.16): a Jinja template (minijinja) that replaces the
//! default webhook body.
//!
//! The template is written by a team admin and runs on the hub, so it is boxed in:
//! - no loader and no `multi_template` feature: `{% include %}`, `{% import %}` and
//!   `{% extends %}` are syntax errors, and nothing can reach a file;
//! - the source is at most [`MAX_TEMPLATE_BYTES`], the output at most [`MAX_OUTPUT_BYTES`];
//! - every render has a fuel budget ([`FUEL`]) that bounds both the work and the memory, so a
//!   runaway loop stops with [`TemplateError::Render`] instead of hanging a delivery worker;
//! - no auto-escaping: the output is usually JSON, written with the `tojson` filter.
//!
//! Undefined values are **lenient** (Jinja's default): an unknown variable or key renders as
//! empty text and is false in an `{% if %}`; only looking *into* it (`nope.x`) is an error. One
//! template usually serves several events whose `data` differ (absence minutes, trend numbers),
//! and a template that trial-renders against the sample must not start failing at delivery time
//! because another event lacks a key. `{{ x|tojson }}` of an unknown `x` gives `null`, so a JSON
//! template stays valid JSON.
//!
//! Variables: `event`, `timestamp`, `tenantId`, `alertId`, `ruleName`, `title`, `message`, `link`
//! and `data` (the same object as in the default body, [`super::body::data`]).

use minijinja::{AutoEscape, Environment, ErrorKind, UndefinedBehavior, value::Serde};
use serde_json::json;

use super::{Notice, body, sample};
use crate::ids::TenantId;

/// Largest accepted template source.
pub const MAX_TEMPLATE_BYTES: usize = 16 * 1024;
/// Largest accepted rendered body.
pub const MAX_OUTPUT_BYTES: usize = 256 * 1024;
/// Work budget of one render: roughly one unit per instruction or per 64 bytes of data, so about
/// 100 000 steps or 6 MB. A payload template needs a few hundred.
pub const FUEL: u64 = 100_000;

/// Why a template cannot be used; the text is shown to the admin who wrote it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TemplateError {
    /// The template does not parse (includes and imports are refused here too).
    #[error("template syntax error: {0}")]
    Syntax(String),
    /// The template parses but rendering failed (unknown filter, bad operation, out of fuel).
    #[error("template render error: {0}")]
    Render(String),
    /// The source or the rendered output is over its limit.
    #[error("the {what} is {bytes} bytes; the limit is {limit} bytes")]
    TooLarge { what: &'static str, bytes: usize, limit: usize },
}

/// Parses `source` and trial-renders it against [`sample`]; the message names the line and the
/// problem.
pub fn validate(source: &str) -> Result<(), TemplateError> {
    render(source, &sample(TenantId::new())).map(|_| ())
}

/// Renders `source` for notice `n`.
pub fn render(source: &str, n: &Notice) -> Result<String, TemplateError> {
    if source.len() > MAX_TEMPLATE_BYTES {
        return Err(TemplateError::TooLarge { what: "template", bytes: source.len(), limit: MAX_TEMPLATE_BYTES });
    }
    let env = environment();
    let template = env.template_from_str(source).map_err(|e| TemplateError::Syntax(describe(&e)))?;
    let output = template.render(Serde(context(n))).map_err(|e| TemplateError::Render(describe(&e)))?;
    if output.len() > MAX_OUTPUT_BYTES {
        return Err(TemplateError::TooLarge { what: "output", bytes: output.len(), limit: MAX_OUTPUT_BYTES });
    }
    Ok(output)
}

fn environment() -> Environment<'static> {
    let mut env = Environment::new();
    env.set_undefined_behavior(UndefinedBehavior::Lenient);
    env.set_auto_escape_callback(|_| AutoEscape::None);
    env.set_fuel(Some(FUEL));
    env
}

/// The variables a template sees.
fn context(n: &Notice) -> serde_json::Value {
    json!({
        "event": n.event,
        "timestamp": n.timestamp,
        "tenantId": n.tenant_id,
        "alertId": n.alert_id,
        "ruleName": n.rule_name,
        "title": n.title,
        "message": n.message,
        "link": n.link,
        "data": body::data(n),
    })
}

/// "line 3: unknown filter: filter nope is unknown", or a plain sentence for running out of fuel.
fn describe(e: &minijinja::Error) -> String {
    let at = e.line().map(|l| format!("line {l}: ")).unwrap_or_default();
    if e.kind() == ErrorKind::OutOfFuel {
        return format!("{at}the template does too much work (ran out of its budget of {FUEL} steps)");
    }
    match e.detail() {
        Some(detail) => format!("{at}{}: {detail}", e.kind()),
        None => format!("{at}{}", e.kind()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn notice() -> Notice {
        let mut n = sample(TenantId::new());
        n.event = "rare_species".to_owned();
        n.rule_name = Some("Rare birds".to_owned());
        n.title = r#"Rare: "Cardinal" </script> & co"#.to_owned();
        n
    }

    #[test]
    fn a_json_template_with_tojson_renders_valid_json() {
        let n = notice();
        let source = r#"{"text": {{ title|tojson }}, "species": {{ data.species|tojson }},
 "confidence": {{ data.confidence|tojson }}, "names": {{ data.commonNames|tojson }},
 "link": {{ link|tojson }}, "tenant": {{ tenantId|tojson }}, "rule": {{ ruleName|tojson }}}"#;
        let out = render(source, &n).expect("renders");
        let v: serde_json::Value = serde_json::from_str(&out).expect("valid JSON");
        assert_eq!(v["text"], json!(n.title));
        assert_eq!(v["species"], "Cardinalis cardinalis");
        assert_eq!(v["confidence"], json!(0.92));
        assert_eq!(v["names"], json!({"de": "Rotkardinal", "en": "Northern Cardinal"}));
        assert_eq!(v["link"], serde_json::Value::Null);
        assert_eq!(v["tenant"], json!(n.tenant_id.to_string()));
        assert_eq!(v["rule"], "Rare birds");
    }

    #[test]
    fn every_documented_variable_is_there_and_nothing_is_escaped() {
        let mut n = notice();
        n.alert_id = Some("a-1".to_owned());
        n.link = Some("https://hub.example/d/1".to_owned());
        let source = "{{ event }}|{{ timestamp }}|{{ tenantId }}|{{ alertId }}|{{ ruleName }}|{{ title }}|\
                      {{ message }}|{{ link }}|{{ data.satelliteName }}";
        let expected = format!(
            "rare_species|{}|{}|a-1|Rare birds|{}|{}|https://hub.example/d/1|Backyard",
            n.timestamp, n.tenant_id, n.title, n.message
        );
        assert_eq!(render(source, &n).expect("renders"), expected);
    }

    #[test]
    fn an_unknown_variable_renders_empty() {
        let n = notice();
        assert_eq!(render("[{{ nope }}][{{ data.nope }}]", &n).expect("lenient"), "[][]");
        assert_eq!(render("{{ data.nope|tojson }}", &n).expect("lenient"), "null", "JSON stays valid");
        assert_eq!(render("{% if data.absentMinutes %}x{% else %}y{% endif %}", &n).expect("lenient"), "y");
        assert!(validate("{{ data.absentMinutes }}").is_ok());
        assert!(matches!(render("{{ nope.deeper }}", &n), Err(TemplateError::Render(_))));
    }

    #[test]
    fn a_syntax_error_names_the_line_and_the_problem() {
        let err = validate("{\n  \"species\": {{ data.species|tojson }\n}").expect_err("broken");
        let TemplateError::Syntax(message) = &err else { panic!("not a syntax error: {err:?}") };
        assert!(message.starts_with("line 2: syntax error"), "{message}");
        let err = validate("{% if event == 'test' %}\nunclosed").expect_err("unclosed");
        assert!(matches!(&err, TemplateError::Syntax(m) if m.contains("unexpected end of input")), "{err:?}");
    }

    #[test]
    fn an_unknown_filter_is_caught_by_the_trial_render() {
        let err = validate("line one\n{{ title|shout }}").expect_err("unknown filter");
        assert!(matches!(&err, TemplateError::Render(m) if m.starts_with("line 2:") && m.contains("shout")), "{err:?}");
    }

    #[test]
    fn includes_imports_and_extends_are_refused() {
        for source in [r#"{% include "/etc/passwd" %}"#, r#"{% import "x" as x %}"#, r#"{% extends "base" %}"#] {
            let err = validate(source).expect_err(source);
            assert!(matches!(&err, TemplateError::Syntax(m) if m.contains("unknown statement")), "{err:?}");
        }
    }

    #[test]
    fn a_runaway_loop_runs_out_of_fuel() {
        let nested = "{% for i in range(100000) %}{% for j in range(100000) %}{{ j }}{% endfor %}{% endfor %}";
        let err = validate(nested).expect_err("stopped");
        assert!(matches!(&err, TemplateError::Render(m) if m.contains("too much work")), "{err:?}");
        // A single huge range is refused by minijinja before it starts.
        let err = validate("{% for i in range(100000000) %}{{ i }}{% endfor %}").expect_err("stopped");
        assert!(matches!(err, TemplateError::Render(_)), "{err:?}");
    }

    #[test]
    fn an_oversize_template_or_output_is_refused() {
        let big = format!("{{{{ title }}}}{}", " ".repeat(MAX_TEMPLATE_BYTES));
        assert_eq!(
            validate(&big),
            Err(TemplateError::TooLarge { what: "template", bytes: big.len(), limit: MAX_TEMPLATE_BYTES })
        );
        let exactly = " ".repeat(MAX_TEMPLATE_BYTES);
        assert!(validate(&exactly).is_ok());
        let err = validate(r#"{% for i in range(300) %}{{ "x" * 1000 }}{% endfor %}"#).expect_err("too long");
        assert_eq!(err, TemplateError::TooLarge { what: "output", bytes: 300_000, limit: MAX_OUTPUT_BYTES });
    }
}
