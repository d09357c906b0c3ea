//! A detection page's two shortcuts into the detection settings: "raise this species' threshold"
//! to the level that hides this detection (the team's `species_min_confidence`, offered only
//! above what the species needs today, else the page says what it needs) and "never record this
//! species here" (the satellite's `exclude_species` override, or the team's list). Each asks
//! first, then says what changed and where to undo it (`detection_settings.js`).

use maud::{Markup, html};
use serde::Deserialize;
use serde_json::Value;

use super::{common::Detection, sat_parts::Sat};
use crate::{
    domain::species_threshold::{self, Effective, Offer, Source},
    web::{ctx::Ctx, error::PageError},
};

/// A species' threshold today, as `GET /detection-quality/{code}/threshold` answers.
#[derive(Debug, Deserialize)]
struct Threshold {
    threshold: f64,
    source: Source,
}

fn whose(source: Source) -> &'static str {
    match source {
        Source::Species => "its own threshold",
        Source::Team => "the team's minimum",
        Source::Hub => "the hub's default",
    }
}

/// What a raise would lift the threshold from, in words ("0.80, the team's minimum").
fn now_words(t: &Threshold) -> String {
    format!("{:.2}, {}", t.threshold, whose(t.source))
}

/// The card, for members and up; what it offers follows who may change what (the API decides).
pub async fn card(ctx: &Ctx, d: &Detection, name: &str) -> Result<Markup, PageError> {
    if !ctx.can_edit() {
        return Ok(html! {});
    }
    let sat_path = format!("/satellites/{}", d.satellite_id);
    let config_path = format!("{sat_path}/config");
    let threshold_path = format!("/detection-quality/{}/threshold", d.species_code);
    let (sat, config, threshold) = tokio::try_join!(
        ctx.api.get_opt::<Sat>(&sat_path),
        ctx.api.get_opt::<Value>(&config_path),
        ctx.api.get_opt::<Threshold>(&threshold_path)
    )?;
    let admin = ctx.is_admin();
    let locked = config.as_ref().is_some_and(|c| c["configLocked"].as_bool().unwrap_or(false));
    let on_sat = sat.as_ref().is_some_and(|s| s.can_manage && (!locked || admin));
    Ok(html_card(d, name, &ctx.language, threshold.as_ref(), admin, on_sat))
}

/// The raise a team admin is offered, or why there is none.
fn raise_row(d: &Detection, name: &str, threshold: Option<&Threshold>) -> Markup {
    let Some(now) = threshold else { return html! {} };
    let current = Effective { value: now.threshold, source: now.source };
    let pct = (d.confidence * 100.0).round();
    match species_threshold::offer(d.confidence, current) {
        Offer::RaiseTo(to) => html! {
            div.row {
                button #raise-threshold type="button" data-to=(format!("{to:.2}")) data-old=(format!("{:.2}", now.threshold))
                    data-old-whose=(whose(now.source)) {
                    "Raise this species' threshold to " (format!("{to:.2}"))
                }
                span.small.muted { "hides calls like this one (" (pct) " %); now " (now_words(now)) "; for every satellite of the team" }
            }
        },
        Offer::AlreadyNeeds(_) => html! {
            p.small #threshold-now {
                (name) " already needs " (format!("{:.2}", now.threshold)) " (" (whose(now.source)) "): "
                "a call like this one (" (pct) " %) is no longer kept."
            }
        },
        Offer::CannotHide => html! {
            p.small #threshold-now {
                "No threshold hides a call of " (pct) " %: the highest a species can need is 0.99. "
                (name) " needs " (now_words(now)) "."
            }
        },
    }
}

fn html_card(
    d: &Detection,
    name: &str,
    lang: &str,
    threshold: Option<&Threshold>,
    admin: bool,
    on_sat: bool,
) -> Markup {
    html! {
        section.card.det-actions #det-settings data-code=(d.species_code) data-name=(name) data-lang=(lang)
            data-sat=(d.satellite_id) data-sat-name=(d.satellite_name) {
            h2 { "Fewer detections like this" }
            @if !admin && !on_sat {
                p.muted.small { "Only a team admin, or whoever registered " (d.satellite_name) ", can change what is recorded." }
            }
            @if admin {
                (raise_row(d, name, threshold))
            }
            @if admin || on_sat {
                fieldset {
                    legend { "Never record " (name) " here" }
                    @if on_sat {
                        label.check { input type="radio" name="never-scope" value="satellite" checked; "At " (d.satellite_name) " only" }
                    }
                    @if admin {
                        label.check { input type="radio" name="never-scope" value="team" checked[!on_sat]; "At every satellite of the team" }
                    }
                    button #never-record type="button" { "Never record this species here" }
                }
            }
            div.notice #det-settings-result role="status" hidden {}
            dialog #det-confirm {
                form.stack #det-confirm-form method="dialog" {
                    h2 { "Change the detection settings?" }
                    p #det-confirm-text {}
                    div.error #det-confirm-error role="alert" hidden {}
                    div.row {
                        button.primary #det-confirm-ok type="submit" { "Yes, save it" }
                        button #det-confirm-cancel type="button" { "Cancel" }
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
    fn the_current_threshold_is_said_with_where_it_comes_from() {
        let t = Threshold { threshold: 0.8, source: Source::Team };
        assert_eq!(now_words(&t), "0.80, the team's minimum");
        let t = Threshold { threshold: 0.93, source: Source::Species };
        assert_eq!(now_words(&t), "0.93, its own threshold");
    }
}
