//! Which BirdNET-Go schema a database has (IMPORTS.md B.2), decided from its tables, their
//! columns and the v2 migration's state, never from a table name alone: BirdNET-Pi's table and
//! BirdNET-Go v2's are both called `detections`.

use std::collections::BTreeMap;

use rusqlite::Connection;

/// The tables of a database and their columns, names lower-cased (SQLite's names are
/// case-insensitive).
pub(super) struct Tables {
    map: BTreeMap<String, Vec<String>>,
}

impl Tables {
    pub(super) fn read(conn: &Connection) -> rusqlite::Result<Self> {
        let mut names = conn.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")?;
        let names: Vec<String> = names.query_map([], |r| r.get(0))?.collect::<Result<_, _>>()?;
        let mut map = BTreeMap::new();
        for name in names {
            let mut cols = conn.prepare("SELECT name FROM pragma_table_info(?1)")?;
            let cols: Vec<String> = cols
                .query_map([&name], |r| r.get::<_, String>(0))?
                .map(|c| c.map(|c| c.to_lowercase()))
                .collect::<Result<_, _>>()?;
            map.insert(name.to_lowercase(), cols);
        }
        Ok(Self { map })
    }

    pub(super) fn has_column(&self, table: &str, column: &str) -> bool {
        self.map.get(table).is_some_and(|cols| cols.iter().any(|c| c == column))
    }

    pub(super) fn has_columns(&self, table: &str, columns: &[&str]) -> bool {
        columns.iter().all(|c| self.has_column(table, c))
    }

    /// The tables and columns for an error message, e.g. `notes(id, date), results(note_id)`.
    pub(super) fn describe(&self) -> String {
        if self.map.is_empty() {
            return "no tables".to_owned();
        }
        let mut parts: Vec<String> = self
            .map
            .iter()
            .filter(|(t, _)| !t.starts_with("sqlite_"))
            .take(12)
            .map(|(t, cols)| {
                let shown: Vec<&str> = cols.iter().take(8).map(String::as_str).collect();
                let more = if cols.len() > shown.len() { ", …" } else { "" };
                format!("{t}({}{more})", shown.join(", "))
            })
            .collect();
        if self.map.len() > 12 {
            parts.push(format!("and {} more tables", self.map.len() - 12));
        }
        parts.join(", ")
    }
}

/// What the detector found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Detected {
    /// `notes` with rows, or an empty `notes` and no v2 tables (a fresh station).
    Legacy,
    /// v2 tables whose migration completed, or a v2-only database with no migration record.
    V2,
    /// v2 tables whose migration has not finished (the state text): this is the partial `_v2`
    /// sidecar, and the legacy `birdnet.db` beside it is the authoritative file.
    InProgress(String),
    /// BirdNET-Pi's `detections` (capitalised `Sci_Name`, `File_Name` …).
    BirdnetPi,
    Unknown,
}

/// The columns the legacy reader needs on `notes` (everything else is optional).
pub(super) const LEGACY_REQUIRED: &[&str] = &["id", "date", "time", "scientific_name", "confidence"];
/// The columns the v2 reader needs.
pub(super) const V2_DETECTIONS_REQUIRED: &[&str] = &["id", "label_id", "detected_at", "confidence"];
pub(super) const V2_LABELS_REQUIRED: &[&str] = &["id", "scientific_name"];

/// What an error says was expected.
pub(super) const EXPECTED: &str = "BirdNET-Go's legacy table notes(id, date, time, scientific_name, confidence, …) \
     or its v2 tables detections(id, label_id, detected_at, confidence, …) and labels(id, scientific_name)";

fn has_rows(conn: &Connection, table: &str) -> rusqlite::Result<bool> {
    conn.query_row(&format!("SELECT EXISTS (SELECT 1 FROM \"{table}\")"), [], |r| r.get(0))
}

/// The v2 migration's state (`completed`, `dual_write`, `migrating` …), if the file has a record.
fn migration_state(conn: &Connection, tables: &Tables) -> rusqlite::Result<Option<String>> {
    for table in ["migration_states", "migration_state"] {
        if tables.has_column(table, "state") {
            let mut stmt = conn.prepare(&format!("SELECT CAST(state AS TEXT) FROM \"{table}\" LIMIT 1"))?;
            let mut rows = stmt.query([])?;
            if let Some(row) = rows.next()? {
                let state: Option<String> = row.get(0)?;
                return Ok(state.map(|s| s.trim().to_lowercase()));
            }
        }
    }
    Ok(None)
}

/// Decides the schema (IMPORTS.md B.2, in its order).
pub(super) fn detect(conn: &Connection, tables: &Tables) -> rusqlite::Result<Detected> {
    if tables.has_column("detections", "sci_name") && tables.has_column("detections", "file_name") {
        return Ok(Detected::BirdnetPi);
    }
    let legacy_ok = tables.has_columns("notes", LEGACY_REQUIRED);
    if legacy_ok && has_rows(conn, "notes")? {
        return Ok(Detected::Legacy);
    }
    let v2_ok =
        tables.has_columns("detections", V2_DETECTIONS_REQUIRED) && tables.has_columns("labels", V2_LABELS_REQUIRED);
    if v2_ok {
        return Ok(match migration_state(conn, tables)? {
            Some(state) if state == "completed" => Detected::V2,
            Some(state) => Detected::InProgress(state),
            None => Detected::V2,
        });
    }
    if legacy_ok {
        return Ok(Detected::Legacy);
    }
    Ok(Detected::Unknown)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn db(sql: &str) -> Connection {
        let conn = Connection::open_in_memory().expect("memory db");
        conn.execute_batch(sql).expect("schema");
        conn
    }

    fn detected(sql: &str) -> Detected {
        let conn = db(sql);
        let tables = Tables::read(&conn).expect("tables");
        detect(&conn, &tables).expect("detect")
    }

    const LEGACY: &str = "CREATE TABLE notes (id INTEGER PRIMARY KEY, source_node TEXT, date TEXT, time TEXT, \
        scientific_name TEXT, common_name TEXT, confidence REAL, clip_name TEXT);
        CREATE TABLE results (id INTEGER PRIMARY KEY, note_id INTEGER, species TEXT, confidence REAL);";
    const V2: &str = "CREATE TABLE detections (id INTEGER PRIMARY KEY, model_id INTEGER, label_id INTEGER, \
        detected_at INTEGER, confidence REAL, legacy_id INTEGER);
        CREATE TABLE labels (id INTEGER PRIMARY KEY, scientific_name TEXT, model_id INTEGER);
        CREATE TABLE migration_states (id INTEGER PRIMARY KEY, state TEXT, phase TEXT);";

    #[test]
    fn legacy_notes_with_rows_are_legacy_even_beside_v2_tables() {
        let sql = format!(
            "{LEGACY}
            CREATE TABLE detections_x (id INTEGER);
            INSERT INTO notes (date, time, scientific_name, confidence) VALUES ('2024-05-01', '06:00:00', 'Turdus merula', 0.9);"
        );
        assert_eq!(detected(&sql), Detected::Legacy);
    }

    #[test]
    fn an_empty_legacy_database_is_legacy() {
        assert_eq!(detected(LEGACY), Detected::Legacy);
    }

    #[test]
    fn a_completed_migration_is_v2_even_with_empty_legacy_tables() {
        let sql = format!("{LEGACY}{V2} INSERT INTO migration_states (state) VALUES ('completed');");
        assert_eq!(detected(&sql), Detected::V2);
    }

    #[test]
    fn a_migration_in_progress_is_not_read_as_v2() {
        let sql = format!("{LEGACY}{V2} INSERT INTO migration_states (state) VALUES ('dual_write');");
        assert_eq!(detected(&sql), Detected::InProgress("dual_write".into()));
    }

    #[test]
    fn the_old_table_name_migration_state_counts() {
        let sql =
            "CREATE TABLE detections (id INTEGER PRIMARY KEY, label_id INTEGER, detected_at INTEGER, confidence REAL);
            CREATE TABLE labels (id INTEGER PRIMARY KEY, scientific_name TEXT);
            CREATE TABLE migration_state (id INTEGER PRIMARY KEY, state TEXT);
            INSERT INTO migration_state (state) VALUES ('completed');";
        assert_eq!(detected(sql), Detected::V2);
    }

    #[test]
    fn birdnet_pi_detections_are_recognised_by_their_columns() {
        let sql = "CREATE TABLE detections (Date DATE, Time TIME, Sci_Name VARCHAR(100) NOT NULL, \
            Com_Name VARCHAR(100) NOT NULL, Confidence FLOAT, File_Name VARCHAR(100) NOT NULL);";
        assert_eq!(detected(sql), Detected::BirdnetPi);
    }

    #[test]
    fn anything_else_is_unknown_and_described() {
        let sql = "CREATE TABLE detections (id INTEGER, species TEXT); CREATE TABLE weather (id INTEGER);";
        assert_eq!(detected(sql), Detected::Unknown);
        let conn = db(sql);
        let described = Tables::read(&conn).expect("tables").describe();
        assert_eq!(described, "detections(id, species), weather(id)");
    }
}
