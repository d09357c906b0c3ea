//! The weather provider: one GET of daily weather from a service with the Open-Meteo archive
//! API's shape (`weather.provider_url`).
//!
//! The provider is someone else's server, so nothing it does may hold a request for long or turn
//! into an error page: the whole exchange has a deadline (`weather.timeout_secs`), at most
//! [`MAX_REPLY_BYTES`] of a reply is read, redirects are not followed, and every failure becomes a
//! [`FetchError`] with a short reason fit to show. Reasons never carry the URL, which may hold
//! an `apikey`.

use std::time::Duration;

use chrono::NaiveDate;
use reqwest::{StatusCode, Url};
use tokio::time::{Instant, timeout_at};

use super::open_meteo;
use crate::{config::WeatherSettings, notify::http::root_cause, store::weather::WeatherDay};

/// A reply larger than this is refused (a year of daily values is about 20 KB).
pub const MAX_REPLY_BYTES: usize = 1 << 20;

/// Why the provider gave no weather.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FetchError {
    /// No connection, or no complete answer before the deadline.
    #[error("the weather provider could not be reached: {0}")]
    Unreachable(String),
    /// It answered a 4xx error document: its own reason, on one line.
    #[error("the weather provider refused the request: {0}")]
    Rejected(String),
    /// Any other status, an oversize reply or one that is not a daily weather document.
    #[error("the weather provider answered with an error: {0}")]
    Failed(String),
}

/// The client of the configured provider; cheap to clone (one connection pool).
#[derive(Clone)]
pub struct Provider {
    client: reqwest::Client,
    /// `None`: no provider is configured.
    url: Option<Url>,
    /// The deadline of one exchange.
    timeout: Duration,
}

impl Provider {
    /// # Panics
    /// When the HTTP client cannot be built at all (no TLS backend): a start-up fault of the
    /// binary, not something the settings can cause.
    pub fn new(settings: &WeatherSettings) -> Self {
        crate::install_tls_provider();
        let timeout = Duration::from_secs(settings.timeout_secs.max(1));
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(timeout)
            .user_agent(concat!("birdhub/", env!("CARGO_PKG_VERSION")))
            .build()
            .expect("the HTTP client builds with the compiled-in TLS backend");
        // `Settings::validate` has checked the URL; an empty one means off.
        let url = Url::parse(settings.provider_url.trim()).ok();
        Self { client, url, timeout }
    }

    pub fn is_configured(&self) -> bool {
        self.url.is_some()
    }

    /// Daily weather at (`latitude`, `longitude`) from `start` to `end` inclusive, as the provider
    /// gave it (days with `null` values included). Never takes longer than the timeout.
    pub async fn daily(
        &self,
        latitude: f64,
        longitude: f64,
        start: NaiveDate,
        end: NaiveDate,
    ) -> Result<Vec<WeatherDay>, FetchError> {
        let Some(mut url) = self.url.clone() else {
            return Err(FetchError::Failed("no provider is configured".into()));
        };
        url.query_pairs_mut()
            .append_pair("latitude", &format!("{latitude:.1}"))
            .append_pair("longitude", &format!("{longitude:.1}"))
            .append_pair("start_date", &start.to_string())
            .append_pair("end_date", &end.to_string())
            .append_pair("daily", open_meteo::DAILY)
            .append_pair("timezone", "auto");
        let deadline = Instant::now() + self.timeout;
        let response = match timeout_at(deadline, self.client.get(url).send()).await {
            Ok(Ok(response)) => response,
            Ok(Err(e)) if !e.is_timeout() => return Err(FetchError::Unreachable(root_cause(&e))),
            _ => return Err(self.timed_out()),
        };
        let status = response.status();
        let body = read_capped(response, deadline).await.map_err(|e| match e {
            Read::TooLarge => FetchError::Failed(format!("the reply is larger than {} KiB", MAX_REPLY_BYTES / 1024)),
            Read::TimedOut => self.timed_out(),
            Read::Broken(e) => FetchError::Unreachable(root_cause(&e)),
        })?;
        if status == StatusCode::OK {
            return open_meteo::parse_daily(&body).map_err(FetchError::Failed);
        }
        match open_meteo::error_reason(&body) {
            Some(reason) if status.is_client_error() => Err(FetchError::Rejected(reason)),
            Some(reason) => Err(FetchError::Failed(format!("HTTP {}: {reason}", status.as_u16()))),
            None => Err(FetchError::Failed(format!("HTTP {status}"))),
        }
    }

    fn timed_out(&self) -> FetchError {
        FetchError::Unreachable(format!("no answer within {} s", self.timeout.as_secs()))
    }
}

enum Read {
    TooLarge,
    TimedOut,
    Broken(reqwest::Error),
}

/// The whole reply, unless it is over [`MAX_REPLY_BYTES`] or not complete by the deadline.
async fn read_capped(mut response: reqwest::Response, deadline: Instant) -> Result<Vec<u8>, Read> {
    if response.content_length().is_some_and(|n| n > MAX_REPLY_BYTES as u64) {
        return Err(Read::TooLarge);
    }
    let mut body = Vec::new();
    loop {
        match timeout_at(deadline, response.chunk()).await {
            Err(_) => return Err(Read::TimedOut),
            Ok(Err(e)) if e.is_timeout() => return Err(Read::TimedOut),
            Ok(Err(e)) => return Err(Read::Broken(e)),
            Ok(Ok(None)) => return Ok(body),
            Ok(Ok(Some(chunk))) => {
                if body.len() + chunk.len() > MAX_REPLY_BYTES {
                    return Err(Read::TooLarge);
                }
                body.extend_from_slice(&chunk);
            }
        }
    }
}
