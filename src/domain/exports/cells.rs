//! Cleaning free text for formats that cannot quote (eBird's record format reads `"`, commas and
//! line breaks as structure, FORMATS.md 1) and for cells other programs may open.

/// `s` with every `"`, comma and control character (CR, LF, tab ...) turned into a space, runs of spaces collapsed and the ends trimmed: a cell that can never split a row.
pub fn plain(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        let c = if c == '"' || c == ',' || c.is_control() { ' ' } else { c };
        if c == ' ' && (out.is_empty() || out.ends_with(' ')) {
            continue;
        }
        out.push(c);
    }
    out.truncate(out.trim_end().len());
    out
}

/// `s` with `"` turned into `'` and control characters into spaces: for quoted CSV cells that
/// must not carry a `"` (iNaturalist refuses a file with a stray quote).
pub fn unquoted(s: &str) -> String {
    s.chars().map(|c| if c == '"' { '\'' } else if c.is_control() { ' ' } else { c }).collect()
}

/// Defuses a cell a spreadsheet would run as a formula (`=`, `+`, `-`, `@` first) by a leading
/// apostrophe; numbers such as `-73.6` stay numbers.
pub fn spreadsheet_safe(s: &str) -> std::borrow::Cow<'_, str> {
    let risky = s.starts_with(['=', '+', '@']) || (s.starts_with('-') && s.parse::<f64>().is_err());
    if risky { format!("'{s}").into() } else { s.into() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_cells_lose_quotes_commas_and_line_breaks() {
        let cases = [
            ("Backyard", "Backyard"),
            ("Mont \"Royal\", north side", "Mont Royal north side"),
            ("two\r\nlines\tand  spaces ", "two lines and spaces"),
            (",,\"\"", ""),
            ("Gärten", "Gärten"),
        ];
        for (raw, want) in cases {
            assert_eq!(plain(raw), want, "{raw:?}");
        }
    }

    #[test]
    fn quotes_become_apostrophes_and_formulas_are_defused() {
        assert_eq!(unquoted("say \"hi\"\n"), "say 'hi' ");
        assert_eq!(spreadsheet_safe("=SUM(A1)"), "'=SUM(A1)");
        assert_eq!(spreadsheet_safe("-73.6"), "-73.6");
        assert_eq!(spreadsheet_safe("-x"), "'-x");
        assert_eq!(spreadsheet_safe("Robin"), "Robin");
    }
}
