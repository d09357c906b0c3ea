//! Where an imported station stood when its own settings do not say (issue 51, defect 13).
//!
//! BirdNET-Pi writes the station's configured `LATITUDE`/`LONGITUDE` into every row (`Lat`,
//! `Lon`), BirdNET-Go its `latitude`/`longitude`: a `birds.db` uploaded without its
//! `birdnet.conf` still knows where it was. The position chosen is the one most rows carry (a
//! station moved once keeps the place it spent longest at), read from at most [`SAMPLED`] rows so
//! a large history costs no more than a small one. Values a station could not have had (NaN,
//! out of range, the 0/0 of an unset configuration) are ignored.

use std::collections::HashMap;

use super::peer::{PeerSource, Read, SourceError, StationInfo};
use crate::domain::validate;

/// Rows read, at most, to find the position.
pub const SAMPLED: usize = 2_000;
/// Distinct positions counted, at most (a hostile file cannot grow the map without end).
const DISTINCT: usize = 256;
/// Rows read per batch while sampling.
const BATCH: usize = 200;

/// A position rounded to 4 decimal places (about 10 m), as BirdNET-Pi advises them written.
type Rounded = (i64, i64);

/// How often a position was seen, the row it was first seen at, and the position as first seen.
struct Seen {
    rows: u64,
    first: usize,
    position: (f64, f64),
}

/// A usable position: both values, in range, not 0/0.
fn usable(latitude: Option<f64>, longitude: Option<f64>) -> Option<(f64, f64)> {
    let (la, lo) = (latitude?, longitude?);
    if la == 0.0 && lo == 0.0 {
        return None;
    }
    validate::position(la, lo).ok()
}

/// The position most of `rows` carry (ties: the one seen first), or `None` when none carries a
/// usable one. Positions are compared at 4 decimal places (about 10 m), as BirdNET-Pi advises
/// them to be written.
pub fn most_common(rows: impl IntoIterator<Item = (Option<f64>, Option<f64>)>) -> Option<(f64, f64)> {
    let mut seen: HashMap<Rounded, Seen> = HashMap::new();
    for (order, (la, lo)) in rows.into_iter().enumerate() {
        let Some(p) = usable(la, lo) else { continue };
        let key = ((p.0 * 10_000.0).round() as i64, (p.1 * 10_000.0).round() as i64);
        if let Some(e) = seen.get_mut(&key) {
            e.rows += 1;
        } else if seen.len() < DISTINCT {
            seen.insert(key, Seen { rows: 1, first: order, position: p });
        }
    }
    seen.into_values().max_by(|a, b| a.rows.cmp(&b.rows).then(b.first.cmp(&a.first))).map(|s| s.position)
}

/// `station` with a position: its own when usable, else the one its first rows carry.
pub fn with_row_position(mut station: StationInfo, source: &mut dyn PeerSource) -> Result<StationInfo, SourceError> {
    if usable(station.latitude, station.longitude).is_some() {
        return Ok(station);
    }
    let mut positions = Vec::new();
    let mut cursor = 0;
    while positions.len() < SAMPLED {
        let batch = source.next_batch(cursor, BATCH.min(SAMPLED - positions.len()))?;
        if batch.items.is_empty() {
            break;
        }
        positions.extend(batch.items.iter().filter_map(|i| match i {
            Read::Row(r) => Some((r.latitude, r.longitude)),
            Read::Corrupt { .. } => None,
        }));
        if batch.cursor <= cursor {
            break;
        }
        cursor = batch.cursor;
    }
    if let Some((la, lo)) = most_common(positions) {
        (station.latitude, station.longitude) = (Some(la), Some(lo));
    }
    Ok(station)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_place_most_rows_carry_wins_and_impossible_ones_are_ignored() {
        let p = |a: f64, o: f64| (Some(a), Some(o));
        let rows = vec![
            p(f64::NAN, 13.4),
            p(91.0, 0.0),
            p(0.0, 0.0),
            (Some(40.0), None),
            p(52.52, 13.405),
            p(40.7128, -74.006),
            p(40.71281, -74.00601),
            p(f64::INFINITY, f64::NEG_INFINITY),
        ];
        assert_eq!(most_common(rows), Some((40.7128, -74.006)));
        assert_eq!(most_common(vec![p(f64::NAN, f64::NAN), p(0.0, 0.0), (None, None)]), None);
        assert_eq!(most_common(vec![p(52.52, 13.405), p(40.7128, -74.006)]), Some((52.52, 13.405)), "a tie: the first");
    }

    #[test]
    fn many_distinct_places_stay_bounded() {
        let rows = (0..10_000).map(|i| (Some(f64::from(i % 80)), Some(f64::from(i / 80))));
        assert!(most_common(rows).is_some());
    }
}
