//! Sending alert deliveries (issue 12): one attempt of a pending outbox row, and test sends.
//!
//! The body was rendered when the alert fired; the target (URL, token, signing secret, mail
//! recipients) is read from the channel now, so a fixed URL or a rotated secret applies to
//! retries. Each attempt is written back: delivered; retried with exponential backoff (2 s, 4 s
//! ... at most 1 h apart) on 5xx, 429, a timeout or a connection error, for up to 24 hours; or
//! failed at once on any other 4xx. HTTP requests time out after 10 s and read at most 64 KiB
//! of a reply (`notify::http`).
//!
//! A webhook or chat request connects only to addresses the platform setting `channel_targets`
//! allows (`notify::guard`). What a receiver answered (its reply's text, a redirect's target) is
//! written to the hub's log only; the test answer and the delivery log, which the team reads,
//! carry the status code and a classified reason (`notify::http::Reason`).

use std::{
    collections::{BTreeMap, HashMap},
    sync::{Arc, Mutex},
    time::Instant,
};

use serde::Serialize;

use crate::{
    auth::secretbox::SecretBox,
    clock::Clock,
    domain::{channels::ChannelKind, outbound::TargetPolicy, settings::PlatformSettings},
    ids::TenantId,
    mail::{MailFile, Mailer},
    notify::{
        self,
        http::{Failure, Outcome, Reason, Verdict},
    },
    store::{
        self, Store,
        alert_channels::Channel,
        alert_deliveries::{After, Attempt, NewDelivery, Pending},
    },
    time::Timestamp,
};

/// At most this many deliveries of one channel are in flight at once, so a slow receiver holds
/// only its own slots.
pub const PER_CHANNEL: usize = 2;
/// How long an attempt holds its delivery: longer than any send can take (10 s over HTTP; SMTP
/// allows 15 s per step). A hub killed mid-send sends that delivery again after this.
pub const LEASE: chrono::Duration = chrono::Duration::minutes(5);

/// Everything a send needs. Cheap to clone.
#[derive(Clone)]
pub struct Outbound {
    store: Store,
    secrets: SecretBox,
    http: notify::http::Sender,
    mailer: Mailer,
    clock: Clock,
    /// Deliveries being sent now, by channel, so the sender never sends one twice at once.
    in_flight: Arc<Mutex<HashMap<String, Vec<String>>>>,
}

/// Where a channel's deliveries go.
enum Target {
    Http { url: String, sign_with: Option<String>, hide: Option<String> },
    Mail { to: Vec<String> },
}

/// What a test send reports (`POST /alert-rules/channels/:id/test`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TestReport {
    pub delivered: bool,
    pub http_status: Option<u16>,
    pub duration_ms: u64,
    /// The classified reason when not delivered (`http_status`, `connection_refused`,
    /// `target_not_allowed` ...).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_code: Option<Reason>,
    /// A short text of that reason; never anything the receiver sent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// What happened, in words for a person: "Sent to 2 addresses: …", "The receiver answered
    /// HTTP 200.", "Not sent: the mail server refused …".
    pub summary: String,
}

impl Outbound {
    pub fn new(store: &Store, secrets: &SecretBox, mailer: &Mailer, clock: &Clock) -> Self {
        Self {
            store: store.clone(),
            secrets: secrets.clone(),
            http: notify::http::Sender::new(),
            mailer: mailer.clone(),
            clock: clock.clone(),
            in_flight: Arc::default(),
        }
    }

    /// Claims `p` for sending unless it is already in flight or its channel has no free slot.
    pub fn claim(&self, p: &Pending) -> bool {
        let mut map = self.in_flight.lock().unwrap_or_else(|e| e.into_inner());
        let slots = map.entry(p.channel_id.clone()).or_default();
        if slots.len() >= PER_CHANNEL || slots.contains(&p.id) {
            return false;
        }
        slots.push(p.id.clone());
        true
    }

    fn release(&self, p: &Pending) {
        let mut map = self.in_flight.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(slots) = map.get_mut(&p.channel_id) {
            slots.retain(|id| id != &p.id);
            if slots.is_empty() {
                map.remove(&p.channel_id);
            }
        }
    }

    /// Sends a claimed delivery once and records the outcome; `None` when another pass had
    /// already taken or finished it.
    pub async fn attempt(&self, p: Pending) -> store::Result<Option<After>> {
        let result = self.attempt_inner(&p).await;
        self.release(&p);
        result
    }

    async fn attempt_inner(&self, p: &Pending) -> store::Result<Option<After>> {
        let (id, attempts, now) = (p.id.clone(), p.attempts, self.clock.stamp());
        let until = Timestamp(now.at() + LEASE);
        if !self.store.call(move |c| store::alert_deliveries::lease(c, &id, attempts, now, until)).await? {
            return Ok(None);
        }
        let (tenant, channel_id) = (p.tenant_id, p.channel_id.clone());
        let channel = match self.store.call(move |c| store::alert_channels::get(c, tenant, &channel_id)).await {
            Ok(c) => Some(c),
            Err(store::Error::NotFound) => None,
            Err(e) => return Err(e),
        };
        let outcome = match channel.as_ref().map(|c| (c.enabled, self.target(c))) {
            None => failed("the channel was deleted"),
            Some((false, _)) => failed("the channel is disabled"),
            Some((true, Err(e))) => failed(&e),
            Some((true, Ok(target))) => self.send(&target, &p.content_type, &p.body, p.file_name.as_deref()).await,
        };
        let failure = outcome.failure.as_ref();
        let now = self.clock.stamp();
        let after = match outcome.verdict {
            Verdict::Delivered => After::Delivered,
            Verdict::Failed => After::Failed,
            Verdict::Retry { after } => {
                // A receiver's Retry-After may lengthen the wait, never shorten it below the backoff.
                let wait = after.unwrap_or_default().max(notify::http::backoff(p.attempts + 1));
                let next = now.at() + chrono::Duration::from_std(wait).unwrap_or(chrono::Duration::hours(1));
                if next > p.created_at.at() + notify::http::GIVE_UP_AFTER {
                    After::Failed
                } else {
                    After::RetryAt(Timestamp(next))
                }
            }
        };
        let gave_up = matches!(outcome.verdict, Verdict::Retry { .. }) && after == After::Failed;
        let error = match (failure, gave_up) {
            (Some(f), true) => Some(format!("{}; gave up after 24 hours of retries", f.public)),
            (f, _) => f.map(|f| f.public.clone()),
        };
        if after != After::Delivered {
            let detail = failure.and_then(|f| f.detail.as_deref());
            tracing::warn!(delivery = %p.id, channel = %p.channel_id, attempts = p.attempts + 1, error = ?error, detail = ?detail, "alert delivery not delivered");
        }
        let attempt = Attempt {
            after,
            http_status: outcome.http_status,
            error: error.as_deref(),
            duration_ms: outcome.duration_ms,
        };
        let id = p.id.clone();
        let error = error.clone();
        self.store
            .call(move |c| {
                let a = Attempt { error: error.as_deref(), ..attempt };
                store::alert_deliveries::record_attempt(c, &id, attempts, &a, now)
            })
            .await?;
        Ok(Some(after))
    }

    /// Renders the sample notice for `tenant`'s channel, sends it through the same path as real
    /// deliveries (signature included) and logs it as a test.
    pub async fn test_send(&self, tenant: TenantId, channel_id: &str) -> store::Result<TestReport> {
        let id = channel_id.to_owned();
        let channel = self.store.call(move |c| store::alert_channels::get(c, tenant, &id)).await?;
        let kind = ChannelKind::parse(&channel.kind)
            .ok_or(store::Error::Corrupt { what: "channel type", value: channel.kind.clone() })?;
        // Written in the team's zone, as an alert about the team would be.
        let mut notice = notify::sample_in(tenant, self.store.team_zone(tenant).await?);
        // The bird's names in the team's languages only, as a real alert of the team carries them.
        let scope = tenant.to_string();
        let team: crate::domain::settings::TenantSettings =
            self.store.call(move |c| store::settings::load(c, &scope)).await?;
        notice.data.common_names.retain(|lang, _| {
            lang == "en" || *lang == team.primary_language || team.secondary_language.as_deref() == Some(lang.as_str())
        });
        let rendered = notify::render::for_channel(kind, &channel.config, channel.payload_template.as_deref(), &notice);
        let mut recipients = None;
        let (content_type, body, outcome) = match rendered {
            Err(e) => ("text/plain", Vec::new(), failed(&e)),
            Ok(r) => {
                let outcome = match self.target(&channel) {
                    Ok(t) => {
                        if let Target::Mail { to } = &t {
                            recipients = Some(to.clone());
                        }
                        self.send(&t, r.content_type, &r.body, None).await
                    }
                    Err(e) => failed(&e),
                };
                (r.content_type, r.body, outcome)
            }
        };
        let failure = outcome.failure.as_ref();
        if let Some(f) = failure {
            tracing::info!(channel = %channel.id, tenant = %tenant, error = %f.public, detail = ?f.detail, "test send not delivered");
        }
        let report = TestReport {
            delivered: outcome.verdict == Verdict::Delivered,
            http_status: outcome.http_status,
            duration_ms: outcome.duration_ms,
            error_code: failure.map(|f| f.reason),
            error: failure.map(|f| f.public.clone()),
            summary: test_summary(&outcome, recipients.as_deref()),
        };
        let now = self.clock.stamp();
        let after = if report.delivered { After::Delivered } else { After::Failed };
        let report_error = report.error.clone();
        self.store
            .call(move |c| {
                let d = NewDelivery {
                    tenant_id: tenant,
                    channel_id: &channel.id,
                    alert_id: None,
                    event: "test",
                    content_type,
                    body: &body,
                };
                let a = Attempt {
                    after,
                    http_status: outcome.http_status,
                    error: report_error.as_deref(),
                    duration_ms: outcome.duration_ms,
                };
                store::alert_deliveries::record_test(c, &d, &a, now)
            })
            .await?;
        Ok(report)
    }

    fn target(&self, channel: &Channel) -> Result<Target, String> {
        let kind =
            ChannelKind::parse(&channel.kind).ok_or_else(|| format!("unknown channel type {:?}", channel.kind))?;
        let secrets: BTreeMap<String, String> = match &channel.secret_enc {
            None => BTreeMap::new(),
            Some(sealed) => {
                let plain = self.secrets.open(sealed).map_err(|e| e.to_string())?;
                serde_json::from_slice(&plain).map_err(|_| "the channel's stored secrets are damaged".to_owned())?
            }
        };
        let config = |k: &str| channel.config.get(k).and_then(|v| v.as_str()).map(str::to_owned);
        let secret = |k: &str| secrets.get(k).cloned().ok_or_else(|| format!("the channel has no {k}"));
        Ok(match kind {
            ChannelKind::Email => Target::Mail {
                to: channel
                    .config
                    .get("to")
                    .and_then(|v| v.as_array())
                    .map(|a| a.iter().filter_map(|v| v.as_str().map(str::to_owned)).collect())
                    .unwrap_or_default(),
            },
            ChannelKind::Webhook => Target::Http {
                url: config("url").ok_or("the channel has no url")?,
                sign_with: secrets.get("secret").cloned(),
                hide: None,
            },
            ChannelKind::ChatBlock | ChannelKind::ChatCard | ChannelKind::ChatEmbed => {
                let url = secret("url")?;
                Target::Http { hide: Some(url.clone()), url, sign_with: None }
            }
            ChannelKind::ChatBot => {
                let token = secret("token")?;
                let base = config("apiBase").unwrap_or_else(|| crate::domain::channels::TELEGRAM_API.to_owned());
                Target::Http { url: format!("{base}/bot{token}/sendMessage"), sign_with: None, hide: Some(token) }
            }
        })
    }

    /// The platform's `channel_targets`; the strictest (`public`) when it cannot be read.
    async fn policy(&self) -> TargetPolicy {
        let loaded = self.store.call(|c| store::settings::load::<PlatformSettings>(c, store::settings::PLATFORM)).await;
        match loaded {
            Ok(p) => p.channel_targets,
            Err(e) => {
                tracing::warn!(error = %e, "could not read channel_targets; channels reach public addresses only");
                TargetPolicy::Public
            }
        }
    }

    /// Sends `body`; with `file` set, `body` is that file: a mail attachment, or a webhook body
    /// named in `Content-Disposition`.
    async fn send(&self, target: &Target, content_type: &str, body: &[u8], file: Option<&str>) -> Outcome {
        match target {
            Target::Http { url, sign_with, hide } => {
                let mut headers = Vec::new();
                if let Some(secret) = sign_with {
                    headers.push((notify::signature::HEADER, notify::signature::sign(secret.as_bytes(), body)));
                }
                if let Some(name) = file {
                    headers.push(("Content-Disposition", notify::files::content_disposition(name)));
                }
                let policy = self.policy().await;
                let req = notify::http::Request { url, body, content_type, headers, policy };
                let mut outcome = self.http.post(req).await;
                // A chat webhook URL or bot token is a credential: it never reaches a log or a response.
                if let (Some(secret), Some(f)) = (hide, outcome.failure.as_mut()) {
                    f.public = f.public.replace(secret.as_str(), "…");
                    f.detail = f.detail.take().map(|d| d.replace(secret.as_str(), "…"));
                }
                outcome
            }
            Target::Mail { to } => {
                let started = Instant::now();
                let result = match file {
                    Some(name) => {
                        let (subject, text) = notify::files::mail_text(name, body.len());
                        let file = MailFile { name, content_type, bytes: body };
                        self.mailer.deliver_with(to, &subject, text, Some(file)).await
                    }
                    None => {
                        let mail: MailBody = match serde_json::from_slice(body) {
                            Ok(m) => m,
                            Err(_) => return failed("the stored mail body is damaged"),
                        };
                        self.mailer.deliver(to, &mail.subject, mail.text).await
                    }
                };
                let duration_ms = started.elapsed().as_millis() as u64;
                match result {
                    Ok(()) => Outcome { verdict: Verdict::Delivered, http_status: None, duration_ms, failure: None },
                    Err(e) => Outcome {
                        verdict: if e.permanent { Verdict::Failed } else { Verdict::Retry { after: None } },
                        http_status: None,
                        duration_ms,
                        // The platform's own mail server answered; it is no target a team chose.
                        failure: Some(Failure::new(Reason::Mail, e.message)),
                    },
                }
            }
        }
    }
}

/// The stored body of an email delivery (`notify::render`).
#[derive(serde::Deserialize)]
struct MailBody {
    subject: String,
    text: String,
}

/// A test send's outcome in words: to whom a mail went or why not, what a receiver answered.
fn test_summary(outcome: &Outcome, recipients: Option<&[String]>) -> String {
    let delivered = outcome.verdict == Verdict::Delivered;
    let reason = outcome.failure.as_ref().map_or("", |f| f.public.as_str());
    match (recipients, delivered, outcome.http_status) {
        (Some(to), true, _) => {
            let n = to.len();
            format!("Sent to {n} {}: {}.", if n == 1 { "address" } else { "addresses" }, to.join(", "))
        }
        (Some(_), false, _) => format!("Not sent: {reason}."),
        (None, true, Some(status)) => format!("Delivered: the receiver answered HTTP {status}."),
        (None, true, None) => "Delivered.".to_owned(),
        (None, false, Some(status)) if reason.is_empty() => {
            format!("Not delivered: the receiver answered HTTP {status}.")
        }
        (None, false, _) => format!("Not delivered: {reason}."),
    }
}

fn failed(reason: &str) -> Outcome {
    Outcome {
        verdict: Verdict::Failed,
        http_status: None,
        duration_ms: 0,
        failure: Some(Failure::new(Reason::Channel, reason)),
    }
}
