//! Input rules shared by the API and the CLI.

/// A plausibility check, not RFC 5322: one `@`, something before it, a dot in the domain, no spaces.
pub fn looks_like_email(s: &str) -> bool {
    let Some((local, domain)) = s.split_once('@') else { return false };
    !local.is_empty()
        && domain.contains('.')
        && !domain.starts_with('.')
        && !domain.ends_with('.')
        && !domain.contains('@')
        && s.len() <= 254
        && !s.chars().any(char::is_whitespace)
}

/// Trims and checks an email address.
pub fn email(raw: &str) -> Result<String, String> {
    let e = raw.trim();
    if looks_like_email(e) { Ok(e.to_owned()) } else { Err(format!("{e:?} is not an email address")) }
}

/// Trims and checks a display name (people, teams): 1 to 100 characters, no control characters.
pub fn name(raw: &str, what: &str) -> Result<String, String> {
    let n = raw.trim();
    if n.is_empty() || n.chars().count() > 100 || n.chars().any(char::is_control) {
        Err(format!("{what} must be 1 to 100 characters"))
    } else {
        Ok(n.to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn emails_and_names() {
        assert_eq!(email("  a@b.org ").as_deref(), Ok("a@b.org"));
        for bad in ["", "a", "a@b", "@b.org", "a@.org", "a b@c.org", "a@b.org."] {
            assert!(email(bad).is_err(), "{bad}");
        }
        assert!(name("", "name").is_err());
        assert!(name(&"x".repeat(101), "name").is_err());
        assert!(name("bad\u{7}", "name").is_err());
        assert_eq!(name(" Ada ", "name").as_deref(), Ok("Ada"));
    }
}
