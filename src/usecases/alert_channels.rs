//! Managing alert channels (SPEC 2.16, 4.6): create, change, delete, list and look at one with its
//! delivery log. Secrets are sealed with `MFA_ENCRYPTION_KEY` before they reach the store and are
//! never shown again; a `payload_template` must parse and render the sample notice before it is
//! saved. Deleting a channel drops it from every rule and drops its pending deliveries.
//!
//! Body: `type`, `name`, `config` (per type, `domain::channels`), `payload_template` (webhook
//! only; `payloadTemplate` is accepted too), `enabled`. On `PUT`, fields left out keep their
//! values, a secret left out of `config` is kept, and `null` clears an optional one.

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

use super::in_tx;
use crate::{
    auth::secretbox::SecretBox,
    domain::{
        channels::{self, ChannelConfig, ChannelKind},
        validate,
    },
    ids::TenantId,
    notify,
    store::{
        self, Store,
        alert_channels::{Channel, ChannelFields},
        alert_deliveries::{LogEntry, Summary},
    },
    time::Timestamp,
};

/// Log lines a channel's `GET` shows.
pub const LOG_LINES: u32 = 50;

#[derive(Debug, thiserror::Error)]
pub enum ChannelError {
    #[error("{0}")]
    Invalid(String),
    #[error("type must be one of email, webhook, chat_block, chat_bot, chat_card, chat_embed, not {0:?}")]
    UnknownType(String),
    #[error("payload_template: {0}")]
    Template(String),
    #[error("the type of a channel cannot change; create a new channel")]
    TypeChange,
    #[error("no such alert channel")]
    NotFound,
    #[error("{0}")]
    Secrets(String),
    #[error(transparent)]
    Store(store::Error),
}
from_store_error!(ChannelError, not_found => NotFound);

/// A channel body as sent.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChannelInput {
    #[serde(rename = "type")]
    pub kind: Option<String>,
    pub name: Option<String>,
    pub config: Option<Value>,
    /// Left out: unchanged; `null`: removed.
    #[serde(default, alias = "payloadTemplate", deserialize_with = "some")]
    pub payload_template: Option<Option<String>>,
    pub enabled: Option<bool>,
}

fn some<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Option<String>>, D::Error> {
    Option::<String>::deserialize(d).map(Some)
}

/// A channel as responses show it: secrets redacted, with how its deliveries stand.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ChannelView {
    pub id: String,
    pub tenant_id: TenantId,
    #[serde(rename = "type")]
    pub kind: String,
    pub name: String,
    pub config: Value,
    #[serde(rename = "payload_template")]
    pub payload_template: Option<String>,
    pub enabled: bool,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    pub deliveries: Summary,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log: Option<Vec<LogEntry>>,
}

/// The team's channels; `full` (Admin+) shows clear webhook URLs whole, others see their origin.
pub async fn list(store: &Store, tenant: TenantId, full: bool) -> Result<Vec<ChannelView>, ChannelError> {
    Ok(store
        .call(move |c| {
            let mut out = Vec::new();
            for ch in store::alert_channels::list(c, tenant)? {
                let summary = store::alert_deliveries::summary(c, tenant, &ch.id)?;
                out.push(view(ch, summary, None, full));
            }
            Ok(out)
        })
        .await?)
}

/// One channel with its newest [`LOG_LINES`] deliveries.
pub async fn get(store: &Store, tenant: TenantId, id: String, full: bool) -> Result<ChannelView, ChannelError> {
    Ok(store
        .call(move |c| {
            let ch = store::alert_channels::get(c, tenant, &id)?;
            let summary = store::alert_deliveries::summary(c, tenant, &id)?;
            let log = store::alert_deliveries::log(c, tenant, &id, LOG_LINES)?;
            Ok(view(ch, summary, Some(log), full))
        })
        .await?)
}

pub async fn create(
    store: &Store,
    secrets: &SecretBox,
    tenant: TenantId,
    input: ChannelInput,
    now: Timestamp,
) -> Result<ChannelView, ChannelError> {
    let raw_kind = input.kind.as_deref().ok_or_else(|| ChannelError::Invalid("type is required".into()))?;
    let kind = ChannelKind::parse(raw_kind).ok_or_else(|| ChannelError::UnknownType(raw_kind.to_owned()))?;
    let name = validate::name(input.name.as_deref().unwrap_or_default(), "name").map_err(ChannelError::Invalid)?;
    let config = input.config.ok_or_else(|| ChannelError::Invalid("config is required".into()))?;
    let config = channels::check_config(kind, &config, None).map_err(ChannelError::Invalid)?;
    let template = template(kind, input.payload_template.flatten())?;
    let sealed = seal(secrets, &config);
    let enabled = input.enabled.unwrap_or(true);
    in_tx(store, move |tx| {
        let fields = ChannelFields {
            kind: kind.as_str(),
            name: &name,
            config: &config.public,
            secret_enc: sealed.as_deref(),
            payload_template: template.as_deref(),
            enabled,
        };
        let ch = store::alert_channels::insert(tx, tenant, &fields, now)?;
        Ok(view(ch, Summary::default(), None, true))
    })
    .await
}

pub async fn update(
    store: &Store,
    secrets: &SecretBox,
    tenant: TenantId,
    id: String,
    input: ChannelInput,
    now: Timestamp,
) -> Result<ChannelView, ChannelError> {
    let secrets = secrets.clone();
    in_tx(store, move |tx| {
        let old = store::alert_channels::get(tx, tenant, &id)?;
        let kind = ChannelKind::parse(&old.kind).ok_or_else(|| {
            ChannelError::Store(store::Error::Corrupt { what: "channel type", value: old.kind.clone() })
        })?;
        if input.kind.as_deref().is_some_and(|k| k != kind.as_str()) {
            return Err(ChannelError::TypeChange);
        }
        let name = match &input.name {
            Some(n) => validate::name(n, "name").map_err(ChannelError::Invalid)?,
            None => old.name.clone(),
        };
        let previous = open(&secrets, &old)?;
        let config = match &input.config {
            Some(c) => channels::check_config(kind, c, Some(&previous)).map_err(ChannelError::Invalid)?,
            None => ChannelConfig { public: old.config.clone(), secrets: previous },
        };
        let template = match input.payload_template {
            Some(t) => template(kind, t)?,
            None => old.payload_template.clone(),
        };
        let sealed = seal(&secrets, &config);
        let fields = ChannelFields {
            kind: kind.as_str(),
            name: &name,
            config: &config.public,
            secret_enc: sealed.as_deref(),
            payload_template: template.as_deref(),
            enabled: input.enabled.unwrap_or(old.enabled),
        };
        let ch = store::alert_channels::update(tx, tenant, &id, &fields, now)?;
        let summary = store::alert_deliveries::summary(tx, tenant, &id)?;
        Ok(view(ch, summary, None, true))
    })
    .await
}

/// Deletes a channel and unhooks it from the team's rules; returns it for the audit log.
pub async fn delete(store: &Store, tenant: TenantId, id: String) -> Result<Channel, ChannelError> {
    in_tx(store, move |tx| {
        let ch = store::alert_channels::delete(tx, tenant, &id)?;
        store::alert_rules::unlink_channel(tx, tenant, &id)?;
        Ok(ch)
    })
    .await
}

fn template(kind: ChannelKind, t: Option<String>) -> Result<Option<String>, ChannelError> {
    let Some(t) = t.filter(|t| !t.trim().is_empty()) else { return Ok(None) };
    if kind != ChannelKind::Webhook {
        return Err(ChannelError::Template("only webhook channels take a payload_template".into()));
    }
    notify::template::validate(&t).map_err(|e| ChannelError::Template(e.to_string()))?;
    Ok(Some(t))
}

fn seal(secrets: &SecretBox, config: &ChannelConfig) -> Option<String> {
    if config.secrets.is_empty() {
        return None;
    }
    let json = serde_json::to_vec(&config.secrets).unwrap_or_default();
    Some(secrets.seal(&json))
}

fn open(secrets: &SecretBox, ch: &Channel) -> Result<BTreeMap<String, String>, ChannelError> {
    let Some(sealed) = &ch.secret_enc else { return Ok(BTreeMap::new()) };
    let plain = secrets.open(sealed).map_err(|e| ChannelError::Secrets(e.to_string()))?;
    serde_json::from_slice(&plain).map_err(|_| ChannelError::Secrets("the channel's stored secrets are damaged".into()))
}

fn view(ch: Channel, deliveries: Summary, log: Option<Vec<LogEntry>>, full: bool) -> ChannelView {
    let kind = ChannelKind::parse(&ch.kind);
    // The public part says which secrets are set; the values never leave the store sealed.
    let shown = ChannelConfig {
        public: ch.config.clone(),
        secrets: kind
            .map(|k| k.secret_fields())
            .unwrap_or_default()
            .iter()
            .filter(|_| ch.secret_enc.is_some())
            .map(|f| ((*f).to_owned(), String::new()))
            .collect(),
    };
    let config = match kind {
        Some(k) => channels::redacted(k, &shown, full),
        None => Value::Object(ch.config.clone()),
    };
    ChannelView {
        id: ch.id,
        tenant_id: ch.tenant_id,
        kind: ch.kind,
        name: ch.name,
        config,
        payload_template: ch.payload_template,
        enabled: ch.enabled,
        created_at: ch.created_at,
        updated_at: ch.updated_at,
        deliveries,
        log,
    }
}
