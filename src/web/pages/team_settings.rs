//! The Team page's general settings form: every field with words for a label (not its key),
//! grouped as a person thinks of them, with the language drop-down My account uses. A setting
//! this list does not know yet still gets a generic control ([`widgets::fields`]).

use maud::{Markup, html};
use serde_json::{Map, Value};

use super::widgets;

/// How a setting is edited.
enum Kind {
    Check,
    /// A number with its allowed range and step (the server's own limits).
    Number(f64, f64, &'static str),
    /// A choice of `(value, words)`.
    Choice(&'static [(&'static str, &'static str)]),
    /// A species-name language; `true` when "none" is allowed.
    Language(bool),
    /// An IANA time zone, typed with the names offered as the person types.
    Zone,
}

/// `(key, label, hint, kind)`, per group.
type Field = (&'static str, &'static str, &'static str, Kind);

const POLICY: &[(&str, &str)] =
    &[("members", "Members register satellites"), ("admins", "Only admins register satellites")];

fn groups() -> Vec<(&'static str, Vec<Field>)> {
    use Kind::*;
    vec![
        (
            "Sign-in and devices",
            vec![
                (
                    "mfa_required",
                    "Two-factor required for members",
                    "Members without it set it up at their next sign-in.",
                    Check,
                ),
                ("device_policy", "Who registers satellites", "", Choice(POLICY)),
            ],
        ),
        (
            "Time zone",
            vec![(
                "time_zone",
                "The team's time zone",
                "An IANA name such as Europe/Berlin. It decides what \"today\" is on the team's pages, the \
                 default date ranges and scheduled exports, and the days and hours of satellites without a \
                 position or a zone of their own. Satellites with a position count in their own zone.",
                Zone,
            )],
        ),
        (
            "Languages of species names",
            vec![
                ("primary_language", "Main language", "Used in alerts, exports and the public page.", Language(false)),
                ("secondary_language", "Second language", "Shown beside the main one in alerts.", Language(true)),
            ],
        ),
        (
            "Satellites",
            vec![
                (
                    "satellite_offline_threshold_minutes",
                    "Offline after (minutes without a heartbeat)",
                    "1 to 1440.",
                    Number(1.0, 1440.0, "1"),
                ),
                ("heartbeat_interval_sec", "Heartbeat every (seconds)", "5 to 3600.", Number(5.0, 3600.0, "1")),
                ("drop_amphibian_at_satellite", "Drop frogs and toads on the satellite", "", Check),
                ("drop_insect_at_satellite", "Drop insects on the satellite", "", Check),
                ("drop_anthropogenic_at_satellite", "Drop human-made sounds (engines, sirens, guns)", "", Check),
                ("drop_human_voice_at_satellite", "Drop human voices on the satellite", "", Check),
                ("drop_other_animal_at_satellite", "Drop other animals (dogs, cats ...) on the satellite", "", Check),
            ],
        ),
        (
            "Quiet recordings",
            vec![
                ("filter_enabled", "Skip quiet recordings on the satellite", "", Check),
                (
                    "filter_min_rms",
                    "Minimum loudness (RMS)",
                    "0 to 1; recordings quieter than this are not sent.",
                    Number(0.0, 1.0, "any"),
                ),
                (
                    "classifier_min_bird_prob",
                    "Minimum bird likelihood to send a recording",
                    "0 to 1.",
                    Number(0.0, 1.0, "any"),
                ),
            ],
        ),
        (
            "Satellite outbox (recordings waiting to be sent)",
            vec![
                ("outbox_soft_size_mb", "Start trimming old recordings at (MB)", "", Number(1.0, 1_000_000.0, "1")),
                (
                    "outbox_hard_size_mb",
                    "Never hold more than (MB)",
                    "At least the trimming size.",
                    Number(1.0, 1_000_000.0, "1"),
                ),
                (
                    "outbox_max_age_hours",
                    "Keep unsent recordings for at most (hours)",
                    "1 to 8760.",
                    Number(1.0, 8760.0, "1"),
                ),
            ],
        ),
        (
            "Learned thresholds",
            vec![
                (
                    "learned_threshold_precision",
                    "Share of confirmed votes a learned threshold keeps",
                    "0.5 to 0.999.",
                    Number(0.5, 0.999, "any"),
                ),
                (
                    "learned_threshold_min_votes",
                    "Votes a species needs before a threshold is suggested",
                    "5 to 100000.",
                    Number(5.0, 100_000.0, "1"),
                ),
                ("learned_threshold_auto_apply", "Apply learned thresholds as they change", "", Check),
            ],
        ),
    ]
}

/// `(code, words)` of the languages from `GET /species/languages`, or every language the model
/// ships when that list is empty (the label files are not installed).
pub fn language_choices(listed: &[Value]) -> Vec<(String, String)> {
    let s = |l: &Value, k: &str| l[k].as_str().unwrap_or_default().to_owned();
    if listed.is_empty() {
        return crate::domain::languages::KNOWN
            .iter()
            .map(|l| (l.code.to_owned(), crate::web::layout::language_name(l.code, l.name, l.native_name)))
            .collect();
    }
    listed
        .iter()
        .map(|l| (s(l, "code"), crate::web::layout::language_name(&s(l, "code"), &s(l, "name"), &s(l, "nativeName"))))
        .collect()
}

/// A `<select>` of languages. With `none`, values are JSON (`null` or `"de"`, `data-type="json"`)
/// so that "none" can be saved as `null`.
pub fn language_select(
    id: &str,
    name: &str,
    current: Option<&str>,
    choices: &[(String, String)],
    none: bool,
) -> Markup {
    let value = |code: &str| if none { format!("\"{code}\"") } else { code.to_owned() };
    html! {
        select #(id) name=(name) data-type=[none.then_some("json")] {
            @if none { option value="null" selected[current.is_none()] { "None" } }
            @if let Some(c) = current.filter(|c| !choices.iter().any(|(code, _)| code == c)) {
                option value=(value(c)) selected { (c) " (not a known language)" }
            }
            @for (code, words) in choices {
                option value=(value(code)) selected[current == Some(code.as_str())] { (words) }
            }
        }
    }
}

fn control(key: &str, label: &str, hint: &str, kind: &Kind, v: &Value, langs: &[(String, String)]) -> Markup {
    let id = format!("f-{key}");
    let hint = html! { @if !hint.is_empty() { span.hint.muted.small { (hint) } } };
    match kind {
        Kind::Check => html! {
            label.check { input #(id) type="checkbox" name=(key) checked[v.as_bool().unwrap_or(false)]; (label) }
        },
        Kind::Number(min, max, step) => html! {
            label for=(id) {
                (label) (hint)
                input #(id) type="number" name=(key) min=(min) max=(max) step=(step) value=(v.to_string());
            }
        },
        Kind::Choice(options) => html! {
            label for=(id) {
                (label) (hint)
                select #(id) name=(key) {
                    @for (value, words) in *options { option value=(value) selected[v.as_str() == Some(*value)] { (words) } }
                }
            }
        },
        Kind::Language(none) => html! {
            label for=(id) { (label) (hint) (language_select(&id, key, v.as_str(), langs, *none)) }
        },
        Kind::Zone => html! {
            label for=(id) {
                (label) (hint)
                input #(id) type="text" name=(key) list=(super::zones::NAMES_ID) autocomplete="off" spellcheck="false"
                    value=(v.as_str().unwrap_or_default());
            }
            (super::zones::names())
        },
    }
}

/// The form over `settings` (the general ones: the page leaves out the public page's and the
/// detection settings), saved with `PUT /settings/tenant`.
pub fn form(settings: &Value, languages: &[Value]) -> Markup {
    let langs = language_choices(languages);
    let mut rest: Map<String, Value> = settings.as_object().cloned().unwrap_or_default();
    let groups = groups();
    for (_, fields) in &groups {
        for (key, ..) in fields {
            rest.remove(*key);
        }
    }
    html! {
        form.stack.settings.team-settings data-api="PUT /settings/tenant" data-then="reload" {
            @for (legend, fields) in &groups {
                @let present: Vec<&Field> = fields.iter().filter(|f| settings.get(f.0).is_some()).collect();
                @if !present.is_empty() {
                    fieldset {
                        legend { (legend) }
                        @for (key, label, hint, kind) in present {
                            (control(key, label, hint, kind, &settings[*key], &langs))
                        }
                    }
                }
            }
            @if !rest.is_empty() { fieldset { legend { "Other" } (widgets::fields("", &Value::Object(rest), true)) } }
            p.error.form-error hidden role="alert" {}
            div.row { button.primary type="submit" { "Save" } }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_general_team_setting_has_words_for_a_label() {
        let all = serde_json::to_value(crate::domain::settings::TenantSettings::default()).expect("settings");
        let mut general = all.as_object().cloned().expect("object");
        general
            .retain(|k, _| !k.starts_with("public_page_") && !crate::domain::detection_settings::is_detection_key(k));
        let html = form(&Value::Object(general), &[]).into_string();
        assert!(!html.contains("Other"), "a setting without words: {html}");
        for raw in ["Mfa required", "Filter min rms", "Primary language"] {
            assert!(!html.contains(raw), "{raw}");
        }
        assert!(html.contains("Two-factor required for members") && html.contains("Minimum loudness (RMS)"));
        assert!(html.contains(r#"<option value="de">Deutsch (German)</option>"#), "{html}");
        assert!(html.contains(r#"<option value="en" selected>English</option>"#), "{html}");
        assert!(html.contains(r#"<option value="null" selected>None</option>"#));
        assert!(html.contains("The team's time zone") && html.contains(r#"name="time_zone""#), "{html}");
        assert!(html.contains(r#"<option value="Europe/Berlin">"#), "the zone field offers IANA names: {html}");
    }
}
