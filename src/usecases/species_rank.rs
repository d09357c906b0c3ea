//! Which species a team is most likely to mean when it types a name in a species picker
//! (issue 51): those it has heard first, then those the range model expects at its stations
//! this week, then the rest. "blackbird" typed by a London team means the Eurasian Blackbird,
//! not the Austral Blackbird that comes first in the alphabet.

use std::collections::HashSet;

use chrono::{Duration, NaiveDate};

use crate::{
    clock::Clock,
    domain::settings::TenantSettings,
    ids::TenantId,
    inference::{range, translations::Translations},
    store::{self, Store},
};

/// How far back "heard by the team" reaches.
const HEARD_YEARS: i64 = 5;
/// The most stations whose places are asked about (each is one run of the range model).
const MAX_PLACES: u32 = 200;

/// The species a team knows: heard, or expected at one of its stations this week.
#[derive(Debug, Default)]
pub struct TeamSpecies {
    heard: HashSet<String>,
    expected: HashSet<String>,
}

impl TeamSpecies {
    /// 0 for a species the team heard, 1 for one expected at its stations, 2 for the rest.
    pub fn tier(&self, code: &str) -> u8 {
        if self.heard.contains(code) {
            0
        } else if self.expected.contains(code) {
            1
        } else {
            2
        }
    }
}

/// The team's species. Without the range model (not installed) nothing counts as expected.
pub async fn team_species(
    store: &Store,
    clock: &Clock,
    filter: &range::Shared,
    names: &Translations,
    tenant: TenantId,
) -> Result<TeamSpecies, store::Error> {
    let today = clock.now().date_naive();
    let (heard, places, threshold) = store
        .call(move |c| {
            let scope = store::stats::Scope {
                tenant,
                satellite: None,
                from: today - Duration::days(365 * HEARD_YEARS),
                to: today + Duration::days(1),
                min_band: 0,
                include_rejected: false,
                species: None,
            };
            let heard: HashSet<String> =
                store::stats::queries::by_species(c, &scope)?.into_iter().map(|row| row.code).collect();
            let filter = store::satellites::ListFilter { limit: MAX_PLACES, ..Default::default() };
            let places: Vec<(f64, f64)> = store::satellites::list(c, tenant, &filter)?
                .0
                .into_iter()
                .filter_map(|s| Some((s.latitude?, s.longitude?)))
                .collect();
            let settings: TenantSettings = store::settings::load(c, &tenant.to_string())?;
            Ok((heard, places, settings.range_filter_threshold as f32))
        })
        .await?;
    let (filter, names) = (filter.clone(), names.clone());
    let expected = tokio::task::spawn_blocking(move || expected_at(&filter, &names, &places, today, threshold))
        .await
        .unwrap_or_default();
    Ok(TeamSpecies { heard, expected })
}

/// The codes the range model expects at any of `places` in the week of `day`.
fn expected_at(
    filter: &range::Shared,
    names: &Translations,
    places: &[(f64, f64)],
    day: NaiveDate,
    threshold: f32,
) -> HashSet<String> {
    let (Ok(model), Some(classes)) = (filter.get(), names.classes()) else { return HashSet::new() };
    let week = range::week_of(day);
    let mut out = HashSet::new();
    for &(lat, lon) in places {
        let Ok(scores) = model.scores(lat, lon, week) else { continue };
        for (i, score) in scores.iter().enumerate() {
            if *score >= threshold
                && let Some(label) = classes.get(i)
            {
                out.insert(label.code.clone());
            }
        }
    }
    out
}
