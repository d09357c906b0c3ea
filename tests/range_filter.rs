//! The range filter's cache with the real meta-model: bounded however many places satellites
//! report, and its answers stay those of the model.

use birdhub::inference::{ModelDir, RangeFilter, range};

fn model_dir() -> ModelDir {
    let dir = ModelDir::locate("").unwrap_or_else(|e| panic!("{e}"));
    dir.check().unwrap_or_else(|e| panic!("{e}"));
    dir
}

#[test]
fn the_cache_stays_within_its_bound_when_every_chunk_names_a_new_place() {
    let capacity = 32;
    let filter = RangeFilter::load_with_capacity(&model_dir(), range::DEFAULT_THRESHOLD, capacity).expect("meta model");
    assert_eq!(filter.capacity(), capacity);
    // What one satellite can send: a new 0.1-degree cell (and week) with every chunk.
    let places: Vec<(f64, f64, u32)> =
        (0..400).map(|i| (-60.0 + f64::from(i % 200) * 0.6, -170.0 + f64::from(i) * 0.85, 1 + (i % 48))).collect();
    let mut first_answers = Vec::new();
    for (n, &(lat, lon, week)) in places.iter().enumerate() {
        let scores = filter.scores(lat, lon, week).expect("scores");
        if n < 5 {
            first_answers.push(scores);
        }
        assert!(filter.cached() as u64 <= capacity, "after {} places: {} cached", n + 1, filter.cached());
    }
    assert!(filter.cached() > 0);

    // Answers are the model's, whether they come from the cache or a fresh run.
    let fresh = RangeFilter::load(&model_dir(), range::DEFAULT_THRESHOLD).expect("meta model");
    for (&(lat, lon, week), before) in places.iter().zip(&first_answers) {
        let again = filter.scores(lat, lon, week).expect("evicted and recomputed");
        let reference = fresh.scores(lat, lon, week).expect("fresh");
        assert_eq!(*again, *reference);
        assert_eq!(**before, *reference);
    }
    let last = places.last().copied().expect("places");
    let hit = filter.scores(last.0, last.1, last.2).expect("recent place");
    assert_eq!(*hit, *fresh.scores(last.0, last.1, last.2).expect("fresh"));
    assert!(filter.cached() as u64 <= capacity);
}

/// Only the filter's original API, so this also ran (and failed) against the unbounded cache.
#[test]
fn a_satellite_naming_a_new_place_with_every_chunk_cannot_grow_the_cache_without_bound() {
    let filter = RangeFilter::load(&model_dir(), 0.03).expect("meta model");
    for i in 0..1000 {
        let (lat, lon) = (-50.0 + f64::from(i / 40) * 0.1, 10.0 + f64::from(i % 40) * 0.1);
        filter.scores(lat, lon, 20).expect("scores");
    }
    // 256 is `range::DEFAULT_CACHE_ENTRIES`; the old cache held all 1000.
    assert!(filter.cached() <= 256, "{} answers cached for 1000 places", filter.cached());
}

#[test]
fn the_default_bound_is_a_few_megabytes() {
    let filter = RangeFilter::load(&model_dir(), range::DEFAULT_THRESHOLD).expect("meta model");
    let per_entry = filter.scores(42.5, -76.5, 20).expect("scores").len() * std::mem::size_of::<f32>();
    let bound = filter.capacity() as usize * per_entry;
    assert_eq!(filter.capacity(), range::DEFAULT_CACHE_ENTRIES);
    assert!(bound < 8 << 20, "the cache holds at most {bound} bytes of scores");
}
