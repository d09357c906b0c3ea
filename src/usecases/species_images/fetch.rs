//! One download from the configured picture source (`species_images.source_url`).
//!
//! The source is someone else's server, so nothing it does may hurt the hub: the whole download
//! (both requests of the JSON form) has one deadline, a body is read chunk by chunk and dropped as
//! soon as it passes `max_bytes`, and an answer counts as an image only when it says so *and* its
//! first bytes are a JPEG, PNG, GIF or WebP signature. 404 and 410 mean "no picture of this bird";
//! anything else that goes wrong is a failure worth retrying.

use std::time::Duration;

use reqwest::{StatusCode, Url, header};
use serde::Deserialize;
use tokio::time::{Instant, timeout_at};

use crate::{
    config::SpeciesImageSettings,
    domain::{
        image_size,
        species_images::{self as rules, ImageKind},
    },
};

/// The JSON form of an answer is small; more than this is not a source document.
const MAX_JSON_BYTES: usize = 64 * 1024;
/// Redirects followed (image hosts move files behind stable URLs).
const MAX_REDIRECTS: usize = 3;
/// Longest attribution, licence and page link kept.
pub const MAX_TEXT: usize = 300;

/// Downloads pictures for one source template. Cheap to clone (one connection pool).
#[derive(Clone)]
pub struct Fetcher {
    client: reqwest::Client,
    template: String,
    timeout: Duration,
    max_bytes: usize,
}

/// A picture, checked and ready to store.
#[derive(Debug, Clone, PartialEq)]
pub struct Image {
    pub bytes: Vec<u8>,
    pub kind: ImageKind,
    pub attribution: String,
    pub license: String,
    pub source_page: Option<String>,
}

/// What a download found.
#[derive(Debug, Clone, PartialEq)]
pub enum Fetched {
    Image(Image),
    /// The source has no picture of this species; the reason is kept as the row's last error.
    Missing(String),
}

/// A download that went wrong in a way a later attempt may not (timeout, 5xx, garbage, too big).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Failure(pub String);

/// The JSON form: where the picture is and whose it is.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct SourceDocument {
    image_url: Option<String>,
    attribution: Option<String>,
    license: Option<String>,
    source_page: Option<String>,
}

/// Attribution and licence found so far (from the document or the response headers).
#[derive(Debug, Default)]
struct Credits {
    attribution: Option<String>,
    license: Option<String>,
    source_page: Option<String>,
}

impl Fetcher {
    /// The fetcher of `settings`, or `None` when no source is configured.
    ///
    /// # Panics
    /// When the HTTP client cannot be built at all (no TLS backend): a start-up fault of the
    /// binary, not something a setting can cause.
    pub fn new(settings: &SpeciesImageSettings) -> Option<Self> {
        let template = settings.source_url.trim();
        if template.is_empty() {
            return None;
        }
        crate::install_tls_provider();
        let timeout = Duration::from_secs(settings.timeout_secs.max(1));
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::limited(MAX_REDIRECTS))
            .timeout(timeout)
            .connect_timeout(timeout)
            .user_agent(concat!("birdhub/", env!("CARGO_PKG_VERSION"), " (species images)"))
            .build()
            .expect("the HTTP client builds with the compiled-in TLS backend");
        let max_bytes = usize::try_from(settings.max_bytes).unwrap_or(usize::MAX);
        Some(Self { client, template: template.to_owned(), timeout, max_bytes })
    }

    /// Downloads the picture of `scientific_name` (species `code`). Never takes longer than the
    /// timeout and never holds more than `max_bytes` of a body.
    pub async fn fetch(&self, scientific_name: &str, code: &str) -> Result<Fetched, Failure> {
        let deadline = Instant::now() + self.timeout;
        let url = Url::parse(&rules::expand(&self.template, scientific_name, code))
            .map_err(|e| Failure(format!("the source URL is not valid: {e}")))?;
        let host = url.host_str().unwrap_or("the image source").to_owned();
        let first = self.get(url.clone(), deadline).await?;
        if matches!(first.status(), StatusCode::NOT_FOUND | StatusCode::GONE) {
            return Ok(Fetched::Missing(format!("the source has no image (HTTP {})", first.status().as_u16())));
        }
        let first = success(first, "the source")?;
        let mut credits = credits_from_headers(first.headers());
        let image = if rules::declares_json(content_type(&first)) {
            let body = self.read(first, MAX_JSON_BYTES, deadline).await?;
            let doc: SourceDocument = serde_json::from_slice(&body)
                .map_err(|e| Failure(format!("the source answered JSON that is not an image document: {e}")))?;
            let Some(link) = doc.image_url.as_deref().map(str::trim).filter(|u| !u.is_empty()) else {
                return Ok(Fetched::Missing("the source has no image (no imageUrl)".into()));
            };
            let image_url = url.join(link).map_err(|e| Failure(format!("imageUrl {link:?} is not a URL: {e}")))?;
            if !matches!(image_url.scheme(), "http" | "https") {
                return Err(Failure(format!("imageUrl must be http or https, not {}", image_url.scheme())));
            }
            let second = success(self.get(image_url, deadline).await?, "the imageUrl")?;
            let from_image = credits_from_headers(second.headers());
            credits = Credits {
                attribution: text(doc.attribution.as_deref()).or(from_image.attribution).or(credits.attribution),
                license: text(doc.license.as_deref()).or(from_image.license).or(credits.license),
                source_page: text(doc.source_page.as_deref()).or(from_image.source_page),
            };
            self.image(second, deadline).await?
        } else {
            self.image(first, deadline).await?
        };
        Ok(Fetched::Image(Image {
            kind: image.1,
            bytes: image.0,
            attribution: credits.attribution.unwrap_or(host),
            license: credits.license.unwrap_or_else(|| "unknown".into()),
            source_page: credits.source_page,
        }))
    }

    async fn get(&self, url: Url, deadline: Instant) -> Result<reqwest::Response, Failure> {
        let req = self.client.get(url).header(header::ACCEPT, "image/*, application/json;q=0.9");
        match timeout_at(deadline, req.send()).await {
            Err(_) => Err(self.timed_out()),
            Ok(Err(e)) if e.is_timeout() => Err(self.timed_out()),
            Ok(Err(e)) if e.is_connect() => {
                Err(Failure(format!("could not connect to the source: {}", root_cause(&e))))
            }
            Ok(Err(e)) if e.is_redirect() => Err(Failure(format!("too many redirects: {}", root_cause(&e)))),
            Ok(Err(e)) => Err(Failure(format!("the request failed: {}", root_cause(&e)))),
            Ok(Ok(response)) => Ok(response),
        }
    }

    /// The body of an answer that must be an image, checked.
    async fn image(&self, response: reqwest::Response, deadline: Instant) -> Result<(Vec<u8>, ImageKind), Failure> {
        let declared = content_type(&response).to_owned();
        if !rules::declares_image(&declared) {
            let shown = if declared.is_empty() { "none".to_owned() } else { rules::header_safe(&declared) };
            return Err(Failure(format!("the source answered something that is not an image (Content-Type {shown})")));
        }
        let bytes = self.read(response, self.max_bytes, deadline).await?;
        let kind = rules::sniff(&bytes)
            .ok_or_else(|| Failure(format!("the body is not a JPEG, PNG, GIF or WebP image (declared {declared})")))?;
        // Browsers decode what the proxy serves: a small file claiming a huge canvas is a bomb there.
        let (width, height) = image_size::dimensions(kind, &bytes)
            .ok_or_else(|| Failure(format!("the {} header is cut short or malformed", kind.extension())))?;
        if !image_size::acceptable(width, height) {
            return Err(Failure(format!(
                "the image is {width} x {height} pixels; at most {} pixels are kept",
                image_size::MAX_PIXELS
            )));
        }
        Ok((bytes, kind))
    }

    /// The whole body, or a failure as soon as it passes `cap` bytes or the deadline.
    async fn read(&self, mut response: reqwest::Response, cap: usize, deadline: Instant) -> Result<Vec<u8>, Failure> {
        let too_big = || Failure(format!("the answer is larger than {cap} bytes"));
        if response.content_length().is_some_and(|n| n > cap as u64) {
            return Err(too_big());
        }
        let mut body = Vec::new();
        loop {
            match timeout_at(deadline, response.chunk()).await {
                Err(_) => return Err(self.timed_out()),
                Ok(Err(e)) if e.is_timeout() => return Err(self.timed_out()),
                Ok(Err(e)) => return Err(Failure(format!("reading the answer failed: {}", root_cause(&e)))),
                Ok(Ok(None)) => return Ok(body),
                Ok(Ok(Some(chunk))) => {
                    if body.len() + chunk.len() > cap {
                        return Err(too_big());
                    }
                    body.extend_from_slice(&chunk);
                }
            }
        }
    }

    fn timed_out(&self) -> Failure {
        Failure(format!("the source did not answer within {} s", self.timeout.as_secs()))
    }
}

/// `response` when it is a 2xx; a failure naming `what` and the status otherwise.
fn success(response: reqwest::Response, what: &str) -> Result<reqwest::Response, Failure> {
    let status = response.status();
    if status.is_success() { Ok(response) } else { Err(Failure(format!("{what} answered HTTP {}", status.as_u16()))) }
}

fn content_type(response: &reqwest::Response) -> &str {
    response.headers().get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or_default()
}

fn credits_from_headers(headers: &header::HeaderMap) -> Credits {
    // Sources send names with accents as raw UTF-8 in headers; read them as such.
    let get = |name: &str| text(headers.get(name).and_then(|v| std::str::from_utf8(v.as_bytes()).ok()));
    Credits { attribution: get("x-attribution"), license: get("x-license"), source_page: None }
}

fn text(raw: Option<&str>) -> Option<String> {
    raw.and_then(|t| rules::clean_text(t, MAX_TEXT))
}

/// The innermost error's text: "Connection refused (os error 111)" rather than "error sending request".
fn root_cause(e: &reqwest::Error) -> String {
    let mut cause: &dyn std::error::Error = e;
    while let Some(inner) = cause.source() {
        cause = inner;
    }
    cause.to_string()
}
