//! The Stats map: satellite positions as an inline SVG on a plain latitude/longitude projection
//! (equirectangular, with the longitude scaled by the cosine of the mean latitude so distances
//! look right), or on map tiles when `http.map_tiles` names a tile server ([`super::map_tiles`]).
//! Without that setting nothing is fetched from outside.

use maud::{Markup, html};
use serde::Deserialize;

use super::{
    map_tiles::{self, Tiles, View},
    stats::Filters,
    stats_parts::{Named, species_link},
};
use crate::web::{ctx::Ctx, error::PageError, layout};

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Marker {
    satellite_id: String,
    name: String,
    latitude: Option<f64>,
    longitude: Option<f64>,
    detections: i64,
    species: i64,
    top_species: Option<Named>,
}

#[derive(Debug, Deserialize)]
struct Map {
    satellites: Vec<Marker>,
}

const W: f64 = 600.0;
const H: f64 = 360.0;
const PAD: f64 = 40.0;

/// A point of the drawing for a position, within `bounds` (min lat, max lat, min lon, max lon).
fn project(lat: f64, lon: f64, b: (f64, f64, f64, f64)) -> (f64, f64) {
    let (min_lat, max_lat, min_lon, max_lon) = b;
    let k = ((min_lat + max_lat) / 2.0).to_radians().cos().max(0.05);
    let span_x = (max_lon - min_lon) * k;
    let span_y = max_lat - min_lat;
    let scale = ((W - 2.0 * PAD) / span_x).min((H - 2.0 * PAD) / span_y);
    let cx = W / 2.0 + ((lon - (min_lon + max_lon) / 2.0) * k) * scale;
    let cy = H / 2.0 - (lat - (min_lat + max_lat) / 2.0) * scale;
    (cx, cy)
}

/// A station to draw.
pub struct Pin<'a> {
    pub name: &'a str,
    pub lat: f64,
    pub lon: f64,
    /// Sizes the marker.
    pub detections: i64,
    pub species: i64,
}

/// The positions as an SVG drawing, coordinates written with `decimals` places; on map tiles
/// (Web Mercator, zoomed in at most to `max_zoom`) when a tile server is configured.
pub fn draw(placed: &[Pin], decimals: usize, tiles: Option<Tiles>, max_zoom: u8) -> Markup {
    let points: Vec<(f64, f64)> = placed.iter().map(|p| (p.lat, p.lon)).collect();
    let view = tiles.map(|_| View::fit(&points, W, H, PAD, max_zoom));
    // Without tiles: a plain projection with a margin of at least about 1 km, so a single
    // station sits in the middle.
    let (mut min_lat, mut max_lat) = placed.iter().fold((f64::MAX, f64::MIN), |(a, b), p| (a.min(p.lat), b.max(p.lat)));
    let (mut min_lon, mut max_lon) = placed.iter().fold((f64::MAX, f64::MIN), |(a, b), p| (a.min(p.lon), b.max(p.lon)));
    let m_lat = ((max_lat - min_lat) * 0.1).max(0.01);
    let m_lon = ((max_lon - min_lon) * 0.1).max(0.01);
    min_lat -= m_lat;
    max_lat += m_lat;
    min_lon -= m_lon;
    max_lon += m_lon;
    let bounds = (min_lat, max_lat, min_lon, max_lon);
    let at = |lat: f64, lon: f64| view.map_or_else(|| project(lat, lon, bounds), |v| v.project(lat, lon));
    let most = placed.iter().map(|p| p.detections).max().unwrap_or(0).max(1) as f64;
    let d = decimals;
    html! {
        svg.map.(if tiles.is_some() { "tiled" } else { "plain" }) viewBox=(format!("0 0 {W} {H}")) role="img" aria-label=(format!("Positions of {} stations", placed.len())) {
            defs { clipPath #map-clip { rect x="0" y="0" width=(W) height=(H) rx="8" {} } }
            rect.map-bg x="0" y="0" width=(W) height=(H) rx="8" {}
            @if let (Some(t), Some(v)) = (tiles, view.as_ref()) {
                (map_tiles::layer(t, v))
            } @else {
                // A graticule every tenth of the span, for a sense of scale.
                @for i in 1..10 {
                    line.map-grid x1=(W * f64::from(i) / 10.0) y1="0" x2=(W * f64::from(i) / 10.0) y2=(H) {}
                    line.map-grid x1="0" y1=(H * f64::from(i) / 10.0) x2=(W) y2=(H * f64::from(i) / 10.0) {}
                }
            }
            @for p in placed {
                @let (x, y) = at(p.lat, p.lon);
                @let r = 6.0 + 14.0 * (p.detections as f64 / most).sqrt();
                g.map-marker {
                    title { (p.name) ": " (p.detections) " detections, " (p.species) " species (" (format!("{:.d$}, {:.d$}", p.lat, p.lon)) ")" }
                    circle cx=(format!("{x:.1}")) cy=(format!("{y:.1}")) r=(format!("{r:.1}")) {}
                    text x=(format!("{x:.1}")) y=(format!("{:.1}", y - r - 6.0)) text-anchor="middle" { (p.name) }
                }
            }
            @if let Some(t) = tiles {
                (map_tiles::credit(t, H))
            } @else {
                text.map-note x=(W - 8.0) y=(H - 8.0) text-anchor="end" {
                    (format!("{min_lat:.3}…{max_lat:.3} N, {min_lon:.3}…{max_lon:.3} E"))
                }
            }
        }
    }
}

pub async fn render(ctx: &Ctx, f: &Filters) -> Result<Markup, PageError> {
    let m: Map = ctx.api.get(&format!("/stats/map?{}", f.api())).await?;
    if m.satellites.is_empty() {
        return Ok(layout::empty(
            "No satellites yet",
            html! { "Register a satellite; with a position it shows on this map." },
        ));
    }
    let placed: Vec<(&Marker, f64, f64)> =
        m.satellites.iter().filter_map(|s| Some((s, s.latitude?, s.longitude?))).collect();
    let unplaced: Vec<&Marker> =
        m.satellites.iter().filter(|s| s.latitude.is_none() || s.longitude.is_none()).collect();
    let body = if placed.is_empty() {
        layout::empty(
            "No satellite has a position yet",
            html! { "Set a satellite's latitude and longitude (on the device or its page) to place it here." },
        )
    } else {
        let pins: Vec<Pin> = placed
            .iter()
            .map(|(s, lat, lon)| Pin {
                name: &s.name,
                lat: *lat,
                lon: *lon,
                detections: s.detections,
                species: s.species,
            })
            .collect();
        draw(&pins, 4, Tiles::of(&ctx.api_state().settings.http), 16)
    };
    Ok(html! {
        (body)
        div.table-scroll {
            table.list.nums {
                thead { tr { th scope="col" { "Satellite" } th scope="col" { "Position" } th scope="col" { "Detections" } th scope="col" { "Species" } th scope="col" { "Most heard" } } }
                tbody {
                    @for s in &m.satellites {
                        tr {
                            td { a href=(format!("/satellites/{}", s.satellite_id)) { (s.name) } }
                            td { @match (s.latitude, s.longitude) {
                                (Some(la), Some(lo)) => (format!("{la:.4}, {lo:.4}")),
                                _ => span.muted { "not set" },
                            } }
                            td.n { (s.detections) }
                            td.n { (s.species) }
                            td { @if let Some(t) = &s.top_species { (species_link(ctx, t)) } @else { span.muted { "–" } } }
                        }
                    }
                }
            }
        }
        @if !unplaced.is_empty() && !placed.is_empty() {
            p.muted.small { (unplaced.len()) " satellite(s) without a position are not drawn." }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_projection_keeps_points_inside_and_north_up() {
        let b = (50.0, 51.0, 4.0, 5.0);
        let (x1, y1) = project(50.1, 4.1, b);
        let (x2, y2) = project(50.9, 4.9, b);
        assert!(x1 < x2 && y1 > y2, "east is right, north is up");
        for (x, y) in [(x1, y1), (x2, y2)] {
            assert!((0.0..=W).contains(&x) && (0.0..=H).contains(&y));
        }
    }
}
