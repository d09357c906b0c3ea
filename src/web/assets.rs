//! The dashboard's static files (`assets/`), embedded in the binary. Each is served under a name
//! carrying a hash of its content (`/assets/app.3f2a9c1e.js`), so browsers may keep it for a year,
//! and gzip-compressed once, on first use, for clients that accept it.

use std::{
    collections::HashMap,
    io::Write,
    sync::{LazyLock, OnceLock},
};

use axum::{
    extract::Path,
    http::{HeaderMap, HeaderValue, StatusCode, header},
    response::{IntoResponse, Response},
};
use rust_embed::Embed;
use sha2::{Digest, Sha256};

#[derive(Embed)]
#[folder = "assets/"]
#[exclude = "*.sh"]
#[exclude = "screenshots/*"]
struct Files;

/// One embedded file, ready to serve.
struct Asset {
    body: &'static [u8],
    gzip: OnceLock<Vec<u8>>,
    content_type: &'static str,
}

/// Logical name (`app.js`, `vendor/htmx.min.js`) to hashed URL, and hashed file name back to
/// the asset.
struct Catalogue {
    urls: HashMap<String, String>,
    by_hashed: HashMap<String, Asset>,
}

static CATALOGUE: LazyLock<Catalogue> = LazyLock::new(|| {
    let mut urls = HashMap::new();
    let mut by_hashed = HashMap::new();
    for name in Files::iter() {
        let Some(file) = Files::get(&name) else { continue };
        let body: &'static [u8] = match file.data {
            std::borrow::Cow::Borrowed(b) => b,
            std::borrow::Cow::Owned(v) => Vec::leak(v),
        };
        let hash = hex::encode(&Sha256::digest(body)[..5]);
        let hashed = match name.rsplit_once('.') {
            Some((stem, ext)) => format!("{stem}.{hash}.{ext}"),
            None => format!("{name}.{hash}"),
        };
        urls.insert(name.to_string(), format!("/assets/{hashed}"));
        by_hashed.insert(hashed, Asset { body, gzip: OnceLock::new(), content_type: content_type(&name) });
    }
    Catalogue { urls, by_hashed }
});

fn content_type(name: &str) -> &'static str {
    match name.rsplit_once('.').map(|(_, e)| e) {
        Some("js") => "text/javascript; charset=utf-8",
        Some("css") => "text/css; charset=utf-8",
        Some("svg") => "image/svg+xml",
        Some("png") => "image/png",
        Some("json") => "application/json",
        _ => "text/plain; charset=utf-8",
    }
}

/// The URL to link an asset by its logical name. Panics in debug builds on an unknown name, so a
/// typo in a page shows up in the first test that renders it.
pub fn url(name: &str) -> &'static str {
    match CATALOGUE.urls.get(name) {
        Some(u) => u.as_str(),
        None => {
            debug_assert!(false, "no asset named {name}");
            "/assets/missing"
        }
    }
}

/// `GET /assets/{*file}`: the embedded file, immutable for a year, gzip when accepted.
pub async fn serve(Path(file): Path<String>, headers: HeaderMap) -> Response {
    let Some(asset) = CATALOGUE.by_hashed.get(&file) else {
        return (StatusCode::NOT_FOUND, "no such asset").into_response();
    };
    let accepts_gzip = headers
        .get(header::ACCEPT_ENCODING)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|e| e.trim().starts_with("gzip")));
    let mut resp = if accepts_gzip && compressible(asset.content_type) {
        let gz = asset.gzip.get_or_init(|| gzip(asset.body));
        let mut r = gz.clone().into_response();
        r.headers_mut().insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
        r
    } else {
        asset.body.into_response()
    };
    let h = resp.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(asset.content_type));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("public, max-age=31536000, immutable"));
    h.insert(header::VARY, HeaderValue::from_static("accept-encoding"));
    resp
}

fn compressible(content_type: &str) -> bool {
    !content_type.starts_with("image/png")
}

fn gzip(body: &[u8]) -> Vec<u8> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    // Writing to a Vec cannot fail.
    let _ = enc.write_all(body);
    enc.finish().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_asset_has_a_content_hashed_url_that_resolves() {
        let u = url("vendor/htmx.min.js");
        assert!(
            u.starts_with("/assets/vendor/htmx.min.")
                && u.ends_with(".js")
                && u.len() > "/assets/vendor/htmx.min.js".len(),
            "{u}"
        );
        let hashed = u.trim_start_matches("/assets/");
        assert!(CATALOGUE.by_hashed.contains_key(hashed));
        assert!(CATALOGUE.urls.keys().all(|k| !k.ends_with(".sh")), "the vendoring script is not served");
    }

    #[tokio::test]
    async fn assets_are_gzipped_for_clients_that_accept_it_and_cached_for_a_year() {
        let file = url("vendor/htmx.min.js").trim_start_matches("/assets/").to_owned();
        let mut h = HeaderMap::new();
        h.insert(header::ACCEPT_ENCODING, HeaderValue::from_static("gzip, br"));
        let resp = serve(Path(file.clone()), h).await;
        assert_eq!(resp.status(), StatusCode::OK);
        assert_eq!(resp.headers()[header::CONTENT_ENCODING], "gzip");
        assert!(resp.headers()[header::CACHE_CONTROL].to_str().unwrap_or("").contains("immutable"));
        let plain = serve(Path(file), HeaderMap::new()).await;
        assert!(plain.headers().get(header::CONTENT_ENCODING).is_none());
        let missing = serve(Path("nope.js".into()), HeaderMap::new()).await;
        assert_eq!(missing.status(), StatusCode::NOT_FOUND);
    }
}
