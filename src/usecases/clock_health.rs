//! The satellite monitor's clock part (issue 37): a satellite whose heartbeat showed a clock more
//! than `clock_sanity::WRONG_AFTER` off the hub's (measured within `OFFSET_FRESH_FOR`) is marked
//! wrong once, and one alert is raised under the team's system rule `satellite_clock`, unless the
//! rule is off or fired for that satellite within its cooldown. A later heartbeat with the clock
//! right again ends the episode. Runs inside the monitor's transaction (`usecases::monitor`).

use rusqlite::Connection;

use super::alerting::{self, AlertContext, Raised};
use crate::{
    domain::{
        alert_rules::{CLOCK_RULE_KEY, CLOCK_RULE_NAME},
        clock_sanity,
    },
    ids::TenantId,
    notify::{Notice, NoticeData},
    store::{self, clock::ClockChange},
    time::Timestamp,
};

/// What the clock part of one pass changed in one team.
pub struct ClockPass {
    pub wrong: Vec<ClockChange>,
    pub right: Vec<ClockChange>,
    pub alerts: Vec<Raised>,
}

/// Marks `tenant`'s satellites whose clock went wrong or came right, and raises the alerts.
pub fn check_team(
    tx: &Connection,
    ctx: &AlertContext,
    tenant: TenantId,
    now: chrono::DateTime<chrono::Utc>,
) -> store::Result<ClockPass> {
    let limit = clock_sanity::WRONG_AFTER.num_milliseconds();
    let fresh_after = Timestamp(now - clock_sanity::OFFSET_FRESH_FOR);
    let wrong = store::clock::mark_wrong(tx, tenant, limit, fresh_after, Timestamp(now))?;
    let right = store::clock::mark_right(tx, tenant, limit)?;
    let mut alerts = Vec::new();
    if !wrong.is_empty() {
        let rule = store::alert_rules::clock_rule(tx, tenant)?;
        let cooldown = chrono::Duration::minutes(rule.cooldown_minutes.max(0));
        for s in wrong.iter().filter(|_| rule.enabled) {
            let key = s.id.to_string();
            if store::alert_rules::last_fired(tx, &rule.id, &key)?.is_some_and(|t| t.at() + cooldown > now) {
                continue; // a clock that flaps raises one alert per cooldown
            }
            store::alert_rules::fired(tx, &rule.id, &key, Timestamp(now))?;
            alerts.push(alerting::raise(tx, &rule, notice(ctx, tenant, s, now), Timestamp(now))?);
        }
    }
    Ok(ClockPass { wrong, right, alerts })
}

fn notice(ctx: &AlertContext, tenant: TenantId, s: &ClockChange, now: chrono::DateTime<chrono::Utc>) -> Notice {
    let mut extra = serde_json::Map::new();
    extra.insert("clockOffsetMs".into(), s.offset_ms.into());
    extra.insert("thresholdSeconds".into(), clock_sanity::WRONG_AFTER.num_seconds().into());
    let side = if s.offset_ms > 0 { "ahead of" } else { "behind" };
    Notice {
        event: CLOCK_RULE_KEY.into(),
        timestamp: Timestamp(now),
        tenant_id: tenant,
        alert_id: None,
        rule_name: Some(CLOCK_RULE_NAME.into()),
        title: format!("{}'s clock is wrong", s.name),
        message: format!(
            "The clock of {} is {} {side} the hub's. The hub re-stamps its chunks whose time is implausible; \
             check the device's time synchronisation (NTP).",
            s.name,
            clock_sanity::amount(s.offset_ms)
        ),
        link: Some(ctx.link(&format!("/satellites/{}", s.id))),
        data: NoticeData {
            satellite_id: Some(s.id),
            satellite_name: Some(s.name.clone()),
            extra,
            ..Default::default()
        },
    }
}
