//! Opening a database someone else wrote (an old station's `birds.db` or `birdnet.db`), the one
//! way both readers (and BirdNET-Go's WAL copy) do it. Such a file is hostile: its schema may
//! hold generated columns that make every row megabytes from nothing, views or triggers that
//! call functions, values as long as SQLite allows. So: no value longer than [`MAX_VALUE`] is
//! ever made (`SQLITE_LIMIT_LENGTH`), the schema is not trusted (`trusted_schema=OFF`), the
//! connection only reads, tables with hidden or generated columns are refused, and a reader
//! selects named columns through [`bounded`], which never loads a value longer than
//! [`MAX_FIELD`] (the row is then corrupt).

use std::path::Path;

use rusqlite::{Connection, OpenFlags, limits::Limit};

use super::peer::SourceError;

/// The longest string or blob SQLite makes on such a connection (a longer one is an error).
pub const MAX_VALUE: i32 = 1024 * 1024;
/// The longest value a reader takes from a row: longer, and the row is corrupt.
pub const MAX_FIELD: usize = 64 * 1024;

/// Opens `path` with `flags` and the limits above. `flags` decide read-only or not: a scratch
/// copy is opened read-write so SQLite can replay its WAL; the connection is query-only after.
pub fn open(path: &Path, flags: OpenFlags) -> rusqlite::Result<Connection> {
    let conn = Connection::open_with_flags(path, flags | OpenFlags::SQLITE_OPEN_NO_MUTEX)?;
    conn.set_limit(Limit::SQLITE_LIMIT_LENGTH, MAX_VALUE)?;
    conn.set_limit(Limit::SQLITE_LIMIT_SQL_LENGTH, 1024 * 1024)?;
    conn.pragma_update(None, "trusted_schema", false)?;
    Ok(conn)
}

/// After a scratch copy's WAL was replayed: nothing more is written.
pub fn query_only(conn: &Connection) -> rusqlite::Result<()> {
    conn.pragma_update(None, "query_only", true)
}

/// The hidden or generated columns of `table` (`pragma_table_xinfo`'s `hidden` is not 0), which
/// `pragma_table_info` does not show.
pub fn hidden_columns(conn: &Connection, table: &str) -> rusqlite::Result<Vec<String>> {
    let mut stmt = conn.prepare("SELECT name FROM pragma_table_xinfo(?1) WHERE hidden != 0")?;
    let names = stmt.query_map([table], |r| r.get::<_, String>(0))?.collect::<Result<Vec<_>, _>>()?;
    Ok(names)
}

/// Refuses the database when one of `tables` (those a reader reads) has hidden or generated
/// columns: no station writes them, and a generated column computes its value on every read.
pub fn refuse_generated(conn: &Connection, shown: &str, tables: &[&str]) -> Result<(), SourceError> {
    for table in tables {
        let hidden = hidden_columns(conn, table)?;
        if !hidden.is_empty() {
            return Err(SourceError::UnknownSchema {
                path: shown.to_owned(),
                expected: "plain columns (no station writes generated or hidden ones)".into(),
                found: format!("table {table} with generated or hidden columns {}", hidden.join(", ")),
            });
        }
    }
    Ok(())
}

/// A select list for `columns` (SQL expressions naming one column each, or `NULL`) that never
/// loads a value longer than [`MAX_FIELD`]: such a value reads as NULL, and one more column
/// (last) counts them. `octet_length` of a column reads only the record's header.
pub fn bounded(columns: &[String]) -> String {
    let max = MAX_FIELD;
    let mut out: Vec<String> = columns
        .iter()
        .map(|c| {
            if c == "NULL" { c.clone() } else { format!("CASE WHEN octet_length({c}) > {max} THEN NULL ELSE {c} END") }
        })
        .collect();
    let over: Vec<String> =
        columns.iter().filter(|c| *c != "NULL").map(|c| format!("(coalesce(octet_length({c}), 0) > {max})")).collect();
    out.push(if over.is_empty() { "0".into() } else { over.join(" + ") });
    out.join(", ")
}

/// The reason a row read through [`bounded`] is corrupt, from its last column.
pub fn overlong(count: i64) -> Option<String> {
    (count > 0).then(|| format!("{count} value(s) longer than {MAX_FIELD} bytes"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn db(dir: &Path, sql: &str) -> std::path::PathBuf {
        let p = dir.join("x.db");
        Connection::open(&p).expect("create").execute_batch(sql).expect("schema");
        p
    }

    #[test]
    fn generated_columns_are_found_and_values_are_bounded() {
        let dir = tempfile::tempdir().expect("dir");
        let p = db(
            dir.path(),
            "CREATE TABLE t (a TEXT, b TEXT GENERATED ALWAYS AS (zeroblob(50000000)) VIRTUAL);
             CREATE TABLE u (a TEXT, b BLOB); INSERT INTO u VALUES ('x', zeroblob(100000)), ('y', x'01');",
        );
        let conn = open(&p, OpenFlags::SQLITE_OPEN_READ_ONLY).expect("open");
        assert_eq!(hidden_columns(&conn, "t").expect("xinfo"), vec!["b".to_owned()]);
        assert!(refuse_generated(&conn, "x.db", &["u", "t"]).is_err());
        assert!(refuse_generated(&conn, "x.db", &["u", "missing"]).is_ok());
        // Over the length limit: an error, never a 50 MB value.
        assert!(conn.query_row("SELECT b FROM t", [], |r| r.get::<_, Vec<u8>>(0)).is_err());
        let sql = format!("SELECT {} FROM u ORDER BY a", bounded(&["a".into(), "b".into(), "NULL".into()]));
        let mut stmt = conn.prepare(&sql).expect("prepare");
        let rows: Vec<(Option<Vec<u8>>, i64)> =
            stmt.query_map([], |r| Ok((r.get(1)?, r.get(3)?))).expect("q").collect::<Result<_, _>>().expect("rows");
        assert_eq!(rows, vec![(None, 1), (Some(vec![1]), 0)]);
        assert!(overlong(1).is_some() && overlong(0).is_none());
    }
}
