//! Inline SVG icons (no icon font, nothing to download): 24 px strokes in `currentColor`.

use maud::{Markup, PreEscaped, html};

fn svg(paths: &str) -> Markup {
    html! {
        svg.icon viewBox="0 0 24 24" width="20" height="20" aria-hidden="true" fill="none" stroke="currentColor"
            stroke-width="1.8" stroke-linecap="round" stroke-linejoin="round" { (PreEscaped(paths)) }
    }
}

pub fn bird() -> Markup {
    svg(
        r#"<path d="M16 7h.01"/><path d="M3.4 18H12a8 8 0 0 0 8-8V7a4 4 0 0 0-7.3-2.3L2 20"/><path d="m20 7 2 .5-2 .5"/><path d="M10 18v3"/><path d="M14 17.8V21"/><path d="M7.5 18A6 6 0 0 1 13 12"/>"#,
    )
}

pub fn user() -> Markup {
    svg(r#"<circle cx="12" cy="8" r="4"/><path d="M4 21a8 8 0 0 1 16 0"/>"#)
}

pub fn play() -> Markup {
    svg(r#"<polygon points="7 4 20 12 7 20 7 4" fill="currentColor"/>"#)
}

pub fn copy() -> Markup {
    svg(r#"<rect x="9" y="9" width="12" height="12" rx="2"/><path d="M5 15V5a2 2 0 0 1 2-2h10"/>"#)
}

/// The icon of a main tab.
pub fn tab(key: &str) -> Markup {
    svg(match key {
        "live" => {
            r#"<circle cx="12" cy="12" r="2"/><path d="M16.2 7.8a6 6 0 0 1 0 8.4M7.8 16.2a6 6 0 0 1 0-8.4M19 5a10 10 0 0 1 0 14M5 19A10 10 0 0 1 5 5"/>"#
        }
        "detections" => r#"<path d="M3 12h2l3-8 4 16 3-8h6"/>"#,
        "species" => r#"<path d="M16 7h.01"/><path d="M3.4 18H12a8 8 0 0 0 8-8V7a4 4 0 0 0-7.3-2.3L2 20"/>"#,
        "stats" => r#"<path d="M3 3v18h18"/><path d="M7 15l4-4 3 3 5-6"/>"#,
        "satellites" => r#"<rect x="8" y="3" width="8" height="12" rx="4"/><path d="M5 11a7 7 0 0 0 14 0M12 18v3"/>"#,
        "alerts" => r#"<path d="M6 8a6 6 0 0 1 12 0c0 7 3 9 3 9H3s3-2 3-9"/><path d="M10.3 21a1.9 1.9 0 0 0 3.4 0"/>"#,
        _ => r#"<circle cx="12" cy="12" r="9"/>"#,
    })
}
