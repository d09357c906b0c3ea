//! Outgoing mail over SMTP (lettre) when `smtp.host` is set; otherwise each message is recorded in
//! the mail log and the log file, and dropped. Every attempt lands in the `mail_log` table (without
//! the body, which may carry a token). Deliveries may carry one file as an attachment (scheduled
//! exports).

use std::time::Duration;

use lettre::{
    AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor,
    message::{
        Attachment, Body, MultiPart, SinglePart,
        header::{ContentTransferEncoding, ContentType},
    },
    transport::smtp::authentication::Credentials,
};

use crate::{clock::Clock, config::SmtpSettings, store::Store};

/// What happened to a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Sent,
    /// No SMTP server is configured.
    Dropped,
    Failed,
}

/// Why [`Mailer::deliver`] did not send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MailFailure {
    /// The server refused for good (5xx) or nothing can send: retrying will not help.
    pub permanent: bool,
    pub message: String,
}

#[derive(Clone)]
pub struct Mailer {
    transport: Option<AsyncSmtpTransport<Tokio1Executor>>,
    from: String,
}

impl Mailer {
    pub fn new(smtp: &SmtpSettings) -> anyhow::Result<Self> {
        if smtp.host.is_empty() {
            return Ok(Self { transport: None, from: smtp.from.clone() });
        }
        let builder = match smtp.security.as_str() {
            "tls" => AsyncSmtpTransport::<Tokio1Executor>::relay(&smtp.host)?,
            "starttls" => AsyncSmtpTransport::<Tokio1Executor>::starttls_relay(&smtp.host)?,
            _ => AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(&smtp.host),
        };
        let mut builder = builder.port(smtp.port).timeout(Some(Duration::from_secs(15)));
        if !smtp.username.is_empty() {
            builder = builder.credentials(Credentials::new(smtp.username.clone(), smtp.password.expose().to_owned()));
        }
        Ok(Self { transport: Some(builder.build()), from: smtp.from.clone() })
    }

    pub fn enabled(&self) -> bool {
        self.transport.is_some()
    }

    /// Sends a plain-text mail and records the outcome; never fails the caller.
    pub async fn send(
        &self,
        store: &Store,
        clock: &Clock,
        to: &str,
        subject: &str,
        body: String,
        kind: &str,
    ) -> Outcome {
        let (outcome, error) = match &self.transport {
            None => {
                tracing::info!(to, subject, kind, "SMTP is not configured (smtp.host); mail recorded and dropped");
                (Outcome::Dropped, None)
            }
            Some(transport) => match self.build(&[to], subject, body) {
                Err(e) => (Outcome::Failed, Some(e)),
                Ok(message) => match transport.send(message).await {
                    Ok(_) => (Outcome::Sent, None),
                    Err(e) => {
                        tracing::warn!(to, kind, error = %e, "sending mail failed");
                        (Outcome::Failed, Some(e.to_string()))
                    }
                },
            },
        };
        let status = match outcome {
            Outcome::Sent => "sent",
            Outcome::Dropped => "dropped",
            Outcome::Failed => "failed",
        };
        let (to, subject, kind, now) = (to.to_owned(), subject.to_owned(), kind.to_owned(), clock.stamp());
        let _ = store
            .call(move |c| crate::store::mail_log::record(c, &to, &subject, &kind, status, error.as_deref(), now))
            .await;
        outcome
    }

    /// Sends one plain-text mail to every address in `to` (alert deliveries). The error says
    /// whether trying again could help: a refused address or a missing SMTP server cannot.
    pub async fn deliver(&self, to: &[String], subject: &str, body: String) -> Result<(), MailFailure> {
        self.deliver_with(to, subject, body, None).await
    }

    /// Like [`Mailer::deliver`], with `file` attached (base64, so any bytes survive the trip).
    pub async fn deliver_with(
        &self,
        to: &[String],
        subject: &str,
        body: String,
        file: Option<MailFile<'_>>,
    ) -> Result<(), MailFailure> {
        let permanent = |message: String| MailFailure { permanent: true, message };
        let Some(transport) = &self.transport else {
            return Err(permanent("SMTP is not configured (smtp.host), so email channels cannot send".into()));
        };
        let message = match file {
            None => self.build(to, subject, body),
            Some(file) => self.build_with_file(to, subject, body, file),
        }
        .map_err(permanent)?;
        transport
            .send(message)
            .await
            .map(|_| ())
            .map_err(|e| MailFailure { permanent: e.is_permanent(), message: e.to_string() })
    }

    /// A plain-text message from the hub to every address in `to`; the error names the bad part.
    fn build(&self, to: &[impl AsRef<str>], subject: &str, body: String) -> Result<Message, String> {
        self.headers(to, subject)?.header(ContentType::TEXT_PLAIN).body(body).map_err(|e| e.to_string())
    }

    /// A text part and one attached file.
    fn build_with_file(
        &self,
        to: &[impl AsRef<str>],
        subject: &str,
        body: String,
        file: MailFile<'_>,
    ) -> Result<Message, String> {
        let content_type = ContentType::parse(file.content_type)
            .or_else(|_| ContentType::parse("application/octet-stream"))
            .map_err(|e| e.to_string())?;
        let bytes = Body::new_with_encoding(file.bytes.to_vec(), ContentTransferEncoding::Base64)
            .map_err(|_| "the attachment could not be encoded".to_owned())?;
        let parts = MultiPart::mixed()
            .singlepart(SinglePart::plain(body))
            .singlepart(Attachment::new(file.name.to_owned()).body(bytes, content_type));
        self.headers(to, subject)?.multipart(parts).map_err(|e| e.to_string())
    }

    fn headers(&self, to: &[impl AsRef<str>], subject: &str) -> Result<lettre::message::MessageBuilder, String> {
        let from = self.from.parse().map_err(|e| format!("smtp.from {:?}: {e}", self.from))?;
        let mut builder = Message::builder().from(from).subject(subject);
        for address in to {
            let address = address.as_ref();
            builder = builder.to(address.parse().map_err(|e| format!("{address:?}: {e}"))?);
        }
        Ok(builder)
    }
}

/// A file to attach to a mail.
#[derive(Debug, Clone, Copy)]
pub struct MailFile<'a> {
    pub name: &'a str,
    pub content_type: &'a str,
    pub bytes: &'a [u8],
}
