//! The 12/24-hour preference (`timeFormat` of `/auth/me/preferences`) applied to the times the
//! hub writes in words.
//!
//! Alert texts are written once, when the alert is raised, by [`super::readable_in`] on the
//! 24-hour clock ("14:25 GMT on 27 Nov"), and stored as written: mail, chat and webhook receivers
//! get that documented form (docs/alerts.md). The dashboard shows each viewer their own clock, so
//! it rewrites those times when it shows a stored text ([`text_as`]).

use super::Timestamp;

/// How a person reads the clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HourFormat {
    /// "14:25": the default, and the form of every text the hub sends out.
    #[default]
    H24,
    /// "2:25 PM".
    H12,
}

impl HourFormat {
    /// The stored preference: `12h` is the 12-hour clock, anything else the 24-hour one.
    pub fn from_preference(pref: &str) -> Self {
        if pref == "12h" { Self::H12 } else { Self::H24 }
    }

    /// An hour of the day on the hour: "14:00", or "2 PM".
    pub fn hour(self, h: u32) -> String {
        match self {
            Self::H24 => format!("{h:02}:00"),
            Self::H12 => {
                let (n, half) = twelve(h);
                format!("{n} {half}")
            }
        }
    }
}

/// Hour `h` (0-23) on the 12-hour clock: (1-12, "AM" or "PM").
fn twelve(h: u32) -> (u32, &'static str) {
    let half = if h < 12 { "AM" } else { "PM" };
    let n = h % 12;
    (if n == 0 { 12 } else { n }, half)
}

/// [`super::readable_in`] on the clock `format` reads: "2:25 PM GMT on 27 Nov" on the 12-hour one.
pub fn readable_as(t: Timestamp, zone: chrono_tz::Tz, format: HourFormat) -> String {
    match format {
        HourFormat::H24 => super::readable_in(t, zone),
        HourFormat::H12 => t.0.with_timezone(&zone).format("%-I:%M %p %Z on %-d %b").to_string(),
    }
}

/// A stored alert text as a viewer on `format` reads it: every time [`super::readable_in`] wrote
/// ("14:25 GMT on 27 Nov", "04:10 UTC on 27 Nov") is put on that clock; the rest stays as it is.
pub fn text_as(text: &str, format: HourFormat) -> String {
    if format == HourFormat::H24 {
        return text.to_owned();
    }
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len() + 8);
    let (mut copied, mut i) = (0, 0);
    while i < b.len() {
        let starts_word = i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b':');
        if let Some((h, len)) = starts_word.then(|| written_time(&b[i..])).flatten() {
            let (n, half) = twelve(h);
            // `i` and `i + 5` are at ASCII bytes, so on char boundaries.
            out.push_str(&text[copied..i]);
            out.push_str(&format!("{n}{} {half}", &text[i + 2..i + 5]));
            out.push_str(&text[i + 5..i + len]);
            copied = i + len;
            i += len;
        } else {
            i += 1;
        }
    }
    out.push_str(&text[copied..]);
    out
}

/// Whether `b` starts with a time as `readable_in` writes it (`HH:MM ZONE on D Mon`): its hour
/// and the length of the whole match.
fn written_time(b: &[u8]) -> Option<(u32, usize)> {
    let digit = |k: usize| b.get(k).filter(|c| c.is_ascii_digit()).map(|c| u32::from(c - b'0'));
    let h = digit(0)? * 10 + digit(1)?;
    let m = digit(3)? * 10 + digit(4)?;
    if b.get(2) != Some(&b':') || b.get(5) != Some(&b' ') || h > 23 || m > 59 {
        return None;
    }
    // The zone's abbreviation as chrono-tz writes it: "GMT", "CEST", "ChST", "+0530", "-03".
    let zone = b[6..].iter().take_while(|c| c.is_ascii_alphanumeric() || **c == b'+' || **c == b'-').count();
    if !(1..=6).contains(&zone) {
        return None;
    }
    let rest = &b[6 + zone..];
    let rest = rest.strip_prefix(b" on ")?;
    let day = rest.iter().take_while(|c| c.is_ascii_digit()).count();
    if !(1..=2).contains(&day) || rest.get(day) != Some(&b' ') {
        return None;
    }
    let month = &rest[day + 1..];
    let is_month = month.len() >= 3
        && month[0].is_ascii_uppercase()
        && month[1..3].iter().all(u8::is_ascii_lowercase)
        && month.get(3).is_none_or(|c| !c.is_ascii_alphanumeric());
    is_month.then_some((h, 6 + zone + 4 + day + 1 + 3))
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn at(s: &str) -> Timestamp {
        s.parse().expect("time")
    }

    #[test]
    fn hours_on_the_hour_read_on_either_clock() {
        let cases = [
            (0, "00:00", "12 AM"),
            (9, "09:00", "9 AM"),
            (12, "12:00", "12 PM"),
            (14, "14:00", "2 PM"),
            (23, "23:00", "11 PM"),
        ];
        for (h, h24, h12) in cases {
            assert_eq!(HourFormat::H24.hour(h), h24);
            assert_eq!(HourFormat::H12.hour(h), h12);
        }
        assert_eq!(HourFormat::from_preference("12h"), HourFormat::H12);
        assert_eq!(HourFormat::from_preference("24h"), HourFormat::H24);
        assert_eq!(HourFormat::from_preference(""), HourFormat::H24);
    }

    #[test]
    fn alert_texts_follow_the_viewers_clock() {
        let cases = [
            (
                "Robin heard by Garden at 14:25 GMT on 6 Dec with 91% confidence.",
                "Robin heard by Garden at 2:25 PM GMT on 6 Dec with 91% confidence.",
            ),
            (
                "Pond has had no bird detected since 09:42 EST on 26 Nov.",
                "Pond has had no bird detected since 9:42 AM EST on 26 Nov.",
            ),
            (
                "since 00:05 +0530 on 1 Jan (the team's threshold is 15 minutes).",
                "since 12:05 AM +0530 on 1 Jan (the team's threshold is 15 minutes).",
            ),
            ("at 12:00 CEST on 14 May", "at 12:00 PM CEST on 14 May"),
            // Not times the hub wrote: left alone.
            ("Daily detections fell 40% on 26 Nov", "Daily detections fell 40% on 26 Nov"),
            ("Station 114:25 GMT on 6 Dec", "Station 114:25 GMT on 6 Dec"),
            ("at 14:25 GMT on 6 December", "at 14:25 GMT on 6 December"),
            ("at 24:10 UTC on 6 Dec", "at 24:10 UTC on 6 Dec"),
            ("Großer Brachvogel at 18:00 UTC on 6 Dec", "Großer Brachvogel at 6:00 PM UTC on 6 Dec"),
        ];
        for (stored, h12) in cases {
            assert_eq!(text_as(stored, HourFormat::H12), h12);
            assert_eq!(text_as(stored, HourFormat::H24), stored, "the 24-hour clock reads it as stored");
        }
    }

    #[test]
    fn the_twelve_hour_form_of_a_real_time() {
        let t = at("2026-11-27T04:10:41.685Z");
        assert_eq!(readable_as(t, chrono_tz::America::New_York, HourFormat::H12), "11:10 PM EST on 26 Nov");
        assert_eq!(readable_as(t, chrono_tz::UTC, HourFormat::H12), "4:10 AM UTC on 27 Nov");
        assert_eq!(readable_as(t, chrono_tz::UTC, HourFormat::H24), "04:10 UTC on 27 Nov");
    }

    proptest! {
        /// Whatever the time and zone, the text rewritten for a 12-hour viewer says what
        /// `readable_as` would have written for them.
        #[test]
        fn rewriting_agrees_with_writing(secs in 0i64..4_102_444_800, zone in 0usize..8) {
            let zones = [
                chrono_tz::UTC, chrono_tz::Europe::London, chrono_tz::America::New_York, chrono_tz::Asia::Kolkata,
                chrono_tz::Asia::Kathmandu, chrono_tz::America::Sao_Paulo, chrono_tz::Pacific::Guam,
                chrono_tz::Australia::Lord_Howe,
            ];
            let t = Timestamp(chrono::DateTime::from_timestamp(secs, 0).expect("time"));
            let z = zones[zone];
            let stored = format!("Wren heard by Pond at {} with 80% confidence.", crate::time::readable_in(t, z));
            let want = format!("Wren heard by Pond at {} with 80% confidence.", readable_as(t, z, HourFormat::H12));
            prop_assert_eq!(text_as(&stored, HourFormat::H12), want);
        }
    }
}
