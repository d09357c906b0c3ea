//! Statistics (SPEC 4.8) for the dashboard's charts, read from the rollups (`store::stats`).
//!
//! Every route takes the same filters, checked here into a [`store::stats::Scope`]:
//! - `satelliteId`: one of the team's satellites (404 `satellite_not_found` otherwise);
//! - `days` (1 to [`MAX_DAYS`], ending today) or `from`/`to` (local `YYYY-MM-DD`, inclusive, at
//!   most [`MAX_DAYS`] apart); each route has its own default range;
//! - `includeRejected` (default false: detections voted down are left out of every count);
//! - `minConfidence`: 0 to 1 in steps of 0.05, the rollups' confidence bands.
//!
//! Days and hours are each station's local time (its effective zone, `store::stats::zoned`);
//! "today" and default ranges are the team zone's.

pub mod overview;
pub mod places;
pub mod profile;

use std::collections::HashMap;

use chrono::NaiveDate;
use serde::Serialize;

use crate::{
    ids::{SatelliteId, TenantId},
    inference::translations::Translations,
    store::{self, Store, stats::Scope},
};

/// The longest range a statistic covers (a year, leap day included).
pub const MAX_DAYS: i64 = 366;
/// The resolution of `minConfidence` (the rollups' confidence bands).
pub const CONFIDENCE_STEP: f64 = 0.05;

#[derive(Debug, thiserror::Error)]
pub enum StatsError {
    #[error("{0}")]
    InvalidRange(String),
    #[error("{0}")]
    InvalidConfidence(String),
    #[error("{0}")]
    Invalid(String),
    #[error("no satellite {0} in this team")]
    SatelliteNotFound(String),
    #[error("unknown species {0:?}")]
    SpeciesNotFound(String),
    #[error("unknown language {0:?}; GET /species/languages lists them")]
    UnknownLanguage(String),
    #[error(transparent)]
    Store(#[from] store::Error),
}

/// The filters a request gave, before they are checked.
#[derive(Debug, Clone, Default)]
pub struct Filters {
    pub satellite: Option<SatelliteId>,
    pub days: Option<i64>,
    pub from: Option<NaiveDate>,
    pub to: Option<NaiveDate>,
    pub include_rejected: bool,
    pub min_confidence: Option<f64>,
    pub lang: Option<String>,
}

/// The checked range, echoed in every answer.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Range {
    pub from: NaiveDate,
    pub to: NaiveDate,
    pub days: i64,
    pub satellite_id: Option<SatelliteId>,
    pub include_rejected: bool,
    pub min_confidence: f64,
}

/// `YYYY-MM-DD` of every day of `range`, oldest first.
pub fn day_keys(range: &Range) -> Vec<String> {
    range.from.iter_days().take_while(|d| *d <= range.to).map(crate::store::stats::day_key).collect()
}

/// Today in `zone`: a team figure's "today" and default ranges are the team zone's (each station's
/// detections count on its own local day, `store::stats::zoned`).
pub fn today(now: chrono::DateTime<chrono::Utc>, zone: chrono_tz::Tz) -> NaiveDate {
    crate::domain::zone::local_day(now, zone)
}

/// Checks `f` into a scope of `tenant` (`today` is the team zone's date).
pub async fn scope(
    store: &Store,
    tenant: TenantId,
    f: &Filters,
    default_days: i64,
    today: NaiveDate,
) -> Result<(Scope, Range), StatsError> {
    let (from, to) = range(f, default_days, today)?;
    let min_band = band(f.min_confidence)?;
    if let Some(id) = f.satellite {
        let ours = store.call(move |c| store::satellites::get(c, id)).await.ok().is_some_and(|s| s.tenant_id == tenant);
        if !ours {
            return Err(StatsError::SatelliteNotFound(id.to_string()));
        }
    }
    let scope = Scope {
        tenant,
        satellite: f.satellite,
        from,
        to,
        min_band,
        include_rejected: f.include_rejected,
        species: None,
    };
    let range = Range {
        from,
        to,
        days: (to - from).num_days() + 1,
        satellite_id: f.satellite,
        include_rejected: f.include_rejected,
        min_confidence: f64::from(min_band) * CONFIDENCE_STEP,
    };
    Ok((scope, range))
}

fn range(f: &Filters, default_days: i64, today: NaiveDate) -> Result<(NaiveDate, NaiveDate), StatsError> {
    let bad = |m: String| Err(StatsError::InvalidRange(m));
    let last_days = |n: i64| -> Result<(NaiveDate, NaiveDate), StatsError> {
        if !(1..=MAX_DAYS).contains(&n) {
            return Err(StatsError::InvalidRange(format!("days must be 1 to {MAX_DAYS}, not {n}")));
        }
        Ok((today - chrono::Duration::days(n - 1), today))
    };
    match (f.days, f.from, f.to) {
        (Some(_), Some(_), _) | (Some(_), _, Some(_)) => bad("give days, or from and to, not both".into()),
        (Some(n), None, None) => last_days(n),
        // The route's own default: its last `default_days` days.
        (None, None, None) => last_days(default_days),
        (None, from, to) => {
            let to = to.unwrap_or(today);
            let from = from.unwrap_or(to - chrono::Duration::days(default_days - 1));
            if from > to {
                return bad(format!("from ({from}) is after to ({to})"));
            }
            let span = (to - from).num_days() + 1;
            if span > MAX_DAYS {
                return bad(format!("from {from} to {to} is {span} days; the most is {MAX_DAYS}"));
            }
            Ok((from, to))
        }
    }
}

/// The confidence band of `minConfidence` (0 without one).
pub fn band(min: Option<f64>) -> Result<u8, StatsError> {
    let Some(min) = min else { return Ok(0) };
    if !(0.0..=1.0).contains(&min) {
        return Err(StatsError::InvalidConfidence(format!("minConfidence must be 0 to 1, not {min}")));
    }
    let steps = min / CONFIDENCE_STEP;
    if (steps - steps.round()).abs() > 1e-6 {
        return Err(StatsError::InvalidConfidence(format!(
            "statistics count confidence in steps of {CONFIDENCE_STEP}: give minConfidence as 0.5, 0.55, 0.6, ... (not {min})"
        )));
    }
    Ok(steps.round() as u8)
}

/// Display names of species codes in a language.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Named {
    pub species_code: String,
    pub common_name: String,
    pub scientific_name: String,
}

/// Names the team's species: the common name in `lang` where the model ships it, else as stored
/// with the detections.
pub struct Names {
    stored: HashMap<String, (String, String)>,
    lang: String,
    labels: Translations,
}

impl Names {
    pub async fn load(
        store: &Store,
        labels: &Translations,
        tenant: TenantId,
        lang: Option<&str>,
    ) -> Result<Self, StatsError> {
        let lang = match lang {
            Some(l) if crate::domain::languages::find(l).is_none() => {
                return Err(StatsError::UnknownLanguage(l.to_owned()));
            }
            Some(l) => l.to_owned(),
            None => {
                let scope = tenant.to_string();
                let settings: crate::domain::settings::TenantSettings =
                    store.call(move |c| store::settings::load(c, &scope)).await?;
                settings.primary_language
            }
        };
        let rows = store.call(move |c| store::detection_list::team_species(c, tenant)).await?;
        let stored = rows.into_iter().map(|r| (r.species_code, (r.common_name, r.scientific_name))).collect();
        Ok(Self { stored, lang, labels: labels.clone() })
    }

    pub fn knows(&self, code: &str) -> bool {
        self.stored.contains_key(code)
    }

    pub fn name(&self, code: &str) -> Named {
        let (common, scientific) = self.stored.get(code).cloned().unwrap_or_default();
        let common = self.labels.common_name(&self.lang, code).unwrap_or(common);
        Named { species_code: code.to_owned(), common_name: common, scientific_name: scientific }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(s: &str) -> NaiveDate {
        s.parse().expect("date")
    }

    #[test]
    fn ranges_default_and_refuse_what_they_should() {
        let today = d("2026-11-23");
        let f = Filters::default();
        assert_eq!(range(&f, 30, today).ok(), Some((d("2026-10-25"), today)));
        for days in [0, -3, 100_000, 367] {
            let f = Filters { days: Some(days), ..Filters::default() };
            assert!(matches!(range(&f, 30, today), Err(StatsError::InvalidRange(_))), "{days}");
        }
        let f = Filters { from: Some(d("2026-11-02")), to: Some(d("2026-11-01")), ..Filters::default() };
        assert!(range(&f, 30, today).is_err());
        let f = Filters { from: Some(d("2025-01-01")), to: Some(d("2026-01-02")), ..Filters::default() };
        assert!(range(&f, 30, today).is_err(), "367 days");
        let f = Filters { from: Some(d("2025-01-01")), to: Some(d("2025-12-31")), ..Filters::default() };
        assert_eq!(range(&f, 30, today).ok(), Some((d("2025-01-01"), d("2025-12-31"))));
        let f = Filters { from: Some(d("2026-11-20")), ..Filters::default() };
        assert_eq!(range(&f, 30, today).ok(), Some((d("2026-11-20"), today)));
    }

    #[test]
    fn min_confidence_is_a_band_in_steps_of_a_twentieth() {
        assert_eq!(band(None).ok(), Some(0));
        assert_eq!(band(Some(0.75)).ok(), Some(15));
        assert_eq!(band(Some(0.7)).ok(), Some(14));
        assert_eq!(band(Some(1.0)).ok(), Some(20));
        assert!(band(Some(0.72)).is_err());
        assert!(band(Some(1.5)).is_err());
        assert!(band(Some(-0.05)).is_err());
    }
}
