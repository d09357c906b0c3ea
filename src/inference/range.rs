//! The location filter: BirdNET's range meta-model turns (latitude, longitude, week) into a score
//! per species; species at or above the threshold (default 0.03) are "expected here and now".
//! Results are cached per location (rounded to 0.1 degree, about 10 km) and week, so each
//! satellite costs one model run a week. The cache is bounded ([`DEFAULT_CACHE_ENTRIES`]):
//! coordinates come from satellite messages, and one satellite sending a new place with every
//! chunk must not grow the hub's memory without limit.
//!
//! The model's ONNX session holds ~37 MB and is needed only on a cache miss (a new cell or a new
//! week: once a week per satellite's place), so a lone miss opens it (~0.2 s), runs it and closes
//! it again: the hub does not carry it between misses. A miss within [`KEEP_OPEN`] of the previous
//! one keeps it open (misses come in bursts: a hub starting with many satellites, a new week, a
//! satellite moving), and [`RangeFilter::close_if_unused`] closes it once they stop.

use std::{
    path::PathBuf,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use chrono::{Datelike, NaiveDate};
use ort::{session::Session, value::Tensor};

use super::{ModelDir, ModelError, model};

pub const DEFAULT_THRESHOLD: f32 = 0.03;

/// How many (cell, week) answers are kept. One answer is a score per class (6522 x 4 bytes, about
/// 26 KB), so this is at most about 6.7 MB: room for every satellite of a large hub in the
/// current and the previous week. Least-recently-used answers go first.
pub const DEFAULT_CACHE_ENTRIES: u64 = 256;

/// BirdNET's week: four per month, 1..=48 (days 1-7 are week 1 of the month, 8-14 week 2,
/// 15-21 week 3, 22 to the end week 4).
pub fn week_of(date: NaiveDate) -> u32 {
    (date.month() - 1) * 4 + ((date.day() - 1) / 7 + 1).min(4)
}

/// The first and the last day of BirdNET's `week` in `year` (the inverse of [`week_of`]);
/// `None` outside 1..=48.
pub fn week_days(year: i32, week: u32) -> Option<(NaiveDate, NaiveDate)> {
    if !(1..=48).contains(&week) {
        return None;
    }
    let (month, slot) = ((week - 1) / 4 + 1, (week - 1) % 4);
    let first = NaiveDate::from_ymd_opt(year, month, slot * 7 + 1)?;
    let last = if slot == 3 {
        let next = if month == 12 {
            NaiveDate::from_ymd_opt(year + 1, 1, 1)
        } else {
            NaiveDate::from_ymd_opt(year, month + 1, 1)
        };
        next?.pred_opt()?
    } else {
        NaiveDate::from_ymd_opt(year, month, slot * 7 + 7)?
    };
    Some((first, last))
}

/// How long after a miss a following miss keeps the session open (instead of reopening it).
pub const KEEP_OPEN: Duration = Duration::from_secs(60);

/// (latitude x 10, longitude x 10, week): about 10 km cells.
type CellWeek = (i32, i32, u32);

/// The meta-model with its cache.
pub struct RangeFilter {
    /// `meta_model.onnx`, opened for each cache miss.
    path: PathBuf,
    /// The ONNX Runtime library.
    library: PathBuf,
    /// The session while misses come in a burst, and when the last miss was; one run at a time.
    open: Mutex<Open>,
    /// Answers per (cell, week), bounded so untrusted coordinates cannot exhaust memory.
    cache: moka::sync::Cache<CellWeek, Arc<Vec<f32>>>,
    /// Species scoring at least this are expected.
    pub threshold: f32,
}

impl RangeFilter {
    pub fn load(dir: &ModelDir, threshold: f32) -> Result<Self, ModelError> {
        Self::load_with_capacity(dir, threshold, DEFAULT_CACHE_ENTRIES)
    }

    /// Like [`RangeFilter::load`], keeping at most `entries` cached answers.
    pub fn load_with_capacity(dir: &ModelDir, threshold: f32, entries: u64) -> Result<Self, ModelError> {
        let (path, library) = (dir.file("meta_model.onnx"), dir.runtime_library());
        // Opened once here so that a missing or broken model is an error at load, not later.
        drop(model::open_session(model::init_runtime(&library)?, &path, 1, false)?);
        let open = Mutex::new(Open { session: None, last_miss: None });
        Ok(Self { path, library, open, cache: moka::sync::Cache::new(entries), threshold })
    }

    /// Closes a session kept open for a burst of misses once [`KEEP_OPEN`] passed without one.
    /// Returns whether it closed one. Cheap: the inference workers call it whenever they idle.
    pub fn close_if_unused(&self) -> bool {
        let Ok(mut open) = self.open.try_lock() else { return false };
        let stale = open.last_miss.is_none_or(|t| t.elapsed() >= KEEP_OPEN);
        stale && open.session.take().is_some()
    }

    /// Whether answering this place and week would run the model (valid, and not cached).
    pub fn needs_run(&self, latitude: f64, longitude: f64, week: u32) -> bool {
        valid(latitude, longitude, week) && !self.cache.contains_key(&cell_week(latitude, longitude, week))
    }

    /// Occurrence scores (one per class) at a place and week.
    pub fn scores(&self, latitude: f64, longitude: f64, week: u32) -> Result<Arc<Vec<f32>>, ModelError> {
        if !valid(latitude, longitude, week) {
            return Err(ModelError::Runtime(format!("no range data for ({latitude}, {longitude}) week {week}")));
        }
        let key = cell_week(latitude, longitude, week);
        // Concurrent misses on one key run the model once; the others wait for that answer.
        self.cache.try_get_with(key, || self.run(key)).map_err(|e: Arc<String>| ModelError::Runtime((*e).clone()))
    }

    /// One model run; the error is ONNX Runtime's message.
    fn run(&self, (lat10, lon10, week): CellWeek) -> Result<Arc<Vec<f32>>, String> {
        let input = vec![lat10 as f32 / 10.0, lon10 as f32 / 10.0, week as f32];
        let tensor = Tensor::from_array(([1usize, 3], input)).map_err(|e| e.to_string())?;
        let mut open = self.open.lock().map_err(|_| "a range-filter thread panicked".to_owned())?;
        let burst = open.last_miss.is_some_and(|t| t.elapsed() < KEEP_OPEN);
        open.last_miss = Some(Instant::now());
        let mut session = match open.session.take() {
            Some(s) => s,
            None => {
                let env = model::init_runtime(&self.library).map_err(|e| e.to_string())?;
                model::open_session(env, &self.path, 1, false).map_err(|e| e.to_string())?
            }
        };
        let scores = {
            let outputs = session.run(ort::inputs![tensor]).map_err(|e| e.to_string())?;
            let (_, data) = outputs[0].try_extract_tensor::<f32>().map_err(|e| e.to_string())?;
            Arc::new(data.to_vec())
        };
        if burst {
            open.session = Some(session);
        }
        Ok(scores)
    }

    /// Whether class `index` is expected at this place on this date.
    pub fn expected(&self, latitude: f64, longitude: f64, date: NaiveDate, index: usize) -> Result<bool, ModelError> {
        let scores = self.scores(latitude, longitude, week_of(date))?;
        Ok(scores.get(index).is_some_and(|s| *s >= self.threshold))
    }

    /// How many (place, week) entries are cached (after the cache's pending evictions ran).
    pub fn cached(&self) -> usize {
        self.cache.run_pending_tasks();
        usize::try_from(self.cache.entry_count()).unwrap_or(usize::MAX)
    }

    /// The most entries the cache keeps.
    pub fn capacity(&self) -> u64 {
        self.cache.policy().max_capacity().unwrap_or(u64::MAX)
    }
}

/// The range model's session while misses come in a burst.
struct Open {
    /// Kept only between misses of a burst; `None` otherwise.
    session: Option<Session>,
    /// When the model last ran, to tell a burst from a lone miss.
    last_miss: Option<Instant>,
}

fn valid(latitude: f64, longitude: f64, week: u32) -> bool {
    (-90.0..=90.0).contains(&latitude) && (-180.0..=180.0).contains(&longitude) && (1..=48).contains(&week)
}

fn cell_week(latitude: f64, longitude: f64, week: u32) -> CellWeek {
    ((latitude * 10.0).round() as i32, (longitude * 10.0).round() as i32, week)
}

/// The range filter for callers outside the inference workers (`/stats/expected-species`):
/// loaded on first use, and tried again on the next call while the model is missing.
#[derive(Clone, Default)]
pub struct Shared {
    model_dir: String,
    loaded: Arc<Mutex<Option<Arc<RangeFilter>>>>,
}

impl Shared {
    pub fn new(model_dir: &str) -> Self {
        Self { model_dir: model_dir.to_owned(), loaded: Arc::default() }
    }

    /// The filter, loading it if needed (blocking: it opens an ONNX session).
    pub fn get(&self) -> Result<Arc<RangeFilter>, ModelError> {
        let mut slot = self.loaded.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(f) = slot.as_ref() {
            return Ok(f.clone());
        }
        let dir = ModelDir::locate(&self.model_dir)?;
        let filter = Arc::new(RangeFilter::load(&dir, DEFAULT_THRESHOLD)?);
        *slot = Some(filter.clone());
        Ok(filter)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weeks_follow_birdnet_four_per_month() {
        let d = |m, day| NaiveDate::from_ymd_opt(2026, m, day).expect("date");
        assert_eq!(week_of(d(1, 1)), 1);
        assert_eq!(week_of(d(1, 8)), 2);
        assert_eq!(week_of(d(1, 31)), 4);
        assert_eq!(week_of(d(5, 20)), 19);
        assert_eq!(week_of(d(12, 31)), 48);
    }

    #[test]
    fn every_day_lies_in_the_days_of_its_week() {
        let mut day = NaiveDate::from_ymd_opt(2028, 1, 1).expect("date");
        while day.year() == 2028 {
            let (first, last) = week_days(2028, week_of(day)).expect("a week");
            assert!(first <= day && day <= last, "{day} in {first}..{last}");
            day = day.succ_opt().expect("next day");
        }
        assert_eq!(week_days(2026, 0), None);
        assert_eq!(week_days(2026, 49), None);
    }
}
