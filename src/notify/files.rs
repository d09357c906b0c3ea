//! How a delivered file is named and introduced: the webhook's `Content-Disposition` and the
//! subject and text of the mail that carries it (scheduled exports, SPEC 2.17).

/// `attachment; filename="..."`, with anything outside printable ASCII and the quoting
/// characters replaced, so the header is always valid.
pub fn content_disposition(file_name: &str) -> String {
    format!("attachment; filename=\"{}\"", safe_name(file_name))
}

/// A file name with only printable ASCII other than `"`, `\` and `/`.
pub fn safe_name(file_name: &str) -> String {
    let name: String = file_name
        .chars()
        .map(|c| if c.is_ascii_graphic() && !matches!(c, '"' | '\\' | '/') || c == ' ' { c } else { '_' })
        .collect();
    if name.trim().is_empty() { "export".to_owned() } else { name }
}

/// Subject and text of the mail a file is attached to.
pub fn mail_text(file_name: &str, size: usize) -> (String, String) {
    (
        format!("birdhub export: {file_name}"),
        format!(
            "Your scheduled birdhub export is attached: {file_name} ({size} bytes).\n\n\
             An admin of your team can change or stop this schedule.\n"
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_name_never_breaks_the_header() {
        assert_eq!(content_disposition("robins-2026.csv"), "attachment; filename=\"robins-2026.csv\"");
        assert_eq!(content_disposition("a\"b\r\nc/d.csv"), "attachment; filename=\"a_b__c_d.csv\"");
        assert_eq!(content_disposition("Rotkehlchen Ü.csv"), "attachment; filename=\"Rotkehlchen _.csv\"");
        assert_eq!(content_disposition(""), "attachment; filename=\"export\"");
    }
}
