//! What kind of recorder a satellite is (SPEC 2.11 `kind`): a Pi running `birdhub satellite`, or
//! the Android app. The kind decides the MQTT client id prefix.

use std::{fmt, str::FromStr};

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum DeviceKind {
    /// A Raspberry Pi (or any box) with a microphone.
    #[default]
    Satellite,
    /// The Android app.
    Mobile,
}

impl DeviceKind {
    pub fn as_str(self) -> &'static str {
        match self {
            DeviceKind::Satellite => "satellite",
            DeviceKind::Mobile => "mobile",
        }
    }

    /// The MQTT client id prefix devices of this kind connect with (`satellite-{id}`, `mobile-{id}`).
    pub fn client_prefix(self) -> &'static str {
        self.as_str()
    }
}

impl fmt::Display for DeviceKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for DeviceKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "satellite" => Ok(DeviceKind::Satellite),
            "mobile" => Ok(DeviceKind::Mobile),
            other => Err(format!("kind must be satellite or mobile, not {other:?}")),
        }
    }
}

impl rusqlite::types::FromSql for DeviceKind {
    fn column_result(value: rusqlite::types::ValueRef<'_>) -> rusqlite::types::FromSqlResult<Self> {
        value.as_str()?.parse().map_err(|e: String| rusqlite::types::FromSqlError::Other(e.into()))
    }
}

impl rusqlite::types::ToSql for DeviceKind {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        Ok(self.as_str().into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_parse_and_print_as_the_spec_writes_them() {
        for kind in [DeviceKind::Satellite, DeviceKind::Mobile] {
            assert_eq!(kind.as_str().parse::<DeviceKind>(), Ok(kind));
            assert_eq!(serde_json::to_string(&kind).expect("json"), format!("\"{kind}\""));
        }
        assert!("tablet".parse::<DeviceKind>().is_err());
        assert_eq!(DeviceKind::default(), DeviceKind::Satellite);
    }
}
