//! One species' profile (`/stats/species/:code`): totals, daily trend, hourly pattern,
//! satellites, confidence histogram and the newest detections. It covers all the team's
//! satellites (its `satellites` part breaks the numbers down); `satelliteId` is refused.

use serde::Serialize;

use super::{Filters, Named, Range, StatsError, overview::Ctx};
use crate::store::stats::{queries, series};

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SatelliteCount {
    pub satellite_id: String,
    pub name: String,
    pub detections: i64,
}

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Band {
    /// The band's lower edge: confidences in `[from, from + 0.05)`.
    pub from: f64,
    pub detections: i64,
}

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Recent {
    pub id: String,
    pub satellite_id: String,
    pub confidence: f64,
    pub detected_at: String,
}

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Profile {
    #[serde(flatten)]
    pub range: Range,
    #[serde(flatten)]
    pub species: Named,
    pub detections: i64,
    pub confirmed: i64,
    pub rejected: i64,
    /// All time.
    pub first_detected_at: Option<String>,
    pub last_detected_at: Option<String>,
    /// Every day of the range with its detections (zeros included), oldest first.
    pub daily: Vec<(String, i64)>,
    /// Detections per local hour, 0 to 23.
    pub hourly: Vec<i64>,
    pub satellites: Vec<SatelliteCount>,
    /// The 20 bands of 0.05, lowest first; empty bands included.
    pub confidence: Vec<Band>,
    /// The 10 newest detections (any date).
    pub recent: Vec<Recent>,
}

/// The profile of `code` over the range (default the last 30 days). A species the team never
/// detected but the classifier knows gets zeros; one it does not know is a 404.
pub async fn profile(ctx: &Ctx<'_>, f: &Filters, code: &str) -> Result<Profile, StatsError> {
    if f.satellite.is_some() {
        return Err(StatsError::Invalid(
            "a species profile covers every satellite (see its satellites part); leave out satelliteId".into(),
        ));
    }
    let names = ctx.names(f).await?;
    let code = if names.knows(code) {
        code.to_owned()
    } else {
        let labels = ctx.labels.clone();
        let input = code.to_owned();
        let found = tokio::task::spawn_blocking(move || labels.resolve(&input)).await.ok().flatten();
        match found {
            Some(s) if s.code == code => s.code,
            _ => return Err(StatsError::SpeciesNotFound(code.to_owned())),
        }
    };
    let (scope, range) = ctx.scope(f, 30).await?;
    // Only this species' rollup rows (the day-keyed reads below name it themselves).
    let scope = crate::store::stats::Scope { species: Some(code.clone()), ..scope };
    let tenant = ctx.tenant;
    let c2 = code.clone();
    let (cells, verdicts, hours, bands, recent, places, seen) = ctx
        .read(move |c| {
            let cells = queries::by_satellite_species(c, &scope)?;
            let verdicts = queries::verdicts(c, &scope)?.remove(&c2).unwrap_or_default();
            let hours = series::species_day_hour(c, &scope, &c2)?;
            let bands = queries::species_bands(c, &scope, &c2)?;
            let recent = queries::recent(c, &scope, &c2, 10)?;
            let places = queries::places(c, tenant)?;
            let seen = queries::first_last(c, tenant)?.remove(&c2);
            Ok((cells, verdicts, hours, bands, recent, places, seen))
        })
        .await?;
    let sats: Vec<(String, i64)> =
        cells.into_iter().filter(|(_, species, _)| *species == code).map(|(sat, _, n)| (sat, n)).collect();
    let mut daily: Vec<(String, i64)> = super::day_keys(&range).into_iter().map(|d| (d, 0)).collect();
    let mut hourly = vec![0i64; 24];
    for (d, h, n) in hours {
        hourly[usize::from(h).min(23)] += n;
        if let Ok(i) = daily.binary_search_by(|(k, _)| k.as_str().cmp(d.as_str())) {
            daily[i].1 += n;
        }
    }
    let satellites = sats
        .iter()
        .cloned()
        .map(|(id, n)| SatelliteCount {
            name: places.iter().find(|p| p.id == id).map(|p| p.name.clone()).unwrap_or_default(),
            satellite_id: id,
            detections: n,
        })
        .collect();
    let mut confidence: Vec<Band> =
        (0..20).map(|b| Band { from: f64::from(b) * super::CONFIDENCE_STEP, detections: 0 }).collect();
    for (b, n) in bands.iter().enumerate() {
        // A confidence of exactly 1 is in the top band.
        confidence[b.min(19)].detections += n;
    }
    let (first, last) = seen.unzip();
    Ok(Profile {
        range,
        species: names.name(&code),
        detections: sats.iter().map(|s| s.1).sum(),
        confirmed: verdicts[0],
        rejected: verdicts[1],
        first_detected_at: first,
        last_detected_at: last,
        daily,
        hourly,
        satellites,
        confidence,
        recent: recent
            .into_iter()
            .map(|p| Recent {
                id: p.id,
                satellite_id: p.satellite_id,
                confidence: p.confidence,
                detected_at: p.detected_at.to_string(),
            })
            .collect(),
    })
}
