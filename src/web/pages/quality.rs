//! Detection quality: what people's votes say about each species (votes, precision at today's
//! threshold) and the threshold learned from them (`GET /api/detection-quality`), with Apply per
//! species and the auto-apply switch for admins. Viewers and members see it read-only.

use axum::{
    Router,
    response::{IntoResponse, Response},
    routing::get,
};
use maud::{Markup, html};
use serde::Deserialize;

use crate::web::{WebState, ctx::Ctx, error::PageError, layout, words};

pub fn routes() -> Router<WebState> {
    Router::new().route("/quality", get(page))
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Row {
    species_code: String,
    common_name: String,
    scientific_name: String,
    votes: u64,
    confirmed: u64,
    rejected: u64,
    precision: Option<f64>,
    current_threshold: f64,
    species_threshold: bool,
    suggested_threshold: Option<f64>,
    would_hide: u64,
    applied: bool,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Overview {
    precision_target: f64,
    min_votes: u32,
    auto_apply: bool,
    team_threshold: f64,
    species: Vec<Row>,
}

#[derive(Debug, Deserialize)]
struct Hidden {
    detections: Vec<HiddenRow>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct HiddenRow {
    satellite_name: String,
    audio_chunk_id: String,
    common_name: String,
    scientific_name: String,
    confidence: f64,
    detected_at: String,
    reason: String,
}

/// Detections a second look did not confirm, kept hidden when the team's
/// `second_look_unconfirmed` is `hide`; the text says what the setting does now.
fn unconfirmed(rows: &[HiddenRow], kept: bool) -> Markup {
    let setting = html! { a href="/team/detection" { "Detection settings" } };
    html! {
        section.card #unconfirmed {
            div.card-head { h2 { "Unconfirmed detections" } }
            p.muted.small {
                "Calls the second look did not confirm. They count nowhere. "
                @if kept {
                    "They are listed here because the team keeps them hidden instead of discarding them (" (setting) ")."
                } @else {
                    "The team discards them: only a counter remains (" (setting) ")."
                    @if !rows.is_empty() { " Those below were kept while the team kept them hidden." }
                }
            }
            @if rows.is_empty() {
                p.muted { "None." }
            } @else {
                div.table-scroll {
                    table.list {
                        thead { tr { th { "Species" } th { "Satellite" } th { "When (UTC)" } th { "Confidence" } th { "Why held" } th { "Audio" } } }
                        tbody {
                            @for r in rows {
                                tr {
                                    td { (r.common_name) br; i.muted.small { (r.scientific_name) } }
                                    td { (r.satellite_name) }
                                    td { (r.detected_at.get(..16).unwrap_or(&r.detected_at).replace('T', " ")) }
                                    td.num { (pct(r.confidence)) }
                                    td { @if r.reason == "not_expected" { "not expected here" } @else { "borderline" } }
                                    td { a href=(format!("/api/audio/{}", r.audio_chunk_id)) { "Listen" } }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

async fn page(ctx: Ctx) -> Response {
    match render(&ctx).await {
        Ok(m) => m.into_response(),
        Err(e) => e.respond(&ctx.uri),
    }
}

fn pct(v: f64) -> String {
    format!("{:.0}%", (v * 100.0).round())
}

/// A threshold as people read it: 0.78, 0.7, 0.785.
fn threshold(v: f64) -> String {
    let s = format!("{v:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_owned()
}

async fn render(ctx: &Ctx) -> Result<Markup, PageError> {
    ctx.team_id()?;
    let lang = if crate::domain::languages::find(&ctx.language).is_some() {
        format!("?lang={}", url::form_urlencoded::byte_serialize(ctx.language.as_bytes()).collect::<String>())
    } else {
        String::new()
    };
    let q: Overview = ctx.api.get(&format!("/detection-quality{lang}")).await?;
    let hidden: Hidden = ctx.api.get("/detection-quality/unconfirmed").await?;
    let team: serde_json::Value = ctx.api.get("/settings/tenant").await?;
    let kept = team["settings"]["second_look_unconfirmed"] == "hide";
    let admin = ctx.is_admin();
    let body = html! {
        h1 { "Detection quality" }
        section.card #learned {
            div.card-head {
                h2 { "Thresholds learned from votes" }
                a.more href="/detections?verificationStatus=pending_review" { "Review detections" }
            }
            p.muted.small {
                "Each species needs " (words::count(q.min_votes, "confirmed or rejected detection", "confirmed or rejected detections")) ". Then the hub suggests "
                "the lowest minimum confidence that keeps " (pct(q.precision_target)) " of what it records right. "
                "Species without their own threshold use the team's, " (threshold(q.team_threshold)) "."
            }
            (auto_apply(&q, admin))
            @if q.species.is_empty() {
                (layout::empty("No votes yet", html! {
                    "Open a detection and confirm or reject it. Once a species has "
                    (words::count(q.min_votes, "vote", "votes")) ", its suggested threshold shows up here."
                }))
            } @else {
                (species_table(ctx, &q, admin))
            }
        }
        (unconfirmed(&hidden.detections, kept))
    };
    Ok(layout::page(ctx, "Detection quality", "", &["quality.css"], body))
}

/// The auto-apply switch (admins) or what it is set to (everyone else).
fn auto_apply(q: &Overview, admin: bool) -> Markup {
    html! {
        @if admin {
            form.row #auto-apply data-api="PUT /settings/tenant" data-then="reload" data-done="Saved" {
                label.check {
                    input #f-auto-apply type="checkbox" name="learned_threshold_auto_apply" checked[q.auto_apply];
                    "Apply suggestions by themselves as votes come in"
                }
                button type="submit" { "Save" }
                p.error.form-error hidden role="alert" {}
            }
        } @else {
            p.small #auto-apply {
                @if q.auto_apply { "Suggestions are applied by themselves as votes come in." }
                @else { "An admin applies suggestions." }
            }
        }
    }
}

fn species_table(ctx: &Ctx, q: &Overview, admin: bool) -> Markup {
    html! {
        div.table-scroll {
            table.list.quality {
                thead { tr {
                    th scope="col" { "Species" }
                    th scope="col" { "Votes" }
                    th scope="col" { abbr title="Share of recorded detections that are right, at today's threshold" { "Precision" } }
                    th scope="col" { "Threshold" }
                    th scope="col" { "Suggested" }
                    th scope="col" { span.sr { "Apply" } }
                } }
                tbody {
                    @for r in &q.species {
                        tr data-species=(r.species_code) {
                            td {
                                a href=(format!("/species/{}", r.species_code)) {
                                    (layout::names(&super::common::common_name(ctx, &r.species_code, &r.common_name), &r.scientific_name))
                                }
                            }
                            td.num data-label="Votes" {
                                (r.votes)
                                span.muted.small { " (" (r.confirmed) " ✓, " (r.rejected) " ✗)" }
                            }
                            td.num data-label="Precision" { (r.precision.map_or_else(|| "—".to_owned(), pct)) }
                            td.num.current data-label="Threshold" {
                                (threshold(r.current_threshold))
                                @if !r.species_threshold { span.muted.small { " team" } }
                            }
                            td.num.suggested data-label="Suggested" { (suggestion(r, q.min_votes)) }
                            td.apply { (action(r, admin)) }
                        }
                    }
                }
            }
        }
    }
}

fn suggestion(r: &Row, min_votes: u32) -> Markup {
    html! {
        @match r.suggested_threshold {
            Some(t) => {
                (threshold(t))
                @if r.would_hide > 0 { br; span.muted.small { "would hide " (r.would_hide) } }
            },
            None if r.votes < u64::from(min_votes) => span.muted.small { (u64::from(min_votes) - r.votes) " more votes" },
            None => span.muted.small title="No threshold keeps enough confirmed detections" { "none" },
        }
    }
}

fn action(r: &Row, admin: bool) -> Markup {
    html! {
        @if r.applied {
            span.badge { "Applied" }
        } @else if admin && r.suggested_threshold.is_some() {
            button.primary type="button" data-api=(format!("POST /detection-quality/{}/apply", r.species_code))
                data-then="reload" { "Apply" }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thresholds_read_as_people_write_them() {
        assert_eq!(threshold(0.78), "0.78");
        assert_eq!(threshold(0.7), "0.7");
        assert_eq!(threshold(0.785), "0.785");
        assert_eq!(pct(0.955), "96%");
    }
}
