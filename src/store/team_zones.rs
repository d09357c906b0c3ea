//! Every zone a team's figures are read in, loaded at once: the team's zone and each of its
//! satellites' effective zones (deleted satellites too: their detections stay). Exports and
//! other per-station views look a station's zone up here instead of once per row.

use std::collections::HashMap;

use chrono_tz::Tz;
use rusqlite::Connection;

use super::Result;
use crate::{
    domain::zone,
    ids::{SatelliteId, TenantId},
};

/// A team's zone and its satellites'.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TeamZones {
    /// Decides "today", default ranges and whatever has no station.
    pub team: Tz,
    /// Each satellite's effective zone; one not resolved yet is missing (it takes the team's).
    pub satellites: HashMap<SatelliteId, Tz>,
}

impl TeamZones {
    /// Only the team's zone (no satellite has its own).
    pub fn of_team(team: Tz) -> Self {
        Self { team, satellites: HashMap::new() }
    }

    /// The zone of `satellite`'s days and hours.
    pub fn of(&self, satellite: &SatelliteId) -> Tz {
        self.satellites.get(satellite).copied().unwrap_or(self.team)
    }
}

/// Loads `tenant`'s zones.
pub fn load(conn: &Connection, tenant: &TenantId) -> Result<TeamZones> {
    let team = super::zones::team_zone(conn, tenant)?;
    let mut stmt =
        conn.prepare_cached("SELECT id, time_zone FROM satellites WHERE tenant_id = ?1 AND time_zone IS NOT NULL")?;
    let rows = stmt.query_map([tenant], |r| Ok((r.get::<_, SatelliteId>(0)?, r.get::<_, String>(1)?)))?;
    let mut satellites = HashMap::new();
    for row in rows {
        let (id, name) = row?;
        if let Ok(tz) = zone::parse(&name) {
            satellites.insert(id, tz);
        }
    }
    Ok(TeamZones { team, satellites })
}
