//! One detection: the large spectrogram with a playhead synced to the audio, the votes with the
//! consensus, annotation boxes (drawn by dragging on the spectrogram), comments, and sharing (the
//! live share links are listed by [`super::detection_shares`]).
//! `detection.js` does the writes through `/api` and refreshes the fragments below.
//!
//! Fragments: `/detections/{id}/votes` (consensus, tally, vote buttons),
//! `/detections/{id}/boxes` (the annotation boxes over the spectrogram) and
//! `/detections/{id}/comments` (the comment list).

use axum::{
    Router,
    extract::Path,
    http::Method,
    response::{IntoResponse, Response},
    routing::get,
};
use maud::{Markup, html};
use serde::Deserialize;
use serde_json::Value;

use super::{
    common::{self, Detection},
    detection_actions, detection_settings, detection_shares,
};
use crate::web::{WebState, ctx::Ctx, error::PageError, icons, layout};

pub fn routes() -> Router<WebState> {
    Router::new()
        .route("/detections/{id}", get(detail_page))
        .route("/detections/{id}/votes", get(votes_fragment))
        .route("/detections/{id}/boxes", get(boxes_fragment))
        .route("/detections/{id}/comments", get(comments_fragment))
}

/// The vote counts of `GET /api/detections/{id}`.
#[derive(Debug, Default, Deserialize)]
struct Tally {
    confirm: u32,
    reject: u32,
    unsure: u32,
}

/// Where the spectrogram's pixels are, from its `X-Spectrogram-*` headers.
#[derive(Debug, Clone, Copy)]
struct Mapping {
    seconds_per_pixel: f64,
    hz_per_pixel: f64,
    min_hz: f64,
    max_hz: f64,
    duration_seconds: f64,
}

impl Mapping {
    /// Width of the picture in seconds (a whole number of columns).
    fn span_seconds(&self) -> f64 {
        let columns = (self.duration_seconds / self.seconds_per_pixel).ceil().max(1.0);
        columns * self.seconds_per_pixel
    }
}

/// The id as a canonical UUID, so a path cannot smuggle another API route; anything else is
/// the not-found page, like an unknown id.
fn clean(id: &str) -> Result<String, PageError> {
    uuid::Uuid::parse_str(id).map(|u| u.to_string()).map_err(|_| PageError::NotFound("no such detection".into()))
}

fn respond(ctx: &Ctx, result: Result<Markup, PageError>) -> Response {
    match result {
        Ok(m) => m.into_response(),
        Err(e) => e.respond(&ctx.uri),
    }
}

async fn detail_page(ctx: Ctx, Path(id): Path<String>) -> Response {
    let result = async { detail(&ctx, &clean(&id)?).await }.await;
    respond(&ctx, result)
}

async fn votes_fragment(ctx: Ctx, Path(id): Path<String>) -> Response {
    let result = async {
        let id = clean(&id)?;
        let path = format!("/detections/{id}");
        let (raw, mine) = tokio::try_join!(ctx.api.get::<Value>(&path), my_vote(&ctx, &id))?;
        let (d, tally) = split(raw)?;
        Ok(votes(&ctx, &d, &tally, mine.as_deref()))
    }
    .await;
    respond(&ctx, result)
}

async fn boxes_fragment(ctx: Ctx, Path(id): Path<String>) -> Response {
    let result = async {
        let id = clean(&id)?;
        let list: Value = ctx.api.get(&format!("/detections/{id}/annotations")).await?;
        let map = mapping(&ctx, &id).await?;
        Ok(boxes(&list, map))
    }
    .await;
    respond(&ctx, result)
}

async fn comments_fragment(ctx: Ctx, Path(id): Path<String>) -> Response {
    let result = async {
        let id = clean(&id)?;
        let list: Value = ctx.api.get(&format!("/detections/{id}/comments")).await?;
        Ok(comments(&ctx, &id, &list))
    }
    .await;
    respond(&ctx, result)
}

/// The detection and its tally from the detail answer.
fn split(raw: Value) -> Result<(Detection, Tally), PageError> {
    let tally = raw.get("votes").cloned().map(serde_json::from_value).transpose().ok().flatten().unwrap_or_default();
    let d: Detection =
        serde_json::from_value(raw).map_err(|e| PageError::Internal(anyhow::anyhow!("unexpected detection: {e}")))?;
    Ok((d, tally))
}

/// The viewer's own vote on detection `id` (`confirm`, `reject`, `unsure`), if they voted; only
/// people who may vote are asked.
async fn my_vote(ctx: &Ctx, id: &str) -> Result<Option<String>, PageError> {
    if !ctx.can_edit() {
        return Ok(None);
    }
    let answer: Value = ctx.api.get(&format!("/detections/votes?ids={id}")).await?;
    let votes = answer.get("votes").and_then(Value::as_array).cloned().unwrap_or_default();
    Ok(votes
        .iter()
        .find(|v| v.get("detection_id").and_then(Value::as_str) == Some(id))
        .and_then(|v| v.get("vote").and_then(Value::as_str))
        .map(str::to_owned))
}

/// The spectrogram's mapping, or `None` when the audio is gone (expired or never stored).
async fn mapping(ctx: &Ctx, id: &str) -> Result<Option<Mapping>, PageError> {
    let answer = ctx.api.send(Method::GET, &format!("/detections/{id}/spectrogram.png"), None).await?;
    if !answer.ok() {
        return Ok(None);
    }
    let header =
        |name: &str| answer.headers.get(name).and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<f64>().ok());
    Ok((|| {
        Some(Mapping {
            seconds_per_pixel: header("x-spectrogram-seconds-per-pixel").filter(|v| *v > 0.0)?,
            hz_per_pixel: header("x-spectrogram-hz-per-pixel").filter(|v| *v > 0.0)?,
            min_hz: header("x-spectrogram-min-hz")?,
            max_hz: header("x-spectrogram-max-hz")?,
            duration_seconds: header("x-spectrogram-duration-seconds").filter(|v| *v > 0.0)?,
        })
    })())
}

async fn detail(ctx: &Ctx, id: &str) -> Result<Markup, PageError> {
    ctx.team_id()?;
    let paths =
        [format!("/detections/{id}"), format!("/detections/{id}/comments"), format!("/detections/{id}/annotations")];
    let (raw, notes, marks, mine) = tokio::try_join!(
        ctx.api.get::<Value>(&paths[0]),
        ctx.api.get::<Value>(&paths[1]),
        ctx.api.get::<Value>(&paths[2]),
        my_vote(ctx, id),
    )?;
    let (d, tally) = split(raw)?;
    let map = mapping(ctx, id).await?;
    let images = common::images(&ctx.api, [d.species_code.clone()]).await?;
    let name = common::common_name(ctx, &d.species_code, &d.common_name);
    let actions = detection_actions::card(ctx, &d, &name).await?;
    let shares = detection_shares::card(ctx, id).await?;
    let edit = ctx.can_edit();
    let body = html! {
        section.card.det-head {
            (common::thumb(images.get(&d.species_code), &name))
            div.det-main {
                h1 { (layout::names(&name, &d.scientific_name)) }
                div.det-meta {
                    (layout::confidence(d.calibrated_confidence.unwrap_or(d.confidence), d.calibrated_confidence.is_some()))
                    span.sat { (icons::tab("satellites")) " " a href=(format!("/satellites/{}", d.satellite_id)) { (d.satellite_name) } }
                    (layout::ago_in(&d.detected_at, d.time_zone.as_deref()))
                    span.det-when { (layout::at_in(&d.detected_at, d.time_zone.as_deref())) }
                }
                div.badges { (common::badges(&d)) }
                div.det-links {
                    a href=(format!("/species/{}", d.species_code)) { "About the " (name) }
                    a href=(format!("/sessions?satelliteId={}", d.satellite_id)) { "Recording sessions of " (d.satellite_name) }
                    button #share type="button" data-id=(d.id) { "Share" }
                    input #share-url.share-url type="text" readonly aria-label="Share link" hidden;
                }
            }
        }
        section.card {
            h2 { "Spectrogram" }
            @match map {
                Some(m) => (spectrogram(&d, m, &marks, edit)),
                None => p.notice { "Audio expired: the recording of this detection is no longer stored, so there is no spectrogram or sound." },
            }
        }
        (votes(ctx, &d, &tally, mine.as_deref()))
        (actions)
        (shares)
        (comments(ctx, id, &notes))
    };
    let assets = ["detections.css", "detection.js", detection_settings::ASSETS[0], detection_settings::ASSETS[1]];
    Ok(layout::page(ctx, &name, "detections", &assets, body))
}

/// The picture with its playhead and boxes, the audio player, and (for members) the box form.
fn spectrogram(d: &Detection, m: Mapping, marks: &Value, edit: bool) -> Markup {
    let span = m.span_seconds();
    let pct = |s: f64| (s / span * 100.0).clamp(0.0, 100.0);
    html! {
        div #spectro.spectro data-id=(d.id) data-seconds-per-pixel=(m.seconds_per_pixel)
            data-hz-per-pixel=(m.hz_per_pixel) data-min-hz=(m.min_hz) data-max-hz=(m.max_hz)
            data-duration=(m.duration_seconds) data-span=(span) data-edit=(edit) {
            img #spectro-img src=(format!("/api/detections/{}/spectrogram.png", d.id)) draggable="false"
                alt=(format!("Spectrogram of the recording, 0 to {:.0} kHz, {:.1} s", m.max_hz / 1000.0, m.duration_seconds));
            div.detected style=(format!("left:{:.3}%;width:{:.3}%", pct(d.start_ms as f64 / 1000.0), pct(d.end_ms as f64 / 1000.0) - pct(d.start_ms as f64 / 1000.0)))
                title="where the model heard it" {}
            div #boxes { (boxes(marks, Some(m))) }
            div #draft.box.draft hidden {}
            div #playhead.playhead aria-hidden="true" {}
            div.axis.freq aria-hidden="true" {
                span { (format!("{:.0} kHz", m.max_hz / 1000.0)) }
                span { (format!("{:.0} kHz", (m.max_hz + m.min_hz) / 2000.0)) }
                span { (format!("{:.0} kHz", m.min_hz / 1000.0)) }
            }
        }
        audio #det-audio controls preload="metadata" src=(format!("/api/audio/{}", d.audio_chunk_id)) {
            "Your browser cannot play this recording."
        }
        @if edit {
            p.muted.small #box-hint { "Drag a box over a call on the spectrogram to annotate it; a click moves the playhead." }
            form #box-form.box-form hidden {
                p #box-range {}
                div.row {
                    label for="box-vote" { "This box is" }
                    select #box-vote name="vote" {
                        option value="confirm" { "the species named (confirm)" }
                        option value="reject" { "not this species (reject)" }
                        option value="unsure" { "not sure" }
                    }
                }
                div.row {
                    label for="box-notes" { "Note (optional)" }
                    input #box-notes type="text" name="notes" maxlength="2000";
                }
                div.row {
                    button.primary type="submit" { "Save annotation" }
                    button #box-cancel type="button" { "Cancel" }
                }
            }
        } @else {
            p.muted.small { "Click the spectrogram to move the playhead." }
        }
    }
}

/// The saved annotations as boxes placed by the mapping (percent of the picture).
fn boxes(list: &Value, map: Option<Mapping>) -> Markup {
    let Some(m) = map else { return html! {} };
    let span = m.span_seconds();
    let items = list.get("annotations").and_then(Value::as_array).cloned().unwrap_or_default();
    html! {
        @for a in &items {
            @let n = |k: &str| a.get(k).and_then(Value::as_f64);
            @let (t0, t1) = (n("time_start_ms").unwrap_or(0.0) / 1000.0, n("time_end_ms").unwrap_or(0.0) / 1000.0);
            @let (f0, f1) = (n("freq_low_hz").unwrap_or(m.min_hz), n("freq_high_hz").unwrap_or(m.max_hz));
            @let range = m.max_hz - m.min_hz;
            @let left = t0 / span * 100.0;
            @let top = (m.max_hz - f1) / range * 100.0;
            @let vote = a.get("vote").and_then(Value::as_str).unwrap_or("unsure");
            @let who = a.get("user_name").and_then(Value::as_str).unwrap_or("someone");
            div.box.(vote) data-annotation=(a.get("id").and_then(Value::as_str).unwrap_or_default())
                style=(format!("left:{left:.3}%;top:{top:.3}%;width:{:.3}%;height:{:.3}%", (t1 - t0) / span * 100.0, (f1 - f0) / range * 100.0))
                title=(format!("{who}: {vote}, {t0:.2}–{t1:.2} s, {:.1}–{:.1} kHz{}", f0 / 1000.0, f1 / 1000.0,
                    a.get("notes").and_then(Value::as_str).map(|s| format!(" — {s}")).unwrap_or_default())) {}
        }
    }
}

/// The consensus, the tally and (for members) the vote buttons, the viewer's own vote pressed
/// (`aria-pressed`); refreshed after a vote.
fn votes(ctx: &Ctx, d: &Detection, t: &Tally, mine: Option<&str>) -> Markup {
    let (label, class) = match d.verification_status.as_str() {
        "confirmed" => ("Confirmed", "ok"),
        "rejected" => ("Rejected", "no"),
        "pending_review" => ("Pending review", "pending"),
        _ => ("Not verified yet", "none"),
    };
    let choices = [("confirm", "Confirm"), ("reject", "Reject"), ("unsure", "Unsure")];
    html! {
        section.card #votes hx-get=(format!("/detections/{}/votes", d.id)) hx-trigger="refresh" hx-swap="outerHTML" {
            h2 { "Verification" }
            p.consensus {
                "Consensus: " span.badge.(class) #consensus data-status=(d.verification_status) { (label) }
            }
            ul.tally aria-label="Votes" {
                li { span.n #tally-confirm { (t.confirm) } " confirm" }
                li { span.n #tally-reject { (t.reject) } " reject" }
                li { span.n #tally-unsure { (t.unsure) } " unsure" }
            }
            @if ctx.can_edit() {
                div.vote-buttons role="group" aria-label="Your vote" {
                    @for (vote, text) in choices {
                        @let pressed = mine == Some(vote);
                        button.vote.(vote).pressed[pressed] type="button" data-vote=(vote) data-id=(d.id)
                            aria-pressed=(if pressed { "true" } else { "false" }) { (text) }
                    }
                }
                p.small.muted #my-vote {
                    @match choices.iter().find(|(v, _)| Some(*v) == mine) {
                        Some((_, text)) => { "Your vote: " strong { (text) } ". Press another to change it." }
                        None => { "You have not voted on this detection." }
                    }
                }
            }
        }
    }
}

/// The comments, newest last, and (for members) the form to add one.
fn comments(ctx: &Ctx, id: &str, list: &Value) -> Markup {
    let items = list.get("comments").and_then(Value::as_array).cloned().unwrap_or_default();
    html! {
        section.card #comments hx-get=(format!("/detections/{id}/comments")) hx-trigger="refresh" hx-swap="outerHTML" {
            h2 { "Comments" }
            @if items.is_empty() {
                p.muted { "No comments yet." @if ctx.can_edit() { " Add what you heard or saw." } }
            }
            ul.comments {
                @for c in &items {
                    @let s = |k: &str| c.get(k).and_then(Value::as_str).unwrap_or_default();
                    li {
                        div.comment-head {
                            strong { (comment_author(c)) }
                            " " (layout::ago(s("created_at")))
                            @if ctx.can_edit() && (s("user_id") == ctx.user.id || ctx.is_admin()) {
                                button.linkish.delete-comment type="button" data-comment=(s("id")) data-id=(id) { "Delete" }
                            }
                        }
                        p.comment-body { (s("body")) }
                    }
                }
            }
            @if ctx.can_edit() {
                form #comment-form.comment-form data-id=(id) {
                    label for="comment-body" { "Add a comment" }
                    textarea #comment-body name="body" rows="3" maxlength="2000" required {}
                    button.primary type="submit" { "Post comment" }
                }
            }
        }
    }
}

/// Who wrote a comment: the person, a comment an import carried over from an old station
/// (issue 38), or an account since deleted.
fn comment_author(c: &Value) -> &str {
    if let Some(name) = c.get("user_name").and_then(Value::as_str) {
        return name;
    }
    match c.get("imported_from").and_then(Value::as_str) {
        Some("birdnet-go") => "imported from BirdNET-Go",
        Some("birdnet-pi") => "imported from BirdNET-Pi",
        _ => "deleted account",
    }
}
