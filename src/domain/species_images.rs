//! Species images, the rules with no I/O: the status of a species' picture, filling in the
//! source URL template, recognising an image by its first bytes (a server's `Content-Type` is
//! never trusted alone), the retry schedule, and making third-party text safe to keep and to send
//! back in a header.

use std::time::Duration;

/// Where a species' picture stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ImageStatus {
    /// Waiting for a download.
    Queued,
    /// A fetcher is downloading it now (shown to clients as `queued`).
    Fetching,
    /// Stored; the proxy serves it.
    Cached,
    /// The last download failed; retried later unless the fetcher gave up.
    Failed,
    /// The source has no picture of this species (or no source is configured).
    None,
}

impl ImageStatus {
    pub const ALL: [ImageStatus; 5] = [Self::Queued, Self::Fetching, Self::Cached, Self::Failed, Self::None];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Queued => "queued",
            Self::Fetching => "fetching",
            Self::Cached => "cached",
            Self::Failed => "failed",
            Self::None => "none",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|v| v.as_str() == s)
    }

    /// What a client is told: a download in progress is still `queued` to them.
    pub fn public(self) -> Self {
        if self == Self::Fetching { Self::Queued } else { self }
    }
}

/// The image formats the hub keeps: what browsers show everywhere, and nothing that can carry
/// script (no SVG).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImageKind {
    Jpeg,
    Png,
    Gif,
    Webp,
}

impl ImageKind {
    pub fn mime(self) -> &'static str {
        match self {
            Self::Jpeg => "image/jpeg",
            Self::Png => "image/png",
            Self::Gif => "image/gif",
            Self::Webp => "image/webp",
        }
    }

    pub fn extension(self) -> &'static str {
        match self {
            Self::Jpeg => "jpg",
            Self::Png => "png",
            Self::Gif => "gif",
            Self::Webp => "webp",
        }
    }
}

/// The format `bytes` really are, from their signature; `None` for anything else (HTML, text,
/// SVG, a truncated file).
pub fn sniff(bytes: &[u8]) -> Option<ImageKind> {
    match bytes {
        [0x89, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a, ..] => Some(ImageKind::Png),
        [0xff, 0xd8, 0xff, ..] => Some(ImageKind::Jpeg),
        [b'G', b'I', b'F', b'8', b'7' | b'9', b'a', ..] => Some(ImageKind::Gif),
        [b'R', b'I', b'F', b'F', _, _, _, _, b'W', b'E', b'B', b'P', ..] => Some(ImageKind::Webp),
        _ => None,
    }
}

/// Whether a `Content-Type` header claims an image (`image/png; charset=...` included).
pub fn declares_image(content_type: &str) -> bool {
    media_type(content_type).starts_with("image/")
}

/// Whether a `Content-Type` header is JSON (`application/json`, `application/ld+json` ...).
pub fn declares_json(content_type: &str) -> bool {
    let m = media_type(content_type);
    m == "application/json" || (m.starts_with("application/") && m.ends_with("+json"))
}

fn media_type(content_type: &str) -> String {
    content_type.split(';').next().unwrap_or_default().trim().to_ascii_lowercase()
}

/// Fills `template`: `{scientific_name}` and `{code}` become their percent-encoded values
/// (`Turdus migratorius` -> `Turdus%20migratorius`), so a name can never add a path segment, a
/// query parameter or a fragment of its own.
pub fn expand(template: &str, scientific_name: &str, code: &str) -> String {
    template.replace("{scientific_name}", &encode(scientific_name.trim())).replace("{code}", &encode(code.trim()))
}

/// RFC 3986 percent-encoding of everything but the unreserved characters.
fn encode(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for b in value.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The first retry waits this long; each further one twice as long, at most [`MAX_DELAY`].
pub const FIRST_DELAY: Duration = Duration::from_secs(60);
pub const MAX_DELAY: Duration = Duration::from_secs(24 * 60 * 60);

/// How long to wait after `failed` failed attempts before the next: 1 min, 2 min, 4 min ...
/// capped at 24 h.
pub fn retry_delay(failed: u32) -> Duration {
    let doublings = failed.saturating_sub(1).min(20);
    (FIRST_DELAY * (1u32 << doublings)).min(MAX_DELAY)
}

/// Third-party text (attribution, licence, page) as it is kept: one line, no control characters,
/// trimmed, at most `max` characters; `None` when nothing is left.
pub fn clean_text(raw: &str, max: usize) -> Option<String> {
    let one_line: String = raw.chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
    let words: Vec<&str> = one_line.split_whitespace().collect();
    let joined = words.join(" ");
    let cut: String = joined.chars().take(max).collect();
    (!cut.is_empty()).then_some(cut)
}

/// `text` as a header value: visible ASCII as is, anything else (accents, other scripts)
/// percent-encoded as UTF-8, so `© José` becomes `%C2%A9 Jos%C3%A9`. The JSON answers carry the
/// original text.
pub fn header_safe(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c == ' ' || (c.is_ascii_graphic() && c != '%') {
            out.push(c);
        } else {
            let mut buf = [0u8; 4];
            for b in c.encode_utf8(&mut buf).bytes() {
                out.push_str(&format!("%{b:02X}"));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const PNG: &[u8] = &[0x89, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13];

    #[test]
    fn images_are_recognised_by_their_bytes_not_their_label() {
        let cases: &[(&[u8], Option<ImageKind>)] = &[
            (PNG, Some(ImageKind::Png)),
            (&[0xff, 0xd8, 0xff, 0xe0, 0, 0x10, b'J', b'F', b'I', b'F'], Some(ImageKind::Jpeg)),
            (b"GIF89a\x01\x00\x01\x00", Some(ImageKind::Gif)),
            (b"GIF87a\x01\x00\x01\x00", Some(ImageKind::Gif)),
            (b"RIFF\x24\x00\x00\x00WEBPVP8 ", Some(ImageKind::Webp)),
            (b"RIFF\x24\x00\x00\x00WAVEfmt ", None),
            (b"<!doctype html><html><body>not found</body></html>", None),
            (b"<svg xmlns=\"http://www.w3.org/2000/svg\"><script>alert(1)</script></svg>", None),
            (b"{\"imageUrl\": null}", None),
            (&PNG[..5], None),
            (&[0xff, 0xd8], None),
            (b"GIF88a", None),
            (b"", None),
        ];
        for (bytes, want) in cases {
            assert_eq!(sniff(bytes), *want, "{:?}", String::from_utf8_lossy(bytes));
        }
    }

    #[test]
    fn content_types_are_read_without_parameters_or_case() {
        assert!(declares_image("image/png"));
        assert!(declares_image("Image/JPEG; charset=binary"));
        assert!(!declares_image("text/html; charset=utf-8"));
        assert!(declares_json("application/json; charset=utf-8"));
        assert!(declares_json("application/ld+json"));
        assert!(!declares_json("text/json-ish"));
        assert!(!declares_json("image/png"));
    }

    #[test]
    fn the_template_gets_encoded_names_that_cannot_escape_their_place() {
        let t = "https://img.example.org/birds/{scientific_name}?code={code}";
        assert_eq!(
            expand(t, "Turdus migratorius", "turdus_migratorius"),
            "https://img.example.org/birds/Turdus%20migratorius?code=turdus_migratorius"
        );
        assert_eq!(
            expand(t, " Ptilinopus porphyraceus/ ?x=1#y", "p"),
            "https://img.example.org/birds/Ptilinopus%20porphyraceus%2F%20%3Fx%3D1%23y?code=p"
        );
        assert_eq!(expand("https://x/{scientific_name}", "Pica pica", "pica_pica"), "https://x/Pica%20pica");
        assert_eq!(
            expand("https://x/{scientific_name}/{scientific_name}", "Crex crex", "c"),
            "https://x/Crex%20crex/Crex%20crex"
        );
        assert_eq!(expand("https://x/{scientific_name}", "Cygnus olor ä", "c"), "https://x/Cygnus%20olor%20%C3%A4");
    }

    #[test]
    fn retries_wait_one_minute_doubling_up_to_a_day() {
        let mins = |m: u64| Duration::from_secs(m * 60);
        assert_eq!(retry_delay(0), mins(1));
        assert_eq!(retry_delay(1), mins(1));
        assert_eq!(retry_delay(2), mins(2));
        assert_eq!(retry_delay(3), mins(4));
        assert_eq!(retry_delay(11), mins(1024));
        assert_eq!(retry_delay(12), MAX_DELAY);
        assert_eq!(retry_delay(u32::MAX), MAX_DELAY);
    }

    #[test]
    fn foreign_text_is_one_clean_line_and_header_safe() {
        assert_eq!(clean_text("  Jane\r\n Doe\t(CC BY)\u{0}  ", 100).as_deref(), Some("Jane Doe (CC BY)"));
        assert_eq!(clean_text("\n\t ", 100), None);
        assert_eq!(clean_text("abcdef", 3).as_deref(), Some("abc"));
        assert_eq!(header_safe("© José Pérez, CC BY-SA 4.0"), "%C2%A9 Jos%C3%A9 P%C3%A9rez, CC BY-SA 4.0");
        assert_eq!(header_safe("100% bird\r\nX-Evil: 1"), "100%25 bird%0D%0AX-Evil: 1");
        for text in ["© José", "a\r\nb", "鸟", "plain"] {
            assert!(axum::http::HeaderValue::from_str(&header_safe(text)).is_ok(), "{text}");
        }
    }

    #[test]
    fn statuses_round_trip_and_fetching_reads_as_queued() {
        for s in ImageStatus::ALL {
            assert_eq!(ImageStatus::parse(s.as_str()), Some(s));
        }
        assert_eq!(ImageStatus::parse("done"), None);
        assert_eq!(ImageStatus::Fetching.public(), ImageStatus::Queued);
        assert_eq!(ImageStatus::Cached.public(), ImageStatus::Cached);
    }
}
