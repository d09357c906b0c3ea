//! BirdWeather's station API as the peers use it (docs/birdweather.md, IMPORTS.md C): the
//! soundscape upload, the detection post and the documented stats read. Every answer is
//! classified here: the status first, then the body, leniently. The station token is a path
//! segment, so no text this module returns contains a URL or anything BirdWeather wrote back:
//! transport errors are described in words, and an answer is classified by its status and, at
//! most, a fixed set of recognised reasons told in our own words ([`Reason`]). A remote body
//! could echo the token in any case or cut short, so none of it is ever copied into a message.

use std::time::Duration;

use reqwest::StatusCode;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The hub's User-Agent towards BirdWeather.
const USER_AGENT: &str = concat!("birdhub/", env!("CARGO_PKG_VERSION"));
/// At most this much of an answer is read.
const MAX_ANSWER: usize = 64 * 1024;

/// A client of one BirdWeather base URL.
#[derive(Clone, Debug)]
pub struct Client {
    http: reqwest::Client,
    base: String,
    timeout: Duration,
}

/// How a call ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome<T> {
    Done(T),
    /// Worth trying again later (5xx, 415, 429, a timeout, no connection, a refused token).
    Retry(Problem),
    /// Final: trying again cannot help (422 species not accepted, other 4xx).
    Final(Problem),
}

/// What went wrong, in words for a person, with the HTTP status when there was one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub http_status: Option<u16>,
    pub words: String,
    /// The token was refused (401/403) or the station is unknown (404): the station, not the
    /// detection, is at fault.
    pub station: bool,
}

/// The detection as BirdWeather's detection call takes it, in BirdNET-Pi's field style (the
/// original one; docs/birdweather.md says why): coordinates as strings, the soundscape id as a
/// number, start and end as seconds within the soundscape, confidence as a number.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DetectionPost {
    pub timestamp: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lat: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lon: Option<String>,
    pub soundscape_id: Value,
    pub soundscape_start_time: f64,
    pub soundscape_end_time: f64,
    pub common_name: String,
    pub scientific_name: String,
    pub algorithm: &'static str,
    pub confidence: f64,
}

/// The station's figures of today (`GET /stations/{token}/stats?period=day`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stats {
    pub detections: i64,
    pub species: i64,
}

#[derive(Deserialize)]
struct SoundscapeAnswer {
    #[serde(default)]
    success: Option<bool>,
    #[serde(default)]
    soundscape: Option<SoundscapeBody>,
}

/// Only the id matters; `duration` was a string and is a number since Feb 2025, so nothing else
/// is parsed strictly.
#[derive(Deserialize)]
struct SoundscapeBody {
    #[serde(default)]
    id: Value,
}

impl Client {
    pub fn new(base: &str, timeout: Duration) -> Self {
        crate::install_tls_provider();
        let http = reqwest::Client::builder()
            .user_agent(USER_AGENT)
            .timeout(timeout)
            .connect_timeout(timeout.min(Duration::from_secs(15)))
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap_or_default();
        Self { http, base: base.trim_end_matches('/').to_owned(), timeout }
    }

    fn station(&self, token: &str, rest: &str) -> String {
        format!("{}/stations/{token}/{rest}", self.base)
    }

    /// Uploads a FLAC soundscape recorded at `timestamp` (ISO 8601 with the station's offset);
    /// done with BirdWeather's id of it.
    pub async fn soundscape(&self, token: &str, timestamp: &str, flac: Vec<u8>) -> Outcome<Value> {
        let sent = self
            .http
            .post(self.station(token, &format!("soundscapes?timestamp={}", encode(timestamp))))
            .header(reqwest::header::CONTENT_TYPE, "audio/flac")
            .body(flac)
            .send()
            .await;
        let (status, body) = match self.answer(sent).await {
            Ok(a) => a,
            Err(p) => return Outcome::Retry(p),
        };
        // The status first: a 415 says `success: true` with a null id.
        if status != StatusCode::CREATED {
            return classify(status, &body, "the soundscape");
        }
        let parsed: Option<SoundscapeAnswer> = serde_json::from_slice(&body).ok();
        let said = Reason::of(&body).words();
        match parsed {
            Some(SoundscapeAnswer { success: Some(true), soundscape: Some(s), .. })
                if matches!(s.id, Value::Number(_)) || s.id.as_str().is_some_and(|t| !t.is_empty()) =>
            {
                Outcome::Done(s.id)
            }
            Some(SoundscapeAnswer { success: Some(true), .. }) => Outcome::Retry(problem(
                Some(201),
                format!("BirdWeather took the soundscape but gave it no id{said}"),
                false,
            )),
            _ => Outcome::Retry(problem(
                Some(201),
                format!("BirdWeather answered 201 without success for the soundscape{said}"),
                false,
            )),
        }
    }

    /// Posts one detection against an uploaded soundscape.
    pub async fn detection(&self, token: &str, d: &DetectionPost) -> Outcome<()> {
        let sent = self.http.post(self.station(token, "detections")).json(d).send().await;
        let (status, body) = match self.answer(sent).await {
            Ok(a) => a,
            Err(p) => return Outcome::Retry(p),
        };
        if status == StatusCode::CREATED {
            return Outcome::Done(());
        }
        if status == StatusCode::UNPROCESSABLE_ENTITY {
            let why = Reason::of(&body).words();
            return Outcome::Final(problem(
                Some(422),
                format!("BirdWeather does not accept this species (HTTP 422){why}"),
                false,
            ));
        }
        classify(status, &body, "the detection")
    }

    /// Reads the station's figures of today: the one documented, read-only call the token test
    /// makes. Nothing is posted.
    pub async fn stats(&self, token: &str) -> Outcome<Stats> {
        let sent = self.http.get(self.station(token, "stats?period=day")).send().await;
        let (status, body) = match self.answer(sent).await {
            Ok(a) => a,
            Err(p) => return Outcome::Retry(p),
        };
        if !status.is_success() {
            return classify(status, &body, "the station's figures");
        }
        let v: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        if v.get("success").and_then(Value::as_bool) != Some(true) {
            return Outcome::Final(problem(
                Some(status.as_u16()),
                "BirdWeather answered without success for the station's figures".into(),
                false,
            ));
        }
        let n = |k: &str| v.get(k).and_then(|x| x.as_i64().or_else(|| x.as_str()?.parse().ok())).unwrap_or(0);
        Outcome::Done(Stats { detections: n("detections"), species: n("species") })
    }

    async fn answer(&self, sent: Result<reqwest::Response, reqwest::Error>) -> Result<(StatusCode, Vec<u8>), Problem> {
        let mut resp = sent.map_err(|e| self.transport(&e))?;
        let status = resp.status();
        let mut body = Vec::new();
        while let Some(part) = resp.chunk().await.map_err(|e| self.transport(&e))? {
            body.extend_from_slice(&part);
            if body.len() >= MAX_ANSWER {
                body.truncate(MAX_ANSWER);
                break;
            }
        }
        Ok((status, body))
    }

    /// A transport error in words; reqwest's own text would carry the URL, and so the token.
    fn transport(&self, e: &reqwest::Error) -> Problem {
        let words = if e.is_timeout() {
            format!("BirdWeather did not answer within {} s", self.timeout.as_secs())
        } else if e.is_connect() {
            "could not connect to BirdWeather".to_owned()
        } else {
            "the connection to BirdWeather failed".to_owned()
        };
        problem(None, words, false)
    }
}

/// A status other than the one hoped for, in words; `what` names the call.
fn classify<T>(status: StatusCode, body: &[u8], what: &str) -> Outcome<T> {
    let code = status.as_u16();
    let json: Option<Value> = serde_json::from_slice(body).ok();
    let why = Reason::of(body).words();
    match code {
        401 | 403 => Outcome::Retry(problem(Some(code), format!("BirdWeather refused the token (HTTP {code})"), true)),
        404 => Outcome::Retry(problem(Some(code), "BirdWeather does not know this station (HTTP 404)".into(), true)),
        415 => Outcome::Retry(problem(
            Some(code),
            format!("BirdWeather refused the audio format of {what} (HTTP 415){why}"),
            false,
        )),
        408 | 425 | 429 | 500..=599 => {
            let html = json.is_none() && body.windows(5).any(|w| w.eq_ignore_ascii_case(b"<html"));
            let page = if html { " (an error page, not BirdWeather's API)" } else { "" };
            Outcome::Retry(problem(
                Some(code),
                format!("BirdWeather could not take {what} (HTTP {code}){page}{why}"),
                false,
            ))
        }
        _ => Outcome::Final(problem(Some(code), format!("BirdWeather refused {what} (HTTP {code}){why}"), false)),
    }
}

/// Percent-encodes a query value (`+` and `:` included: a raw `+` offset may be read as a space).
fn encode(value: &str) -> String {
    url::form_urlencoded::byte_serialize(value.as_bytes()).collect()
}

fn problem(http_status: Option<u16>, words: String, station: bool) -> Problem {
    Problem { http_status, words, station }
}

/// The reasons BirdWeather gives that the hub recognises, told in the hub's own words. Its text
/// is only searched for fixed phrases, never copied: it may echo the station token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reason {
    /// BirdWeather stopped taking WAV soundscapes (mid 2025).
    WavDiscontinued,
    /// The species is not one BirdWeather knows.
    UnknownSpecies,
    /// Nothing recognised.
    Other,
}

impl Reason {
    fn of(body: &[u8]) -> Self {
        let text = String::from_utf8_lossy(&body[..body.len().min(4096)]).to_lowercase();
        if text.contains("wav") && (text.contains("discontinued") || text.contains("not supported")) {
            Reason::WavDiscontinued
        } else if text.contains("species") && (text.contains("must exist") || text.contains("unknown")) {
            Reason::UnknownSpecies
        } else {
            Reason::Other
        }
    }

    /// As ": …" after a sentence, or nothing.
    fn words(self) -> &'static str {
        match self {
            Reason::WavDiscontinued => ": BirdWeather no longer takes WAV audio",
            Reason::UnknownSpecies => ": BirdWeather does not know this species",
            Reason::Other => "",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_are_read_before_bodies() {
        let body = br#"{"success":true,"soundscape":{"id":null},"message":"WAV support has been discontinued"}"#;
        let Outcome::<()>::Retry(p) = classify(StatusCode::UNSUPPORTED_MEDIA_TYPE, body, "the soundscape") else {
            panic!("a 415 is retried");
        };
        assert_eq!(p.http_status, Some(415));
        assert!(p.words.ends_with("no longer takes WAV audio"), "{}", p.words);
        let Outcome::<()>::Retry(p) = classify(StatusCode::FORBIDDEN, b"", "x") else { panic!("403") };
        assert!(p.station && p.words.contains("refused the token"));
        assert!(matches!(classify::<()>(StatusCode::BAD_REQUEST, b"", "x"), Outcome::Final(_)));
        assert!(matches!(classify::<()>(StatusCode::BAD_GATEWAY, b"<html>", "x"), Outcome::Retry(_)));
    }

    #[test]
    fn nothing_birdweather_writes_is_copied() {
        let token = "bwStationTok3nS3cretXyZ9";
        for body in [
            format!(r#"{{"message":"station {} is unknown"}}"#, token.to_uppercase()),
            format!(r#"{{"success":false,"errors":{{"token":["{} is invalid"]}}}}"#, &token[..12]),
            format!("no such station {token}"),
        ] {
            for status in [StatusCode::BAD_REQUEST, StatusCode::UNPROCESSABLE_ENTITY, StatusCode::INTERNAL_SERVER_ERROR]
            {
                let (Outcome::<()>::Retry(p) | Outcome::Final(p)) = classify(status, body.as_bytes(), "x") else {
                    panic!("not done");
                };
                assert!(!p.words.to_lowercase().contains("tok3n"), "{}", p.words);
            }
        }
        let species = br#"{"success":false,"errors":{"species":["must exist"]}}"#;
        assert_eq!(Reason::of(species).words(), ": BirdWeather does not know this species");
    }
}
