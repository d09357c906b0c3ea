//! What `/stats/weather-correlation` keeps: the weather cache (`weather_days`, one row per place
//! rounded to 0.1° and local day). Its detections per day come from the statistics rollups.

use rusqlite::{Connection, params};

use super::Result;
use crate::time::Timestamp;

/// One day of weather at one place, as the provider gave it (`None`: it had no value).
#[derive(Debug, Clone, PartialEq)]
pub struct WeatherDay {
    /// The local calendar day, `YYYY-MM-DD`.
    pub day: String,
    pub temperature_c: Option<f64>,
    pub precipitation_mm: Option<f64>,
    pub wind_kmh: Option<f64>,
}

/// The cached days of one place from `from_day` to `to_day` inclusive, oldest first.
pub fn cached_days(
    conn: &Connection,
    latitude_e1: i64,
    longitude_e1: i64,
    from_day: &str,
    to_day: &str,
) -> Result<Vec<WeatherDay>> {
    let mut stmt = conn.prepare_cached(
        "SELECT day, temperature_c, precipitation_mm, wind_kmh FROM weather_days
         WHERE latitude_e1 = ?1 AND longitude_e1 = ?2 AND day BETWEEN ?3 AND ?4 ORDER BY day",
    )?;
    let rows = stmt
        .query_map(params![latitude_e1, longitude_e1, from_day, to_day], |r| {
            Ok(WeatherDay {
                day: r.get(0)?,
                temperature_c: r.get(1)?,
                precipitation_mm: r.get(2)?,
                wind_kmh: r.get(3)?,
            })
        })?
        .collect::<rusqlite::Result<_>>()?;
    Ok(rows)
}

/// Keeps `days` for one place, replacing what was kept for the same days.
pub fn save_days(
    conn: &mut Connection,
    latitude_e1: i64,
    longitude_e1: i64,
    days: &[WeatherDay],
    fetched_at: Timestamp,
) -> Result<()> {
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    {
        let mut stmt = tx.prepare_cached(
            "INSERT INTO weather_days
                 (latitude_e1, longitude_e1, day, temperature_c, precipitation_mm, wind_kmh, fetched_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
             ON CONFLICT (latitude_e1, longitude_e1, day) DO UPDATE SET
                 temperature_c = excluded.temperature_c, precipitation_mm = excluded.precipitation_mm,
                 wind_kmh = excluded.wind_kmh, fetched_at = excluded.fetched_at",
        )?;
        for d in days {
            stmt.execute(params![
                latitude_e1,
                longitude_e1,
                d.day,
                d.temperature_c,
                d.precipitation_mm,
                d.wind_kmh,
                fetched_at
            ])?;
        }
    }
    tx.commit()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::testing;

    #[tokio::test]
    async fn the_cache_keeps_days_per_place_and_replaces_a_day() {
        let (store, _dir) = testing::store().await;
        let day = |d: &str, t: f64| WeatherDay {
            day: d.into(),
            temperature_c: Some(t),
            precipitation_mm: Some(0.5),
            wind_kmh: Some(12.0),
        };
        let at: Timestamp = "2026-11-02T08:00:00.000Z".parse().expect("time");
        let got = store
            .call(move |c| {
                save_days(c, 525, 134, &[day("2026-11-01", 5.0), day("2026-10-31", 4.0)], at)?;
                save_days(c, 525, 135, &[day("2026-11-01", 9.0)], at)?;
                save_days(c, 525, 134, &[day("2026-11-01", 6.0)], at)?;
                cached_days(c, 525, 134, "2026-10-31", "2026-11-30")
            })
            .await
            .expect("cache");
        assert_eq!(got, vec![day("2026-10-31", 4.0), day("2026-11-01", 6.0)], "oldest first, the other place apart");
    }
}
