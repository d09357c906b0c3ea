//! The satellite's clock in words on its page and card: "Clock 3 s ahead", "Clock wrong: 56 years
//! behind the hub" (the API's `clock_text`), when the hub last measured it, and how many chunks
//! the hub re-stamped because of it (docs/satellites.md, "The satellite's clock").

use maud::{Markup, html};

use super::sat_parts::Sat;
use crate::web::{layout, words};

/// The clock's state, or "not measured yet" before the first timestamped heartbeat.
pub fn clock(s: &Sat) -> Markup {
    html! {
        @match &s.clock_text {
            Some(text) => {
                span.(if s.clock_wrong { "clock bad" } else { "clock" }) { (text) }
                @if let Some(t) = &s.clock_checked_at {
                    " " span.muted.small { "(checked " (layout::ago(t)) ")" }
                }
            }
            None => span.muted { "not measured yet" },
        }
        @if s.clock_corrected_chunks > 0 {
            br;
            span.muted.small {
                (words::count(s.clock_corrected_chunks, "chunk", "chunks")) " re-stamped by the hub"
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sat(extra: serde_json::Value) -> Sat {
        let mut v = serde_json::json!({"id": "s", "name": "garden", "kind": "satellite", "can_manage": true,
            "latitude": null, "longitude": null, "last_seen_at": null, "is_online": true, "heartbeat_state": null,
            "noise_floor_rms": null, "uptime_seconds": null, "version": null, "update_status": null,
            "target_version": null, "filter_stats": null, "outbox_stats": null});
        if let (Some(o), Some(e)) = (v.as_object_mut(), extra.as_object()) {
            o.extend(e.clone());
        }
        serde_json::from_value(v).expect("sat")
    }

    #[test]
    fn the_clock_reads_in_words_and_counts_re_stamped_chunks() {
        let unmeasured = clock(&sat(serde_json::json!({}))).into_string();
        assert!(unmeasured.contains("not measured yet"), "{unmeasured}");
        let wrong = clock(&sat(serde_json::json!({"clock_text": "Clock wrong: 56 years behind the hub",
            "clock_wrong": true, "clock_corrected_chunks": 2})))
        .into_string();
        assert!(wrong.contains("Clock wrong: 56 years behind the hub") && wrong.contains("clock bad"), "{wrong}");
        assert!(wrong.contains("2 chunks re-stamped by the hub"), "{wrong}");
    }
}
