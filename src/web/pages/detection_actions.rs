//! A detection page's two shortcuts into the detection settings: "raise this species' threshold
//! to this detection's confidence" (the team's `species_min_confidence`) and "never record this
//! species here" (the satellite's `exclude_species` override, or the team's list). Each asks
//! first, then says what changed and where to undo it (`detection_settings.js`).

use maud::{Markup, html};
use serde_json::Value;

use super::{common::Detection, sat_parts::Sat};
use crate::web::{ctx::Ctx, error::PageError};

/// The threshold that keeps a detection of confidence `c` and nothing weaker: `c` rounded up to
/// two decimals (a stored 0.83 reads back as 0.8299999833 and stays 0.83), within 0.01..0.99.
pub fn raised(c: f64) -> f64 {
    ((c * 100.0 - 1e-4).ceil() / 100.0).clamp(0.01, 0.99)
}

/// The card, for members and up; what it offers follows who may change what (the API decides).
pub async fn card(ctx: &Ctx, d: &Detection, name: &str) -> Result<Markup, PageError> {
    if !ctx.can_edit() {
        return Ok(html! {});
    }
    let sat_path = format!("/satellites/{}", d.satellite_id);
    let config_path = format!("{sat_path}/config");
    let (sat, config) = tokio::try_join!(ctx.api.get_opt::<Sat>(&sat_path), ctx.api.get_opt::<Value>(&config_path))?;
    let admin = ctx.is_admin();
    let locked = config.as_ref().is_some_and(|c| c["configLocked"].as_bool().unwrap_or(false));
    let on_sat = sat.as_ref().is_some_and(|s| s.can_manage && (!locked || admin));
    let to = format!("{:.2}", raised(d.confidence));
    Ok(html_card(d, name, &to, admin, on_sat))
}

fn html_card(d: &Detection, name: &str, to: &str, admin: bool, on_sat: bool) -> Markup {
    html! {
        section.card.det-actions #det-settings data-code=(d.species_code) data-name=(name) data-conf=(to)
            data-sat=(d.satellite_id) data-sat-name=(d.satellite_name) {
            h2 { "Fewer detections like this" }
            @if !admin && !on_sat {
                p.muted.small { "Only a team admin, or whoever registered " (d.satellite_name) ", can change what is recorded." }
            }
            @if admin {
                div.row {
                    button #raise-threshold type="button" { "Raise this species' threshold to " (to) }
                    span.small.muted { "this detection's model confidence, rounded up; for every satellite of the team" }
                }
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
    use super::raised;

    #[test]
    fn a_confidence_is_rounded_up_to_two_decimals() {
        assert_eq!(format!("{:.2}", raised(f64::from(0.83_f32))), "0.83", "f32 noise below");
        assert_eq!(format!("{:.2}", raised(0.831)), "0.84");
        assert_eq!(format!("{:.2}", raised(f64::from(0.8312_f32))), "0.84");
        assert_eq!(format!("{:.2}", raised(0.999)), "0.99", "the highest threshold allowed");
        assert_eq!(format!("{:.2}", raised(0.001)), "0.01");
    }
}
