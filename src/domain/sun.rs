//! Sunrise, solar noon and sunset for a place and a local calendar date, for the satellites'
//! sun-relative recording schedules.
//!
//! Follows the NOAA Global Monitoring Laboratory's solar position algorithm, as published in its
//! "NOAA Solar Calculator" spreadsheet (<https://gml.noaa.gov/grad/solcalc/calcdetails.html>),
//! itself based on Jean Meeus, *Astronomical Algorithms* (1991): Julian century, geometric mean
//! longitude and anomaly, equation of centre, apparent longitude, corrected obliquity,
//! declination, equation of time, and the hour angle of sunrise for a 90.833° zenith (refraction
//! and the solar disc's radius). Each event is re-evaluated at its own instant, as NOAA's web
//! calculator does, so results agree with NOAA's published times to well under a minute outside
//! the polar circles.

use chrono::{DateTime, Duration, NaiveDate, TimeZone, Utc};

/// The sun's day at one place on one local calendar date.
#[derive(Debug, Clone, PartialEq)]
pub enum SunDay<Tz: TimeZone> {
    /// The sun rises and sets on this date.
    Normal { sunrise: DateTime<Tz>, noon: DateTime<Tz>, sunset: DateTime<Tz> },
    /// The sun stays above the horizon all day (midnight sun).
    PolarDay { noon: DateTime<Tz> },
    /// The sun stays below the horizon all day.
    PolarNight { noon: DateTime<Tz> },
}

impl<Tz: TimeZone> SunDay<Tz> {
    /// Solar noon, which exists in every case.
    pub fn noon(&self) -> &DateTime<Tz> {
        match self {
            SunDay::Normal { noon, .. } | SunDay::PolarDay { noon } | SunDay::PolarNight { noon } => noon,
        }
    }
}

/// Zenith angle of the sun's centre at apparent sunrise and sunset, in degrees.
const SUNRISE_ZENITH_DEG: f64 = 90.833;

/// Sunrise, solar noon and sunset at `lat`/`lon` (degrees; north and east positive) on `date`,
/// a calendar date in `tz` (a `FixedOffset`, `Utc` or a `chrono_tz::Tz`).
pub fn sun_day<Tz: TimeZone>(lat: f64, lon: f64, date: NaiveDate, tz: &Tz) -> SunDay<Tz> {
    let lat = lat.clamp(-90.0, 90.0);
    // Solar noon on UTC date `date` is usually on the same local date; zones far from their
    // meridian (e.g. UTC+14 at 157° W) need the neighbouring UTC date.
    let mut utc_date = date;
    let mut day = solve(lat, lon, utc_date);
    for _ in 0..2 {
        let local = at(utc_date, day.noon, tz).date_naive();
        let shift = (date - local).num_days().signum();
        if shift == 0 {
            break;
        }
        utc_date += Duration::days(shift);
        day = solve(lat, lon, utc_date);
    }
    let noon = at(utc_date, day.noon, tz);
    match day.rise_set {
        RiseSet::Both(rise, set) => {
            SunDay::Normal { sunrise: at(utc_date, rise, tz), noon, sunset: at(utc_date, set, tz) }
        }
        RiseSet::AlwaysUp => SunDay::PolarDay { noon },
        RiseSet::AlwaysDown => SunDay::PolarNight { noon },
    }
}

/// Events of one UTC date, in minutes after its midnight (may fall outside 0..1440).
struct Events {
    noon: f64,
    rise_set: RiseSet,
}

enum RiseSet {
    Both(f64, f64),
    AlwaysUp,
    AlwaysDown,
}

fn solve(lat: f64, lon: f64, utc_date: NaiveDate) -> Events {
    let jd0 = julian_day_at_midnight(utc_date);
    // Noon: start from the mean solar noon, then evaluate at the estimate itself.
    let mut noon = 720.0 - 4.0 * lon;
    for _ in 0..2 {
        noon = 720.0 - 4.0 * lon - position(jd0 + noon / 1440.0).equation_of_time_min;
    }
    let at_noon = position(jd0 + noon / 1440.0);
    let rise_set = match hour_angle_deg(lat, at_noon.declination_deg) {
        Err(up) => {
            if up {
                RiseSet::AlwaysUp
            } else {
                RiseSet::AlwaysDown
            }
        }
        Ok(ha) => {
            let refine = |sign: f64| {
                let mut t = noon + sign * 4.0 * ha;
                for _ in 0..2 {
                    let p = position(jd0 + t / 1440.0);
                    // Near the polar circles the refined instant may have no crossing; keep the
                    // estimate from noon then.
                    if let Ok(h) = hour_angle_deg(lat, p.declination_deg) {
                        t = 720.0 - 4.0 * lon - p.equation_of_time_min + sign * 4.0 * h;
                    }
                }
                t
            };
            RiseSet::Both(refine(-1.0), refine(1.0))
        }
    };
    Events { noon, rise_set }
}

/// Julian Day Number at 00:00 UTC of `date` (2000-01-01 12:00 UTC is 2451545.0).
fn julian_day_at_midnight(date: NaiveDate) -> f64 {
    let epoch = NaiveDate::from_ymd_opt(2000, 1, 1).unwrap_or_default();
    (date - epoch).num_days() as f64 + 2_451_544.5
}

/// `minutes` after 00:00 UTC of `utc_date`, in `tz`, to the second.
fn at<Tz: TimeZone>(utc_date: NaiveDate, minutes: f64, tz: &Tz) -> DateTime<Tz> {
    let midnight = Utc.from_utc_datetime(&utc_date.and_hms_opt(0, 0, 0).unwrap_or_default());
    let secs = (minutes * 60.0).round() as i64;
    (midnight + Duration::seconds(secs)).with_timezone(tz)
}

struct SolarPosition {
    declination_deg: f64,
    equation_of_time_min: f64,
}

/// The spreadsheet's columns G to V for Julian Day `jd`.
fn position(jd: f64) -> SolarPosition {
    let t = (jd - 2_451_545.0) / 36_525.0; // Julian century
    let mean_long = (280.46646 + t * (36000.76983 + t * 0.0003032)).rem_euclid(360.0);
    let mean_anom = 357.52911 + t * (35999.05029 - 0.0001537 * t);
    let ecc = 0.016708634 - t * (0.000042037 + 0.0000001267 * t);
    let m = mean_anom.to_radians();
    let centre = m.sin() * (1.914602 - t * (0.004817 + 0.000014 * t))
        + (2.0 * m).sin() * (0.019993 - 0.000101 * t)
        + (3.0 * m).sin() * 0.000289;
    let true_long = mean_long + centre;
    let omega = (125.04 - 1934.136 * t).to_radians();
    let app_long = true_long - 0.00569 - 0.00478 * omega.sin();
    let mean_obliq = 23.0 + (26.0 + (21.448 - t * (46.815 + t * (0.00059 - t * 0.001813))) / 60.0) / 60.0;
    let obliq = (mean_obliq + 0.00256 * omega.cos()).to_radians();
    let declination = (obliq.sin() * app_long.to_radians().sin()).asin();
    let y = (obliq / 2.0).tan().powi(2);
    let l0 = mean_long.to_radians();
    let eot_rad = y * (2.0 * l0).sin() - 2.0 * ecc * m.sin() + 4.0 * ecc * y * m.sin() * (2.0 * l0).cos()
        - 0.5 * y * y * (4.0 * l0).sin()
        - 1.25 * ecc * ecc * (2.0 * m).sin();
    SolarPosition { declination_deg: declination.to_degrees(), equation_of_time_min: 4.0 * eot_rad.to_degrees() }
}

/// Hour angle of sunrise in degrees, or `Err(true)` if the sun never sets, `Err(false)` if it
/// never rises.
fn hour_angle_deg(lat: f64, decl: f64) -> Result<f64, bool> {
    let (lat, decl) = (lat.to_radians(), decl.to_radians());
    let cos_ha = SUNRISE_ZENITH_DEG.to_radians().cos() / (lat.cos() * decl.cos()) - lat.tan() * decl.tan();
    if !cos_ha.is_finite() {
        // At a pole: the sun is up when its declination has the pole's sign.
        return Err(lat.signum() == decl.signum());
    }
    if cos_ha > 1.0 {
        Err(false)
    } else if cos_ha < -1.0 {
        Err(true)
    } else {
        Ok(cos_ha.acos().to_degrees())
    }
}

#[cfg(test)]
#[path = "sun_tests.rs"]
mod tests;
