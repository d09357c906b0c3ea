//! How a team's daily detections go with the weather (SPEC 4.8 `weather-correlation`): daily mean
//! temperature, precipitation and maximum wind at the satellites' place from the configured
//! provider ([`provider`], Open-Meteo archive shape), kept per place and day in the database so
//! each day is asked for once, and Pearson's r of each against the detections per day.
//!
//! Days are each station's local days; today is the team zone's date. Today is never asked for
//! (its weather and its count are both incomplete), nor are days after it. Bad input is an
//! error; everything about the weather that cannot be had (no provider, no location, a provider
//! that is down, slow or talks nonsense) is an answer with `available: false` and a reason.

pub mod open_meteo;
pub mod provider;

use std::collections::BTreeMap;

use chrono::{Days, NaiveDate};
use serde::Serialize;

pub use provider::{FetchError, Provider};

use crate::{
    clock::Clock,
    domain::correlation::{Correlation, correlate},
    ids::{SatelliteId, TenantId},
    store::{self, Store, weather::WeatherDay},
};

/// The longest range, in days.
pub const MAX_DAYS: i64 = 366;
/// The range when none is given: the last 30 days, today included.
pub const DEFAULT_DAYS: i64 = 30;

#[derive(Debug, thiserror::Error)]
pub enum WeatherError {
    #[error("There is no such satellite in this team.")]
    SatelliteNotFound,
    /// Parameters that cannot go together.
    #[error("{0}")]
    Conflicting(String),
    #[error("{0}")]
    InvalidRange(String),
    /// Not 0 to 1 in the statistics' steps of 0.05.
    #[error("{0}")]
    InvalidConfidence(String),
    #[error(transparent)]
    Store(#[from] store::Error),
}

/// What to correlate, as asked.
#[derive(Debug, Clone)]
pub struct Ask {
    pub tenant: TenantId,
    /// One satellite (its place and its detections), or the whole team: the mean place of its
    /// located satellites and the detections of all of them.
    pub satellite: Option<SatelliteId>,
    /// The last `days` days, today included; or `from` to `to` inclusive; not both.
    pub days: Option<i64>,
    pub from: Option<NaiveDate>,
    pub to: Option<NaiveDate>,
    pub include_rejected: bool,
    pub min_confidence: Option<f64>,
}

/// The answer: a report, or why there is none.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Answer {
    Available(Box<Report>),
    Unavailable(Unavailable),
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    /// Always `true`.
    pub available: bool,
    pub location: Location,
    pub from: NaiveDate,
    pub to: NaiveDate,
    pub units: Units,
    /// Every day of the range, oldest first; weather values are `null` where there is none.
    pub days: Vec<Day>,
    pub correlations: Correlations,
}

/// The place the weather is for, rounded to 0.1°.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Location {
    pub latitude: f64,
    pub longitude: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Units {
    pub temperature: &'static str,
    pub precipitation: &'static str,
    pub wind: &'static str,
}

const UNITS: Units = Units { temperature: "°C", precipitation: "mm", wind: "km/h" };

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Day {
    pub date: NaiveDate,
    pub detections: i64,
    /// Daily mean at 2 m.
    pub temperature_c: Option<f64>,
    /// Daily sum.
    pub precipitation_mm: Option<f64>,
    /// Daily maximum at 10 m.
    pub wind_kmh: Option<f64>,
}

/// Detections per day against each weather variable.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Correlations {
    pub temperature: Correlation,
    pub precipitation: Correlation,
    pub wind: Correlation,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Unavailable {
    /// Always `false`.
    pub available: bool,
    pub reason_code: ReasonCode,
    pub reason: String,
    pub from: NaiveDate,
    pub to: NaiveDate,
}

/// Why there is no report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ReasonCode {
    /// `weather.provider_url` is empty.
    ProviderNotConfigured,
    /// The satellite, or every satellite of the team, has no location.
    NoLocation,
    /// No connection or no answer in time.
    ProviderUnreachable,
    /// The provider refused the request with its own reason.
    ProviderRejected,
    /// Another status, an oversize reply or one that is not daily weather.
    ProviderError,
}

/// The report for `ask`, or why there is none.
pub async fn correlation(store: &Store, provider: &Provider, clock: &Clock, ask: Ask) -> Result<Answer, WeatherError> {
    // A team figure: "today" and the default range are the team zone's.
    let zone = store.team_zone(ask.tenant).await?;
    let today = crate::domain::zone::local_day(clock.now(), zone);
    let (from, to) = range(&ask, today)?;
    // The rollups count confidence in bands of 0.05, as every statistic does.
    let min_band =
        crate::usecases::stats::band(ask.min_confidence).map_err(|e| WeatherError::InvalidConfidence(e.to_string()))?;
    let (tenant, satellite) = (ask.tenant, ask.satellite);
    let place = store.call(move |c| place(c, tenant, satellite)).await.map_err(|e| match e {
        store::Error::NotFound => WeatherError::SatelliteNotFound,
        other => WeatherError::Store(other),
    })?;
    let unavailable = |reason_code, reason: String| {
        Ok(Answer::Unavailable(Unavailable { available: false, reason_code, reason, from, to }))
    };
    if !provider.is_configured() {
        let reason = "no weather provider is configured (set weather.provider_url)";
        return unavailable(ReasonCode::ProviderNotConfigured, reason.into());
    }
    let Some((lat_e1, lon_e1)) = place else {
        let reason = match satellite {
            Some(_) => "the satellite has no location yet",
            None => "none of the team's satellites has a location yet",
        };
        return unavailable(ReasonCode::NoLocation, reason.into());
    };

    let (first, last) = (from.to_string(), to.to_string());
    // Detections per local day as `/stats/trends` counts them (the statistics rollups).
    let scope = store::stats::Scope {
        tenant,
        satellite,
        from,
        to,
        min_band,
        include_rejected: ask.include_rejected,
        species: None,
    };
    let (cached, counts) = store
        .call(move |c| {
            let cached = store::weather::cached_days(c, lat_e1, lon_e1, &first, &last)?;
            let counts: Vec<(String, i64)> =
                store::stats::series::by_day(c, &scope)?.into_iter().map(|(day, n, _)| (day, n)).collect();
            Ok((cached, counts))
        })
        .await?;
    let mut weather: BTreeMap<String, WeatherDay> = cached.into_iter().map(|d| (d.day.clone(), d)).collect();
    let past_end = to.min(today.pred_opt().unwrap_or(today));
    let missing: Vec<NaiveDate> =
        from.iter_days().take_while(|d| *d <= past_end).filter(|d| !weather.contains_key(&d.to_string())).collect();
    if let (Some(start), Some(end)) = (missing.first(), missing.last()) {
        let fresh = match provider.daily(lat_e1 as f64 / 10.0, lon_e1 as f64 / 10.0, *start, *end).await {
            Ok(days) => keep(store, clock, (lat_e1, lon_e1), &weather, days, (*start, *end)).await?,
            Err(e) => {
                tracing::warn!(error = %e, "weather provider");
                let code = match e {
                    FetchError::Unreachable(_) => ReasonCode::ProviderUnreachable,
                    FetchError::Rejected(_) => ReasonCode::ProviderRejected,
                    FetchError::Failed(_) => ReasonCode::ProviderError,
                };
                return unavailable(code, e.to_string());
            }
        };
        weather.extend(fresh.into_iter().map(|d| (d.day.clone(), d)));
    }
    let counts: BTreeMap<String, i64> = counts.into_iter().collect();
    let days = days_of(from, to, &counts, &weather);
    let against = |value: fn(&Day) -> Option<f64>| correlate(days.iter().map(|d| (d.detections as f64, value(d))));
    let correlations = Correlations {
        temperature: against(|d| d.temperature_c),
        precipitation: against(|d| d.precipitation_mm),
        wind: against(|d| d.wind_kmh),
    };
    let location = Location { latitude: lat_e1 as f64 / 10.0, longitude: lon_e1 as f64 / 10.0 };
    Ok(Answer::Available(Box::new(Report { available: true, location, from, to, units: UNITS, days, correlations })))
}

/// The fetched days of `start..=end` that were not cached, after keeping the complete ones
/// (every value known) in the cache.
async fn keep(
    store: &Store,
    clock: &Clock,
    (lat_e1, lon_e1): (i64, i64),
    cached: &BTreeMap<String, WeatherDay>,
    fetched: Vec<WeatherDay>,
    (start, end): (NaiveDate, NaiveDate),
) -> Result<Vec<WeatherDay>, WeatherError> {
    let (start, end) = (start.to_string(), end.to_string());
    let fresh: Vec<WeatherDay> =
        fetched.into_iter().filter(|d| d.day >= start && d.day <= end && !cached.contains_key(&d.day)).collect();
    let complete: Vec<WeatherDay> = fresh
        .iter()
        .filter(|d| d.temperature_c.is_some() && d.precipitation_mm.is_some() && d.wind_kmh.is_some())
        .cloned()
        .collect();
    if !complete.is_empty() {
        let now = clock.stamp();
        store.call(move |c| store::weather::save_days(c, lat_e1, lon_e1, &complete, now)).await?;
    }
    Ok(fresh)
}

/// Every day of `from..=to` with its count (0 when none) and whatever weather it has.
fn days_of(
    from: NaiveDate,
    to: NaiveDate,
    counts: &BTreeMap<String, i64>,
    weather: &BTreeMap<String, WeatherDay>,
) -> Vec<Day> {
    from.iter_days()
        .take_while(|d| *d <= to)
        .map(|date| {
            let key = date.to_string();
            let w = weather.get(&key);
            Day {
                date,
                detections: counts.get(&key).copied().unwrap_or(0),
                temperature_c: w.and_then(|w| w.temperature_c),
                precipitation_mm: w.and_then(|w| w.precipitation_mm),
                wind_kmh: w.and_then(|w| w.wind_kmh),
            }
        })
        .collect()
}

/// The first and last day asked for: `days` ending today, or `from` to `to`, or the default.
fn range(ask: &Ask, today: NaiveDate) -> Result<(NaiveDate, NaiveDate), WeatherError> {
    let bad = |m: String| Err(WeatherError::InvalidRange(m));
    let (from, to) = match (ask.days, ask.from, ask.to) {
        (Some(_), Some(_), _) | (Some(_), _, Some(_)) => {
            return Err(WeatherError::Conflicting("give days, or from and to, not both".into()));
        }
        (_, Some(from), Some(to)) => (from, to),
        (None, Some(_), None) | (None, None, Some(_)) => {
            return Err(WeatherError::Conflicting("give from and to together".into()));
        }
        (days, None, None) => {
            let days = days.unwrap_or(DEFAULT_DAYS);
            if !(1..=MAX_DAYS).contains(&days) {
                return bad(format!("days must be 1 to {MAX_DAYS}, not {days}"));
            }
            (today - Days::new(days as u64 - 1), today)
        }
    };
    if from > to {
        return bad(format!("from ({from}) is after to ({to})"));
    }
    if to > today {
        return bad(format!("to ({to}) is after today ({today} on the hub)"));
    }
    let span = (to - from).num_days() + 1;
    if span > MAX_DAYS {
        return bad(format!("from {from} to {to} is {span} days; the most is {MAX_DAYS}"));
    }
    Ok((from, to))
}

/// The place of one satellite, or the mean place of the team's located satellites, rounded to
/// 0.1° as whole tenths; `None` without a location. `NotFound` for a satellite of another team.
fn place(
    conn: &rusqlite::Connection,
    tenant: TenantId,
    satellite: Option<SatelliteId>,
) -> store::Result<Option<(i64, i64)>> {
    let located: Vec<(f64, f64)> = match satellite {
        Some(id) => {
            let sat = store::satellites::get(conn, id)?;
            if sat.tenant_id != tenant {
                return Err(store::Error::NotFound);
            }
            sat.latitude.zip(sat.longitude).into_iter().collect()
        }
        None => {
            let all = store::satellites::ListFilter { limit: u32::MAX, ..Default::default() };
            let (sats, _) = store::satellites::list(conn, tenant, &all)?;
            sats.iter().filter_map(|s| s.latitude.zip(s.longitude)).collect()
        }
    };
    if located.is_empty() {
        return Ok(None);
    }
    // A plain mean: a team's satellites are a few kilometres apart, never across the antimeridian.
    let n = located.len() as f64;
    let lat = located.iter().map(|p| p.0).sum::<f64>() / n;
    let lon = located.iter().map(|p| p.1).sum::<f64>() / n;
    Ok(Some(((lat * 10.0).round() as i64, (lon * 10.0).round() as i64)))
}

#[cfg(test)]
mod tests;
