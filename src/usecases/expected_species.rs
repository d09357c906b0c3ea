//! Species expected at a place and week (SPEC 4.8 `expected-species`), answered offline by the
//! BirdNET range meta-model the hub already runs, instead of an online checklist service. Each
//! expected species says whether (and when last) the team has detected it.

use serde::Serialize;

use crate::{
    ids::TenantId,
    inference::{range, translations::Translations},
    store::{self, Store},
    time::Timestamp,
};

#[derive(Debug, thiserror::Error)]
pub enum ExpectedError {
    #[error("{0}")]
    Invalid(String),
    #[error("the range model is not available: {0}")]
    Model(String),
    #[error(transparent)]
    Store(#[from] store::Error),
}

/// Where and when to ask, in the team's language.
#[derive(Debug, Clone)]
pub struct Ask {
    pub tenant: TenantId,
    pub latitude: f64,
    pub longitude: f64,
    /// BirdNET week, 1..=48.
    pub week: u32,
    pub threshold: f32,
    pub lang: String,
    /// Only this species (a species page asks about one): the answer lists it when it scores at
    /// least the threshold, and the team's last detection is looked up for it alone.
    pub only: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Expected {
    pub species_code: String,
    pub scientific_name: String,
    pub common_name: String,
    /// The range model's occurrence score, 0 to 1.
    pub score: f32,
    pub detected_here: bool,
    pub last_detected_at: Option<Timestamp>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Answer {
    pub latitude: f64,
    pub longitude: f64,
    pub week: u32,
    pub threshold: f32,
    pub total: usize,
    pub detected: usize,
    /// Highest score first.
    pub species: Vec<Expected>,
}

/// The species scoring at least `ask.threshold`, highest first, each marked detected or not.
pub async fn expected(
    store: &Store,
    filter: &range::Shared,
    names: &Translations,
    ask: Ask,
) -> Result<Answer, ExpectedError> {
    if !(-90.0..=90.0).contains(&ask.latitude) || !(-180.0..=180.0).contains(&ask.longitude) {
        return Err(ExpectedError::Invalid("lat must be -90 to 90 and lon -180 to 180".into()));
    }
    if !(1..=48).contains(&ask.week) {
        return Err(ExpectedError::Invalid("week must be 1 to 48 (four per month)".into()));
    }
    if !(0.0..=1.0).contains(&ask.threshold) {
        return Err(ExpectedError::Invalid("threshold must be between 0 and 1".into()));
    }
    let (filter, names2, a) = (filter.clone(), names.clone(), ask.clone());
    let mut species = tokio::task::spawn_blocking(move || -> Result<Vec<Expected>, ExpectedError> {
        let model = filter.get().map_err(|e| ExpectedError::Model(e.to_string()))?;
        let classes = names2.classes().ok_or_else(|| ExpectedError::Model("no label files".into()))?;
        let scores = model.scores(a.latitude, a.longitude, a.week).map_err(|e| ExpectedError::Model(e.to_string()))?;
        Ok(scores
            .iter()
            .enumerate()
            .filter(|(_, s)| **s >= a.threshold)
            .filter_map(|(i, s)| {
                let l = classes.get(i)?;
                if a.only.as_ref().is_some_and(|only| *only != l.code) {
                    return None;
                }
                let common = names2.common_name(&a.lang, &l.code).unwrap_or_else(|| l.common.clone());
                Some(Expected {
                    species_code: l.code.clone(),
                    scientific_name: l.scientific.clone(),
                    common_name: common,
                    score: *s,
                    detected_here: false,
                    last_detected_at: None,
                })
            })
            .collect())
    })
    .await
    .map_err(|e| ExpectedError::Model(e.to_string()))??;
    species.sort_by(|a, b| b.score.total_cmp(&a.score).then_with(|| a.species_code.cmp(&b.species_code)));
    let codes: Vec<String> = species.iter().map(|s| s.species_code.clone()).collect();
    let tenant = ask.tenant;
    let seen = store
        .call(move |c| {
            codes.iter().map(|code| store::activity::last_detected(c, tenant, code)).collect::<Result<Vec<_>, _>>()
        })
        .await?;
    for (s, last) in species.iter_mut().zip(seen) {
        s.detected_here = last.is_some();
        s.last_detected_at = last;
    }
    let detected = species.iter().filter(|s| s.detected_here).count();
    Ok(Answer {
        latitude: ask.latitude,
        longitude: ask.longitude,
        week: ask.week,
        threshold: ask.threshold,
        total: species.len(),
        detected,
        species,
    })
}
