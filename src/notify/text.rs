//! The wording every format shares: the facts of a notice, the species' names, which links are
//! safe to show, and fitting text into a service's limit without cutting a character or an escape.

use super::Notice;

/// Appended where text was cut to fit a limit.
pub const ELLIPSIS: char = '…';

/// The event whose notices name the species in both of the team's languages (SPEC 6.1).
pub const RARE_SPECIES: &str = "rare_species";

/// One labelled fact ("Species: Northern Cardinal").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fact {
    pub label: &'static str,
    pub value: String,
}

/// The facts of a notice that are known, in reading order: species, confidence, satellite, time.
pub fn facts(n: &Notice) -> Vec<Fact> {
    let d = &n.data;
    let mut facts = Vec::with_capacity(4);
    if let Some(species) = species_label(n) {
        facts.push(Fact { label: "Species", value: species });
    }
    if let Some(c) = d.confidence {
        facts.push(Fact { label: "Confidence", value: format!("{c:.2}") });
    }
    if let Some(name) = &d.satellite_name {
        facts.push(Fact { label: "Satellite", value: one_line(name) });
    }
    let at = d.detected_at.unwrap_or(n.timestamp);
    facts.push(Fact { label: "Time", value: d.readable(at) });
    // Chat services refuse empty field values (Discord answers 400).
    facts.retain(|f| !f.value.is_empty());
    facts
}

/// The common name to show: the primary language's, and for a rare species also the secondary
/// language's ("Northern Cardinal / Rotkardinal") when the notice carries both.
pub fn common_name(n: &Notice) -> Option<String> {
    let d = &n.data;
    let primary = d.common_name.clone().filter(|c| !c.trim().is_empty());
    let primary = primary.or_else(|| d.common_names.values().find(|c| !c.trim().is_empty()).cloned())?;
    if n.event != RARE_SPECIES || d.common_names.len() < 2 {
        return Some(one_line(&primary));
    }
    let mut names = vec![primary];
    for name in d.common_names.values() {
        if !name.trim().is_empty() && !names.contains(name) {
            names.push(name.clone());
        }
    }
    Some(one_line(&names.join(" / ")))
}

/// "Northern Cardinal / Rotkardinal (Cardinalis cardinalis)", or whichever part is known.
pub fn species_label(n: &Notice) -> Option<String> {
    let scientific = n.data.species.as_deref().map(one_line).filter(|s| !s.is_empty());
    match (common_name(n), scientific) {
        (Some(common), Some(sci)) if common != sci => Some(format!("{common} ({sci})")),
        (Some(common), _) => Some(common),
        (None, sci) => sci,
    }
}

/// The notice's link when it is an absolute http(s) URL without spaces; anything else (a
/// `javascript:` URL, a relative path) is not shown, so a chat never offers a surprising link.
pub fn link(n: &Notice) -> Option<&str> {
    let link = n.link.as_deref()?.trim();
    let lower = link.get(..8).unwrap_or(link).to_ascii_lowercase();
    let web = lower.starts_with("https://") || lower.starts_with("http://");
    let clean = !link.chars().any(|c| c.is_whitespace() || c.is_control());
    (web && clean && link.len() > "https://".len()).then_some(link)
}

/// `s` on one line: control characters and line breaks become spaces, runs of spaces collapse.
pub fn one_line(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for word in s.split(|c: char| c.is_whitespace() || c.is_control()).filter(|w| !w.is_empty()) {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    out
}

/// `s` cut to at most `max` characters (Unicode scalar values), ending with "…" when cut.
pub fn fit(s: &str, max: usize) -> String {
    fit_escaped(s, max, |_| None)
}

/// `s` escaped by `escape` and cut so the escaped text has at most `max` characters, ending with
/// "…" when cut. An escape sequence is never split: a half `&amp;` would show as garbage.
pub fn fit_escaped(s: &str, max: usize, escape: impl Fn(char) -> Option<&'static str>) -> String {
    let width = |c: char| escape(c).map_or(1, |e| e.chars().count());
    let total: usize = s.chars().map(width).sum();
    let budget = if total <= max { max } else { max.saturating_sub(1) };
    let mut out = String::with_capacity(s.len().min(budget * 4));
    let mut used = 0;
    for c in s.chars() {
        let w = width(c);
        if used + w > budget {
            break;
        }
        used += w;
        match escape(c) {
            Some(e) => out.push_str(e),
            None => out.push(c),
        }
    }
    if total > max && max > 0 {
        out.push(ELLIPSIS);
    }
    out
}

/// The three characters HTML (Telegram) and Slack's mrkdwn treat as markup.
pub fn escape_markup(c: char) -> Option<&'static str> {
    match c {
        '&' => Some("&amp;"),
        '<' => Some("&lt;"),
        '>' => Some("&gt;"),
        _ => None,
    }
}

/// [`escape_markup`] plus the double quote, for a value inside an HTML attribute.
pub fn escape_attribute(c: char) -> Option<&'static str> {
    match c {
        '"' => Some("&quot;"),
        other => escape_markup(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ids::TenantId, notify::sample};

    #[test]
    fn fit_cuts_on_a_character_boundary_and_marks_the_cut() {
        assert_eq!(fit("Rotkardinal", 20), "Rotkardinal");
        assert_eq!(fit("Rotkardinal", 11), "Rotkardinal");
        assert_eq!(fit("Rotkardinal", 5), "Rotk…");
        assert_eq!(fit("ÄÖÜäöü", 3), "ÄÖ…");
        assert_eq!(fit("🐦🐦🐦", 2), "🐦…");
        assert_eq!(fit("abc", 0), "");
    }

    #[test]
    fn an_escape_is_counted_whole_and_never_split() {
        assert_eq!(fit_escaped("a<b", 10, escape_markup), "a&lt;b");
        // "a&lt;" would be 5 characters plus the ellipsis: too many, so the escape goes whole.
        assert_eq!(fit_escaped("a<bcdef", 5, escape_markup), "a…");
        assert!(fit_escaped(&"&".repeat(100), 50, escape_markup).chars().count() <= 50);
    }

    #[test]
    fn a_rare_species_shows_both_languages_and_others_only_the_primary() {
        let mut n = sample(TenantId::new());
        assert_eq!(common_name(&n).as_deref(), Some("Northern Cardinal"));
        n.event = RARE_SPECIES.to_owned();
        assert_eq!(common_name(&n).as_deref(), Some("Northern Cardinal / Rotkardinal"));
        assert_eq!(species_label(&n).as_deref(), Some("Northern Cardinal / Rotkardinal (Cardinalis cardinalis)"));
        n.data.common_names.clear();
        assert_eq!(species_label(&n).as_deref(), Some("Northern Cardinal (Cardinalis cardinalis)"));
    }

    #[test]
    fn facts_list_what_is_known() {
        let n = sample(TenantId::new());
        let labels: Vec<_> = facts(&n).iter().map(|f| f.label).collect();
        assert_eq!(labels, ["Species", "Confidence", "Satellite", "Time"]);
        assert_eq!(facts(&n)[1].value, "0.92");
        let mut offline = n.clone();
        offline.data = crate::notify::NoticeData { satellite_name: Some("Backyard".into()), ..Default::default() };
        let labels: Vec<_> = facts(&offline).iter().map(|f| f.label).collect();
        assert_eq!(labels, ["Satellite", "Time"]);
    }

    #[test]
    fn only_absolute_web_links_are_shown() {
        let mut n = sample(TenantId::new());
        for (given, shown) in [
            ("https://hub.example/d/1", Some("https://hub.example/d/1")),
            ("HTTP://hub.local:8080/s/2", Some("HTTP://hub.local:8080/s/2")),
            ("javascript:alert(1)", None),
            ("/detections/1", None),
            ("https://hub.example/a b", None),
            ("https://", None),
        ] {
            n.link = Some(given.to_owned());
            assert_eq!(link(&n), shown, "{given}");
        }
    }

    #[test]
    fn one_line_removes_breaks_and_control_characters() {
        assert_eq!(one_line("  Rare:\r\nCardinal\t at\u{0}Backyard "), "Rare: Cardinal at Backyard");
    }
}
