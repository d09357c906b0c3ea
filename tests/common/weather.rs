//! A fake Open-Meteo archive API for tests: an axum server on 127.0.0.1 answering
//! `GET /v1/archive?latitude=&longitude=&start_date=&end_date=&daily=&timezone=` in the shape of
//! FORMATS.md section 5, from days the test sets (a day it has not set is `null`). It keeps the
//! query of every request, and can be told to fail: a status with a body, a hang, a huge reply.

use std::{
    collections::BTreeMap,
    sync::{Arc, Mutex},
    time::Duration,
};

use axum::{
    Router,
    body::{Body, Bytes},
    extract::{RawQuery, State},
    http::StatusCode,
    response::{IntoResponse, Response},
    routing::get,
};
use chrono::NaiveDate;
use serde_json::json;

/// How the fake answers.
#[derive(Debug, Clone)]
pub enum Mode {
    /// Daily weather for the asked days.
    Serve,
    /// This status and body, whatever was asked.
    Reply(u16, String),
    /// Never answers.
    Hang,
    /// 200 with a 2 MiB body.
    Huge,
}

/// (temperature °C, precipitation mm, wind km/h); `None` is `null`.
pub type Values = (Option<f64>, Option<f64>, Option<f64>);

#[derive(Clone)]
struct Inner {
    days: Arc<Mutex<BTreeMap<NaiveDate, Values>>>,
    mode: Arc<Mutex<Mode>>,
    queries: Arc<Mutex<Vec<BTreeMap<String, String>>>>,
}

#[derive(Clone)]
pub struct FakeWeather {
    pub base: String,
    inner: Inner,
}

impl FakeWeather {
    pub async fn start() -> Self {
        let inner = Inner { days: Arc::default(), mode: Arc::new(Mutex::new(Mode::Serve)), queries: Arc::default() };
        let app = Router::new().route("/v1/archive", get(archive)).with_state(inner.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind fake weather");
        let base = format!("http://{}", listener.local_addr().expect("addr"));
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Self { base, inner }
    }

    /// What to put in `weather.provider_url`.
    pub fn url(&self) -> String {
        format!("{}/v1/archive", self.base)
    }

    pub fn set_day(&self, day: &str, values: Values) {
        self.inner.days.lock().expect("lock").insert(day.parse().expect("date"), values);
    }

    pub fn set_mode(&self, mode: Mode) {
        *self.inner.mode.lock().expect("lock") = mode;
    }

    /// The query of every request so far, oldest first.
    pub fn queries(&self) -> Vec<BTreeMap<String, String>> {
        self.inner.queries.lock().expect("lock").clone()
    }
}

async fn archive(State(inner): State<Inner>, RawQuery(raw): RawQuery) -> Response {
    let query: BTreeMap<String, String> = url::form_urlencoded::parse(raw.unwrap_or_default().as_bytes())
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    inner.queries.lock().expect("lock").push(query.clone());
    let mode = inner.mode.lock().expect("lock").clone();
    match mode {
        Mode::Serve => serve(&inner, &query),
        Mode::Reply(status, body) => {
            (StatusCode::from_u16(status).expect("status"), [("content-type", "application/json")], body)
                .into_response()
        }
        Mode::Hang => {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            StatusCode::GATEWAY_TIMEOUT.into_response()
        }
        Mode::Huge => {
            let chunk = Bytes::from(vec![b' '; 256 * 1024]);
            let stream = futures_util::stream::iter((0..8).map(move |_| Ok::<_, std::io::Error>(chunk.clone())));
            Body::from_stream(stream).into_response()
        }
    }
}

fn serve(inner: &Inner, query: &BTreeMap<String, String>) -> Response {
    let date = |k: &str| query.get(k).and_then(|d| d.parse::<NaiveDate>().ok());
    let (Some(start), Some(end)) = (date("start_date"), date("end_date")) else {
        let reason = "Parameter 'start_date' and 'end_date' are required";
        return (StatusCode::BAD_REQUEST, axum::Json(json!({"error": true, "reason": reason}))).into_response();
    };
    let days = inner.days.lock().expect("lock").clone();
    let asked: Vec<NaiveDate> = start.iter_days().take_while(|d| *d <= end).collect();
    let values: Vec<Values> = asked.iter().map(|d| days.get(d).copied().unwrap_or((None, None, None))).collect();
    let latitude: f64 = query.get("latitude").and_then(|v| v.parse().ok()).unwrap_or(0.0);
    let longitude: f64 = query.get("longitude").and_then(|v| v.parse().ok()).unwrap_or(0.0);
    axum::Json(json!({
        "latitude": latitude + 0.02,
        "longitude": longitude - 0.01,
        "elevation": 38.0,
        "generationtime_ms": 0.2,
        "utc_offset_seconds": 0,
        "timezone": "GMT",
        "timezone_abbreviation": "GMT",
        "daily_units": {
            "time": "iso8601",
            "temperature_2m_mean": "°C",
            "precipitation_sum": "mm",
            "wind_speed_10m_max": "km/h"
        },
        "daily": {
            "time": asked.iter().map(|d| d.to_string()).collect::<Vec<_>>(),
            "temperature_2m_mean": values.iter().map(|v| v.0).collect::<Vec<_>>(),
            "precipitation_sum": values.iter().map(|v| v.1).collect::<Vec<_>>(),
            "wind_speed_10m_max": values.iter().map(|v| v.2).collect::<Vec<_>>()
        }
    }))
    .into_response()
}
