//! The mail of an `email` channel: a one-line subject and a plain-text body (message, facts,
//! link, and a footer naming the rule, so the reader knows what to change to stop the mail).

use super::{
    Notice,
    text::{self, fit, one_line},
};

/// Longest subject; mail clients show far less, and a header line must stay short.
pub const SUBJECT_CHARS: usize = 200;

/// `(subject, plain-text body)` of the mail for notice `n`.
pub fn render(n: &Notice) -> (String, String) {
    let subject = fit(&one_line(&n.title), SUBJECT_CHARS);
    let mut body = String::new();
    let message = n.message.trim();
    if !message.is_empty() {
        body.push_str(message);
        body.push_str("\n\n");
    }
    let facts = text::facts(n);
    let width = facts.iter().map(|f| f.label.len()).max().unwrap_or(0) + 1;
    for f in &facts {
        body.push_str(&format!("{:<width$} {}\n", format!("{}:", f.label), f.value));
    }
    if let Some(link) = text::link(n) {
        body.push_str(&format!("\nOpen in birdhub: {link}\n"));
    }
    body.push_str("\n-- \n");
    body.push_str(&match &n.rule_name {
        Some(rule) => format!("Sent by birdhub because of the alert rule \"{}\".\n", one_line(rule)),
        None if n.event == "test" => "Sent by birdhub as a test of this channel.\n".to_owned(),
        None => "Sent by birdhub.\n".to_owned(),
    });
    (subject, body)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ids::TenantId, notify::sample};

    #[test]
    fn a_detection_mail_says_what_where_when_and_which_rule() {
        let mut n = sample(TenantId::new());
        n.event = "rare_species".to_owned();
        n.title = "Rare: Northern Cardinal at Backyard".to_owned();
        n.message = "A Northern Cardinal was heard at Backyard.".to_owned();
        n.rule_name = Some("Rare birds".to_owned());
        n.link = Some("https://hub.example/detections/d1".to_owned());
        n.data.detected_at = Some("2026-11-21T17:05:10.000Z".parse().expect("time"));
        let (subject, body) = render(&n);
        assert_eq!(subject, "Rare: Northern Cardinal at Backyard");
        let time = crate::time::readable("2026-11-21T17:05:10.000Z".parse().expect("time"));
        assert_eq!(
            body,
            format!(
                "A Northern Cardinal was heard at Backyard.\n\n\
                 Species:    Northern Cardinal / Rotkardinal (Cardinalis cardinalis)\n\
                 Confidence: 0.92\n\
                 Satellite:  Backyard\n\
                 Time:       {time}\n\
                 \nOpen in birdhub: https://hub.example/detections/d1\n\
                 \n-- \nSent by birdhub because of the alert rule \"Rare birds\".\n"
            )
        );
    }

    #[test]
    fn a_test_send_says_so_and_has_no_link() {
        let (_, body) = render(&sample(TenantId::new()));
        assert!(!body.contains("Open in birdhub"));
        assert!(body.ends_with("-- \nSent by birdhub as a test of this channel.\n"), "{body}");
    }

    #[test]
    fn the_subject_is_one_short_line() {
        let mut n = sample(TenantId::new());
        n.title = "Rare:\r\nBcc: victim@example.org\n".to_owned() + &"x".repeat(1000);
        let (subject, _) = render(&n);
        assert!(!subject.contains(['\r', '\n']));
        assert!(subject.starts_with("Rare: Bcc: victim@example.org xxx"));
        assert_eq!(subject.chars().count(), SUBJECT_CHARS);
        assert!(subject.ends_with('…'));
    }
}
