//! A real picture source for tests: an axum server on 127.0.0.1 answering
//! `/birds/{scientific name}` the ways a source on the internet can, one species per way:
//! a PNG with credit headers, a JSON document pointing at a GIF, 404, a 500 before a PNG, HTML,
//! HTML labelled `image/png`, an endless-looking oversize PNG, and no answer at all. It counts
//! the requests per path, so tests can see retries (and their absence). A label file naming the
//! same species lets a hub know them without the classifier model.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::Duration,
};

use axum::{
    Router,
    body::{Body, Bytes},
    extract::State,
    http::{StatusCode, Uri, header},
    response::{IntoResponse, Response},
};

/// `(scientific name, species code, what the source does)` for every species it knows.
pub const SPECIES: &[(&str, &str, &str)] = &[
    ("Turdus migratorius", "turdus_migratorius", "a PNG with X-Attribution and X-License"),
    ("Cardinalis cardinalis", "cardinalis_cardinalis", "JSON pointing at a GIF"),
    ("Cyanocitta cristata", "cyanocitta_cristata", "404"),
    ("Sitta carolinensis", "sitta_carolinensis", "500 the first time, then a PNG"),
    ("Poecile atricapillus", "poecile_atricapillus", "an HTML page"),
    ("Melospiza melodia", "melospiza_melodia", "HTML labelled image/png"),
    ("Dryobates pubescens", "dryobates_pubescens", "a PNG of 1 MiB, streamed"),
    ("Zenaida macroura", "zenaida_macroura", "never answers"),
];
/// In the label file but never asked of the source.
pub const UNSERVED: (&str, &str) = ("Spinus tristis", "spinus_tristis");

/// The attribution the PNG answer carries.
pub const ROBIN_CREDIT: &str = "© José Pérez";

#[derive(Clone)]
pub struct ImageSource {
    pub base: String,
    hits: Arc<Mutex<HashMap<String, usize>>>,
}

#[derive(Clone)]
struct Inner {
    hits: Arc<Mutex<HashMap<String, usize>>>,
}

impl ImageSource {
    pub async fn start() -> Self {
        let hits = Arc::new(Mutex::new(HashMap::new()));
        let app = Router::new().fallback(answer).with_state(Inner { hits: hits.clone() });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind image source");
        let base = format!("http://{}", listener.local_addr().expect("addr"));
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Self { base, hits }
    }

    /// The `species_images.source_url` template for this source.
    pub fn template(&self) -> String {
        format!("{}/birds/{{scientific_name}}?code={{code}}", self.base)
    }

    /// Requests seen for `path` with `query` (e.g. `/birds/Turdus%20migratorius`, `code=...`).
    pub fn hits(&self, path_and_query: &str) -> usize {
        self.hits.lock().expect("lock").get(path_and_query).copied().unwrap_or(0)
    }

    /// Requests seen for species `scientific` (its page, whatever the query).
    pub fn hits_for(&self, scientific: &str) -> usize {
        let path = format!("/birds/{}", scientific.replace(' ', "%20"));
        self.hits.lock().expect("lock").iter().filter(|(k, _)| k.split('?').next() == Some(&path)).map(|(_, n)| n).sum()
    }
}

/// A model directory with only `labels/en.txt`: enough for the hub to know these species.
pub fn label_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(dir.path().join("labels")).expect("mkdir");
    let mut text = String::new();
    for (scientific, _, _) in SPECIES.iter().chain([&(UNSERVED.0, UNSERVED.1, "")]) {
        text.push_str(&format!("{scientific}_Bird {scientific}\n"));
    }
    std::fs::write(dir.path().join("labels/en.txt"), text).expect("labels");
    dir
}

/// A real `w` x `h` RGB PNG.
pub fn png(w: u32, h: u32) -> Vec<u8> {
    let mut out = Vec::new();
    let mut encoder = png::Encoder::new(&mut out, w, h);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    let mut writer = encoder.write_header().expect("png header");
    let pixels: Vec<u8> = (0..w * h * 3).map(|i| (i * 37 % 251) as u8).collect();
    writer.write_image_data(&pixels).expect("png data");
    writer.finish().expect("png end");
    out
}

/// A 1x1 GIF, byte by byte: header, screen, two-colour table, one frame, trailer.
pub fn gif() -> Vec<u8> {
    let mut g = b"GIF89a".to_vec();
    g.extend_from_slice(&[1, 0, 1, 0, 0x80, 0, 0]);
    g.extend_from_slice(&[0, 0, 0, 255, 255, 255]);
    g.extend_from_slice(&[0x2c, 0, 0, 0, 0, 1, 0, 1, 0, 0]);
    g.extend_from_slice(&[2, 2, 0x44, 0x01, 0]);
    g.push(0x3b);
    g
}

/// The PNG the robin is answered with.
pub fn robin_png() -> Vec<u8> {
    png(3, 2)
}

/// The PNG the nuthatch is answered with once the source has recovered.
pub fn nuthatch_png() -> Vec<u8> {
    png(2, 2)
}

async fn answer(State(inner): State<Inner>, uri: Uri) -> Response {
    let key = uri.path_and_query().map_or_else(|| uri.path().to_owned(), |p| p.as_str().to_owned());
    let seen = {
        let mut hits = inner.hits.lock().expect("lock");
        let n = hits.entry(key).or_insert(0);
        *n += 1;
        *n
    };
    let html = "<!doctype html><html><body><h1>Bird</h1></body></html>";
    match uri.path() {
        "/birds/Turdus%20migratorius" => (
            [(header::CONTENT_TYPE, "image/png"), (header::HeaderName::from_static("x-license"), "CC BY 4.0")],
            [(
                header::HeaderName::from_static("x-attribution"),
                header::HeaderValue::from_bytes(ROBIN_CREDIT.as_bytes()).expect("latin"),
            )],
            robin_png(),
        )
            .into_response(),
        "/birds/Cardinalis%20cardinalis" => axum::Json(serde_json::json!({
            "imageUrl": "/files/cardinal.gif",
            "attribution": "John Smith",
            "license": "CC0",
            "sourcePage": "https://example.org/birds/cardinal",
        }))
        .into_response(),
        "/files/cardinal.gif" => ([(header::CONTENT_TYPE, "image/gif")], gif()).into_response(),
        "/birds/Sitta%20carolinensis" if seen == 1 => (StatusCode::INTERNAL_SERVER_ERROR, "try later").into_response(),
        "/birds/Sitta%20carolinensis" => ([(header::CONTENT_TYPE, "image/png")], nuthatch_png()).into_response(),
        "/birds/Poecile%20atricapillus" => ([(header::CONTENT_TYPE, "text/html")], html).into_response(),
        "/birds/Melospiza%20melodia" => ([(header::CONTENT_TYPE, "image/png")], html).into_response(),
        "/birds/Dryobates%20pubescens" => {
            let mut first = robin_png();
            first.resize(64 * 1024, 0);
            let chunks = std::iter::once(first).chain(std::iter::repeat_n(vec![0u8; 64 * 1024], 15));
            let stream = futures_util::stream::iter(chunks.map(|c| Ok::<_, std::io::Error>(Bytes::from(c))));
            ([(header::CONTENT_TYPE, "image/png")], Body::from_stream(stream)).into_response()
        }
        "/birds/Zenaida%20macroura" => {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            StatusCode::OK.into_response()
        }
        _ => (StatusCode::NOT_FOUND, "no such bird").into_response(),
    }
}
