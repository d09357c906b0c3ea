//! Input rules shared by the API and the CLI.

/// The longest email address, in bytes (the limit of RFC 5321's forward path).
pub const EMAIL_MAX: usize = 254;
/// The longest token or code a public route looks at, in bytes: reset and invite tokens (64 hex),
/// the `mfaToken` JWT (about 300) and second-factor codes are all far shorter.
pub const TOKEN_MAX: usize = 512;

/// An input longer than its field allows; refused at the edge, before anything reads or writes it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field} must be at most {max} bytes")]
pub struct TooLong {
    pub field: &'static str,
    pub max: usize,
}

/// `value` as is when it has at most `max` bytes (surrounding whitespace included).
pub fn within<'a>(field: &'static str, value: &'a str, max: usize) -> Result<&'a str, TooLong> {
    if value.len() > max { Err(TooLong { field, max }) } else { Ok(value) }
}

/// A plausibility check, not RFC 5322: one `@`, something before it, a dot in the domain, no spaces.
pub fn looks_like_email(s: &str) -> bool {
    let Some((local, domain)) = s.split_once('@') else { return false };
    !local.is_empty()
        && domain.contains('.')
        && !domain.starts_with('.')
        && !domain.ends_with('.')
        && !domain.contains('@')
        && s.len() <= EMAIL_MAX
        && !s.chars().any(char::is_whitespace)
}

/// Trims and checks an email address.
pub fn email(raw: &str) -> Result<String, String> {
    let e = raw.trim();
    if looks_like_email(e) { Ok(e.to_owned()) } else { Err(format!("{e:?} is not an email address")) }
}

/// The longest display name, in characters.
pub const NAME_MAX: usize = 100;

/// Trims and checks a display name (people, teams, satellites): 1 to 100 characters, no control
/// characters.
pub fn name(raw: &str, what: &str) -> Result<String, String> {
    let n = raw.trim();
    if n.is_empty() || n.chars().count() > NAME_MAX || n.chars().any(char::is_control) {
        Err(format!("{what} must be 1 to {NAME_MAX} characters, without control characters"))
    } else {
        Ok(n.to_owned())
    }
}

/// A name read from a file someone else wrote (an old station's config), made one [`name`]
/// accepts: control characters dropped, cut to [`NAME_MAX`] characters (only the first
/// `4 × NAME_MAX` characters are looked at). `None` when nothing is left.
pub fn clean_name(raw: &str) -> Option<String> {
    let kept: String = raw.chars().take(4 * NAME_MAX).filter(|c| !c.is_control()).collect();
    let cut: String = kept.trim().chars().take(NAME_MAX).collect();
    name(&cut, "name").ok()
}

/// A position on Earth, as the API takes one: finite, latitude -90 to 90, longitude -180 to 180.
pub fn position(latitude: f64, longitude: f64) -> Result<(f64, f64), String> {
    if (-90.0..=90.0).contains(&latitude) && (-180.0..=180.0).contains(&longitude) {
        Ok((latitude, longitude))
    } else {
        Err("latitude must be -90 to 90 and longitude -180 to 180".into())
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
        let hostile = format!("Gar\u{1b}[31mden\u{7}{}", "x".repeat(11_900));
        let clean = clean_name(&hostile).expect("cleaned");
        assert!(clean.starts_with("Gar[31mden") && clean.chars().count() == NAME_MAX, "{clean}");
        assert_eq!(clean_name("\u{7}\u{1b} "), None);
        assert!(position(1e300, -999.0).is_err() && position(f64::NAN, 0.0).is_err());
        assert_eq!(position(60.17, 24.94), Ok((60.17, 24.94)));
    }

    #[test]
    fn bounds_count_bytes() {
        let longest = format!("{}@b.org", "a".repeat(EMAIL_MAX - 6));
        assert_eq!(within("email", &longest, EMAIL_MAX), Ok(longest.as_str()));
        assert!(email(&longest).is_ok());
        let over = format!("a{longest}");
        assert_eq!(within("email", &over, EMAIL_MAX), Err(TooLong { field: "email", max: EMAIL_MAX }));
        assert!(email(&over).is_err());
        assert!(within("code", "é".repeat(257).as_str(), TOKEN_MAX).is_err(), "bytes, not characters");
    }
}
