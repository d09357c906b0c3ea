//! How big a picture says it is, read from its header alone (JPEG, PNG, GIF, WebP), so a file of
//! a few kilobytes that claims 100000 x 100000 pixels is refused before anyone decodes it: the hub
//! never decodes species pictures, but every browser shown one does, and a decompression bomb
//! there freezes the page. Nothing here allocates; a header that cannot be read gives `None`.

use super::species_images::ImageKind;

/// The most pixels a kept picture may have (a 50-megapixel photo; species pictures are far smaller).
pub const MAX_PIXELS: u64 = 50_000_000;

/// `(width, height)` as the header of `bytes` (of format `kind`) says, or `None` when the header
/// is missing, cut short or malformed.
pub fn dimensions(kind: ImageKind, bytes: &[u8]) -> Option<(u32, u32)> {
    match kind {
        ImageKind::Png => png(bytes),
        ImageKind::Gif => gif(bytes),
        ImageKind::Jpeg => jpeg(bytes),
        ImageKind::Webp => webp(bytes),
    }
}

/// Whether a picture of `width` x `height` may be kept: not empty, at most [`MAX_PIXELS`].
pub fn acceptable(width: u32, height: u32) -> bool {
    width > 0 && height > 0 && u64::from(width) * u64::from(height) <= MAX_PIXELS
}

fn be16(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from(u16::from_be_bytes([*b.get(at)?, *b.get(at + 1)?])))
}

fn le16(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from(u16::from_le_bytes([*b.get(at)?, *b.get(at + 1)?])))
}

fn le24(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes([*b.get(at)?, *b.get(at + 1)?, *b.get(at + 2)?, 0]))
}

/// The signature, then the first chunk must be `IHDR`: width and height as big-endian u32.
fn png(b: &[u8]) -> Option<(u32, u32)> {
    if b.get(12..16)? != b"IHDR" {
        return None;
    }
    let w = u32::from_be_bytes(b.get(16..20)?.try_into().ok()?);
    let h = u32::from_be_bytes(b.get(20..24)?.try_into().ok()?);
    Some((w, h))
}

/// The logical screen after `GIF8?a`; every frame is drawn inside it.
fn gif(b: &[u8]) -> Option<(u32, u32)> {
    Some((le16(b, 6)?, le16(b, 8)?))
}

/// Walks the markers up to the first start-of-frame (SOF0..SOF15 but DHT, JPG and DAC).
fn jpeg(b: &[u8]) -> Option<(u32, u32)> {
    let mut at = 2;
    loop {
        if *b.get(at)? != 0xff {
            return None;
        }
        let marker = *b.get(at + 1)?;
        match marker {
            // Fill bytes before a marker.
            0xff => at += 1,
            // Markers with no length (TEM, RSTn); SOS before a frame header is malformed.
            0x01 | 0xd0..=0xd7 => at += 2,
            0xc0..=0xcf if !matches!(marker, 0xc4 | 0xc8 | 0xcc) => {
                return Some((be16(b, at + 7)?, be16(b, at + 5)?));
            }
            0xd8..=0xda => return None,
            _ => at += 2 + usize::try_from(be16(b, at + 2)?).ok()?,
        }
    }
}

/// `RIFF....WEBP` then one of the three first chunks: `VP8X` (the canvas), `VP8L`, `VP8 `.
fn webp(b: &[u8]) -> Option<(u32, u32)> {
    let chunk = b.get(12..16)?;
    let body = 20;
    match chunk {
        b"VP8X" => Some((le24(b, body + 4)? + 1, le24(b, body + 7)? + 1)),
        b"VP8L" => {
            if *b.get(body)? != 0x2f {
                return None;
            }
            let bits = u32::from_le_bytes(b.get(body + 1..body + 5)?.try_into().ok()?);
            Some(((bits & 0x3fff) + 1, ((bits >> 14) & 0x3fff) + 1))
        }
        b"VP8 " => {
            if b.get(body + 3..body + 6)? != [0x9d, 0x01, 0x2a] {
                return None;
            }
            Some((le16(b, body + 6)? & 0x3fff, le16(b, body + 8)? & 0x3fff))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn png_header(w: u32, h: u32) -> Vec<u8> {
        let mut b = vec![0x89, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13];
        b.extend_from_slice(b"IHDR");
        b.extend_from_slice(&w.to_be_bytes());
        b.extend_from_slice(&h.to_be_bytes());
        b.extend_from_slice(&[8, 2, 0, 0, 0]);
        b
    }

    fn jpeg_header(w: u16, h: u16) -> Vec<u8> {
        let mut b = vec![0xff, 0xd8, 0xff, 0xe0, 0, 16];
        b.extend_from_slice(b"JFIF\0\x01\x01\0\0\x01\0\x01\0\0");
        b.extend_from_slice(&[0xff, 0xc0, 0, 11, 8]);
        b.extend_from_slice(&h.to_be_bytes());
        b.extend_from_slice(&w.to_be_bytes());
        b.extend_from_slice(&[1, 1, 0x11, 0]);
        b
    }

    fn webp_header(chunk: &[u8; 4], body: &[u8]) -> Vec<u8> {
        let mut b = b"RIFF\0\0\0\0WEBP".to_vec();
        b.extend_from_slice(chunk);
        b.extend_from_slice(&(body.len() as u32).to_le_bytes());
        b.extend_from_slice(body);
        b
    }

    #[test]
    fn every_format_says_its_size() {
        assert_eq!(dimensions(ImageKind::Png, &png_header(640, 480)), Some((640, 480)));
        assert_eq!(dimensions(ImageKind::Jpeg, &jpeg_header(1024, 768)), Some((1024, 768)));
        let gif = b"GIF89a\x20\x03\x58\x02\x80\0\0";
        assert_eq!(dimensions(ImageKind::Gif, gif), Some((800, 600)));
        let vp8x = [0x10, 0, 0, 0, 0x7f, 0x02, 0, 0xdf, 0x01, 0];
        assert_eq!(dimensions(ImageKind::Webp, &webp_header(b"VP8X", &vp8x)), Some((640, 480)));
        // VP8L: 14 bits of width - 1, then 14 of height - 1.
        let bits: u32 = 99 | (49 << 14);
        let mut vp8l = vec![0x2f];
        vp8l.extend_from_slice(&bits.to_le_bytes());
        assert_eq!(dimensions(ImageKind::Webp, &webp_header(b"VP8L", &vp8l)), Some((100, 50)));
        let vp8 = [0, 0, 0, 0x9d, 0x01, 0x2a, 0x40, 0x01, 0xf0, 0x00];
        assert_eq!(dimensions(ImageKind::Webp, &webp_header(b"VP8 ", &vp8)), Some((320, 240)));
    }

    #[test]
    fn bombs_and_broken_headers_are_refused() {
        let (w, h) = dimensions(ImageKind::Png, &png_header(100_000, 100_000)).expect("read");
        assert!(!acceptable(w, h));
        let (w, h) = dimensions(ImageKind::Jpeg, &jpeg_header(65_535, 65_535)).expect("read");
        assert!(!acceptable(w, h));
        assert!(!acceptable(0, 10));
        assert!(acceptable(8000, 6000));
        for cut in [4, 13, 20] {
            assert_eq!(dimensions(ImageKind::Png, &png_header(1, 1)[..cut]), None, "PNG cut at {cut}");
        }
        assert_eq!(dimensions(ImageKind::Jpeg, &jpeg_header(10, 10)[..22]), None);
        assert_eq!(dimensions(ImageKind::Jpeg, &[0xff, 0xd8, 0xff, 0xda, 0, 2]), None);
        assert_eq!(dimensions(ImageKind::Webp, b"RIFF\0\0\0\0WEBPJUNK"), None);
    }
}
