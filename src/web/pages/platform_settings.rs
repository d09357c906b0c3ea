//! The Platform admin page's settings form: each hub-wide setting with words for a label, and
//! where alert channels may send (`channel_targets`) as a choice of three, each explained. A
//! setting this list does not know yet still gets a generic control ([`widgets::fields`]).

use maud::{Markup, html};
use serde_json::{Map, Value};

use super::widgets;

/// `(key, label, hint)` of the yes-or-no settings.
const SWITCHES: [(&str, &str, &str); 2] = [
    (
        "allow_self_registration",
        "Anyone may create an account",
        "Off: people join by invite only. Invites always work.",
    ),
    (
        "allow_tenant_creation",
        "Signed-in people may create teams",
        "Whoever makes a team is its admin, with its uploads, imports and channels.",
    ),
];

/// `(value, choice, explanation)` of `channel_targets`, narrowest first.
const TARGETS: [(&str, &str, &str); 3] = [
    (
        "public",
        "The internet only",
        "Channels reach public internet addresses only. Choose this when teams that do not trust each \
         other share the hub.",
    ),
    (
        "lan",
        "Also the home network",
        "Also private addresses (192.168.…, 10.…, Tailscale): a Home Assistant or a chat server elsewhere \
         in the house.",
    ),
    (
        "loopback",
        "Also this machine",
        "Also services on the hub's own machine, such as Home Assistant or Node-RED on the same Pi. \
         The usual choice for a household's own hub.",
    ),
];

/// The form over the platform `settings`, saved with `PUT /settings/platform`.
pub fn form(settings: &Value) -> Markup {
    let mut rest: Map<String, Value> = settings.as_object().cloned().unwrap_or_default();
    rest.remove("channel_targets");
    for (key, ..) in SWITCHES {
        rest.remove(key);
    }
    let target = settings["channel_targets"].as_str().unwrap_or("public");
    html! {
        form.stack.settings.platform-settings data-api="PUT /settings/platform" data-then="reload" {
            fieldset {
                legend { "Accounts and teams" }
                @for (key, text, hint) in SWITCHES {
                    @if let Some(on) = settings[key].as_bool() {
                        label.check {
                            input #(format!("f-{key}")) type="checkbox" name=(key) checked[on];
                            (text)
                            span.hint.muted.small { (hint) }
                        }
                    }
                }
            }
            fieldset #channel-targets {
                legend { "Where alert channels may send" }
                label for="f-channel_targets" {
                    "Webhook and chat channels may reach"
                    select #f-channel_targets name="channel_targets" aria-describedby="channel-targets-help" {
                        @for (value, text, _) in TARGETS { option value=(value) selected[value == target] { (text) } }
                    }
                }
                ul.small.muted #channel-targets-help {
                    @for (_, text, explained) in TARGETS { li { strong { (text) } ": " (explained) } }
                    li { "Link-local and cloud metadata addresses are never reached, whatever the choice." }
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
    fn every_platform_setting_has_words_and_the_targets_are_a_choice() {
        let all = serde_json::to_value(crate::domain::settings::PlatformSettings::default()).expect("settings");
        let html = form(&all).into_string();
        assert!(!html.contains("Other"), "a setting without words: {html}");
        assert!(!html.contains(r#"type="text""#), "no text box: {html}");
        assert!(html.contains(r#"<option value="loopback" selected>Also this machine</option>"#), "{html}");
        assert!(html.contains("Also the home network") && html.contains("The internet only"));
    }
}
