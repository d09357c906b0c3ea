//! "Import a station" (`/imports`, team admins; issue 38): a form to upload an old BirdNET-Pi or
//! BirdNET-Go station's backup or database (`POST /api/imports`, sent by `assets/imports.js`),
//! the job's progress that the script polls, the result in words when it ends (the fragment
//! `/imports/{id}/result`, rendered here so the live job and the list read the same), and the
//! team's past imports.

use axum::{
    Router,
    extract::Path,
    response::{IntoResponse, Response},
    routing::get,
};
use maud::{Markup, html};
use serde::Deserialize;

use super::sat_parts::SatPage;
use crate::web::{WebState, ctx::Ctx, error::PageError, layout, words::count};

pub fn routes() -> Router<WebState> {
    Router::new().route("/imports", get(imports_page)).route("/imports/{id}/result", get(result_fragment))
}

/// An import job as `GET /api/imports` shows it (the fields the page reads).
#[derive(Debug, Clone, Deserialize)]
pub struct Job {
    pub satellite_id: Option<String>,
    pub kind: String,
    pub source: String,
    pub time_zone: String,
    pub dry_run: bool,
    pub status: String,
    pub rows_read: u64,
    pub rows_added: u64,
    pub rows_duplicate: u64,
    pub rows_unmapped: u64,
    pub rows_corrupt: u64,
    pub clips_copied: u64,
    pub clips_missing: u64,
    pub clips_undecodable: u64,
    #[serde(default)]
    pub unmapped: Vec<NameCount>,
    #[serde(default)]
    pub corrupt: Vec<Corrupt>,
    #[serde(default)]
    pub missing_clips: Vec<String>,
    pub error: Option<String>,
    pub created_at: String,
}

#[derive(Debug, Clone, Deserialize)]
pub struct NameCount {
    pub name: String,
    pub count: u64,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Corrupt {
    pub at: String,
    pub reason: String,
}

fn kind_name(kind: &str) -> &'static str {
    if kind == "birdnet-go" { "BirdNET-Go" } else { "BirdNET-Pi" }
}

/// The file the person uploaded (or the path the command line was given): its last name.
fn file_name(source: &str) -> &str {
    source.rsplit(['/', '\\']).find(|s| !s.is_empty()).unwrap_or(source)
}

async fn imports_page(ctx: Ctx) -> Response {
    match page(&ctx).await {
        Ok(m) => m.into_response(),
        Err(e) => e.respond(&ctx.uri),
    }
}

async fn page(ctx: &Ctx) -> Result<Markup, PageError> {
    let team = ctx.team_id()?.to_owned();
    if !ctx.is_admin() {
        return Err(PageError::Forbidden("Importing a station is for the team's admins. Ask an admin.".into()));
    }
    let tenant: crate::ids::TenantId = team.parse().map_err(|_| PageError::NotFound("No such team.".into()))?;
    let zone = ctx.app.store.team_zone(tenant).await.map_err(|e| PageError::Internal(e.into()))?;
    let (sats, jobs) = tokio::try_join!(
        ctx.api.get::<SatPage>("/satellites?limit=100"),
        ctx.api.get::<Vec<Job>>("/imports?limit=20")
    )?;
    let names: Vec<(String, String)> = sats.satellites.iter().map(|s| (s.id.clone(), s.name.clone())).collect();
    let body = html! {
        section.card #import-card {
            h1 { "Import a station" }
            p.muted {
                "Bring the history of an old BirdNET-Pi or BirdNET-Go station into this team: its detections, "
                "reviews, comments and clips. Upload BirdNET-Pi's backup (.tar) or its birds.db, or BirdNET-Go's "
                "birdnet.db or a .tar of its data folder. Importing the same file again adds nothing twice."
            }
            details.small {
                summary { "Where are the files?" }
                ul {
                    li { "BirdNET-Pi: its web page's Tools → Backup makes the .tar; or copy " code { "~/BirdNET-Pi/scripts/birds.db" } " (detections only, no clips)." }
                    li { "BirdNET-Go: stop it, then copy " code { "birdnet.db" } " from its data folder (Docker: " code { "/data" } "; the installer: " code { "~/birdnet-go-app/data" } "), or make a .tar of that folder to bring the clips too." }
                }
            }
            form #import-form {
                label { "Backup or database"
                    input #import-file type="file" name="file" required accept=".tar,.db,.sqlite,.sqlite3";
                }
                label { "It comes from"
                    select #import-kind name="kind" {
                        option value="birdnet-pi" { "BirdNET-Pi" }
                        option value="birdnet-go" { "BirdNET-Go" }
                    }
                }
                fieldset.import-target {
                    legend { "Into" }
                    label.check { input type="radio" name="target" value="new" checked; " a new satellite" }
                    label #import-name-field { "Name (empty: the station's own)" input #import-name type="text" name="name" maxlength="100"; }
                    @if !sats.satellites.is_empty() {
                        label.check { input type="radio" name="target" value="existing"; " a satellite of the team" }
                        label #import-satellite-field hidden { "Satellite"
                            select #import-satellite name="satellite_id" {
                                @for (id, name) in &names { option value=(id) { (name) } }
                            }
                        }
                    }
                }
                label { "The station's time zone"
                    input #import-zone type="text" name="time_zone" value=(zone.name()) required autocomplete="off"
                        placeholder="e.g. Europe/Berlin";
                }
                p.small.muted { "BirdNET-Pi and older BirdNET-Go stations wrote their clock's local time: give the zone that clock kept (default: the team's)." }
                label.check { input #import-dry type="checkbox" name="dry_run" value="true"; " Dry run: count what it would do, write nothing" }
                p.error #import-error role="alert" hidden {}
                button.primary #import-submit type="submit" { "Import" }
            }
            div #import-progress hidden {
                h2 #import-status { "Uploading…" }
                progress #import-bar max="100" value="0" {}
                p #import-figures.small {}
            }
            div #import-result aria-live="polite" {}
        }
        section.card #import-history {
            h2 { "Past imports" }
            @if jobs.is_empty() {
                p.muted { "None yet." }
            } @else {
                ul.import-list {
                    @for job in &jobs {
                        li.import-item {
                            div {
                                strong { (file_name(&job.source)) }
                                " · " (kind_name(&job.kind)) " · " (layout::at(&job.created_at))
                                " · " span.badge { (status_word(job)) }
                            }
                            (result(job, &names))
                        }
                    }
                }
            }
        }
    };
    Ok(layout::page(ctx, "Import a station", "", &["imports.css", "imports.js"], body))
}

fn status_word(job: &Job) -> &'static str {
    match job.status.as_str() {
        "queued" => "waiting",
        "running" => "importing",
        "done" if job.dry_run => "dry run",
        "done" => "finished",
        _ => "failed",
    }
}

/// The clips the rows named that the upload did not hold, and what that means for the detections.
fn missing_clips(job: &Job) -> String {
    let n = job.clips_missing;
    let (was, theirs) = if n == 1 { ("was", "its detection") } else { ("were", "their detections") };
    let then = if job.dry_run { "would be" } else { was };
    format!(
        "{} the old station lists {was} not found: {theirs} {then} imported without sound.",
        count(n, "clip", "clips")
    )
}

/// The outcome of a job in words.
pub fn result(job: &Job, sats: &[(String, String)]) -> Markup {
    let sat = job.satellite_id.as_ref().and_then(|id| sats.iter().find(|(s, _)| s == id));
    let running = matches!(job.status.as_str(), "queued" | "running");
    html! {
        div.import-result {
            @if running {
                p { "Importing: " (count(job.rows_read, "row", "rows")) " read so far." }
            } @else if job.status == "failed" {
                p.error { "The import stopped: " (job.error.as_deref().unwrap_or("unknown error")) }
                @if job.rows_added > 0 { p { (count(job.rows_added, "detection was", "detections were")) " added before it stopped; importing the file again resumes without adding them twice." } }
            } @else if job.dry_run {
                p { "Dry run: it would add " (count(job.rows_added, "detection", "detections")) ". Nothing was written." }
            } @else {
                p {
                    "Added " (count(job.rows_added, "detection", "detections"))
                    @if let Some((_, name)) = sat { " to " strong { (name) } }
                    "."
                }
            }
            ul.small {
                @if job.rows_duplicate > 0 { li { (count(job.rows_duplicate, "row was", "rows were")) " already imported." } }
                @if job.rows_unmapped > 0 {
                    li { (count(job.rows_unmapped, "row names", "rows name")) " a species the hub's model does not know: "
                        @for (i, n) in job.unmapped.iter().enumerate() { @if i > 0 { ", " } (n.name) " (" (n.count) ")" } "." }
                }
                @if job.rows_corrupt > 0 {
                    li { (count(job.rows_corrupt, "row", "rows")) " could not be read"
                        details { summary { "which" } ul { @for c in &job.corrupt { li { (c.at) ": " (c.reason) } } } }
                    }
                }
                li { (count(job.clips_copied, "clip", "clips")) @if job.dry_run { " would be copied." } @else { " copied." } }
                @if job.clips_missing > 0 {
                    li { (missing_clips(job))
                        details { summary { "which" } ul { @for m in &job.missing_clips { li { (m) } } } }
                    }
                }
                @if job.clips_undecodable > 0 { li { (count(job.clips_undecodable, "clip", "clips")) " could not be decoded: kept, playable as a file, without a spectrogram." } }
                li { "Times read in " (job.time_zone) "." }
            }
            @if let Some((id, name)) = sat.filter(|_| !job.dry_run) {
                p.import-links {
                    a.button href={ "/satellites/" (id) } { "Open " (name) }
                    " "
                    a href={ "/detections?satelliteId=" (id) } { "See its detections" }
                }
            }
        }
    }
}

/// `GET /imports/{id}/result`: the result of one job, for the page's script to show.
async fn result_fragment(ctx: Ctx, Path(id): Path<String>) -> Response {
    let run = async {
        if !ctx.is_admin() {
            return Err(PageError::Forbidden("Importing a station is for the team's admins.".into()));
        }
        let id: uuid::Uuid = id.parse().map_err(|_| PageError::NotFound("No such import.".into()))?;
        let path = format!("/imports/{id}");
        let (job, sats) = tokio::try_join!(ctx.api.get::<Job>(&path), ctx.api.get::<SatPage>("/satellites?limit=100"))?;
        let names: Vec<(String, String)> = sats.satellites.iter().map(|s| (s.id.clone(), s.name.clone())).collect();
        Ok(result(&job, &names))
    };
    match run.await {
        Ok(m) => m.into_response(),
        Err(e) => e.respond(&ctx.uri),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_uploaded_file_is_named_not_its_path() {
        assert_eq!(file_name("/var/lib/birdhub/imports/uploads/1f/birdnet-pi-backup.tar"), "birdnet-pi-backup.tar");
        assert_eq!(file_name("C:\\x\\birds.db"), "birds.db");
        assert_eq!(file_name("/home/pi/BirdNET-Pi/"), "BirdNET-Pi");
    }
}
