//! A shared detection (SPEC 4.2): what a share link shows a person without an account. The token
//! ([`crate::auth::share`]) names one link of one detection ([`super::share_links`]); a forged,
//! altered, expired, revoked or ended one finds nothing, like an unknown detection. The view carries no team, satellite or storage ids: the species
//! with its common name in the sharer's language (else the team's primary language), the time,
//! the station's name and its place rounded as on the team's public page
//! ([`super::public_page::place`]), and whether the recording still plays.

use serde::Serialize;

use crate::{
    auth::share,
    domain::{languages, settings::TenantSettings},
    ids::DetectionId,
    inference::translations::Translations,
    store::{self, Store, detections::Stored},
    time::Timestamp,
};

#[derive(Debug, thiserror::Error)]
pub enum ShareError {
    #[error("this share link is invalid or has expired")]
    NotFound,
    #[error(transparent)]
    Store(#[from] store::Error),
}

/// The detection a share token opens while its link is live, or [`ShareError::NotFound`].
pub async fn open(
    store: &Store,
    secret: &str,
    now: Timestamp,
    id: DetectionId,
    token: &str,
) -> Result<Stored, ShareError> {
    let link = share::verify(secret, id, token).ok_or(ShareError::NotFound)?;
    let found = store
        .call(move |c| {
            if !store::share_links::is_live(c, &link, id, now)? {
                return Err(store::Error::NotFound);
            }
            store::detections::get_any(c, id)
        })
        .await;
    found.map_err(not_found)
}

/// A missing row is a link that opens nothing, like a bad token.
fn not_found(e: store::Error) -> ShareError {
    match e {
        store::Error::NotFound => ShareError::NotFound,
        other => ShareError::Store(other),
    }
}

/// The detection whose audio a token opens: a live link's, or an audio-only token of the first
/// shape (the iNaturalist export's, [`share::sign_audio`]) until its expiry.
pub async fn open_audio(
    store: &Store,
    secret: &str,
    now: Timestamp,
    id: DetectionId,
    token: &str,
) -> Result<Stored, ShareError> {
    if !share::verify_audio(secret, id, token, now.0.timestamp()) {
        return open(store, secret, now, id, token).await;
    }
    store.call(move |c| store::detections::get_any(c, id)).await.map_err(not_found)
}

/// The shared detection as its page shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SharedView {
    pub id: DetectionId,
    pub species_code: String,
    /// In `lang`.
    pub common_name: String,
    /// The model's English name, when `lang` is another language.
    pub english_name: Option<String>,
    pub scientific_name: String,
    pub lang: String,
    pub confidence: f64,
    /// RFC 3339.
    pub detected_at: String,
    /// The station's IANA zone (its own, else its team's): when the bird sang on its clock.
    pub time_zone: String,
    pub start_ms: i64,
    pub end_ms: i64,
    pub station: String,
    /// The station's place, rounded unless the team shows exact locations.
    pub latitude: Option<f64>,
    pub longitude: Option<f64>,
    pub exact_location: bool,
    /// The recording is still kept (retention keeps it while the link works, unless it was gone
    /// before the link was made).
    pub audio: bool,
    pub verification_status: String,
}

/// The view of the shared detection `id`, names in `lang` when that is a known language, else in
/// the team's primary language.
pub async fn view(
    store: &Store,
    names: &Translations,
    secret: &str,
    now: Timestamp,
    (id, token): (DetectionId, &str),
    lang: Option<&str>,
) -> Result<SharedView, ShareError> {
    let d = open(store, secret, now, id, token).await?;
    let (tenant, sat) = (d.tenant_id, d.satellite_id);
    let (settings, place) = store
        .call(move |c| {
            let settings = store::settings::load::<TenantSettings>(c, &tenant.to_string())?;
            let place = store::satellites::get(c, sat).ok().map(|s| (s.latitude, s.longitude));
            Ok((settings, place))
        })
        .await?;
    let lang = lang
        .filter(|l| languages::find(l).is_some())
        .map(str::to_owned)
        .unwrap_or_else(|| settings.primary_language.clone());
    let common = if lang == "en" { None } else { names.common_name(&lang, &d.species_code) };
    let exact = settings.public_page_exact_locations;
    let (lat, lon) = place.unwrap_or((None, None));
    let round = |v: Option<f64>| v.map(|v| super::public_page::place(v, exact));
    Ok(SharedView {
        id: d.id,
        english_name: common.as_ref().filter(|c| **c != d.common_name).map(|_| d.common_name.clone()),
        common_name: common.unwrap_or_else(|| d.common_name.clone()),
        species_code: d.species_code,
        scientific_name: d.scientific_name,
        lang,
        confidence: d.confidence,
        detected_at: d.detected_at.to_string(),
        time_zone: d.time_zone.clone().unwrap_or_else(|| settings.time_zone.clone()),
        start_ms: d.start_ms,
        end_ms: d.end_ms,
        station: d.satellite_name,
        latitude: round(lat),
        longitude: round(lon),
        exact_location: exact,
        audio: d.audio_expired_at.is_none(),
        verification_status: d.verification_status,
    })
}
