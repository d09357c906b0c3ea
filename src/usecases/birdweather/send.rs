//! One attempt of a queued detection (docs/birdweather.md): checked again against what may go
//! (still confirmed, sharing still on, confidence, a bird, the hub's own audio still there),
//! then the chunk as a FLAC soundscape, then the detection against BirdWeather's id of it. The
//! outcome is written back: sent; skipped with the reason; retried with exponential back-off;
//! or failed with the reason after the last attempt. A station that keeps failing is paused.

use std::time::Duration;

use serde_json::Value;

use super::Sharing;
use crate::{
    birdweather::{
        self, ALGORITHM,
        client::{DetectionPost, Outcome, Problem},
        flac,
    },
    store::{
        self,
        birdweather::{After, Due, Job},
    },
    time::Timestamp,
};

/// Why a queued detection does not go, if it does not.
fn held_back(job: &Job) -> Option<String> {
    let Some((enabled, min, _)) = &job.station else {
        return Some("BirdWeather sharing was removed".into());
    };
    Some(if !enabled {
        "BirdWeather sharing is turned off".into()
    } else if job.verification_status != "confirmed" {
        "it is no longer confirmed".into()
    } else if job.confidence < *min {
        format!("its confidence is below the minimum of {min:.2}")
    } else if !birdweather::is_bird(&job.scientific_name, &job.common_name) {
        "it is not a bird".into()
    } else if job.imported {
        "imported history is not shared".into()
    } else if job.audio_expired {
        "its audio was removed by retention".into()
    } else if job.audio_deleted {
        "the privacy filter removed its audio".into()
    } else {
        return None;
    })
}

/// BirdWeather's soundscape id as the detection call takes it: a number (BirdNET-Pi's style).
fn id_value(id: &str) -> Value {
    id.parse::<i64>().map_or_else(|_| Value::String(id.to_owned()), Value::from)
}

fn id_text(id: &Value) -> String {
    match id {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

impl Sharing {
    /// Makes one attempt of a due row; `Ok(None)` when another pass had taken it.
    pub async fn attempt(&self, due: Due) -> store::Result<Option<After>> {
        let now = self.clock.stamp();
        // Longer than an attempt can take (two calls, each within the timeout); a hub stopped
        // mid-attempt tries that detection again after it.
        let lease = chrono::Duration::from_std(self.settings.timeout() * 2 + Duration::from_secs(15))
            .unwrap_or(chrono::Duration::minutes(5));
        let until = Timestamp(now.at() + lease);
        if !self.store.call(move |c| store::birdweather::lease(c, &due, now, until)).await? {
            return Ok(None);
        }
        let pk = due.pk;
        let Some(job) = self.store.call(move |c| store::birdweather::job(c, pk)).await? else {
            return Ok(None);
        };
        if let Some(why) = held_back(&job) {
            return self.record(due, After::Skipped(why), None, false).await;
        }
        let (after, status) = self.send(&due, &job).await?;
        self.record(due, after, status, true).await
    }

    async fn send(&self, due: &Due, job: &Job) -> store::Result<(After, Option<u16>)> {
        let sealed = job.station.as_ref().map(|s| s.2.clone()).unwrap_or_default();
        let token = match self.open(&sealed) {
            Ok(t) => t,
            Err(e) => {
                return self.failed(due, Problem { http_status: None, words: e.to_string(), station: true }).await;
            }
        };
        let sat = job.satellite_id;
        let zone = self.store.call(move |c| store::zones::satellite_zone(c, &sat)).await?;
        let soundscape = match &job.soundscape_id {
            Some(id) => id.clone(),
            None => {
                let audio = match self.soundscape(job).await {
                    Ok(a) => a,
                    Err(why) => return Ok((After::Failed(why), None)),
                };
                let at = birdweather::local_iso(job.recorded_at.at(), zone);
                match self.client.soundscape(&token, &at, audio.flac).await {
                    Outcome::Done(id) => {
                        let (pk, text) = (due.pk, id_text(&id));
                        let kept = text.clone();
                        self.store.call(move |c| store::birdweather::set_soundscape(c, pk, &kept)).await?;
                        text
                    }
                    Outcome::Retry(p) => return self.failed(due, p).await,
                    Outcome::Final(p) => return self.given_up(due, p).await,
                }
            }
        };
        let post = DetectionPost {
            timestamp: birdweather::local_iso(job.detected_at.at(), zone),
            lat: job.latitude.map(|v| format!("{v:.4}")),
            lon: job.longitude.map(|v| format!("{v:.4}")),
            soundscape_id: id_value(&soundscape),
            soundscape_start_time: job.start_ms as f64 / 1000.0,
            soundscape_end_time: job.end_ms as f64 / 1000.0,
            common_name: job.common_name.clone(),
            scientific_name: job.scientific_name.clone(),
            algorithm: ALGORITHM,
            confidence: (job.confidence * 10_000.0).round() / 10_000.0,
        };
        match self.client.detection(&token, &post).await {
            Outcome::Done(()) => {
                self.station_ok(due).await?;
                Ok((After::Sent, Some(201)))
            }
            // The station works; BirdWeather will never take this species.
            Outcome::Final(p) if p.http_status == Some(422) => {
                self.station_ok(due).await?;
                Ok((After::Skipped(p.words), Some(422)))
            }
            Outcome::Final(p) => self.given_up(due, p).await,
            Outcome::Retry(p) => self.failed(due, p).await,
        }
    }

    /// The chunk's audio as FLAC; the error says why it cannot be.
    async fn soundscape(&self, job: &Job) -> Result<flac::Soundscape, String> {
        let bytes = match self.objects.get(&job.chunk_key).await {
            Ok(b) => b,
            Err(crate::objects::ObjectError::NotFound(_)) => return Err("its audio file is missing".into()),
            Err(e) => return Err(format!("its audio could not be read: {e}")),
        };
        let ext = job.chunk_key.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase());
        tokio::task::spawn_blocking(move || flac::from_stored(bytes, ext.as_deref()))
            .await
            .map_err(|e| format!("encoding its audio failed: {e}"))?
            .map_err(|e| e.to_string())
    }

    /// A failure worth another attempt, unless this was the last one.
    async fn failed(&self, due: &Due, p: Problem) -> store::Result<(After, Option<u16>)> {
        self.station_failed(due, &p.words).await?;
        let attempts = due.attempts + 1;
        if attempts >= self.settings.max_attempts {
            let why = format!("gave up after {attempts} attempts: {}", p.words);
            return Ok((After::Failed(why), p.http_status));
        }
        let s = &self.settings;
        let wait = birdweather::backoff(
            attempts,
            Duration::from_secs(s.retry_initial_secs),
            Duration::from_secs(s.retry_max_secs),
        );
        let at = Timestamp(self.clock.now() + chrono::Duration::from_std(wait).unwrap_or(chrono::Duration::hours(1)));
        Ok((After::RetryAt(at, p.words), p.http_status))
    }

    /// A final refusal: no retry.
    async fn given_up(&self, due: &Due, p: Problem) -> store::Result<(After, Option<u16>)> {
        self.station_failed(due, &p.words).await?;
        Ok((After::Failed(p.words), p.http_status))
    }

    async fn station_ok(&self, due: &Due) -> store::Result<()> {
        let (sat, now) = (due.satellite_pk, self.clock.stamp());
        self.store.call(move |c| store::birdweather::station_ok(c, sat, now)).await
    }

    async fn station_failed(&self, due: &Due, words: &str) -> store::Result<()> {
        tracing::warn!(satellite = due.satellite_pk, attempt = due.attempts + 1, "BirdWeather upload failed: {words}");
        let (sat, now, words) = (due.satellite_pk, self.clock.stamp(), words.to_owned());
        let pause = chrono::Duration::seconds(self.settings.pause_secs as i64);
        let (after, until) = (self.settings.pause_after_failures, Timestamp(now.at() + pause));
        self.store.call(move |c| store::birdweather::station_failed(c, sat, &words, after, until, now)).await
    }

    async fn record(&self, due: Due, after: After, status: Option<u16>, counted: bool) -> store::Result<Option<After>> {
        let (now, kept) = (self.clock.stamp(), after.clone());
        self.store.call(move |c| store::birdweather::record(c, &due, &kept, status, counted, now)).await?;
        Ok(Some(after))
    }
}
