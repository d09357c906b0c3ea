//! Typed identifiers. Records are identified by UUIDs (SPEC section 2); a newtype per kind
//! makes mixing up a tenant and a satellite a compile error instead of a data leak.

use std::{fmt, str::FromStr};

use rusqlite::types::{FromSql, FromSqlError, FromSqlResult, ToSql, ToSqlOutput, ValueRef};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

macro_rules! id_type {
    ($($(#[$doc:meta])* $name:ident),* $(,)?) => {$(
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, utoipa::ToSchema)]
        #[serde(transparent)]
        pub struct $name(pub Uuid);

        impl $name {
            /// A fresh random (v4) id.
            pub fn new() -> Self {
                Self(Uuid::new_v4())
            }
        }

        impl Default for $name {
            fn default() -> Self {
                Self::new()
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                self.0.fmt(f)
            }
        }

        impl FromStr for $name {
            type Err = uuid::Error;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                Uuid::parse_str(s).map(Self)
            }
        }

    )*};
}

/// Stored as the hyphenated text (the small tables, which the API and the logs read).
macro_rules! text_in_sql {
    ($($name:ident),*) => {$(
        impl ToSql for $name {
            fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
                Ok(ToSqlOutput::from(self.0.to_string()))
            }
        }

        impl FromSql for $name {
            fn column_result(value: ValueRef<'_>) -> FromSqlResult<Self> {
                let text = value.as_str()?;
                Uuid::parse_str(text).map(Self).map_err(|e| FromSqlError::Other(Box::new(e)))
            }
        }
    )*};
}

/// Stored as the UUID's 16 bytes (the two big tables, migration 0018). Text is still read, so
/// that a value spelled out in SQL, or a row written before, parses.
macro_rules! bytes_in_sql {
    ($($name:ident),*) => {$(
        impl ToSql for $name {
            fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
                Ok(ToSqlOutput::Borrowed(ValueRef::Blob(self.0.as_bytes())))
            }
        }

        impl FromSql for $name {
            fn column_result(value: ValueRef<'_>) -> FromSqlResult<Self> {
                let parsed = match value {
                    ValueRef::Blob(bytes) => Uuid::from_slice(bytes),
                    other => Uuid::parse_str(other.as_str()?),
                };
                parsed.map(Self).map_err(|e| FromSqlError::Other(Box::new(e)))
            }
        }

        /// For statements whose parameters are built as a list of values.
        impl From<$name> for rusqlite::types::Value {
            fn from(id: $name) -> Self {
                Self::Blob(id.0.as_bytes().to_vec())
            }
        }
    )*};
}

text_in_sql!(TenantId, UserId, SatelliteId, ImportId);
bytes_in_sql!(ChunkId, DetectionId);

id_type!(
    /// A team (SPEC: tenant).
    TenantId,
    /// A person's account.
    UserId,
    /// A recording device (Pi or Android app).
    SatelliteId,
    /// One stored 3 s audio chunk.
    ChunkId,
    /// One identified bird in a chunk.
    DetectionId,
    /// One import of an old station's history (issue 38).
    ImportId,
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunk_and_detection_ids_are_stored_as_16_bytes_and_read_from_bytes_or_text() {
        let c = rusqlite::Connection::open_in_memory().expect("db");
        let id = ChunkId::new();
        let stored: Vec<u8> = c.query_row("SELECT ?1", [id], |r| r.get(0)).expect("bytes");
        assert_eq!(stored, id.0.as_bytes());
        let back: ChunkId = c.query_row("SELECT ?1", [id], |r| r.get(0)).expect("from bytes");
        assert_eq!(back, id);
        let text: DetectionId = c.query_row("SELECT ?1", [id.to_string()], |r| r.get(0)).expect("from text");
        assert_eq!(text.0, id.0);
        assert!(c.query_row("SELECT x'0102'", [], |r| r.get::<_, ChunkId>(0)).is_err(), "two bytes are no id");
        let team: String = c.query_row("SELECT ?1", [TenantId(id.0)], |r| r.get(0)).expect("text");
        assert_eq!(team, id.to_string(), "the other ids stay text");
    }
}
