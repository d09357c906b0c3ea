//! A satellite's recording schedule resolved for today and tomorrow in the satellite's own zone
//! (its effective zone: a station records by its local sun and clock) (SPEC 2.5, 4.4 `GET /satellites/:id/schedule`): sun times at its position, the windows
//! of its stored recording profile (default profile when none), and whether it records now.

use chrono::{DateTime, Duration, FixedOffset, NaiveDate, Utc};
use chrono_tz::Tz;
use serde::Serialize;

use crate::{
    domain::{
        satellite_config::RecordingProfile,
        schedule::{self, ALL_DAY},
        sun::{SunDay, sun_day},
    },
    store::satellites::Satellite,
};

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ScheduleView {
    pub satellite_id: String,
    /// IANA name of the satellite's zone, which the times are in.
    pub timezone: Option<String>,
    pub latitude: Option<f64>,
    pub longitude: Option<f64>,
    pub profile_type: String,
    pub recording_now: bool,
    pub days: Vec<DayView>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DayView {
    pub date: NaiveDate,
    pub sunrise: Option<DateTime<FixedOffset>>,
    pub solar_noon: Option<DateTime<FixedOffset>>,
    pub sunset: Option<DateTime<FixedOffset>>,
    /// `day` (the sun never sets) or `night` (it never rises); `None` otherwise.
    pub polar: Option<&'static str>,
    pub windows: Vec<WindowView>,
    pub unresolved: Vec<UnresolvedView>,
}

#[derive(Debug, Serialize)]
pub struct WindowView {
    pub start: DateTime<FixedOffset>,
    pub end: DateTime<FixedOffset>,
    /// `sunrise`, `sunset`, `absolute`, or `allDay` for an empty schedule.
    pub reference: String,
    /// Index into the profile's schedule; `None` for the all-day window of an empty schedule.
    pub entry: Option<usize>,
}

#[derive(Debug, Serialize)]
pub struct UnresolvedView {
    pub entry: usize,
    pub reason: String,
}

/// The stored profile, or the default one when none is stored (or it no longer parses).
fn profile_of(sat: &Satellite) -> RecordingProfile {
    sat.recording_profile_json.as_deref().and_then(|j| serde_json::from_str(j).ok()).unwrap_or_default()
}

/// The schedule of `sat` for the local day (in `zone`, the satellite's) of `now` and the next.
pub fn resolve(sat: &Satellite, now: DateTime<Utc>, zone: Tz) -> ScheduleView {
    let profile = profile_of(sat);
    let position = sat.latitude.zip(sat.longitude);
    let today = crate::usecases::stats::today(now, zone);
    let days = [today, today + Duration::days(1)]
        .into_iter()
        .map(|date| {
            let (windows, unresolved) = schedule::windows_on(&profile.schedule, position, date, &zone);
            let sun = position.map(|(lat, lon)| sun_day(lat, lon, date, &zone));
            let (sunrise, sunset, polar) = match &sun {
                Some(SunDay::Normal { sunrise, sunset, .. }) => {
                    (Some(sunrise.fixed_offset()), Some(sunset.fixed_offset()), None)
                }
                Some(SunDay::PolarDay { .. }) => (None, None, Some("day")),
                Some(SunDay::PolarNight { .. }) => (None, None, Some("night")),
                None => (None, None, None),
            };
            DayView {
                date,
                sunrise,
                solar_noon: sun.as_ref().map(|s| s.noon().fixed_offset()),
                sunset,
                polar,
                windows: windows
                    .into_iter()
                    .map(|w| WindowView {
                        start: w.start.with_timezone(&zone).fixed_offset(),
                        end: w.end.with_timezone(&zone).fixed_offset(),
                        reference: profile
                            .schedule
                            .get(w.entry)
                            .map_or_else(|| "allDay".to_owned(), |e| e.reference.clone()),
                        entry: (w.entry != ALL_DAY).then_some(w.entry),
                    })
                    .collect(),
                unresolved: unresolved
                    .into_iter()
                    .map(|u| UnresolvedView { entry: u.entry, reason: u.reason })
                    .collect(),
            }
        })
        .collect();
    ScheduleView {
        satellite_id: sat.id.to_string(),
        timezone: Some(zone.name().to_owned()),
        latitude: sat.latitude,
        longitude: sat.longitude,
        profile_type: profile.kind.clone(),
        recording_now: schedule::active_at(&profile.schedule, position, now, &zone),
        days,
    }
}
