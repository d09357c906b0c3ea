//! The statistics cases of `birdhub bench api`: every `/stats` route over the seeded year, with
//! the ranges a dashboard asks for (the last 30 days, a whole year, a year with edge days), some
//! with a satellite, `includeRejected` or `minConfidence`. The seeded days end on 2026-10-31.

/// The p99 goal of a statistics route.
pub const GOAL_MS: f64 = 100.0;

/// Ranges cycled through by the cases: a month, a year of whole months, a year with edge days.
const MONTH: &str = "from=2026-10-02&to=2026-10-31";
const YEAR: &str = "from=2025-11-01&to=2026-10-31";
const ODD_YEAR: &str = "from=2025-11-15&to=2026-11-14";

/// `(label, urls, key)`: `n` URLs per case; `key` names an array the answer must hold rows in
/// (`-`: any 200 answer).
pub fn cases(base: &str, n: usize, codes: &[String], sats: &[String]) -> Vec<(String, Vec<String>, &'static str)> {
    let ranges = [MONTH, YEAR, ODD_YEAR];
    let filters = |i: usize| -> String {
        match i % 4 {
            0 => String::new(),
            1 => format!("&satelliteId={}", sats[i % sats.len()]),
            2 => "&includeRejected=true".into(),
            _ => "&minConfidence=0.75".into(),
        }
    };
    let each = |path: &str, key: &'static str, long: bool| -> (String, Vec<String>, &'static str) {
        let urls = (0..n)
            .map(|i| {
                let range = if long { ranges[1 + i % 2] } else { ranges[i % 3] };
                format!("{base}{path}{}{range}{}", if path.contains('?') { "&" } else { "?" }, filters(i))
            })
            .collect();
        (format!("{path} (month, years; filters)"), urls, key)
    };
    let mut out = vec![
        each("/stats/dashboard", "-", false),
        each("/stats/trends", "daily", false),
        each("/stats/top-species", "species", false),
        each("/stats/activity", "hourly", false),
        each("/stats/verification", "-", false),
        each("/stats/species", "species", false),
        each("/stats/species-accuracy", "species", true),
        each("/stats/migration", "species", true),
        each("/stats/biodiversity", "satellites", false),
        each("/stats/activity-heatmap", "days", false),
        each("/stats/satellite-activity", "satellites", false),
        each("/stats/map", "satellites", false),
    ];
    // Votes carry no satellite or confidence: only the ranges vary.
    out.push((
        "/stats/leaderboard (month, years)".into(),
        (0..n).map(|i| format!("{base}/stats/leaderboard?{}", ranges[i % 3])).collect(),
        "contributors",
    ));
    out.push((
        "/stats/species/:code (month, years; any species)".into(),
        (0..n)
            .map(|i| {
                let extra = if i % 2 == 0 { "" } else { "&minConfidence=0.75" };
                format!("{base}/stats/species/{}?{}{extra}", codes[i % codes.len()], ranges[i % 3])
            })
            .collect(),
        "daily",
    ));
    out.push((
        "/stats/compare (2 to 4 satellites, month, years)".into(),
        (0..n)
            .map(|i| {
                let k = 2 + i % 3;
                let ids: Vec<&str> = (0..k).map(|j| sats[(i + j) % sats.len()].as_str()).collect();
                format!("{base}/stats/compare?satelliteIds={}&{}", ids.join(","), ranges[i % 3])
            })
            .collect(),
        "pairs",
    ));
    // Points are of the last `days` before now; the seeded year ended 2026-10-31, so only a
    // range reaching back to it holds any. 5000 points, the cap, per answer.
    let seeded_end = chrono::NaiveDate::from_ymd_opt(2026, 10, 31).unwrap_or_default();
    let behind = (chrono::Utc::now().date_naive() - seeded_end).num_days();
    if behind + 30 <= 90 {
        out.push((
            "/stats/map/detections (days=90, 5000 points)".into(),
            (0..n).map(|i| format!("{base}/stats/map/detections?days=90{}", filters(i))).collect(),
            "points",
        ));
    } else {
        println!("map/detections: skipped, the seeded year ended more than 60 days ago ({behind} days)");
    }
    out
}
