//! The layering rule that keeps changes of who may do what in one place: no handler under
//! `src/api` or `src/web` calls a `store` function that writes. Writes go through a use case,
//! which applies every consequence of the change in one transaction (issue 34, finding 7 happened
//! because `change_role` and `remove` wrote to the store from the handlers).
//!
//! A store function "writes" when its body runs SQL that changes rows (a string literal with
//! INSERT, UPDATE or DELETE), executes a statement (`.execute(`, `execute_batch`), opens a
//! transaction, or calls another store function that writes. The test reads the source: it finds
//! every such function under `src/store`, then every call of one under `src/api` and `src/web`,
//! whether written `store::users::set_password(..)` or through a `use` of the module or function.

use std::{
    collections::{BTreeMap, BTreeSet},
    path::{Path, PathBuf},
};

/// The source with comments and the contents of string and char literals blanked (same length,
/// newlines kept), and the contents of the string literals alone.
fn blank(src: &str) -> (String, String) {
    let b = src.as_bytes();
    let (mut code, mut strings) = (b.to_vec(), Vec::new());
    let mut i = 0;
    let wipe = |code: &mut Vec<u8>, from: usize, to: usize| {
        for c in &mut code[from..to] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
    };
    while i < b.len() {
        let rest = &b[i..];
        if rest.starts_with(b"//") {
            let end = rest.iter().position(|&c| c == b'\n').map_or(b.len(), |p| i + p);
            wipe(&mut code, i, end);
            i = end;
        } else if rest.starts_with(b"/*") {
            let end = src[i + 2..].find("*/").map_or(b.len(), |p| i + 2 + p + 2);
            wipe(&mut code, i, end);
            i = end;
        } else if rest.starts_with(b"r#") || rest.starts_with(b"r\"") || rest.starts_with(b"br") {
            let start = i + if rest[0] == b'b' { 2 } else { 1 };
            let hashes = b[start..].iter().take_while(|&&c| c == b'#').count();
            if b.get(start + hashes) != Some(&b'"') || (i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_'))
            {
                i += 1;
                continue;
            }
            let open = start + hashes + 1;
            let close = format!("\"{}", "#".repeat(hashes));
            let end = src[open..].find(&close).map_or(b.len(), |p| open + p);
            strings.extend_from_slice(&b[open..end]);
            strings.push(b'\n');
            wipe(&mut code, open, end);
            i = end + close.len();
        } else if rest[0] == b'"' {
            let mut j = i + 1;
            while j < b.len() && b[j] != b'"' {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            let end = j.min(b.len());
            strings.extend_from_slice(&b[i + 1..end]);
            strings.push(b'\n');
            wipe(&mut code, i + 1, end);
            i = end + 1;
        } else if rest[0] == b'\'' {
            // A char literal ('x', '\n', '\u{..}'), not a lifetime ('a).
            let end = if rest.get(1) == Some(&b'\\') {
                src.get(i + 3..).and_then(|s| s.find('\'')).map(|p| i + 3 + p)
            } else {
                let len = src[i + 1..].chars().next().map_or(1, char::len_utf8);
                (b.get(i + 1 + len) == Some(&b'\'')).then_some(i + 1 + len)
            };
            match end {
                Some(end) => {
                    wipe(&mut code, i + 1, end);
                    i = end + 1;
                }
                None => i += 1,
            }
        } else {
            i += 1;
        }
    }
    (String::from_utf8_lossy(&code).into_owned(), String::from_utf8_lossy(&strings).into_owned())
}

/// The index of the `}` matching the `{` at `open`.
fn matching(code: &[u8], open: usize) -> usize {
    let mut depth = 0;
    for (k, &c) in code.iter().enumerate().skip(open) {
        match c {
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    return k;
                }
            }
            _ => {}
        }
    }
    code.len()
}

/// The code with `#[cfg(test)]` items blanked.
fn without_tests(code: &str) -> String {
    let mut out = code.as_bytes().to_vec();
    let mut from = 0;
    while let Some(p) = code[from..].find("#[cfg(test)]") {
        let at = from + p;
        let Some(open) = code[at..].find('{').map(|o| at + o) else { break };
        let close = matching(code.as_bytes(), open);
        let end = close.min(out.len() - 1) + 1;
        for c in &mut out[at..end] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
        from = close.min(code.len());
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// Every call in `code`: its path (`a::b::f`) as written, without `crate::`/`super::`/`self::`.
fn calls(code: &str) -> Vec<(usize, String)> {
    let b = code.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if is_ident(b[i]) && (i == 0 || !(is_ident(b[i - 1]) || b[i - 1] == b':' || b[i - 1] == b'.')) {
            let mut j = i;
            while j < b.len() && (is_ident(b[j]) || (b[j] == b':' && b.get(j + 1) == Some(&b':'))) {
                j += if b[j] == b':' { 2 } else { 1 };
            }
            let path = &code[i..j];
            let mut k = j;
            while k < b.len() && b[k] == b' ' {
                k += 1;
            }
            if b.get(k) == Some(&b'(') && !path.ends_with("::") {
                let mut p = path;
                for prefix in ["crate::", "super::", "self::"] {
                    while let Some(rest) = p.strip_prefix(prefix) {
                        p = rest;
                    }
                }
                out.push((i, p.to_owned()));
            }
            i = j.max(i + 1);
        } else {
            i += 1;
        }
    }
    out
}

/// Top-level functions of a file: name, body (code) and the string literals of the body.
fn functions(src: &str) -> Vec<(String, String, String)> {
    let (code, _) = blank(src);
    let code = without_tests(&code);
    let b = code.as_bytes();
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'{' => depth += 1,
            b'}' => depth = depth.saturating_sub(1),
            b'f' if depth == 0 && code[i..].starts_with("fn ") && (i == 0 || !is_ident(b[i - 1])) => {
                let name: String =
                    code[i + 3..].trim_start().chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
                let Some(open) = code[i..].find(['{', ';']).map(|o| i + o) else { break };
                if b[open] == b';' {
                    i = open + 1;
                    continue;
                }
                let close = matching(b, open);
                let (_, strings) = blank(&src[open..=close.min(src.len() - 1)]);
                out.push((name, code[open..close.min(code.len())].to_owned(), strings));
                i = close + 1;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    out
}

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).expect("read dir").flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    out.sort();
    out
}

/// `store/users.rs` -> `users`, `store/stats/mod.rs` -> `stats`, `store/mod.rs` -> ``.
fn module_of(store: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(store).expect("under store").with_extension("");
    let parts: Vec<String> = rel.iter().map(|p| p.to_string_lossy().into_owned()).filter(|p| p != "mod").collect();
    parts.join("::")
}

/// The store functions that write, as `module::function`, from the sources `(module, text)`.
fn write_functions(files: &[(String, String)]) -> BTreeSet<String> {
    let mut bodies: BTreeMap<String, (String, String)> = BTreeMap::new();
    for (module, src) in files {
        for (name, code, strings) in functions(src) {
            bodies.insert(if module.is_empty() { name } else { format!("{module}::{name}") }, (code, strings));
        }
    }
    let sql_write =
        |s: &str| s.split(|c: char| !c.is_ascii_alphabetic()).any(|w| matches!(w, "INSERT" | "UPDATE" | "DELETE"));
    let mut writes: BTreeSet<String> = bodies
        .iter()
        .filter(|(_, (code, strings))| {
            sql_write(strings)
                || code.contains(".execute(")
                || code.contains("execute_batch(")
                || code.contains("transaction")
        })
        .map(|(k, _)| k.clone())
        .collect();
    loop {
        let mut grew = false;
        for (key, (code, _)) in &bodies {
            if writes.contains(key) {
                continue;
            }
            let module = key.rsplit_once("::").map_or("", |(m, _)| m);
            let parent = module.rsplit_once("::").map_or("", |(p, _)| p);
            let calls_a_write = calls(code).iter().any(|(_, path)| {
                let path = path.strip_prefix("store::").unwrap_or(path);
                [path.to_owned(), format!("{module}::{path}"), format!("{parent}::{path}")]
                    .iter()
                    .any(|candidate| writes.contains(candidate.trim_start_matches("::")))
            });
            if calls_a_write {
                writes.insert(key.clone());
                grew = true;
            }
        }
        if !grew {
            return writes;
        }
    }
}

/// The paths a `use` tree brings in, each with the name it is known by.
fn flatten_use(tree: &str, prefix: &str, out: &mut Vec<(String, String)>) {
    let tree = tree.trim();
    if let Some(open) = tree.find('{') {
        let head = format!("{prefix}{}", &tree[..open]);
        let close = matching(tree.as_bytes(), open);
        let inner = &tree[open + 1..close.min(tree.len())];
        let (mut depth, mut start) = (0, 0);
        for (k, c) in inner.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    flatten_use(&inner[start..k], &head, out);
                    start = k + 1;
                }
                _ => {}
            }
        }
        flatten_use(&inner[start..], &head, out);
    } else if !tree.is_empty() {
        let (path, alias) = match tree.split_once(" as ") {
            Some((p, a)) => (p.trim(), a.trim().to_owned()),
            None => (tree, tree.rsplit("::").next().unwrap_or(tree).to_owned()),
        };
        let full = format!("{prefix}{path}");
        let full = full.strip_suffix("::self").unwrap_or(&full).to_owned();
        let alias = if alias == "self" { full.rsplit("::").next().unwrap_or("").to_owned() } else { alias };
        out.push((full.replace(' ', ""), alias));
    }
}

/// The calls of store write functions in one handler file: `(line, store function)`.
fn write_calls(src: &str, writes: &BTreeSet<String>) -> Vec<(usize, String)> {
    let (code, _) = blank(src);
    let code = without_tests(&code);
    // What the file's `use` statements bring in from the store: alias -> path under `store::`.
    let mut aliases: BTreeMap<String, String> = BTreeMap::new();
    let mut from = 0;
    while let Some(p) = code[from..].find("use ") {
        let at = from + p;
        from = at + 4;
        if at > 0 && is_ident(code.as_bytes()[at - 1]) {
            continue;
        }
        let Some(end) = code[at..].find(';').map(|e| at + e) else { break };
        let mut used = Vec::new();
        flatten_use(&code[at + 4..end], "", &mut used);
        for (path, alias) in used {
            let path = path.trim_start_matches("crate::");
            if let Some(rest) = path.strip_prefix("store::") {
                aliases.insert(alias, rest.to_owned());
            }
        }
    }
    let line_of = |at: usize| code[..at].matches('\n').count() + 1;
    let mut found = Vec::new();
    for (at, path) in calls(&code) {
        let resolved = match path.strip_prefix("store::") {
            Some(rest) => Some(rest.to_owned()),
            None => {
                let (first, rest) = path.split_once("::").map_or((path.as_str(), None), |(f, r)| (f, Some(r)));
                aliases.get(first).map(|target| match rest {
                    Some(rest) => format!("{target}::{rest}"),
                    None => target.clone(),
                })
            }
        };
        if let Some(key) = resolved.filter(|k| writes.contains(k)) {
            found.push((line_of(at), key));
        }
    }
    found
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn store_writes() -> BTreeSet<String> {
    let store = root().join("store");
    let files: Vec<(String, String)> = rust_files(&store)
        .iter()
        .map(|f| (module_of(&store, f), std::fs::read_to_string(f).expect("read store file")))
        .collect();
    write_functions(&files)
}

#[test]
fn handlers_call_no_store_function_that_writes() {
    let writes = store_writes();
    let mut offences = Vec::new();
    for dir in ["api", "web"] {
        for file in rust_files(&root().join(dir)) {
            let rel = file.strip_prefix(root()).expect("under src").to_string_lossy().replace('\\', "/");
            let src = std::fs::read_to_string(&file).expect("read handler file");
            for (line, call) in write_calls(&src, &writes) {
                offences.push(format!("src/{rel}:{line} calls store::{call}, which writes"));
            }
        }
    }
    assert!(
        offences.is_empty(),
        "handlers must call a use case (src/usecases) instead of writing to the store:\n{}",
        offences.join("\n")
    );
}

#[test]
fn the_write_functions_are_found_and_the_reads_are_not() {
    let writes = store_writes();
    for write in [
        "users::set_password",
        "users::set_blocked",
        "tenants::set_role",
        "tenants::remove_member",
        "tenants::create",
        "api_keys::create",
        "api_keys::revoke",
        "invites::create",
        "sessions::revoke_all",
        "settings::save",
        "mfa::wipe",
    ] {
        assert!(writes.contains(write), "{write} writes, but the scan missed it");
    }
    for read in ["users::get", "users::find_by_email", "tenants::list_for_user", "api_keys::list", "invites::pending"] {
        assert!(!writes.contains(read), "{read} only reads, but the scan counts it as a write");
    }
}

/// The scanner itself: a new write, called any way a handler could, is caught.
#[test]
fn a_handler_that_writes_is_caught_however_it_names_the_function() {
    let store = vec![
        (
            "things".to_owned(),
            r#"
pub fn get(conn: &Connection) -> Result<u8> { conn.query_row("SELECT 1 FROM things -- '{' ", [], |r| r.get(0)) }
pub fn rename(conn: &Connection, name: &str) -> Result<()> {
    conn.prepare("UPDATE things SET name = ?1")?.raw_execute()?; Ok(())
}
pub fn count(conn: &Connection) -> Result<u8> { let s = "select count(*)"; get(conn) }
"#
            .to_owned(),
        ),
        (
            "others".to_owned(),
            "pub fn wrap(c: &Connection) -> Result<()> { super::things::rename(c, \"x\") }".to_owned(),
        ),
    ];
    let writes = write_functions(&store);
    assert_eq!(writes, BTreeSet::from(["things::rename".to_owned(), "others::wrap".to_owned()]));
    let handler = r#"
use crate::store::{self, things::{self as t, get}, others::wrap};
use crate::store::things::rename as nice_name;
// store::things::rename(c, "in a comment") is not a call
async fn h() {
    let text = "store::things::rename(c)";
    state.store.call(|c| store::things::rename(c, "a")).await;
    state.store.call(|c| t::rename(c, "b")).await;
    state.store.call(|c| nice_name(c, "c")).await;
    state.store.call(|c| wrap(c)).await;
    state.store.call(|c| get(c)).await;
    state.store.call(|c| crate::store::things::count(c)).await;
}
"#;
    let found: Vec<String> = write_calls(handler, &writes).into_iter().map(|(_, call)| call).collect();
    assert_eq!(found, ["things::rename", "things::rename", "things::rename", "others::wrap"]);
}
