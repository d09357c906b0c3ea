//! The Open-Meteo archive API's daily document (FORMATS.md section 5): the query the hub sends,
//! the reply's parallel arrays and the error document. Pure parsing, no I/O.

use chrono::NaiveDate;
use serde::Deserialize;

use crate::{notify::text, store::weather::WeatherDay};

/// The daily variables asked for, in the provider's names. The default units answer them in °C,
/// mm and km/h, which [`parse_daily`] checks when the reply names its units.
pub const DAILY: &str = "temperature_2m_mean,precipitation_sum,wind_speed_10m_max";

/// How much of a provider's error reason is passed on.
const REASON_CHARS: usize = 200;

#[derive(Deserialize)]
struct Document {
    daily: Daily,
    daily_units: Option<Units>,
}

#[derive(Deserialize)]
struct Daily {
    time: Vec<String>,
    temperature_2m_mean: Vec<Option<f64>>,
    precipitation_sum: Vec<Option<f64>>,
    wind_speed_10m_max: Vec<Option<f64>>,
}

#[derive(Deserialize)]
struct Units {
    temperature_2m_mean: Option<String>,
    precipitation_sum: Option<String>,
    wind_speed_10m_max: Option<String>,
}

#[derive(Deserialize)]
struct ErrorDocument {
    error: bool,
    reason: String,
}

/// The days of a daily reply, in the reply's order. A `null` value is a day the provider has no
/// value for (`None`); anything else that does not fit the shape is an error saying what.
pub fn parse_daily(body: &[u8]) -> Result<Vec<WeatherDay>, String> {
    let doc: Document = serde_json::from_slice(body).map_err(|e| format!("not a daily weather document: {e}"))?;
    if let Some(units) = &doc.daily_units {
        let expected = [
            ("temperature_2m_mean", &units.temperature_2m_mean, "°C"),
            ("precipitation_sum", &units.precipitation_sum, "mm"),
            ("wind_speed_10m_max", &units.wind_speed_10m_max, "km/h"),
        ];
        for (name, unit, want) in expected {
            if let Some(unit) = unit.as_deref().filter(|u| *u != want) {
                return Err(format!("{name} came in {}, not {want}", text::fit(unit, 20)));
            }
        }
    }
    let d = doc.daily;
    let n = d.time.len();
    if d.temperature_2m_mean.len() != n || d.precipitation_sum.len() != n || d.wind_speed_10m_max.len() != n {
        return Err("the daily arrays are not as long as daily.time".into());
    }
    d.time
        .iter()
        .enumerate()
        .map(|(i, day)| {
            let date = NaiveDate::parse_from_str(day, "%Y-%m-%d")
                .map_err(|_| format!("daily.time has {:?}, not a YYYY-MM-DD date", text::fit(day, 20)))?;
            Ok(WeatherDay {
                day: date.to_string(),
                temperature_c: d.temperature_2m_mean[i],
                precipitation_mm: d.precipitation_sum[i],
                wind_kmh: d.wind_speed_10m_max[i],
            })
        })
        .collect()
}

/// The `reason` of an error document `{"error": true, "reason": "..."}`, on one line and at most
/// 200 characters (it is shown to people as it came).
pub fn error_reason(body: &[u8]) -> Option<String> {
    let doc: ErrorDocument = serde_json::from_slice(body).ok()?;
    let reason = text::fit(&text::one_line(&doc.reason), REASON_CHARS);
    (doc.error && !reason.is_empty()).then_some(reason)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reply of FORMATS.md section 5, shortened to three days, one with nulls.
    const REPLY: &str = r#"{"latitude":52.52,"longitude":13.419998,"generationtime_ms":0.3,
        "utc_offset_seconds":7200,"timezone":"Europe/Berlin","timezone_abbreviation":"GMT+2","elevation":38.0,
        "daily_units":{"time":"iso8601","temperature_2m_mean":"°C","precipitation_sum":"mm","wind_speed_10m_max":"km/h"},
        "daily":{"time":["2024-05-01","2024-05-02","2024-05-03"],
                 "temperature_2m_mean":[17.4,15.1,null],
                 "precipitation_sum":[0.0,2.3,null],
                 "wind_speed_10m_max":[11.2,null,null]}}"#;

    fn day(d: &str, t: Option<f64>, p: Option<f64>, w: Option<f64>) -> WeatherDay {
        WeatherDay { day: d.into(), temperature_c: t, precipitation_mm: p, wind_kmh: w }
    }

    #[test]
    fn parallel_arrays_become_days_and_null_is_no_value() {
        assert_eq!(
            parse_daily(REPLY.as_bytes()).expect("parse"),
            vec![
                day("2024-05-01", Some(17.4), Some(0.0), Some(11.2)),
                day("2024-05-02", Some(15.1), Some(2.3), None),
                day("2024-05-03", None, None, None),
            ]
        );
    }

    #[test]
    fn units_may_be_left_out_but_not_be_others() {
        let bare = r#"{"daily":{"time":["2024-05-01"],"temperature_2m_mean":[1.5],"precipitation_sum":[0],"wind_speed_10m_max":[3]}}"#;
        assert_eq!(
            parse_daily(bare.as_bytes()).expect("parse"),
            vec![day("2024-05-01", Some(1.5), Some(0.0), Some(3.0))]
        );
        let fahrenheit = REPLY.replace(r#""temperature_2m_mean":"°C""#, r#""temperature_2m_mean":"°F""#);
        let err = parse_daily(fahrenheit.as_bytes()).expect_err("°F");
        assert!(err.contains("°F, not °C"), "{err}");
    }

    #[test]
    fn garbage_is_an_error_that_says_what() {
        let cases = [
            ("<html>502 Bad Gateway</html>", "not a daily weather document"),
            (r#"{"hourly":{}}"#, "not a daily weather document"),
            (
                r#"{"daily":{"time":["2024-05-01"],"temperature_2m_mean":["warm"],"precipitation_sum":[0],"wind_speed_10m_max":[3]}}"#,
                "not a daily weather document",
            ),
            (
                r#"{"daily":{"time":["2024-05-01","2024-05-02"],"temperature_2m_mean":[1],"precipitation_sum":[0,0],"wind_speed_10m_max":[3,3]}}"#,
                "not as long",
            ),
            (
                r#"{"daily":{"time":["May 1st"],"temperature_2m_mean":[1],"precipitation_sum":[0],"wind_speed_10m_max":[3]}}"#,
                "not a YYYY-MM-DD date",
            ),
        ];
        for (body, needle) in cases {
            let err = parse_daily(body.as_bytes()).expect_err(body);
            assert!(err.contains(needle), "{body}: {err}");
        }
    }

    #[test]
    fn the_error_document_gives_its_reason_on_one_line() {
        let doc = br#"{"error":true,"reason":"Parameter 'start_date' is out of allowed range\nfrom 1940-01-01"}"#;
        assert_eq!(
            error_reason(doc).as_deref(),
            Some("Parameter 'start_date' is out of allowed range from 1940-01-01")
        );
        let long = format!(r#"{{"error":true,"reason":"{}"}}"#, "x".repeat(1000));
        assert_eq!(error_reason(long.as_bytes()).expect("reason").chars().count(), 200);
        assert_eq!(error_reason(br#"{"error":false,"reason":"fine"}"#), None);
        assert_eq!(error_reason(REPLY.as_bytes()), None);
        assert_eq!(error_reason(b"Bad Request"), None);
    }
}
