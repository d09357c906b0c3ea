//! Absence and trend rules (issue 12), one pass every minute (`jobs::alert_watch`), on the hub's
//! clock so tests move time instead of waiting.
//!
//! - Absence: each watched scope (a listed satellite, or the whole team) fires once per silence.
//! - Trend: once per day of the team's zone, yesterday's total against the mean of the days
//!   before it, each day from local midnight to local midnight in that zone. The totals are read
//!   before the write transaction: over 90 days of a busy station they take a while on a Pi, and
//!   inference workers must not wait for them.
//!
//! Alert texts write times in the zone of the satellite they are about (the team's zone for the
//! team as a whole).

use rusqlite::Connection;

use super::alerting::{AlertContext, Raised, announce, raise};
use crate::{
    domain::{
        alert_rules::{self, AbsenceConditions, Activity, Conditions, Metric, TrendConditions, Trigger},
        zone,
    },
    events::Bus,
    ids::SatelliteId,
    notify::{Notice, NoticeData},
    store::{self, Store, alert_rules::Rule},
    time::Timestamp,
};

/// One pass over every team's absence and trend rules; commits and announces what fired.
pub async fn watch(store: &Store, bus: &Bus, ctx: &AlertContext, now: Timestamp) -> store::Result<usize> {
    let trends = store
        .call(move |c| {
            let mut out = Vec::new();
            for rule in store::alert_rules::enabled_everywhere(c, Trigger::Trend.as_str())? {
                if let Ok(Conditions::Trend(t)) = Conditions::parse(Trigger::Trend, rule.conditions.clone())
                    && let Some(numbers) = trend_numbers(c, &rule, &t, now)?
                {
                    out.push((rule, t, numbers));
                }
            }
            Ok(out)
        })
        .await?;
    let ctx = ctx.clone();
    let raised = store
        .call(move |c| {
            let tx = c.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            let mut raised = Vec::new();
            for rule in store::alert_rules::enabled_everywhere(&tx, Trigger::Absence.as_str())? {
                if let Ok(Conditions::Absence(a)) = Conditions::parse(Trigger::Absence, rule.conditions.clone()) {
                    raised.extend(check_absence(&tx, &rule, &a, &ctx, now)?);
                }
            }
            for (rule, t, numbers) in trends {
                raised.extend(judge_trend(&tx, &rule, &t, numbers, &ctx, now)?);
            }
            tx.commit()?;
            Ok(raised)
        })
        .await?;
    let n = raised.len();
    announce(bus, raised);
    Ok(n)
}

fn check_absence(
    conn: &Connection,
    rule: &Rule,
    c: &AbsenceConditions,
    ctx: &AlertContext,
    now: Timestamp,
) -> store::Result<Vec<Raised>> {
    let scopes: Vec<Option<SatelliteId>> = if c.satellite_ids.is_empty() {
        vec![None]
    } else {
        c.satellite_ids.iter().map(|s| Some(SatelliteId(*s))).collect()
    };
    let mut out = Vec::new();
    for scope in scopes {
        let last = match c.of {
            Activity::Detection => store::activity::last_detection(conn, rule.tenant_id, scope)?,
            Activity::Chunk => store::activity::last_chunk(conn, rule.tenant_id, scope)?,
        };
        let key = scope.map_or_else(|| "team".to_owned(), |s| s.to_string());
        let fired = store::alert_rules::last_fired(conn, &rule.id, &key)?;
        // A rule watches from its last change, so editing it starts a fresh silence.
        if !alert_rules::absence_due(
            c.minutes,
            last.map(Timestamp::at),
            rule.updated_at.at(),
            fired.map(Timestamp::at),
            now.at(),
        ) {
            continue;
        }
        store::alert_rules::fired(conn, &rule.id, &key, now)?;
        let name = match scope {
            None => "the team".to_owned(),
            Some(s) => store::satellites::get(conn, s)
                .ok()
                .filter(|sat| sat.tenant_id == rule.tenant_id)
                .map_or_else(|| s.to_string(), |sat| sat.name),
        };
        let what = match c.of {
            Activity::Detection => "no bird detected",
            Activity::Chunk => "no audio received",
        };
        let tz = match scope {
            Some(s) => {
                store::zones::satellite_zone(conn, &s).or_else(|_| store::zones::team_zone(conn, &rule.tenant_id))?
            }
            None => store::zones::team_zone(conn, &rule.tenant_id)?,
        };
        let since = last.map_or_else(|| "the rule was set up".to_owned(), |t| crate::time::readable_in(t, tz));
        let mut extra = serde_json::Map::new();
        extra.insert("minutes".into(), c.minutes.into());
        extra.insert("activity".into(), serde_json::to_value(c.of).unwrap_or_default());
        extra.insert("lastActivityAt".into(), serde_json::to_value(last).unwrap_or_default());
        let notice = Notice {
            event: "absence".into(),
            timestamp: now,
            tenant_id: rule.tenant_id,
            alert_id: None,
            rule_name: Some(rule.name.clone()),
            title: format!("Quiet: {what} from {name} for {} minutes", c.minutes),
            message: format!("{} has had {what} since {since}.", capitalise(&name)),
            link: Some(ctx.link(&scope.map_or_else(|| "/satellites".into(), |s| format!("/satellites/{s}")))),
            data: NoticeData {
                satellite_id: scope,
                satellite_name: scope.map(|_| name.clone()),
                extra,
                zone: Some(tz),
                ..Default::default()
            },
        };
        out.push(raise(conn, rule, notice, now)?);
    }
    Ok(out)
}

/// A trend rule's numbers for yesterday, unless the rule has judged that day already.
struct TrendNumbers {
    day: String,
    /// The day as the alert's text writes it ("26 Nov").
    spoken_day: String,
    value: f64,
    baseline: Vec<f64>,
}

fn trend_numbers(
    conn: &Connection,
    rule: &Rule,
    c: &TrendConditions,
    now: Timestamp,
) -> store::Result<Option<TrendNumbers>> {
    let tz = store::zones::team_zone(conn, &rule.tenant_id)?;
    let today = zone::local_day(now.at(), tz);
    let Some(yesterday) = today.pred_opt() else { return Ok(None) };
    let day = yesterday.to_string();
    if store::alert_rules::last_fired(conn, &rule.id, &day)?.is_some() {
        return Ok(None);
    }
    // Each day from its local midnight to the next (23 or 25 hours across a clock change).
    let total = |d: chrono::NaiveDate| {
        let next = d.succ_opt().unwrap_or(d);
        store::activity::total_between(
            conn,
            rule.tenant_id,
            c.satellite_id.map(SatelliteId),
            c.metric == Metric::Species,
            Timestamp(zone::day_start(d, tz)),
            Timestamp(zone::day_start(next, tz)),
        )
    };
    let value = total(yesterday)?;
    let baseline = (1..=i64::from(c.baseline_days))
        .map(|n| total(yesterday - chrono::Duration::days(n)))
        .collect::<store::Result<Vec<f64>>>()?;
    Ok(Some(TrendNumbers { day, spoken_day: crate::time::readable_day(yesterday), value, baseline }))
}

/// Records that the rule judged the day and raises its alert when the change is large enough.
/// A pass that raced another to the same day finds it judged and does nothing.
fn judge_trend(
    conn: &Connection,
    rule: &Rule,
    c: &TrendConditions,
    n: TrendNumbers,
    ctx: &AlertContext,
    now: Timestamp,
) -> store::Result<Option<Raised>> {
    if store::alert_rules::last_fired(conn, &rule.id, &n.day)?.is_some() {
        return Ok(None);
    }
    store::alert_rules::judged(conn, &rule.id, &n.day, now)?;
    let Some(change) = alert_rules::trend_change(c, n.value, &n.baseline) else { return Ok(None) };
    store::alert_rules::fired(conn, &rule.id, &n.day, now)?;
    let mean = n.baseline.iter().sum::<f64>() / n.baseline.len() as f64;
    let what = match c.metric {
        Metric::Detections => "detections",
        Metric::Species => "species",
    };
    let word = if change >= 0.0 { "rose" } else { "fell" };
    let mut extra = serde_json::Map::new();
    extra.insert("metric".into(), what.into());
    extra.insert("day".into(), n.day.clone().into());
    extra.insert("value".into(), n.value.into());
    extra.insert("baseline".into(), ((mean * 10.0).round() / 10.0).into());
    extra.insert("changePercent".into(), ((change * 10.0).round() / 10.0).into());
    let notice = Notice {
        event: "trend".into(),
        timestamp: now,
        tenant_id: rule.tenant_id,
        alert_id: None,
        rule_name: Some(rule.name.clone()),
        title: format!("Daily {what} {word} {:.0}% on {}", change.abs(), n.spoken_day),
        message: format!(
            "{} {what} on {}, against an average of {mean:.1} over the {} days before ({change:+.0}%).",
            n.value, n.spoken_day, c.baseline_days
        ),
        link: Some(ctx.link("/stats")),
        data: NoticeData { satellite_id: c.satellite_id.map(SatelliteId), extra, ..Default::default() },
    };
    Ok(Some(raise(conn, rule, notice, now)?))
}

fn capitalise(s: &str) -> String {
    let mut c = s.chars();
    c.next().map_or_else(String::new, |f| f.to_uppercase().collect::<String>() + c.as_str())
}
