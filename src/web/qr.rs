//! QR codes drawn as inline SVG on the hub (nothing fetched, no browser library): one path of
//! dark modules on a light square with the standard four-module quiet zone.

use qrcodegen::{QrCode, QrCodeEcc};

/// The text does not fit in a QR code.
#[derive(Debug, thiserror::Error)]
#[error("the text is too long for a QR code")]
pub struct TooLong;

/// `text` as an SVG QR code (error correction M), `title` read by screen readers.
pub fn svg(text: &str, title: &str) -> Result<String, TooLong> {
    let code = QrCode::encode_text(text, QrCodeEcc::Medium).map_err(|_| TooLong)?;
    let size = code.size();
    let quiet = 4;
    let full = size + 2 * quiet;
    let mut path = String::with_capacity((size * size) as usize * 4);
    for y in 0..size {
        for x in 0..size {
            if code.get_module(x, y) {
                path.push_str(&format!("M{},{}h1v1h-1z", x + quiet, y + quiet));
            }
        }
    }
    let title = title.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;");
    Ok(format!(
        r##"<svg class="qr" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {full} {full}" role="img" shape-rendering="crispEdges"><title>{title}</title><rect width="{full}" height="{full}" fill="#fff"/><path d="{path}" fill="#000"/></svg>"##
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_text_becomes_an_svg_with_dark_modules() {
        let s = svg(r#"{"hub":"http://birdhub.local:8080"}"#, "QR <code>").expect("fits");
        assert!(s.starts_with("<svg") && s.ends_with("</svg>"));
        assert!(s.contains("QR &lt;code&gt;"), "the title is escaped");
        assert!(s.matches('M').count() > 50, "many dark modules");
    }

    #[test]
    fn a_text_too_long_for_any_version_is_refused() {
        assert!(svg(&"x".repeat(5000), "t").is_err());
    }
}
