//! The bytes one channel gets for one notice: the default webhook body (SPEC 2.20) or the
//! channel's `payload_template`, one of the four chat shapes, or an email's subject and text
//! (stored as JSON until the sender hands them to SMTP).

use serde_json::{Map, Value};

use super::{Notice, body, chat, email, template};
use crate::domain::channels::ChannelKind;

pub const JSON: &str = "application/json";
pub const TEXT: &str = "text/plain; charset=utf-8";

/// A rendered delivery body.
#[derive(Debug, Clone, PartialEq)]
pub struct Rendered {
    pub content_type: &'static str,
    pub body: Vec<u8>,
}

/// Renders `n` for a channel of `kind` with its clear `config` and optional template.
pub fn for_channel(
    kind: ChannelKind,
    config: &Map<String, Value>,
    tmpl: Option<&str>,
    n: &Notice,
) -> Result<Rendered, String> {
    let json = |v: Value| Rendered { content_type: JSON, body: v.to_string().into_bytes() };
    Ok(match kind {
        ChannelKind::Webhook => match tmpl {
            None => Rendered { content_type: JSON, body: body::webhook_default(n) },
            Some(t) => {
                let text = template::render(t, n).map_err(|e| format!("payload_template: {e}"))?;
                // A template that renders JSON is sent as JSON; anything else as plain text.
                let content_type = if serde_json::from_str::<Value>(&text).is_ok() { JSON } else { TEXT };
                Rendered { content_type, body: text.into_bytes() }
            }
        },
        ChannelKind::ChatBlock => json(chat::block(n)),
        ChannelKind::ChatCard => json(chat::card(n)),
        ChannelKind::ChatEmbed => json(chat::embed(n)),
        ChannelKind::ChatBot => {
            let chat_id = config.get("chatId").and_then(Value::as_str).ok_or("the channel has no chatId")?;
            json(chat::bot(n, chat_id))
        }
        ChannelKind::Email => {
            let (subject, text) = email::render(n);
            json(serde_json::json!({ "subject": subject, "text": text }))
        }
    })
}
