//! A record of every mail the hub sent, failed to send, or dropped because SMTP is not configured.

use rusqlite::{Connection, params};

use super::Result;
use crate::time::Timestamp;

pub fn record(
    conn: &Connection,
    recipient: &str,
    subject: &str,
    kind: &str,
    status: &str,
    error: Option<&str>,
    now: Timestamp,
) -> Result<()> {
    conn.execute(
        "INSERT INTO mail_log (recipient, subject, kind, status, error, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        params![recipient, subject, kind, status, error, now],
    )?;
    Ok(())
}
