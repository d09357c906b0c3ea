//! Map tiles behind the station map, only when `http.map_tiles` names a tile server (an
//! `{z}/{x}/{y}` URL template): the positions are projected in Web Mercator at the deepest zoom
//! that fits them, and the 256 px tiles covering the drawing are placed as SVG images that the
//! visitor's browser loads. Without the setting nothing is fetched from anywhere.

use std::f64::consts::PI;

use maud::{Markup, html};

/// The tile server and the credit it requires.
#[derive(Debug, Clone, Copy)]
pub struct Tiles<'a> {
    pub url: &'a str,
    pub attribution: &'a str,
}

impl<'a> Tiles<'a> {
    /// The configured tiles, if any.
    pub fn of(http: &'a crate::config::HttpSettings) -> Option<Self> {
        let url = http.map_tiles.trim();
        (!url.is_empty()).then_some(Self { url, attribution: http.map_attribution.trim() })
    }
}

const TILE: f64 = 256.0;
/// Web Mercator's latitude limit.
const MAX_LAT: f64 = 85.051_128;

/// A point's world pixel at zoom `z` (0,0 is the north-west corner).
fn world(lat: f64, lon: f64, z: u8) -> (f64, f64) {
    let n = TILE * f64::from(1u32 << z);
    let phi = lat.clamp(-MAX_LAT, MAX_LAT).to_radians();
    let x = (lon + 180.0) / 360.0 * n;
    let y = (1.0 - (phi.tan() + 1.0 / phi.cos()).ln() / PI) / 2.0 * n;
    (x, y)
}

/// A `w` × `h` window onto the world at zoom `z`, its north-west corner at world pixel (x0, y0).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct View {
    pub z: u8,
    x0: f64,
    y0: f64,
    w: f64,
    h: f64,
}

impl View {
    /// The deepest zoom up to `max_zoom` at which every point fits inside the padding, centred.
    pub fn fit(points: &[(f64, f64)], w: f64, h: f64, pad: f64, max_zoom: u8) -> Self {
        let mut z = max_zoom.min(19);
        loop {
            let px: Vec<(f64, f64)> = points.iter().map(|&(lat, lon)| world(lat, lon, z)).collect();
            let (min_x, max_x) = px.iter().fold((f64::MAX, f64::MIN), |(a, b), p| (a.min(p.0), b.max(p.0)));
            let (min_y, max_y) = px.iter().fold((f64::MAX, f64::MIN), |(a, b), p| (a.min(p.1), b.max(p.1)));
            let fits = max_x - min_x <= w - 2.0 * pad && max_y - min_y <= h - 2.0 * pad;
            if fits || z == 0 {
                let (cx, cy) = if px.is_empty() {
                    (TILE / 2.0, TILE / 2.0)
                } else {
                    ((min_x + max_x) / 2.0, (min_y + max_y) / 2.0)
                };
                return Self { z, x0: cx - w / 2.0, y0: cy - h / 2.0, w, h };
            }
            z -= 1;
        }
    }

    /// Where a position falls in the drawing.
    pub fn project(&self, lat: f64, lon: f64) -> (f64, f64) {
        let (x, y) = world(lat, lon, self.z);
        (x - self.x0, y - self.y0)
    }

    /// Every tile that covers the drawing: (column, row, left, top), columns wrapped around the
    /// antimeridian; rows outside the world are left out.
    pub fn tiles(&self) -> Vec<(u32, u32, f64, f64)> {
        let count = 1i64 << self.z;
        let (c0, c1) = ((self.x0 / TILE).floor() as i64, ((self.x0 + self.w) / TILE).ceil() as i64);
        let (r0, r1) = ((self.y0 / TILE).floor() as i64, ((self.y0 + self.h) / TILE).ceil() as i64);
        let mut out = Vec::new();
        for row in r0.max(0)..r1.min(count) {
            for col in c0..c1 {
                let wrapped = col.rem_euclid(count);
                out.push((wrapped as u32, row as u32, col as f64 * TILE - self.x0, row as f64 * TILE - self.y0));
            }
        }
        out
    }
}

/// The URL of one tile.
pub fn url(template: &str, z: u8, x: u32, y: u32) -> String {
    template.replace("{z}", &z.to_string()).replace("{x}", &x.to_string()).replace("{y}", &y.to_string())
}

/// The tile images of `view` and the server's credit, for inside the map's SVG.
pub fn layer(tiles: Tiles, view: &View) -> Markup {
    html! {
        g.map-tiles clip-path="url(#map-clip)" {
            @for (x, y, left, top) in view.tiles() {
                image href=(url(tiles.url, view.z, x, y)) x=(format!("{left:.1}")) y=(format!("{top:.1}")) width="256" height="256" preserveAspectRatio="none" {}
            }
        }
    }
}

/// The tile server's credit, bottom left.
pub fn credit(tiles: Tiles, h: f64) -> Markup {
    html! {
        @if !tiles.attribution.is_empty() {
            text.map-credit x="8" y=(format!("{:.1}", h - 8.0)) { (tiles.attribution) }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn world_pixels_match_web_mercator() {
        let (x, y) = world(0.0, 0.0, 0);
        assert!((x - 128.0).abs() < 1e-9 && (y - 128.0).abs() < 1e-9);
        // Berlin at zoom 10 is in tile 550/335 (as every slippy map numbers it).
        let (x, y) = world(52.52, 13.405, 10);
        assert_eq!(((x / TILE) as u32, (y / TILE) as u32), (550, 335));
    }

    #[test]
    fn the_view_zooms_until_the_points_fit_and_its_tiles_cover_it() {
        let pts = [(52.5187, 13.4049), (52.5312, 13.4215)];
        let v = View::fit(&pts, 600.0, 360.0, 40.0, 17);
        assert_eq!(
            v.z, 14,
            "1.4 km north-south is 478 px at zoom 15, over the 280 px inside the padding; 239 px at 14"
        );
        for (lat, lon) in pts {
            let (x, y) = v.project(lat, lon);
            assert!((40.0..=560.0).contains(&x) && (40.0..=320.0).contains(&y), "{x},{y}");
        }
        let tiles = v.tiles();
        // 600 × 360 needs 3 or 4 columns and 2 or 3 rows of 256 px.
        assert!((6..=12).contains(&tiles.len()), "{}", tiles.len());
        assert!(tiles.iter().any(|t| t.2 <= 0.0 && t.3 <= 0.0), "the top-left corner is covered");
        assert!(tiles.iter().any(|t| t.2 + 256.0 >= 600.0 && t.3 + 256.0 >= 360.0), "and the bottom-right");
        assert_eq!(View::fit(&[(52.52, 13.4)], 600.0, 360.0, 40.0, 13).z, 13, "one point: the cap");
    }

    #[test]
    fn tiles_wrap_at_the_antimeridian_and_urls_fill_the_template() {
        let v = View::fit(&[(0.0, 179.99), (0.0, -179.99)], 600.0, 360.0, 40.0, 17);
        assert!(v.tiles().iter().all(|t| t.0 < (1 << v.z)));
        assert_eq!(url("https://tile.example/{z}/{x}/{y}.png", 3, 4, 5), "https://tile.example/3/4/5.png");
    }
}
