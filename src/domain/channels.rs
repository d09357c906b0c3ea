//! Alert channels (SPEC 2.16): the six types, the config each takes, and which of its fields are
//! secrets (sealed at rest, never returned: responses say `"set"` or null).
//!
//! | type | config | secret fields |
//! |---|---|---|
//! | `email` | `to`: one address or a list of up to 10 | none |
//! | `webhook` | `url`, `secret` (optional, signs each body) | `secret` |
//! | `chat_block` | `url` (a Slack-style incoming webhook) | `url` |
//! | `chat_card` | `url` (a Teams Workflows webhook) | `url` |
//! | `chat_embed` | `url` (a Discord-style webhook) | `url` |
//! | `chat_bot` | `token`, `chatId` (number or `@channel`), `apiBase` (default `https://api.telegram.org`) | `token` |
//!
//! A chat service's webhook URL is itself the credential, so it is sealed too; responses show
//! only its scheme and host.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

pub const TELEGRAM_API: &str = "https://api.telegram.org";
const MAX_URL: usize = 2048;
const MAX_RECIPIENTS: usize = 10;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChannelKind {
    Email,
    Webhook,
    ChatBlock,
    ChatBot,
    ChatCard,
    ChatEmbed,
}

impl ChannelKind {
    pub const ALL: [ChannelKind; 6] = [
        ChannelKind::Email,
        ChannelKind::Webhook,
        ChannelKind::ChatBlock,
        ChannelKind::ChatBot,
        ChannelKind::ChatCard,
        ChannelKind::ChatEmbed,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ChannelKind::Email => "email",
            ChannelKind::Webhook => "webhook",
            ChannelKind::ChatBlock => "chat_block",
            ChannelKind::ChatBot => "chat_bot",
            ChannelKind::ChatCard => "chat_card",
            ChannelKind::ChatEmbed => "chat_embed",
        }
    }

    /// The type as the dashboard names it, with its article, for sentences.
    pub fn in_words(self) -> &'static str {
        match self {
            ChannelKind::Email => "An email channel",
            ChannelKind::Webhook => "A webhook channel",
            ChannelKind::ChatBlock => "A Slack-style webhook",
            ChannelKind::ChatBot => "A Telegram bot channel",
            ChannelKind::ChatCard => "A Teams workflow webhook",
            ChannelKind::ChatEmbed => "A Discord-style webhook",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.as_str() == s)
    }

    /// The config fields that are secrets for this type.
    pub fn secret_fields(self) -> &'static [&'static str] {
        match self {
            ChannelKind::Email => &[],
            ChannelKind::Webhook => &["secret"],
            ChannelKind::ChatBlock | ChannelKind::ChatCard | ChannelKind::ChatEmbed => &["url"],
            ChannelKind::ChatBot => &["token"],
        }
    }

    fn fields(self) -> &'static [&'static str] {
        match self {
            ChannelKind::Email => &["to"],
            ChannelKind::Webhook => &["url", "secret"],
            ChannelKind::ChatBlock | ChannelKind::ChatCard | ChannelKind::ChatEmbed => &["url"],
            ChannelKind::ChatBot => &["token", "chatId", "apiBase"],
        }
    }
}

/// A checked config, split into what is stored in the clear and what is sealed.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ChannelConfig {
    pub public: Map<String, Value>,
    pub secrets: BTreeMap<String, String>,
}

/// A channel setting's name as the dashboard's form labels it, for the sentences that refuse it
/// (after "the" or "its").
fn label(field: &str) -> &'static str {
    match field {
        "url" => "URL",
        "apiBase" => "bot API address",
        "to" => "recipients",
        "token" => "bot token",
        "chatId" => "chat id",
        "secret" => "signing secret",
        _ => "setting",
    }
}

/// Checks `input` as the config of `kind`. On an update `previous` holds the stored secrets: a
/// secret field left out keeps its value, and `null` clears an optional one.
pub fn check_config(
    kind: ChannelKind,
    input: &Value,
    previous: Option<&BTreeMap<String, String>>,
) -> Result<ChannelConfig, String> {
    let Some(obj) = input.as_object() else { return Err("The channel's settings must be a JSON object.".into()) };
    let what = kind.in_words();
    if let Some(unknown) = obj.keys().find(|k| !kind.fields().contains(&k.as_str())) {
        let known: Vec<&str> = kind.fields().iter().map(|f| label(f)).collect();
        return Err(format!("{what} has no setting {unknown:?}; it has: {}.", known.join(", ")));
    }
    let mut out = ChannelConfig::default();
    if let Some(prev) = previous {
        out.secrets = prev.clone();
    }
    let text = |name: &str| -> Result<Option<String>, String> {
        match obj.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.trim().to_owned())),
            Some(_) => Err(format!("The {} must be text.", label(name))),
        }
    };
    let secret = |out: &mut ChannelConfig, name: &str, required: bool| -> Result<(), String> {
        match obj.get(name) {
            None => {}
            Some(Value::Null) => {
                out.secrets.remove(name);
            }
            Some(_) => {
                let v = text(name)?.unwrap_or_default();
                if v.is_empty() || v.len() > 1024 {
                    return Err(format!("The {} must be 1 to 1024 characters.", label(name)));
                }
                out.secrets.insert(name.to_owned(), v);
            }
        }
        if required && !out.secrets.contains_key(name) {
            return Err(format!("{what} needs its {}.", label(name)));
        }
        Ok(())
    };
    match kind {
        ChannelKind::Email => {
            let list: Vec<String> = match obj.get("to") {
                Some(Value::String(s)) => vec![s.clone()],
                Some(Value::Array(a)) => a
                    .iter()
                    .map(|v| v.as_str().map(str::to_owned).ok_or("The recipients must be email addresses."))
                    .collect::<Result<_, _>>()?,
                None | Some(Value::Null) => return Err("An email channel needs at least one recipient.".into()),
                Some(_) => return Err("The recipients must be an email address or a list of them.".into()),
            };
            if list.is_empty() || list.len() > MAX_RECIPIENTS {
                return Err(format!("An email channel sends to 1 to {MAX_RECIPIENTS} recipients."));
            }
            let list = list
                .iter()
                .map(|a| super::validate::email(a).map_err(|e| format!("{e}.")))
                .collect::<Result<Vec<_>, _>>()?;
            out.public.insert("to".into(), Value::from(list));
        }
        ChannelKind::Webhook => {
            let url = text("url")?.ok_or("A webhook channel needs the URL to send to.")?;
            check_url(&url, "The URL")?;
            out.public.insert("url".into(), Value::String(url));
            secret(&mut out, "secret", false)?;
        }
        ChannelKind::ChatBlock | ChannelKind::ChatCard | ChannelKind::ChatEmbed => {
            secret(&mut out, "url", true)?;
            if let Some(url) = out.secrets.get("url") {
                check_url(url, "The URL")?;
                out.public.insert(ORIGIN.into(), Value::String(origin(url)));
            }
        }
        ChannelKind::ChatBot => {
            secret(&mut out, "token", true)?;
            if out.secrets.get("token").is_some_and(|t| t.contains(['/', '?', '#', ' '])) {
                return Err("The bot token must be the token the bot's maker gave (no slashes, spaces, ? or #).".into());
            }
            let chat = match obj.get("chatId") {
                Some(Value::Number(n)) if n.is_i64() => n.to_string(),
                Some(Value::String(s)) if is_chat_id(s.trim()) => s.trim().to_owned(),
                None | Some(Value::Null) => return Err("A Telegram bot channel needs the chat id to post in.".into()),
                Some(_) => return Err("The chat id must be a number or an @channel name.".into()),
            };
            out.public.insert("chatId".into(), Value::String(chat));
            let base = text("apiBase")?.unwrap_or_else(|| TELEGRAM_API.to_owned());
            check_url(&base, "The bot API address")?;
            out.public.insert("apiBase".into(), Value::String(base.trim_end_matches('/').to_owned()));
        }
    }
    Ok(out)
}

fn is_chat_id(s: &str) -> bool {
    let numeric = s.strip_prefix('-').unwrap_or(s);
    (!numeric.is_empty() && numeric.chars().all(|c| c.is_ascii_digit()))
        || s.strip_prefix('@').is_some_and(|n| n.len() >= 2 && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
}

/// An absolute http or https URL with a host, as the sender's HTTP client will parse it.
pub fn check_url(raw: &str, field: &str) -> Result<(), String> {
    if raw.is_empty() {
        return Err(format!("{field} must not be empty."));
    }
    if raw.len() > MAX_URL {
        return Err(format!("{field} is longer than {MAX_URL} characters."));
    }
    if raw.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(format!("{field} must not contain spaces."));
    }
    // The URL parser would read `https:///x` as host `x`; a host must follow the `//`.
    if raw.split_once("://").is_none_or(|(_, rest)| rest.is_empty() || rest.starts_with('/')) {
        return Err(format!("{field} must start with http:// or https:// and a host name."));
    }
    let url = url::Url::parse(raw).map_err(|e| format!("{field} cannot be read as a web address ({e})."))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!("{field} must start with http:// or https://, not {}://.", url.scheme()));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(format!("{field} must name a host."));
    }
    Ok(())
}

/// The stored (clear) field that keeps a sealed URL's scheme and host, for display.
const ORIGIN: &str = "urlOrigin";

/// The config as responses show it: secrets as `"set"` (or null), a sealed URL as its origin.
/// Only the keys of `c.secrets` are read, so a view never needs the plain values. Without `full`
/// (a reader below Admin) a clear webhook URL shows only its origin too: many receivers take
/// their credential in the path.
pub fn redacted(kind: ChannelKind, c: &ChannelConfig, full: bool) -> Value {
    let mut out = c.public.clone();
    let origin = out.remove(ORIGIN);
    if !full && let Some(Value::String(url)) = out.get("url") {
        let shown = format!("{}/…", self::origin(url));
        out.insert("url".into(), Value::String(shown));
    }
    for field in kind.secret_fields() {
        let shown = match (c.secrets.contains_key(*field), *field, &origin) {
            (false, _, _) => Value::Null,
            (true, "url", Some(Value::String(o))) => Value::String(format!("{o}/…")),
            (true, _, _) => Value::String("set".into()),
        };
        out.insert((*field).to_owned(), shown);
    }
    Value::Object(out)
}

/// `scheme://host[:port]`, without any user or password.
fn origin(raw: &str) -> String {
    match url::Url::parse(raw) {
        Ok(u) => {
            let port = u.port().map(|p| format!(":{p}")).unwrap_or_default();
            format!("{}://{}{port}", u.scheme(), u.host_str().unwrap_or_default())
        }
        Err(_) => "a URL".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn urls_must_be_http_with_a_host() {
        for bad in
            ["", "file:///etc/passwd", "ftp://x.org/a", "http://", "https:///path", "javascript:alert(1)", "http://a b"]
        {
            assert!(check_url(bad, "url").is_err(), "{bad}");
        }
        for good in ["http://127.0.0.1:8080/hook", "https://hooks.slack.com/services/T/B/x", "http://hass.local:8123"] {
            assert_eq!(check_url(good, "url"), Ok(()), "{good}");
        }
    }

    #[test]
    fn each_type_checks_its_fields_and_seals_its_secrets() {
        let hook =
            check_config(ChannelKind::Webhook, &json!({"url": "https://x.org/h", "secret": "s3"}), None).expect("ok");
        assert_eq!(hook.secrets.get("secret").map(String::as_str), Some("s3"));
        assert_eq!(redacted(ChannelKind::Webhook, &hook, true), json!({"url": "https://x.org/h", "secret": "set"}));
        assert_eq!(redacted(ChannelKind::Webhook, &hook, false), json!({"url": "https://x.org/…", "secret": "set"}));

        let slack =
            check_config(ChannelKind::ChatBlock, &json!({"url": "https://hooks.slack.com/services/T/B/x"}), None)
                .expect("ok");
        assert_eq!(redacted(ChannelKind::ChatBlock, &slack, true), json!({"url": "https://hooks.slack.com/…"}));

        let bot =
            check_config(ChannelKind::ChatBot, &json!({"token": "123:abc", "chatId": -100123}), None).expect("ok");
        assert_eq!(
            redacted(ChannelKind::ChatBot, &bot, true),
            json!({"token": "set", "chatId": "-100123", "apiBase": TELEGRAM_API})
        );

        let mail = check_config(ChannelKind::Email, &json!({"to": "a@b.org"}), None).expect("ok");
        assert_eq!(mail.public.get("to"), Some(&json!(["a@b.org"])));

        let bad = [
            (ChannelKind::Webhook, json!({"url": "file:///etc/passwd"})),
            (ChannelKind::Webhook, json!({"url": ""})),
            (ChannelKind::Webhook, json!({})),
            (ChannelKind::Webhook, json!({"url": "https://x.org", "colour": "red"})),
            (ChannelKind::Email, json!({"to": []})),
            (ChannelKind::Email, json!({"to": "nobody"})),
            (ChannelKind::ChatBot, json!({"token": "t"})),
            (ChannelKind::ChatBot, json!({"token": "a/b", "chatId": 1})),
            (ChannelKind::ChatBot, json!({"token": "t", "chatId": "hello"})),
            (ChannelKind::ChatEmbed, json!({"url": "ftp://discord.com/x"})),
            (ChannelKind::ChatCard, json!([])),
        ];
        for (kind, body) in bad {
            assert!(check_config(kind, &body, None).is_err(), "{kind:?} {body}");
        }
    }

    #[test]
    fn an_update_keeps_a_secret_left_out_and_clears_a_null_one() {
        let first =
            check_config(ChannelKind::Webhook, &json!({"url": "https://x.org/h", "secret": "s3"}), None).expect("ok");
        let kept =
            check_config(ChannelKind::Webhook, &json!({"url": "https://x.org/2"}), Some(&first.secrets)).expect("ok");
        assert_eq!(kept.secrets.get("secret").map(String::as_str), Some("s3"));
        let cleared = check_config(
            ChannelKind::Webhook,
            &json!({"url": "https://x.org/2", "secret": null}),
            Some(&first.secrets),
        )
        .expect("ok");
        assert!(cleared.secrets.is_empty());
        let slack = check_config(ChannelKind::ChatBlock, &json!({"url": "https://h.org/a"}), None).expect("ok");
        assert!(check_config(ChannelKind::ChatBlock, &json!({"url": null}), Some(&slack.secrets)).is_err());
        assert!(check_config(ChannelKind::ChatBlock, &json!({}), Some(&slack.secrets)).is_ok());
    }
}
