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
use crate::web::{ctx::Ctx, error::PageError, layout, words};

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

/// Label line height and the width of a character, in the drawing's units (14 px text).
const LINE: f64 = 16.0;
const CHAR_W: f64 = 7.8;

/// The baseline of each station's name: above its marker, or, where that would overlap a name
/// already placed (stations at one place), below it, then further above and below in turn, so no
/// two names are drawn over each other.
fn place_labels(placed: &[Pin], marks: &[(f64, f64, f64)]) -> Vec<f64> {
    let mut boxes: Vec<(f64, f64, f64, f64)> = Vec::new();
    let mut out = Vec::with_capacity(placed.len());
    for (p, &(x, y, r)) in placed.iter().zip(marks) {
        let half = CHAR_W * p.name.chars().count() as f64 / 2.0;
        let above = y - r - 6.0;
        let below = y + r + LINE;
        let candidates = (0..24).map(|k| {
            let step = f64::from(k / 2) * LINE;
            if k % 2 == 0 { above - step } else { below + step }
        });
        let mut chosen = above;
        for base in candidates {
            let b = (x - half, base - LINE + 3.0, x + half, base + 3.0);
            if !boxes.iter().any(|o| b.0 < o.2 && o.0 < b.2 && b.1 < o.3 && o.1 < b.3) {
                chosen = base;
                break;
            }
        }
        boxes.push((x - half, chosen - LINE + 3.0, x + half, chosen + 3.0));
        out.push(chosen);
    }
    out
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
    let marks: Vec<(f64, f64, f64)> = placed
        .iter()
        .map(|p| {
            let (x, y) = at(p.lat, p.lon);
            (x, y, 6.0 + 14.0 * (p.detections as f64 / most).sqrt())
        })
        .collect();
    let label_ys = place_labels(placed, &marks);
    html! {
        svg.map.(if tiles.is_some() { "tiled" } else { "plain" }) viewBox=(format!("0 0 {W} {H}")) role="img" aria-label=(format!("Positions of {}", words::count(placed.len(), "station", "stations"))) {
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
            @for ((p, (x, y, r)), label_y) in placed.iter().zip(&marks).zip(&label_ys) {
                g.map-marker {
                    title { (p.name) ": " (words::count(p.detections, "detection", "detections")) ", " (p.species) " species (" (words::place_to(p.lat, p.lon, d)) ")" }
                    circle cx=(format!("{x:.1}")) cy=(format!("{y:.1}")) r=(format!("{r:.1}")) {}
                    text x=(format!("{x:.1}")) y=(format!("{label_y:.1}")) text-anchor="middle" { (p.name) }
                }
            }
            @if let Some(t) = tiles {
                (map_tiles::credit(t, H))
            } @else {
                text.map-note x=(W - 8.0) y=(H - 8.0) text-anchor="end" {
                    (words::latitudes(min_lat, max_lat)) ", " (words::longitudes(min_lon, max_lon))
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
                                (Some(la), Some(lo)) => (words::place_to(la, lo, 4)),
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
            p.muted.small {
                (words::count(unplaced.len(), "satellite without a position is", "satellites without a position are")) " not drawn."
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_of_stations_at_one_place_do_not_overlap() {
        let pin = |name| Pin { name, lat: 51.5, lon: -0.1, detections: 10, species: 3 };
        let placed = [pin("Garden"), pin("Garden feeder"), pin("Roof"), pin("Far away")];
        let mut marks = vec![(300.0, 180.0, 20.0); 3];
        marks.push((560.0, 40.0, 6.0));
        let ys = place_labels(&placed, &marks);
        assert_eq!(ys[0], 180.0 - 20.0 - 6.0, "the first name sits above its marker");
        assert!(ys[1] > 180.0, "the second goes below: {ys:?}");
        let mut same: Vec<f64> = ys[..3].to_vec();
        same.sort_by(f64::total_cmp);
        assert!(same.windows(2).all(|w| w[1] - w[0] >= LINE), "no two of them share a line: {ys:?}");
        assert_eq!(ys[3], 40.0 - 6.0 - 6.0, "a station elsewhere keeps its place");
    }

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
