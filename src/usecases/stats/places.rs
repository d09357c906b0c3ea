//! Statistics by place and time: satellite comparison, monthly presence (migration),
//! biodiversity per satellite, the hour-by-day heatmap, peak hours per satellite and the map.

use std::collections::{BTreeMap, BTreeSet};

use chrono::Datelike;
use serde::Serialize;

use super::{Filters, Named, Range, StatsError, overview::Ctx, overview::peak};
use crate::{
    domain::biodiversity::{self, Diversity},
    ids::SatelliteId,
    store::stats::{Scope, queries, series},
};

/// A satellite as the answers name it.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Sat {
    pub satellite_id: String,
    pub name: String,
}

fn sat(places: &[queries::Place], id: &str) -> Sat {
    Sat {
        satellite_id: id.to_owned(),
        name: places.iter().find(|p| p.id == id).map(|p| p.name.clone()).unwrap_or_default(),
    }
}

/// `(satellite, species, detections)` of the scope, with the team's satellites.
async fn communities(
    ctx: &Ctx<'_>,
    scope: Scope,
) -> Result<(Vec<(String, String, i64)>, Vec<queries::Place>), StatsError> {
    let tenant = ctx.tenant;
    ctx.read(move |c| Ok((queries::by_satellite_species(c, &scope)?, queries::places(c, tenant)?))).await
}

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Compared {
    #[serde(flatten)]
    pub satellite: Sat,
    pub detections: i64,
    pub species: Vec<String>,
}

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Pair {
    pub a: String,
    pub b: String,
    pub shared: usize,
    pub jaccard: Option<f64>,
}

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Comparison {
    #[serde(flatten)]
    pub range: Range,
    pub satellites: Vec<Compared>,
    /// Species every compared satellite heard.
    pub shared_by_all: Vec<Named>,
    /// Per species only one satellite heard: which one.
    pub unique: Vec<(String, Named)>,
    /// Every pair, in the order given.
    pub pairs: Vec<Pair>,
}

/// Two to ten satellites side by side (default the last 30 days): their species, what they
/// share and the Jaccard index of each pair.
pub async fn compare(ctx: &Ctx<'_>, f: &Filters, ids: &[SatelliteId]) -> Result<Comparison, StatsError> {
    let distinct: BTreeSet<_> = ids.iter().collect();
    if ids.len() < 2 || ids.len() > 10 || distinct.len() != ids.len() {
        return Err(StatsError::Invalid(
            "give satelliteIds as 2 to 10 different satellite ids, comma-separated".into(),
        ));
    }
    if f.satellite.is_some() {
        return Err(StatsError::Invalid("compare takes satelliteIds, not satelliteId".into()));
    }
    for id in ids {
        // Checked one by one for the 404 of a stranger's satellite.
        ctx.scope(&Filters { satellite: Some(*id), ..f.clone() }, 30).await?;
    }
    let (scope, range) = ctx.scope(f, 30).await?;
    let names = ctx.names(f).await?;
    let (tenant, wanted) = (ctx.tenant, ids.to_vec());
    // Each compared satellite's rows through its own index, not every satellite's.
    let (rows, places) = ctx
        .read(move |c| {
            let mut rows = Vec::new();
            for id in wanted {
                rows.extend(queries::by_satellite_species(c, &Scope { satellite: Some(id), ..scope.clone() })?);
            }
            Ok((rows, queries::places(c, tenant)?))
        })
        .await?;
    let satellites: Vec<Compared> = ids
        .iter()
        .map(|id| {
            let key = id.to_string();
            let mine: Vec<&(String, String, i64)> = rows.iter().filter(|r| r.0 == key).collect();
            Compared {
                satellite: sat(&places, &key),
                detections: mine.iter().map(|r| r.2).sum(),
                species: mine.iter().map(|r| r.1.clone()).collect(),
            }
        })
        .collect();
    let sets: Vec<Vec<String>> = satellites.iter().map(|s| s.species.clone()).collect();
    let pairs = biodiversity::pairwise_jaccard(&sets)
        .into_iter()
        .map(|(i, j, jaccard)| Pair {
            a: satellites[i].satellite.satellite_id.clone(),
            b: satellites[j].satellite.satellite_id.clone(),
            shared: sets[i].iter().filter(|s| sets[j].contains(s)).count(),
            jaccard,
        })
        .collect();
    let all: BTreeSet<&String> = sets.iter().flatten().collect();
    let shared_by_all = all.iter().filter(|s| sets.iter().all(|set| set.contains(s))).map(|s| names.name(s)).collect();
    let unique = all
        .iter()
        .filter_map(|s| {
            let holders: Vec<usize> = (0..sets.len()).filter(|&i| sets[i].contains(s)).collect();
            (holders.len() == 1).then(|| (satellites[holders[0]].satellite.satellite_id.clone(), names.name(s)))
        })
        .collect();
    Ok(Comparison { range, satellites, shared_by_all, unique, pairs })
}

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Presence {
    #[serde(flatten)]
    pub species: Named,
    /// Detections per month of `months`, in order.
    pub monthly: Vec<i64>,
    /// How many of the months had any.
    pub months_present: usize,
}

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Migration {
    #[serde(flatten)]
    pub range: Range,
    /// `YYYY-MM` of every month the range touches, oldest first.
    pub months: Vec<String>,
    /// Every species of the range, fewest months present first (the migrants), then by name.
    pub species: Vec<Presence>,
}

/// Monthly presence per species (default the last 365 days).
pub async fn migration(ctx: &Ctx<'_>, f: &Filters) -> Result<Migration, StatsError> {
    let (scope, range) = ctx.scope(f, 365).await?;
    let names = ctx.names(f).await?;
    let rows = ctx.read(move |c| queries::by_species_month(c, &scope)).await?;
    let mut months = Vec::new();
    let mut first = range.from.with_day(1).unwrap_or(range.from);
    while first <= range.to {
        months.push(first.format("%Y-%m").to_string());
        match first.checked_add_months(chrono::Months::new(1)) {
            Some(next) => first = next,
            None => break,
        }
    }
    let mut by: BTreeMap<String, Vec<i64>> = BTreeMap::new();
    for (code, month, n) in rows {
        let counts = by.entry(code).or_insert_with(|| vec![0; months.len()]);
        if let Some(i) = months.iter().position(|m| *m == month) {
            counts[i] += n;
        }
    }
    let mut species: Vec<Presence> = by
        .into_iter()
        .map(|(code, monthly)| Presence {
            species: names.name(&code),
            months_present: monthly.iter().filter(|&&n| n > 0).count(),
            monthly,
        })
        .collect();
    species.sort_by(|a, b| {
        a.months_present.cmp(&b.months_present).then_with(|| a.species.common_name.cmp(&b.species.common_name))
    });
    Ok(Migration { range, months, species })
}

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Community {
    #[serde(flatten)]
    pub satellite: Sat,
    #[serde(flatten)]
    pub diversity: Diversity,
}

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Biodiversity {
    #[serde(flatten)]
    pub range: Range,
    /// The team's satellites together.
    pub overall: Diversity,
    /// Each satellite (or the one asked for), by name; satellites without detections hold zeros.
    pub satellites: Vec<Community>,
}

/// Shannon H', Simpson 1-D and Pielou J' per satellite over the range (default 30 days),
/// counting detections per species.
pub async fn biodiversity(ctx: &Ctx<'_>, f: &Filters) -> Result<Biodiversity, StatsError> {
    let (scope, range) = ctx.scope(f, 30).await?;
    let only = scope.satellite.map(|s| s.to_string());
    let (rows, places) = communities(ctx, scope).await?;
    let mut together: BTreeMap<&str, u64> = BTreeMap::new();
    for (_, species, n) in &rows {
        *together.entry(species).or_default() += *n as u64;
    }
    let overall = biodiversity::diversity(&together.values().copied().collect::<Vec<_>>());
    let satellites = places
        .iter()
        .filter(|p| only.as_ref().is_none_or(|o| *o == p.id))
        .map(|p| {
            let counts: Vec<u64> = rows.iter().filter(|r| r.0 == p.id).map(|r| r.2 as u64).collect();
            Community { satellite: sat(&places, &p.id), diversity: biodiversity::diversity(&counts) }
        })
        .collect();
    Ok(Biodiversity { range, overall, satellites })
}

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Heatmap {
    #[serde(flatten)]
    pub range: Range,
    /// One row per day of the range, oldest first: `(date, detections per hour 0 to 23)`.
    pub days: Vec<(String, Vec<i64>)>,
    /// The largest cell, for the colour scale.
    pub max: i64,
}

/// Detections by day and hour (default the last 30 days).
pub async fn heatmap(ctx: &Ctx<'_>, f: &Filters) -> Result<Heatmap, StatsError> {
    let (scope, range) = ctx.scope(f, 30).await?;
    let rows = ctx.read(move |c| series::by_day_hour(c, &scope)).await?;
    let mut days: Vec<(String, Vec<i64>)> = super::day_keys(&range).into_iter().map(|d| (d, vec![0; 24])).collect();
    for (d, h, n) in rows {
        if let Ok(i) = days.binary_search_by(|(k, _)| k.as_str().cmp(d.as_str())) {
            days[i].1[usize::from(h).min(23)] += n;
        }
    }
    let max = days.iter().flat_map(|(_, h)| h.iter().copied()).max().unwrap_or(0);
    Ok(Heatmap { range, days, max })
}

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SatelliteHours {
    #[serde(flatten)]
    pub satellite: Sat,
    pub hourly: Vec<i64>,
    pub total: i64,
    pub peak_hour: Option<usize>,
    /// The three busiest hours, busiest first (hours without detections left out).
    pub peak_hours: Vec<usize>,
}

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SatelliteActivity {
    #[serde(flatten)]
    pub range: Range,
    pub satellites: Vec<SatelliteHours>,
}

/// Per satellite: detections per hour and the peak hours (default the last 30 days).
pub async fn satellite_activity(ctx: &Ctx<'_>, f: &Filters) -> Result<SatelliteActivity, StatsError> {
    let (scope, range) = ctx.scope(f, 30).await?;
    let only = scope.satellite.map(|s| s.to_string());
    let tenant = ctx.tenant;
    let (rows, places) =
        ctx.read(move |c| Ok((series::by_hour_satellite(c, &scope)?, queries::places(c, tenant)?))).await?;
    let satellites = places
        .iter()
        .filter(|p| only.as_ref().is_none_or(|o| *o == p.id))
        .map(|p| {
            let mut hourly = vec![0i64; 24];
            for (h, s, n) in &rows {
                if *s == p.id {
                    hourly[usize::from(*h).min(23)] += n;
                }
            }
            let mut order: Vec<usize> = (0..24).filter(|&h| hourly[h] > 0).collect();
            order.sort_by(|&a, &b| hourly[b].cmp(&hourly[a]).then(a.cmp(&b)));
            order.truncate(3);
            SatelliteHours {
                satellite: sat(&places, &p.id),
                total: hourly.iter().sum(),
                peak_hour: peak(&hourly),
                peak_hours: order,
                hourly,
            }
        })
        .collect();
    Ok(SatelliteActivity { range, satellites })
}

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Marker {
    #[serde(flatten)]
    pub satellite: Sat,
    pub latitude: Option<f64>,
    pub longitude: Option<f64>,
    pub detections: i64,
    pub species: i64,
    pub top_species: Option<Named>,
    pub last_detection_at: Option<String>,
    pub last_seen_at: Option<String>,
    /// It stopped cleanly (its last heartbeat said so), so it is offline whenever it was last seen.
    #[serde(skip)]
    pub stopped: bool,
}

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Map {
    #[serde(flatten)]
    pub range: Range,
    /// Every satellite; those without a position have null coordinates.
    pub satellites: Vec<Marker>,
}

/// Satellite positions with their detections and species over the range (default 30 days).
pub async fn map(ctx: &Ctx<'_>, f: &Filters) -> Result<Map, StatsError> {
    let (scope, range) = ctx.scope(f, 30).await?;
    let only = scope.satellite.map(|s| s.to_string());
    let names = ctx.names(f).await?;
    let (rows, places) = communities(ctx, scope).await?;
    let satellites = places
        .iter()
        .filter(|p| only.as_ref().is_none_or(|o| *o == p.id))
        .map(|p| {
            let mine: Vec<&(String, String, i64)> = rows.iter().filter(|r| r.0 == p.id).collect();
            let top = mine.iter().max_by(|a, b| a.2.cmp(&b.2).then_with(|| b.1.cmp(&a.1))).map(|r| names.name(&r.1));
            Marker {
                satellite: sat(&places, &p.id),
                latitude: p.latitude,
                longitude: p.longitude,
                detections: mine.iter().map(|r| r.2).sum(),
                species: mine.len() as i64,
                top_species: top,
                last_detection_at: p.last_detection_at.clone(),
                last_seen_at: p.last_seen_at.clone(),
                stopped: p.stopped,
            }
        })
        .collect();
    Ok(Map { range, satellites })
}

/// The most points `map/detections` returns.
pub const MAX_POINTS: usize = 5000;
/// The longest range of `map/detections`, in days.
pub const MAX_POINT_DAYS: i64 = 90;

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MapPoint {
    pub id: String,
    pub satellite_id: String,
    #[serde(flatten)]
    pub species: Named,
    pub confidence: f64,
    pub detected_at: String,
    pub latitude: f64,
    pub longitude: f64,
}

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MapDetections {
    /// Points since this time (`days` ago), newest first.
    pub since: String,
    pub days: i64,
    pub limit: usize,
    /// More detections matched than `limit`: the oldest were left out.
    pub truncated: bool,
    pub points: Vec<MapPoint>,
}

/// Located detections of the last `days` (default 7, at most 90), newest first, at most
/// `limit` (default and most 5000). A mobile satellite's point is where its chunk was recorded.
pub async fn map_detections(ctx: &Ctx<'_>, f: &Filters, limit: Option<usize>) -> Result<MapDetections, StatsError> {
    if f.from.is_some() || f.to.is_some() {
        return Err(StatsError::Invalid("map/detections takes days (1 to 90), not from and to".into()));
    }
    let days = f.days.unwrap_or(7);
    if !(1..=MAX_POINT_DAYS).contains(&days) {
        return Err(StatsError::InvalidRange(format!("days must be 1 to {MAX_POINT_DAYS}, not {days}")));
    }
    let limit = limit.unwrap_or(MAX_POINTS);
    if !(1..=MAX_POINTS).contains(&limit) {
        return Err(StatsError::Invalid(format!("limit must be 1 to {MAX_POINTS}, not {limit}")));
    }
    let (scope, _) = ctx.scope(&Filters { days: Some(days), ..f.clone() }, 7).await?;
    let names = ctx.names(f).await?;
    let since = crate::time::Timestamp(ctx.now - chrono::Duration::days(days));
    let mut points = ctx.read(move |c| queries::points(c, &scope, since, limit + 1)).await?;
    let truncated = points.len() > limit;
    points.truncate(limit);
    Ok(MapDetections {
        since: since.to_string(),
        days,
        limit,
        truncated,
        points: points
            .into_iter()
            .map(|p| MapPoint {
                species: names.name(&p.species_code),
                id: p.id,
                satellite_id: p.satellite_id,
                confidence: p.confidence,
                detected_at: p.detected_at.to_string(),
                latitude: p.latitude,
                longitude: p.longitude,
            })
            .collect(),
    })
}
