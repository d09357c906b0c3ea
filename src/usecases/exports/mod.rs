//! Exports (SPEC 4.7): a team's detections as files for the places birders send data.
//!
//! - [`detections`]: every field as CSV or JSON, streamed page by page (flat memory at any size);
//! - [`checklist`]: eBird checklists, split into a ZIP of files under 1 MB when larger;
//! - [`observation`]: iNaturalist's bulk CSV, refused whole when one row would be;
//! - [`recording`]: a xeno-canto-style ZIP of WAV files and `metadata.csv`.
//!
//! Every export takes the same [`Filters`] (the names of `GET /detections`' query, plus a date
//! range and the options of each format), storable as JSON by scheduled exports, which call
//! [`render`] for a whole file in memory.

pub mod checklist;
pub mod detections;
pub mod observation;
pub mod recording;

use std::collections::HashMap;

use chrono::{DateTime, NaiveDate, Offset, TimeZone, Utc};
use chrono_tz::Tz;
use serde::{Deserialize, Serialize};

use crate::{
    domain::{
        consensus::STATUSES,
        exports::{GroupBy, Heard, inaturalist::Geoprivacy},
        zone,
    },
    ids::{SatelliteId, TenantId, UserId},
    inference::translations::Translations,
    store::{self, Store, export, team_zones::TeamZones},
    time::Timestamp,
};

/// The formats [`render`] makes (the recording bundle is a stream of audio files, never held in
/// memory, so it is served by [`recording`] alone).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    Csv,
    Json,
    Checklist,
    Observation,
}

/// What an export holds. The names are those of the query string (`GET /detections` plus
/// `from`/`to`/`days` and the format options); other names are ignored, as by the list.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Filters {
    pub satellite_id: Option<SatelliteId>,
    /// A species code.
    pub species: Option<String>,
    /// Case-insensitive search on common or scientific name.
    pub species_search: Option<String>,
    /// The species whose common name in the reader's or the team's languages holds
    /// `species_search` ([`name_search`]); not a query parameter.
    #[serde(skip)]
    pub named: Vec<String>,
    pub min_confidence: Option<f64>,
    /// `pending_review`, `confirmed`, `rejected` or `unverified`.
    pub verification_status: Option<String>,
    /// First and last local day, inclusive: days of the team's zone for the detection list (CSV,
    /// JSON), of each station's own zone for checklists, observations and recordings.
    pub from: Option<NaiveDate>,
    pub to: Option<NaiveDate>,
    /// The last `days` days up to today (instead of `from`/`to`): what a schedule stores.
    pub days: Option<i64>,
    /// Language of the translated common name (default: the caller's, else the team's).
    pub lang: Option<String>,
    /// Checklist, observation, recording: only detections people confirmed.
    pub verified_only: bool,
    /// Checklist and observation: `day` (default), `session`; observation also `detection`.
    pub group_by: Option<GroupBy>,
    /// Checklist: answer `Y` to "All observations reported?" (default `N`).
    pub all_reported: bool,
    /// Observation: column 8.
    pub geoprivacy: Geoprivacy,
    /// The zone whose "today" `days` counts back from: a scheduled export's own zone; none: the
    /// team's. Not a query parameter.
    #[serde(skip)]
    pub zone: Option<Tz>,
}

/// A whole export file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportFile {
    pub file_name: String,
    pub content_type: &'static str,
    pub bytes: Vec<u8>,
}

#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error("{0}")]
    InvalidRange(String),
    #[error("{0}")]
    InvalidFilter(String),
    #[error("no satellite {0} in this team")]
    SatelliteNotFound(SatelliteId),
    #[error("unknown language {0:?}; GET /species/languages lists them")]
    UnknownLanguage(String),
    #[error("a checklist of {0} bytes is over eBird's 1 MB file limit; narrow the filters")]
    ChecklistTooLarge(usize),
    #[error("iNaturalist would refuse this file: {}", describe(.0))]
    ObservationRejected(Vec<crate::domain::exports::inaturalist::Problem>),
    #[error("{0}")]
    TooLarge(String),
    #[error("could not write the file: {0}")]
    Encode(String),
    #[error(transparent)]
    Store(#[from] store::Error),
}

fn describe(p: &[crate::domain::exports::inaturalist::Problem]) -> String {
    p.iter().map(|p| format!("line {}: {}", p.line, p.reason)).collect::<Vec<_>>().join("; ")
}

/// What an export reads. Cheap to clone.
#[derive(Clone)]
pub struct Env {
    pub store: Store,
    /// Common names in every installed language.
    pub names: Translations,
    /// Share links to audio for iNaturalist descriptions; `None` when the hub has no public
    /// address (`http.public_url` empty), since a `.local` link means nothing to iNaturalist.
    pub share: Option<ShareLinks>,
}

/// How to make a public link to a detection's audio (`/api/share/audio/:id/:token`).
#[derive(Clone)]
pub struct ShareLinks {
    pub base: String,
    pub secret: String,
}

impl std::fmt::Debug for ShareLinks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShareLinks").field("base", &self.base).finish_non_exhaustive()
    }
}

impl ShareLinks {
    /// The configured public links, or `None` when the base was derived (mDNS `.local`).
    pub fn from_links(links: &crate::links::PublicLinks, jwt_secret: &str) -> Option<Self> {
        (!links.derived).then(|| Self { base: links.http_base.clone(), secret: jwt_secret.to_owned() })
    }

    /// A link to `detection`'s audio that works for [`crate::auth::share::SHARE_DAYS`] days.
    pub fn audio(&self, detection: &str, now: DateTime<Utc>) -> Option<String> {
        let id: crate::ids::DetectionId = detection.parse().ok()?;
        let expires = now + chrono::Duration::days(crate::auth::share::SHARE_DAYS);
        let token = crate::auth::share::sign_audio(&self.secret, id, expires.timestamp());
        Some(format!("{}/api/share/audio/{id}/{token}", self.base))
    }
}

impl std::fmt::Debug for Env {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Env").field("share", &self.share).finish_non_exhaustive()
    }
}

/// Filters checked against the team: what the store reads, the range for file names, and the
/// zones the range and the times are read in.
#[derive(Debug, Clone)]
pub struct Checked {
    pub filter: export::Filter,
    pub from: Option<NaiveDate>,
    pub to: NaiveDate,
    pub zones: TeamZones,
}

impl Checked {
    /// `birdhub-<what>-<from>-<to>.<ext>`; `beginning` without a start.
    pub fn file_name(&self, what: &str, ext: &str) -> String {
        let from = self.from.map_or_else(|| "beginning".to_owned(), |d| d.to_string());
        format!("birdhub-{what}-{from}-{}.{ext}", self.to)
    }
}

/// Days a range may span at most (ten years: exports are archives, not charts).
pub const MAX_DAYS: i64 = 3660;

/// Fills `f.named` for a species search: the model's species whose common name in `langs` (the
/// reader's and the team's languages) or in the export's own `lang` holds it, so "Kohlmeise"
/// exports what a German reader found on the Detections page.
pub async fn name_search(env: &Env, mut f: Filters, mut langs: Vec<String>) -> Filters {
    let Some(needle) = f.species_search.clone().filter(|s| !s.trim().is_empty() && s.chars().count() <= 100) else {
        return f;
    };
    langs.extend(f.lang.clone());
    let names = env.names.clone();
    f.named = tokio::task::spawn_blocking(move || super::species::codes_named(&names, &needle, &langs))
        .await
        .unwrap_or_default();
    f
}

/// Checks `f` for `tenant`: ranges, values, that the satellite is the team's; resolves a species
/// search to codes. `citizen_science`: leave rejected detections out (and keep only confirmed
/// ones when `verifiedOnly`).
pub async fn check(
    store: &Store,
    tenant: TenantId,
    f: &Filters,
    now: DateTime<Utc>,
    citizen_science: bool,
) -> Result<Checked, ExportError> {
    let zones = store.call(move |c| store::team_zones::load(c, &tenant)).await?;
    let days_zone = f.zone.unwrap_or(zones.team);
    let today = zone::local_day(now, days_zone);
    let (from, to) = match (f.days, f.from, f.to) {
        (Some(_), Some(_), _) | (Some(_), _, Some(_)) => {
            return Err(ExportError::InvalidRange("give days, or from and to, not both".into()));
        }
        (Some(n), None, None) if !(1..=MAX_DAYS).contains(&n) => {
            return Err(ExportError::InvalidRange(format!("days must be 1 to {MAX_DAYS}, not {n}")));
        }
        (Some(n), None, None) => (Some(today - chrono::Duration::days(n - 1)), today),
        (None, from, to) => (from, to.unwrap_or(today)),
    };
    if let Some(from) = from {
        if from > to {
            return Err(ExportError::InvalidRange(format!("from ({from}) is after to ({to})")));
        }
        if (to - from).num_days() >= MAX_DAYS {
            return Err(ExportError::InvalidRange(format!("from {from} to {to} is over {MAX_DAYS} days")));
        }
    }
    if let Some(m) = f.min_confidence
        && !(0.0..=1.0).contains(&m)
    {
        return Err(ExportError::InvalidFilter(format!("minConfidence must be between 0 and 1, not {m}")));
    }
    let status = f.verification_status.as_deref().map(str::trim).filter(|s| !s.is_empty());
    if let Some(s) = status
        && !STATUSES.contains(&s)
    {
        return Err(ExportError::InvalidFilter(format!(
            "verificationStatus must be one of {}, not {s:?}",
            STATUSES.join(", ")
        )));
    }
    if let Some(lang) = &f.lang
        && crate::domain::languages::find(lang).is_none()
    {
        return Err(ExportError::UnknownLanguage(lang.clone()));
    }
    let search = f.species_search.as_deref().map(str::trim).filter(|s| !s.is_empty()).map(str::to_lowercase);
    if search.as_ref().is_some_and(|s| s.chars().count() > 100) {
        return Err(ExportError::InvalidFilter("speciesSearch is at most 100 characters".into()));
    }
    let code = f.species.as_deref().map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned);
    let satellite = f.satellite_id;
    let named = f.named.clone();
    let species = store
        .call(move |c| {
            if let Some(id) = satellite
                && store::satellites::ensure_in_tenant(c, tenant, id).is_err()
            {
                return Ok(Err(ExportError::SatelliteNotFound(id)));
            }
            let Some(needle) = search else { return Ok(Ok(code.map(|c| vec![c]))) };
            let codes = store::detection_list::team_species(c, tenant)?
                .into_iter()
                .filter(|s| code.as_ref().is_none_or(|c| *c == s.species_code))
                .filter(|s| {
                    s.common_name.to_lowercase().contains(&needle)
                        || s.scientific_name.to_lowercase().contains(&needle)
                        || named.contains(&s.species_code)
                })
                .map(|s| s.species_code)
                .collect();
            Ok(Ok(Some(codes)))
        })
        .await??;
    let mut verification_status = status.map(str::to_owned);
    if citizen_science && f.verified_only {
        if verification_status.as_deref().is_some_and(|s| s != "confirmed") {
            return Err(ExportError::InvalidFilter(
                "verifiedOnly keeps confirmed detections; it cannot go with another verificationStatus".into(),
            ));
        }
        verification_status = Some("confirmed".into());
    }
    let filter = export::Filter {
        satellite,
        species,
        verification_status,
        min_confidence: f.min_confidence,
        from: from.map(|d| Timestamp(zone::day_start(d, days_zone))),
        to: Some(Timestamp(zone::day_start(to + chrono::Duration::days(1), days_zone))),
        exclude_rejected: citizen_science,
    };
    Ok(Checked { filter, from, to, zones })
}

/// The language an export names species in: `lang` when given, else the person's preference,
/// else the team's primary language.
pub async fn language(
    store: &Store,
    tenant: TenantId,
    user: Option<UserId>,
    lang: Option<&str>,
) -> Result<String, ExportError> {
    if let Some(l) = lang {
        return match crate::domain::languages::find(l) {
            Some(found) => Ok(found.code.to_owned()),
            None => Err(ExportError::UnknownLanguage(l.to_owned())),
        };
    }
    let scope = tenant.to_string();
    Ok(store
        .call(move |c| {
            if let Some(id) = user {
                let prefs =
                    crate::domain::preferences::Preferences::from_stored(&store::users::get(c, id)?.preferences_json);
                if !prefs.language.is_empty() {
                    return Ok(prefs.language);
                }
            }
            let team: crate::domain::settings::TenantSettings = store::settings::load(c, &scope)?;
            Ok(team.primary_language)
        })
        .await?)
}

/// Common names in one language, looked up once per species.
pub(crate) struct NameBook {
    names: Translations,
    lang: String,
    seen: HashMap<String, Option<String>>,
}

impl NameBook {
    pub fn new(names: &Translations, lang: &str) -> Self {
        Self { names: names.clone(), lang: lang.to_owned(), seen: HashMap::new() }
    }

    /// `code`'s name in the language, else `stored`.
    pub fn get(&mut self, code: &str, stored: &str) -> String {
        if !self.seen.contains_key(code) {
            self.seen.insert(code.to_owned(), self.names.common_name(&self.lang, code));
        }
        self.seen.get(code).cloned().flatten().unwrap_or_else(|| stored.to_owned())
    }

    pub fn lang(&self) -> &str {
        &self.lang
    }
}

/// Rows per page read from the store.
pub const PAGE: usize = 2000;

/// How far a station's local day can lie from the range's days in another zone (UTC+14 against
/// UTC-12, and a day to spare).
const ZONE_SPREAD: chrono::Duration = chrono::Duration::hours(27);

/// Calls `each` with every placed detection matching `checked` until it returns false, a page
/// at a time (one pooled connection per page, so a long export never pins one). Blocking: run
/// off the runtime. The range is of each station's own local days: the store reads a wider
/// window and the detections outside their station's days are left out here.
pub(crate) fn each_placed(
    store: &Store,
    tenant: TenantId,
    checked: &Checked,
    mut each: impl FnMut(&export::Placed) -> bool,
) -> Result<(), ExportError> {
    let mut after: Option<export::Cursor> = None;
    let mut wide = checked.filter.clone();
    wide.from = wide.from.map(|t| Timestamp(t.at() - ZONE_SPREAD));
    wide.to = wide.to.map(|t| Timestamp(t.at() + ZONE_SPREAD));
    let in_range = |p: &export::Placed| {
        let day = zone::local_day(p.detection.detected_at.at(), checked.zones.of(&p.detection.satellite_id));
        checked.from.is_none_or(|f| day >= f) && day <= checked.to
    };
    loop {
        let rows = store.call_blocking(|c| export::placed_page(c, tenant, &wide, after.as_ref(), PAGE))?;
        for r in rows.iter().filter(|r| in_range(r)) {
            if !each(r) {
                return Ok(());
            }
        }
        match rows.last() {
            Some(last) if rows.len() == PAGE => after = Some(export::Cursor::after(&last.detection)),
            _ => return Ok(()),
        }
    }
}

/// `p` as an export format sees it: times local to its station (its effective zone), the best
/// known position.
pub(crate) fn heard(p: &export::Placed, zones: &TeamZones) -> Heard {
    let tz = zones.of(&p.detection.satellite_id);
    let local = |t: Timestamp| t.at().with_timezone(&tz).naive_local();
    let d = &p.detection;
    let start = local(d.detected_at);
    let (latitude, longitude) = match (p.chunk_latitude, p.chunk_longitude) {
        (Some(lat), Some(lon)) => (Some(lat), Some(lon)),
        _ => (p.satellite_latitude, p.satellite_longitude),
    };
    Heard {
        satellite: d.satellite_id.to_string(),
        satellite_name: d.satellite_name.clone(),
        latitude,
        longitude,
        session: p.session.as_ref().map(|(id, s, e)| (id.clone(), local(*s), local(*e))),
        species_code: d.species_code.clone(),
        common_name: d.common_name.clone(),
        scientific_name: d.scientific_name.clone(),
        confidence: d.confidence,
        start,
        end: start + chrono::Duration::milliseconds((d.end_ms - d.start_ms).max(0)),
        offset: Some(tz.offset_from_utc_datetime(&d.detected_at.at().naive_utc()).fix()),
        detection: d.id.to_string(),
    }
}

/// A whole export file in memory: what scheduled exports attach or POST. `lang` names the
/// translated common names (csv, json); `now` is the clock's time (ranges, share links).
pub async fn render(
    env: &Env,
    tenant: TenantId,
    lang: &str,
    format: Format,
    filters: &Filters,
    now: DateTime<Utc>,
) -> Result<ExportFile, ExportError> {
    match format {
        Format::Csv | Format::Json => detections::render(env, tenant, lang, format, filters, now).await,
        Format::Checklist => checklist::render(env, tenant, filters, now).await,
        Format::Observation => observation::render(env, tenant, filters, now).await,
    }
}
