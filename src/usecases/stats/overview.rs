//! The team-wide statistics: dashboard, trends, top species, hourly activity, verification,
//! leaderboard, the species catalogue and per-species accuracy.

use serde::Serialize;

use super::{Filters, Named, Names, Range, StatsError, scope, today};
use crate::{
    ids::TenantId,
    inference::translations::Translations,
    store::{
        Store,
        stats::{Scope, queries, series},
    },
};

/// What every statistic needs: the store, the labels and the team.
#[derive(Clone)]
pub struct Ctx<'a> {
    pub store: &'a Store,
    pub labels: &'a Translations,
    pub tenant: TenantId,
    pub now: chrono::DateTime<chrono::Utc>,
}

impl Ctx<'_> {
    /// `f` checked into a scope; `default_days` is the route's range when `f` names none.
    pub async fn scope(&self, f: &Filters, default_days: i64) -> Result<(Scope, Range), StatsError> {
        scope(self.store, self.tenant, f, default_days, self.today().await?).await
    }

    /// Today in the team's zone.
    pub async fn today(&self) -> Result<chrono::NaiveDate, StatsError> {
        Ok(today(self.now, self.store.team_zone(self.tenant).await?))
    }

    pub async fn names(&self, f: &Filters) -> Result<Names, StatsError> {
        Names::load(self.store, self.labels, self.tenant, f.lang.as_deref()).await
    }

    pub async fn read<T: Send + 'static>(
        &self,
        f: impl FnOnce(&rusqlite::Connection) -> crate::store::Result<T> + Send + 'static,
    ) -> Result<T, StatsError> {
        Ok(self.store.call(move |c| f(c)).await?)
    }
}

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Counts {
    pub species: i64,
    pub detections: i64,
    pub chunks: i64,
    pub satellites: i64,
}

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Dashboard {
    #[serde(flatten)]
    pub range: Range,
    /// Over the range.
    #[serde(flatten)]
    pub counts: Counts,
    pub today: Counts,
    /// Since the team's first detection.
    pub all_time: Counts,
}

/// Species, detections and chunks over the range (default 30 days), today and all time.
pub async fn dashboard(ctx: &Ctx<'_>, f: &Filters) -> Result<Dashboard, StatsError> {
    let (scope, range) = ctx.scope(f, 30).await?;
    let day = ctx.today().await?;
    let today = Scope { from: day, to: day, ..scope.clone() };
    // All time: from before any hub existed; whole months come from the monthly table.
    let ever =
        Scope { from: chrono::NaiveDate::from_ymd_opt(2000, 1, 1).unwrap_or(scope.from), to: day, ..scope.clone() };
    let counts = |c: &rusqlite::Connection, s: &Scope| -> crate::store::Result<Counts> {
        let t = queries::totals(c, s)?;
        let chunks = series::chunks(c, s)?;
        Ok(Counts { species: t.species, detections: t.detections, chunks, satellites: t.satellites })
    };
    let (over, now, all) = ctx.read(move |c| Ok((counts(c, &scope)?, counts(c, &today)?, counts(c, &ever)?))).await?;
    Ok(Dashboard { range, counts: over, today: now, all_time: all })
}

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Day {
    pub date: String,
    pub detections: i64,
    pub species: i64,
}

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Trends {
    #[serde(flatten)]
    pub range: Range,
    /// Every day of the range, oldest first; days without detections hold zeros.
    pub daily: Vec<Day>,
    pub total: i64,
}

/// Detections and species per day (default the last 30 days).
pub async fn trends(ctx: &Ctx<'_>, f: &Filters) -> Result<Trends, StatsError> {
    let (scope, range) = ctx.scope(f, 30).await?;
    let rows = ctx.read(move |c| series::by_day(c, &scope)).await?;
    let mut found = rows.into_iter().peekable();
    let daily = super::day_keys(&range)
        .into_iter()
        .map(|key| {
            let (detections, species) = match found.peek() {
                Some((d, n, s)) if *d == key => {
                    let v = (*n, *s);
                    found.next();
                    v
                }
                _ => (0, 0),
            };
            Day { date: key, detections, species }
        })
        .collect::<Vec<_>>();
    let total = daily.iter().map(|d| d.detections).sum();
    Ok(Trends { range, daily, total })
}

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Ranked {
    pub rank: usize,
    #[serde(flatten)]
    pub species: Named,
    pub detections: i64,
    /// Of all counted detections in the range, 0 to 1.
    pub share: f64,
    pub satellites: i64,
}

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TopSpecies {
    #[serde(flatten)]
    pub range: Range,
    pub total: i64,
    pub species: Vec<Ranked>,
}

/// The most detected species (default the last 30 days, `limit` 10, at most 100).
pub async fn top_species(ctx: &Ctx<'_>, f: &Filters, limit: Option<usize>) -> Result<TopSpecies, StatsError> {
    let limit = limit.unwrap_or(10);
    if !(1..=100).contains(&limit) {
        return Err(StatsError::Invalid(format!("limit must be 1 to 100, not {limit}")));
    }
    let (scope, range) = ctx.scope(f, 30).await?;
    let names = ctx.names(f).await?;
    let rows = ctx.read(move |c| queries::by_species(c, &scope)).await?;
    let rows: Vec<_> = rows.into_iter().filter(|r| r.detections > 0).collect();
    let total: i64 = rows.iter().map(|r| r.detections).sum();
    let species = rows
        .into_iter()
        .take(limit)
        .enumerate()
        .map(|(i, r)| Ranked {
            rank: i + 1,
            species: names.name(&r.code),
            detections: r.detections,
            share: r.detections as f64 / total.max(1) as f64,
            satellites: r.satellites,
        })
        .collect();
    Ok(TopSpecies { range, total, species })
}

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Activity {
    #[serde(flatten)]
    pub range: Range,
    /// Detections per local hour of day, 0 to 23.
    pub hourly: Vec<i64>,
    /// The busiest hour (the earliest of equals); `None` without detections.
    pub peak_hour: Option<usize>,
    pub total: i64,
}

/// Detections per hour of the day (default the last 30 days).
pub async fn activity(ctx: &Ctx<'_>, f: &Filters) -> Result<Activity, StatsError> {
    let (scope, range) = ctx.scope(f, 30).await?;
    let rows = ctx.read(move |c| series::by_hour_satellite(c, &scope)).await?;
    let mut hourly = vec![0i64; 24];
    for (hour, _, n) in rows {
        hourly[usize::from(hour).min(23)] += n;
    }
    let total = hourly.iter().sum();
    Ok(Activity { range, peak_hour: peak(&hourly), hourly, total })
}

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct GridRow {
    #[serde(flatten)]
    pub species: Named,
    /// Detections per local hour of day, 0 to 23.
    pub hourly: Vec<i64>,
    pub total: i64,
}

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DailyGrid {
    #[serde(flatten)]
    pub range: Range,
    /// One row per species heard, the most detected first.
    pub species: Vec<GridRow>,
    /// The largest cell, for shading.
    pub max_cell: i64,
}

/// Species by hour of day (default today only): the Live page's daily activity grid.
pub async fn daily_grid(ctx: &Ctx<'_>, f: &Filters) -> Result<DailyGrid, StatsError> {
    let (scope, range) = ctx.scope(f, 1).await?;
    let names = ctx.names(f).await?;
    let rows = ctx.read(move |c| series::species_hour(c, &scope)).await?;
    let mut by_code: std::collections::BTreeMap<String, Vec<i64>> = std::collections::BTreeMap::new();
    for (code, hour, n) in rows {
        by_code.entry(code).or_insert_with(|| vec![0; 24])[usize::from(hour).min(23)] += n;
    }
    let mut species: Vec<GridRow> = by_code
        .into_iter()
        .map(|(code, hourly)| GridRow { species: names.name(&code), total: hourly.iter().sum(), hourly })
        .collect();
    species.sort_by(|a, b| b.total.cmp(&a.total).then_with(|| a.species.common_name.cmp(&b.species.common_name)));
    let max_cell = species.iter().flat_map(|r| r.hourly.iter().copied()).max().unwrap_or(0);
    Ok(DailyGrid { range, species, max_cell })
}

/// The index of the largest count (the first of equals), if any is above zero.
pub fn peak(counts: &[i64]) -> Option<usize> {
    let max = *counts.iter().max()?;
    (max > 0).then(|| counts.iter().position(|&n| n == max)).flatten()
}

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Verification {
    #[serde(flatten)]
    pub range: Range,
    /// Every detection of the range, rejected ones too: this is the review's progress.
    pub total: i64,
    pub unverified: i64,
    pub pending_review: i64,
    pub confirmed: i64,
    pub rejected: i64,
    /// Confirmed and rejected over the total, 0 to 1.
    pub reviewed_share: f64,
}

/// Detections per verification status (default the last 30 days). `includeRejected` does not
/// apply: the rejected count is part of the progress.
pub async fn verification(ctx: &Ctx<'_>, f: &Filters) -> Result<Verification, StatsError> {
    let f = Filters { include_rejected: true, ..f.clone() };
    let (scope, range) = ctx.scope(&f, 30).await?;
    let (detections, [confirmed, rejected, pending]) =
        ctx.read(move |c| Ok((queries::detections(c, &scope)?, queries::status_totals(c, &scope)?))).await?;
    Ok(Verification {
        range,
        total: detections,
        unverified: (detections - confirmed - rejected - pending).max(0),
        pending_review: pending,
        confirmed,
        rejected,
        reviewed_share: (confirmed + rejected) as f64 / detections.max(1) as f64,
    })
}

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Contributor {
    pub rank: usize,
    pub user_id: String,
    pub name: String,
    pub votes: i64,
    pub confirm: i64,
    pub reject: i64,
    pub unsure: i64,
}

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Leaderboard {
    #[serde(flatten)]
    pub range: Range,
    pub contributors: Vec<Contributor>,
}

/// Voters by votes cast in the range (default the last 30 days; `limit` 10, at most 100).
/// Satellite and confidence filters do not apply to votes.
pub async fn leaderboard(ctx: &Ctx<'_>, f: &Filters, limit: Option<usize>) -> Result<Leaderboard, StatsError> {
    let limit = limit.unwrap_or(10);
    if !(1..=100).contains(&limit) {
        return Err(StatsError::Invalid(format!("limit must be 1 to 100, not {limit}")));
    }
    let (scope, range) = ctx.scope(f, 30).await?;
    let voters = ctx.read(move |c| series::voters(c, &scope, limit)).await?;
    let contributors = voters
        .into_iter()
        .enumerate()
        .map(|(i, v)| Contributor {
            rank: i + 1,
            votes: v.confirm + v.reject + v.unsure,
            user_id: v.user_id,
            name: v.name,
            confirm: v.confirm,
            reject: v.reject,
            unsure: v.unsure,
        })
        .collect();
    Ok(Leaderboard { range, contributors })
}

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CatalogueEntry {
    #[serde(flatten)]
    pub species: Named,
    pub detections: i64,
    pub satellites: i64,
    pub confirmed: i64,
    pub rejected: i64,
    /// All time, whatever the range.
    pub first_detected_at: Option<String>,
    pub last_detected_at: Option<String>,
}

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Catalogue {
    #[serde(flatten)]
    pub range: Range,
    pub total: usize,
    pub species: Vec<CatalogueEntry>,
}

/// Every species detected in the range (default the last 365 days), most detected first.
pub async fn catalogue(ctx: &Ctx<'_>, f: &Filters) -> Result<Catalogue, StatsError> {
    let (scope, range) = ctx.scope(f, 365).await?;
    let names = ctx.names(f).await?;
    let tenant = ctx.tenant;
    let (rows, verdicts, seen) = ctx
        .read(move |c| {
            let rows = queries::by_species(c, &scope)?;
            let verdicts = queries::verdicts(c, &scope)?;
            let seen = queries::first_last(c, tenant)?;
            Ok((rows, verdicts, seen))
        })
        .await?;
    let species: Vec<CatalogueEntry> = rows
        .into_iter()
        .filter(|r| r.detections > 0)
        .map(|r| {
            let (first, last) = seen.get(&r.code).cloned().unzip();
            let [confirmed, rejected, _] = verdicts.get(&r.code).copied().unwrap_or_default();
            CatalogueEntry {
                species: names.name(&r.code),
                detections: r.detections,
                satellites: r.satellites,
                confirmed,
                rejected,
                first_detected_at: first,
                last_detected_at: last,
            }
        })
        .collect();
    Ok(Catalogue { range, total: species.len(), species })
}

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Accuracy {
    #[serde(flatten)]
    pub species: Named,
    pub confirmed: i64,
    pub rejected: i64,
    pub pending_review: i64,
    /// Confirmed over confirmed plus rejected; `None` before any verdict.
    pub accuracy: Option<f64>,
}

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SpeciesAccuracy {
    #[serde(flatten)]
    pub range: Range,
    /// Over every species with a verdict.
    pub overall: Option<f64>,
    /// Species with at least one verdict, most verdicts first.
    pub species: Vec<Accuracy>,
}

/// Per species: how often review confirmed the classifier (default the last 365 days).
pub async fn species_accuracy(ctx: &Ctx<'_>, f: &Filters) -> Result<SpeciesAccuracy, StatsError> {
    let f = Filters { include_rejected: true, ..f.clone() };
    let (scope, range) = ctx.scope(&f, 365).await?;
    let names = ctx.names(&f).await?;
    let verdicts = ctx.read(move |c| queries::verdicts(c, &scope)).await?;
    let mut species: Vec<Accuracy> = verdicts
        .into_iter()
        .filter(|(_, [confirmed, rejected, _])| confirmed + rejected > 0)
        .map(|(code, [confirmed, rejected, pending])| Accuracy {
            species: names.name(&code),
            confirmed,
            rejected,
            pending_review: pending,
            accuracy: Some(confirmed as f64 / (confirmed + rejected) as f64),
        })
        .collect();
    species.sort_by(|a, b| {
        (b.confirmed + b.rejected)
            .cmp(&(a.confirmed + a.rejected))
            .then_with(|| a.species.species_code.cmp(&b.species.species_code))
    });
    let (c, r) = species.iter().fold((0, 0), |(c, r), a| (c + a.confirmed, r + a.rejected));
    let overall = (c + r > 0).then(|| c as f64 / (c + r) as f64);
    Ok(SpeciesAccuracy { range, overall, species })
}
