//! A team's public page: what it shows strangers without an account, when an admin turns on
//! `public_page_enabled` (off by default). Today's species and their hours, the newest
//! detections, one page per species the team has heard, and the station map.
//!
//! What it never shows: satellite ids, credentials or settings, any person (members, voters,
//! comments), detections voted down, and positions finer than about a kilometre unless
//! `public_page_exact_locations` is on. Recordings play only with `public_page_audio` on.
//! An unknown team and a team whose page is off are the same [`PublicError::NotFound`], so the
//! page does not tell strangers which teams exist.
//!
//! The views are cached for [`VIEW_TTL`], so a page shared with many friends costs the hub one
//! read per few seconds; [`admit`] limits each client address (`http.public_page_per_minute`).

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{
    species_images::{self, ImageError},
    stats::{self, Filters, Named, StatsError, overview, places, profile},
};
use crate::{
    cache::Cache,
    domain::settings::TenantSettings,
    ids::{DetectionId, TenantId},
    inference::translations::Translations,
    store::{self, Store, detection_list},
};

/// How long a team's view is reused before it is read again.
pub const VIEW_TTL: Duration = Duration::from_secs(10);
/// The newest detections the page lists.
pub const FEED_LEN: usize = 20;
/// Decimal places of a position when exact locations are off (0.01° is about 1.1 km).
pub const ROUGH_DECIMALS: i32 = 2;

#[derive(Debug, thiserror::Error)]
pub enum PublicError {
    #[error("there is no public page here")]
    NotFound,
    #[error("this team has not heard {0:?}")]
    SpeciesNotFound(String),
    #[error("this team's public page does not share recordings")]
    AudioNotShared,
    #[error("no detection {0} on this public page")]
    DetectionNotFound(String),
    #[error("no picture of {0} is cached yet")]
    NoImage(String),
    #[error("too many requests from your address; try again in a minute")]
    RateLimited,
    #[error(transparent)]
    Store(#[from] store::Error),
    #[error("{0}")]
    Stats(String),
}

impl From<StatsError> for PublicError {
    fn from(e: StatsError) -> Self {
        match e {
            StatsError::Store(s) => Self::Store(s),
            StatsError::SpeciesNotFound(code) => Self::SpeciesNotFound(code),
            other => Self::Stats(other.to_string()),
        }
    }
}

/// What the public page needs: the store, the labels, the cache and the time.
#[derive(Clone, Copy)]
pub struct Ctx<'a> {
    pub store: &'a Store,
    pub labels: &'a Translations,
    pub cache: &'a Cache,
    pub now: chrono::DateTime<chrono::Utc>,
    /// Requests a client address may make per minute (`http.public_page_per_minute`; 0: no limit).
    pub per_minute: u32,
}

impl<'a> Ctx<'a> {
    fn stats(&self, team: &Team) -> overview::Ctx<'a> {
        overview::Ctx { store: self.store, labels: self.labels, tenant: team.id, now: self.now }
    }
}

/// A team whose public page is on, with what the page may show.
#[derive(Debug, Clone)]
pub struct Team {
    pub id: TenantId,
    /// The page's title ([`public_title`]): never the owner's personal name by default.
    pub name: String,
    /// Recordings play and download.
    pub audio: bool,
    pub exact_locations: bool,
    /// The team's primary language, for species names.
    pub language: String,
    offline_after: chrono::Duration,
}

/// A visit from `client` to team `raw_id`'s page: counted against the client's limit (refused
/// past `per_minute` in the current minute), then the team, when its page is on.
pub async fn visit(ctx: Ctx<'_>, client: &str, raw_id: &str) -> Result<Team, PublicError> {
    if !within_budget(ctx, client).await {
        return Err(PublicError::RateLimited);
    }
    open(ctx.store, raw_id).await
}

/// Counts a public read from `client` (the public page's and the share links' one budget):
/// whether it is within `per_minute` in the current minute.
pub async fn within_budget(ctx: Ctx<'_>, client: &str) -> bool {
    if ctx.per_minute == 0 {
        return true;
    }
    let n = ctx.cache.incr(&format!("public:rate:{client}"), Duration::from_secs(60)).await;
    n <= u64::from(ctx.per_minute)
}

/// The team `raw_id` when its public page is on.
pub async fn open(store: &Store, raw_id: &str) -> Result<Team, PublicError> {
    let id: TenantId = raw_id.parse().map_err(|_| PublicError::NotFound)?;
    let scope = id.to_string();
    let (tenant, settings, owner) = store
        .call(move |c| {
            let tenant = store::tenants::get(c, id)?;
            let owner = match tenant.owner_user_id {
                Some(u) => match store::users::get(c, u) {
                    Ok(user) => Some(user.name),
                    Err(store::Error::NotFound) => None,
                    Err(e) => return Err(e),
                },
                None => None,
            };
            Ok((tenant, store::settings::load::<TenantSettings>(c, &scope)?, owner))
        })
        .await
        .map_err(|e| match e {
            store::Error::NotFound => PublicError::NotFound,
            other => PublicError::Store(other),
        })?;
    if !settings.public_page_enabled {
        return Err(PublicError::NotFound);
    }
    Ok(Team {
        id,
        name: public_title(settings.public_page_title.as_deref(), &tenant.name, owner.as_deref()),
        audio: settings.public_page_audio,
        exact_locations: settings.public_page_exact_locations,
        language: settings.primary_language,
        offline_after: chrono::Duration::minutes(i64::from(settings.satellite_offline_threshold_minutes)),
    })
}

/// What strangers see the team called: its public title when one is set; else the team's name,
/// unless that is still the one sign-up made from the owner's name ("Alice Birder's team"), which
/// reads "our station" so that a person's name is never shown without the team choosing it.
pub fn public_title(title: Option<&str>, team_name: &str, owner_name: Option<&str>) -> String {
    if let Some(t) = title.map(str::trim).filter(|t| !t.is_empty()) {
        return t.to_owned();
    }
    match owner_name {
        Some(owner) if team_name == format!("{owner}'s team") => "our station".to_owned(),
        _ => team_name.to_owned(),
    }
}

/// A species heard today, hour by hour.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct HeardToday {
    pub species_code: String,
    pub common_name: String,
    pub scientific_name: String,
    pub detections: i64,
    /// Detections per local hour, 0 to 23.
    pub hourly: Vec<i64>,
    /// The proxy path of its cached picture, if one is cached.
    pub image_url: Option<String>,
}

/// One detection as strangers see it.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Heard {
    pub id: String,
    pub species_code: String,
    pub common_name: String,
    pub scientific_name: String,
    pub confidence: f64,
    pub detected_at: String,
    /// Where the call starts in its recording, in milliseconds.
    pub start_ms: i64,
    /// The station's name (never its id).
    pub station: String,
    /// Where the recording plays, when the team shares recordings.
    pub audio_url: Option<String>,
}

/// A station on the map.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Station {
    pub name: String,
    /// Rounded to [`ROUGH_DECIMALS`] places unless the team shows exact locations.
    pub latitude: Option<f64>,
    pub longitude: Option<f64>,
    pub online: bool,
    /// Only an imported station's history (no device): neither listening nor offline.
    #[serde(default)]
    pub history: bool,
    pub detections_today: i64,
    pub species_today: i64,
}

/// The public page's main view.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Today {
    pub team_name: String,
    /// Today's date in the team's zone.
    pub date: String,
    pub detections: i64,
    /// Species heard today, the most detected first.
    pub species: Vec<HeardToday>,
    /// The newest detections (any day), newest first.
    pub recent: Vec<Heard>,
    pub stations: Vec<Station>,
    pub audio: bool,
    pub exact_locations: bool,
    pub updated_at: String,
}

/// Today's view of `team` (reused for [`VIEW_TTL`]).
pub async fn today(ctx: Ctx<'_>, team: &Team) -> Result<Today, PublicError> {
    let key = format!("public:today:{}", team.id);
    if let Some(v) = ctx.cache.get::<Today>(&key).await {
        // The title is the team's choice of now, not of when the view was cached.
        return Ok(Today { team_name: team.name.clone(), ..v });
    }
    let f = Filters { days: Some(1), lang: Some(team.language.clone()), ..Filters::default() };
    let f = if crate::domain::languages::find(&team.language).is_some() { f } else { Filters { lang: None, ..f } };
    let s = ctx.stats(team);
    let (grid, map, recent) =
        tokio::try_join!(overview::daily_grid(&s, &f), places::map(&s, &f), feed(ctx, team, None))?;
    let mut species = Vec::with_capacity(grid.species.len());
    for row in grid.species {
        let image_url = image_url(ctx, team, &row.species.species_code).await;
        species.push(HeardToday {
            species_code: row.species.species_code,
            common_name: row.species.common_name,
            scientific_name: row.species.scientific_name,
            detections: row.total,
            hourly: row.hourly,
            image_url,
        });
    }
    let online_after = ctx.now - team.offline_after;
    let tenant = team.id;
    let histories: Vec<String> = ctx
        .store
        .call(move |c| store::import_rows::history_only(c, tenant))
        .await?
        .iter()
        .map(ToString::to_string)
        .collect();
    let stations = map
        .satellites
        .into_iter()
        .map(|m| Station {
            history: histories.contains(&m.satellite.satellite_id),
            name: m.satellite.name,
            latitude: m.latitude.map(|v| place(v, team.exact_locations)),
            longitude: m.longitude.map(|v| place(v, team.exact_locations)),
            online: !m.stopped
                && m.last_seen_at
                    .as_deref()
                    .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
                    .is_some_and(|t| t > online_after),
            detections_today: m.detections,
            species_today: m.species,
        })
        .collect();
    let view = Today {
        team_name: team.name.clone(),
        date: grid.range.to.to_string(),
        detections: species.iter().map(|s| s.detections).sum(),
        species,
        recent,
        stations,
        audio: team.audio,
        exact_locations: team.exact_locations,
        updated_at: crate::time::format(ctx.now),
    };
    ctx.cache.set(&key, &view, Some(VIEW_TTL)).await;
    Ok(view)
}

/// A coordinate as the page may show it (a share link's page rounds the same way).
pub fn place(v: f64, exact: bool) -> f64 {
    if exact {
        return v;
    }
    let k = 10f64.powi(ROUGH_DECIMALS);
    (v * k).round() / k
}

/// The newest detections not voted down, of one species or all.
async fn feed(ctx: Ctx<'_>, team: &Team, species: Option<&str>) -> Result<Vec<Heard>, StatsError> {
    let tenant = team.id;
    let q = detection_list::Query {
        satellite_id: None,
        species_code: species.map(str::to_owned),
        species_search: None,
        named: Vec::new(),
        min_confidence: None,
        verification_status: None,
        sort_by: detection_list::SortBy::Date,
        descending: true,
        limit: (FEED_LEN * 2) as u32,
        offset: 0,
        with_count: false,
    };
    let (rows, _) = ctx.store.call(move |c| detection_list::list(c, tenant, &q)).await?;
    let lang = Some(team.language.as_str()).filter(|l| crate::domain::languages::find(l).is_some());
    let names = stats::Names::load(ctx.store, ctx.labels, tenant, lang).await?;
    Ok(rows
        .into_iter()
        .filter(|d| d.verification_status != "rejected")
        .take(FEED_LEN)
        .map(|d| {
            let Named { common_name, .. } = names.name(&d.species_code);
            Heard {
                audio_url: (team.audio && d.audio_expired_at.is_none())
                    .then(|| format!("/api/public/{}/audio/{}", team.id, d.id)),
                id: d.id.to_string(),
                species_code: d.species_code,
                common_name,
                scientific_name: d.scientific_name,
                confidence: d.confidence,
                detected_at: d.detected_at.to_string(),
                start_ms: d.start_ms,
                station: d.satellite_name,
            }
        })
        .collect())
}

/// The public path of a species' cached picture, if one is cached.
async fn image_url(ctx: Ctx<'_>, team: &Team, code: &str) -> Option<String> {
    species_images::picture(ctx.store, ctx.labels, code)
        .await
        .ok()
        .map(|_| format!("/api/public/{}/species/{code}/image", team.id))
}

/// One species' page over the last 30 days.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SpeciesView {
    pub team_name: String,
    pub species_code: String,
    pub common_name: String,
    pub scientific_name: String,
    /// In the last 30 days.
    pub detections: i64,
    pub first_detected_at: Option<String>,
    pub last_detected_at: Option<String>,
    /// Every day of the last 30 with its detections, oldest first.
    pub daily: Vec<(String, i64)>,
    /// Detections per local hour over the 30 days.
    pub hourly: Vec<i64>,
    /// Detections per station over the 30 days, by station name.
    pub stations: Vec<(String, i64)>,
    pub recent: Vec<Heard>,
    pub image: Option<PublicImage>,
}

/// A species picture and its credits.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PublicImage {
    pub url: String,
    pub attribution: String,
    pub license: String,
}

/// The page of species `code`, which the team must have heard.
pub async fn species(ctx: Ctx<'_>, team: &Team, code: &str) -> Result<SpeciesView, PublicError> {
    let key = format!("public:species:{}:{code}", team.id);
    if let Some(v) = ctx.cache.get::<SpeciesView>(&key).await {
        return Ok(SpeciesView { team_name: team.name.clone(), ..v });
    }
    heard(ctx, team, code).await?;
    let lang = Some(team.language.clone()).filter(|l| crate::domain::languages::find(l).is_some());
    let f = Filters { days: Some(30), lang, ..Filters::default() };
    let s = ctx.stats(team);
    let (p, recent) = tokio::try_join!(profile::profile(&s, &f, code), feed(ctx, team, Some(code)))?;
    let image = species_images::picture(ctx.store, ctx.labels, code).await.ok().map(|pic| PublicImage {
        url: format!("/api/public/{}/species/{code}/image", team.id),
        attribution: pic.attribution,
        license: pic.license,
    });
    let view = SpeciesView {
        team_name: team.name.clone(),
        species_code: p.species.species_code,
        common_name: p.species.common_name,
        scientific_name: p.species.scientific_name,
        detections: p.detections,
        first_detected_at: p.first_detected_at,
        last_detected_at: p.last_detected_at,
        daily: p.daily,
        hourly: p.hourly,
        stations: p.satellites.into_iter().map(|s| (s.name, s.detections)).collect(),
        recent: recent.into_iter().take(10).collect(),
        image,
    };
    ctx.cache.set(&key, &view, Some(VIEW_TTL)).await;
    Ok(view)
}

/// Refuses a species the team has never heard: the page is not a catalogue of every bird.
async fn heard(ctx: Ctx<'_>, team: &Team, code: &str) -> Result<(), PublicError> {
    let tenant = team.id;
    let wanted = code.to_owned();
    // A species the team heard only as detections people rejected has no public page.
    if ctx.store.call(move |c| detection_list::heard_unrejected(c, tenant, &wanted)).await? {
        Ok(())
    } else {
        Err(PublicError::SpeciesNotFound(code.to_owned()))
    }
}

/// The cached picture of a species the team has heard.
pub async fn image(ctx: Ctx<'_>, team: &Team, code: &str) -> Result<species_images::Picture, PublicError> {
    heard(ctx, team, code).await?;
    species_images::picture(ctx.store, ctx.labels, code).await.map_err(|e| match e {
        ImageError::Store(s) => PublicError::Store(s),
        _ => PublicError::NoImage(code.to_owned()),
    })
}

/// The storage key of a detection's recording, when the team shares recordings. A detection of
/// another team, an unknown one and one voted down are all the same 404.
pub async fn audio(ctx: Ctx<'_>, team: &Team, raw_id: &str) -> Result<String, PublicError> {
    if !team.audio {
        return Err(PublicError::AudioNotShared);
    }
    let gone = || PublicError::DetectionNotFound(raw_id.chars().take(40).collect());
    let id: DetectionId = raw_id.parse().map_err(|_| gone())?;
    let tenant = team.id;
    let d = ctx.store.call(move |c| store::detections::get(c, tenant, id)).await.map_err(|e| match e {
        store::Error::NotFound => gone(),
        other => PublicError::Store(other),
    })?;
    if d.verification_status == "rejected" || d.audio_expired_at.is_some() {
        return Err(gone());
    }
    Ok(d.storage_key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rough_positions_lose_the_house_number() {
        assert_eq!(place(52.518_73, false), 52.52);
        assert_eq!(place(-0.123_49, false), -0.12);
        assert_eq!(place(52.518_73, true), 52.518_73);
    }
}

#[cfg(test)]
mod title_tests {
    use super::public_title;

    #[test]
    fn the_title_never_defaults_to_a_persons_name() {
        assert_eq!(public_title(Some("Oak Lane birds"), "Alice Birder's team", Some("Alice Birder")), "Oak Lane birds");
        assert_eq!(public_title(Some("  "), "Alice Birder's team", Some("Alice Birder")), "our station");
        assert_eq!(public_title(None, "Alice Birder's team", Some("Alice Birder")), "our station");
        assert_eq!(public_title(None, "Oak Lane", Some("Alice Birder")), "Oak Lane");
        assert_eq!(public_title(None, "Oak Lane", None), "Oak Lane");
    }
}
