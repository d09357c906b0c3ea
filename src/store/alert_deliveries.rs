//! The delivery outbox (issue 12): one row per alert and channel, committed with the alert; the
//! sender claims due rows, and each attempt's outcome is written back. The same rows are the
//! channel's delivery log.

use rusqlite::{Connection, OptionalExtension, Row, params};
use serde::Serialize;

use super::{Error, Result};
use crate::{ids::TenantId, time::Timestamp};

/// A delivery to make.
pub struct NewDelivery<'a> {
    pub tenant_id: TenantId,
    pub channel_id: &'a str,
    pub alert_id: Option<&'a str>,
    pub event: &'a str,
    pub content_type: &'a str,
    pub body: &'a [u8],
}

pub fn enqueue(conn: &Connection, d: &NewDelivery<'_>, now: Timestamp) -> Result<String> {
    let id = uuid::Uuid::new_v4().to_string();
    conn.prepare_cached(
        "INSERT INTO alert_deliveries (id, tenant_id, channel_id, alert_id, event, content_type, body, status,
            next_attempt_at, created_at, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 'pending', ?8, ?8, ?8)",
    )?
    .execute(params![id, d.tenant_id, d.channel_id, d.alert_id, d.event, d.content_type, d.body, now])?;
    Ok(id)
}

/// Queues a delivery that carries a file (a scheduled export): `body` is the file, sent as a
/// mail attachment named `file_name` or as a webhook's body with that name.
pub fn enqueue_file(conn: &Connection, d: &NewDelivery<'_>, file_name: &str, now: Timestamp) -> Result<String> {
    let id = enqueue(conn, d, now)?;
    conn.prepare_cached("UPDATE alert_deliveries SET file_name = ?2 WHERE id = ?1")?.execute(params![id, file_name])?;
    Ok(id)
}

/// A delivery as the sender needs it.
#[derive(Debug, Clone)]
pub struct Pending {
    pub id: String,
    pub tenant_id: TenantId,
    pub channel_id: String,
    pub event: String,
    pub content_type: String,
    pub body: Vec<u8>,
    pub attempts: u32,
    pub created_at: Timestamp,
    /// Set when `body` is a file to deliver as such (`enqueue_file`).
    pub file_name: Option<String>,
}

/// Up to `limit` pending deliveries whose time has come, the most overdue first, and at most
/// `per_channel` of each channel, so one channel's backlog never hides the others'.
pub fn due(conn: &Connection, now: Timestamp, limit: u32, per_channel: usize) -> Result<Vec<Pending>> {
    let mut stmt = conn.prepare_cached(
        "SELECT id, tenant_id, channel_id, event, content_type, body, attempts, created_at, file_name FROM (
            SELECT *, row_number() OVER (PARTITION BY channel_id ORDER BY next_attempt_at, id) AS nth
            FROM alert_deliveries WHERE status = 'pending' AND next_attempt_at <= ?1)
         WHERE nth <= ?3 ORDER BY next_attempt_at, id LIMIT ?2",
    )?;
    let rows = stmt.query_map(params![now, limit, per_channel as i64], |r| {
        Ok(Pending {
            id: r.get(0)?,
            tenant_id: r.get(1)?,
            channel_id: r.get(2)?,
            event: r.get(3)?,
            content_type: r.get(4)?,
            body: r.get(5)?,
            attempts: r.get(6)?,
            created_at: r.get(7)?,
            file_name: r.get(8)?,
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// How an attempt ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum After {
    Delivered,
    /// Try again at this time.
    RetryAt(Timestamp),
    Failed,
}

/// One attempt's outcome.
pub struct Attempt<'a> {
    pub after: After,
    pub http_status: Option<u16>,
    pub error: Option<&'a str>,
    pub duration_ms: u64,
}

/// Takes a due delivery for one attempt: its next attempt moves to `until`, so no other pass sends
/// it meanwhile, and a start after a crash mid-send sends it again only then. False when the row
/// changed since it was read (another pass took it, or it was sent).
pub fn lease(conn: &Connection, id: &str, attempts: u32, now: Timestamp, until: Timestamp) -> Result<bool> {
    let n = conn
        .prepare_cached(
            "UPDATE alert_deliveries SET next_attempt_at = ?4
             WHERE id = ?1 AND status = 'pending' AND attempts = ?2 AND next_attempt_at <= ?3",
        )?
        .execute(params![id, attempts, now, until])?;
    Ok(n == 1)
}

/// Writes the outcome of attempt number `attempts + 1` on a pending delivery; `NotFound` when
/// the row is no longer at that attempt.
pub fn record_attempt(conn: &Connection, id: &str, attempts: u32, a: &Attempt<'_>, now: Timestamp) -> Result<()> {
    let (status, next, delivered) = match a.after {
        After::Delivered => ("delivered", None, Some(now)),
        After::RetryAt(at) => ("pending", Some(at), None),
        After::Failed => ("failed", None, None),
    };
    let n = conn
        .prepare_cached(
            "UPDATE alert_deliveries SET status = ?2, attempts = attempts + 1, next_attempt_at = ?3, http_status = ?4,
                last_error = ?5, duration_ms = ?6, delivered_at = ?7, updated_at = ?8
             WHERE id = ?1 AND status = 'pending' AND attempts = ?9",
        )?
        .execute(params![id, status, next, a.http_status, a.error, a.duration_ms as i64, delivered, now, attempts])?;
    if n == 0 { Err(Error::NotFound) } else { Ok(()) }
}

/// Logs a test send (never retried).
pub fn record_test(conn: &Connection, d: &NewDelivery<'_>, a: &Attempt<'_>, now: Timestamp) -> Result<()> {
    conn.execute(
        "INSERT INTO alert_deliveries (id, tenant_id, channel_id, event, content_type, body, status, attempts, http_status,
            last_error, duration_ms, created_at, updated_at, delivered_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'test', 1, ?7, ?8, ?9, ?10, ?10, ?11)",
        params![
            uuid::Uuid::new_v4().to_string(),
            d.tenant_id,
            d.channel_id,
            d.event,
            d.content_type,
            d.body,
            a.http_status,
            a.error,
            a.duration_ms as i64,
            now,
            (a.after == After::Delivered).then_some(now)
        ],
    )?;
    Ok(())
}

/// Finished deliveries (delivered, failed, test) are kept this long in the log.
pub const RETENTION_DAYS: i64 = 30;

/// Deletes finished deliveries last changed before `before`; pending ones stay.
pub fn prune(conn: &Connection, before: Timestamp) -> Result<usize> {
    Ok(conn.execute(
        "DELETE FROM alert_deliveries WHERE status IN ('delivered', 'failed', 'test') AND updated_at < ?1",
        [before],
    )?)
}

/// One line of a channel's delivery log.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LogEntry {
    pub id: String,
    pub alert_id: Option<String>,
    pub event: String,
    /// `pending`, `delivered`, `failed` or `test`.
    pub status: String,
    pub attempts: u32,
    /// The receiver's HTTP status on the last attempt.
    pub http_status: Option<u16>,
    pub last_error: Option<String>,
    pub duration_ms: Option<i64>,
    pub next_attempt_at: Option<Timestamp>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    pub delivered_at: Option<Timestamp>,
}

fn log_row(r: &Row<'_>) -> rusqlite::Result<LogEntry> {
    Ok(LogEntry {
        id: r.get(0)?,
        alert_id: r.get(1)?,
        event: r.get(2)?,
        status: r.get(3)?,
        attempts: r.get(4)?,
        http_status: r.get(5)?,
        last_error: r.get(6)?,
        duration_ms: r.get(7)?,
        next_attempt_at: r.get(8)?,
        created_at: r.get(9)?,
        updated_at: r.get(10)?,
        delivered_at: r.get(11)?,
    })
}

const LOG_COLS: &str = "id, alert_id, event, status, attempts, http_status, last_error, duration_ms, next_attempt_at,
    created_at, updated_at, delivered_at";

/// The newest `limit` deliveries of `tenant`'s channel.
pub fn log(conn: &Connection, tenant: TenantId, channel: &str, limit: u32) -> Result<Vec<LogEntry>> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {LOG_COLS} FROM alert_deliveries WHERE channel_id = ?1 AND tenant_id = ?2
         ORDER BY created_at DESC, id DESC LIMIT ?3"
    ))?;
    Ok(stmt.query_map(params![channel, tenant, limit], log_row)?.collect::<rusqlite::Result<_>>()?)
}

/// How a channel's deliveries stand.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    pub pending: u64,
    pub delivered: u64,
    pub failed: u64,
    pub last: Option<LogEntry>,
}

pub fn summary(conn: &Connection, tenant: TenantId, channel: &str) -> Result<Summary> {
    let mut s = Summary::default();
    let mut stmt = conn.prepare_cached(
        "SELECT status, count(*) FROM alert_deliveries WHERE channel_id = ?1 AND tenant_id = ?2 GROUP BY status",
    )?;
    let counts = stmt.query_map(params![channel, tenant], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))?;
    for row in counts {
        let (status, n) = row?;
        let n = n.max(0) as u64;
        match status.as_str() {
            "pending" => s.pending = n,
            "delivered" => s.delivered = n,
            "failed" => s.failed = n,
            _ => {}
        }
    }
    s.last = log(conn, tenant, channel, 1)?.into_iter().next();
    Ok(s)
}

/// One delivery of `tenant` (tests and the log view).
pub fn get(conn: &Connection, tenant: TenantId, id: &str) -> Result<LogEntry> {
    conn.query_row(
        &format!("SELECT {LOG_COLS} FROM alert_deliveries WHERE id = ?1 AND tenant_id = ?2"),
        params![id, tenant],
        log_row,
    )
    .optional()?
    .ok_or(Error::NotFound)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{alert_channels, testing};

    #[tokio::test]
    async fn one_channels_backlog_never_hides_another_channels_delivery() {
        let (store, _dir) = testing::store().await;
        let due_now = store
            .call(|c| {
                let (team, _) = testing::team(c, "a")?;
                let t0 = Timestamp(chrono::Utc::now() - chrono::Duration::minutes(10));
                let channel = |name: &str| {
                    let fields = alert_channels::ChannelFields {
                        kind: "webhook",
                        name,
                        config: &serde_json::Map::new(),
                        secret_enc: None,
                        payload_template: None,
                        enabled: true,
                    };
                    alert_channels::insert(c, team, &fields, t0).map(|ch| ch.id)
                };
                let (stuck, fine) = (channel("stuck")?, channel("fine")?);
                let new = |channel_id| NewDelivery {
                    tenant_id: team,
                    channel_id,
                    alert_id: None,
                    event: "detection",
                    content_type: "application/json",
                    body: b"{}",
                };
                for _ in 0..100 {
                    enqueue(c, &new(&stuck), t0)?;
                }
                let later = Timestamp(t0.at() + chrono::Duration::minutes(1));
                enqueue(c, &new(&fine), later)?;
                let due = due(c, Timestamp(chrono::Utc::now()), 64, 2)?;
                Ok((
                    due.iter().filter(|d| d.channel_id == stuck).count(),
                    due.iter().filter(|d| d.channel_id == fine).count(),
                ))
            })
            .await
            .expect("due");
        assert_eq!(due_now, (2, 1));
    }

    /// A plain webhook channel of `team`, for the deliveries of these tests.
    fn webhook_channel(c: &rusqlite::Connection, team: TenantId, now: Timestamp) -> Result<String, Error> {
        let fields = alert_channels::ChannelFields {
            kind: "webhook",
            name: "rx",
            config: &serde_json::Map::new(),
            secret_enc: None,
            payload_template: None,
            enabled: true,
        };
        Ok(alert_channels::insert(c, team, &fields, now)?.id)
    }

    #[tokio::test]
    async fn a_delivery_is_leased_once_and_its_outcome_written_once() {
        let (store, _dir) = testing::store().await;
        let outcome = store
            .call(|c| {
                let (team, _) = testing::team(c, "a")?;
                let now = Timestamp(chrono::Utc::now());
                let channel = webhook_channel(c, team, now)?;
                let new = NewDelivery {
                    tenant_id: team,
                    channel_id: &channel,
                    alert_id: None,
                    event: "detection",
                    content_type: "application/json",
                    body: b"{}",
                };
                let id = enqueue(c, &new, now)?;
                let until = Timestamp(now.at() + chrono::Duration::minutes(5));
                let first = lease(c, &id, 0, now, until)?;
                let second = lease(c, &id, 0, now, until)?;
                let hidden = due(c, now, 10, 2)?.is_empty();
                let a = Attempt { after: After::Delivered, http_status: Some(200), error: None, duration_ms: 3 };
                record_attempt(c, &id, 0, &a, now)?;
                let again = record_attempt(c, &id, 0, &a, now);
                Ok((first, second, hidden, matches!(again, Err(Error::NotFound)), get(c, team, &id)?.attempts))
            })
            .await
            .expect("lease");
        assert_eq!(
            outcome,
            (true, false, true, true, 1),
            "(leased, leased twice, hidden while leased, second outcome refused, attempts)"
        );
    }

    #[tokio::test]
    async fn the_upgrade_cuts_reasons_written_before_down_to_their_class() {
        let (store, _dir) = testing::store().await;
        let kept = store
            .call(|c| {
                let (team, _) = testing::team(c, "a")?;
                let now = Timestamp(chrono::Utc::now());
                let channel = webhook_channel(c, team, now)?;
                let mut ids = Vec::new();
                for (status, error) in [
                    (Some(500), "HTTP 500: SECRET redis password hunter2"),
                    (Some(302), "HTTP 302 Found: redirect to http://169.254.169.254/ not followed"),
                    (None, "could not connect: tcp connect error: Network is unreachable (os error 101)"),
                    (None, "connection refused"),
                    (None, "the channel is disabled"),
                ] {
                    let new = NewDelivery {
                        tenant_id: team,
                        channel_id: &channel,
                        alert_id: None,
                        event: "test",
                        content_type: "application/json",
                        body: b"{}",
                    };
                    let a = Attempt { after: After::Failed, http_status: status, error: Some(error), duration_ms: 1 };
                    record_test(c, &new, &a, now)?;
                    ids.push(c.query_row("SELECT id FROM alert_deliveries ORDER BY rowid DESC LIMIT 1", [], |r| {
                        r.get::<_, String>(0)
                    })?);
                }
                c.execute_batch(include_str!("../../migrations/0019_public_delivery_errors.sql"))?;
                ids.iter().map(|id| Ok(get(c, team, id)?.last_error.unwrap_or_default())).collect::<Result<Vec<_>>>()
            })
            .await
            .expect("upgrade");
        assert_eq!(
            kept,
            ["HTTP 500", "HTTP 302", "could not connect", "connection refused", "the channel is disabled"]
        );
    }
}
