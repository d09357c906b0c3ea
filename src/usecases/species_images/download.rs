//! One download of one species' picture, for the fetcher job: claim the species (so no other
//! fetcher takes it), download, store the picture in the object store, record the outcome.
//!
//! A failure is retried after [`retry_delay`](crate::domain::species_images::retry_delay) until
//! `species_images.max_attempts` attempts were made; then the species stays `failed` with no
//! next attempt until a platform admin asks for a retry. "No picture" (404) is never retried on
//! its own.

use sha2::{Digest, Sha256};

use super::{
    ImageError, Images,
    fetch::{Failure, Fetched, Image},
};
use crate::{
    clock::Clock,
    domain::species_images::{ImageStatus, retry_delay},
    objects::ObjectStore,
    store::{Store, species_images as rows},
    time::Timestamp,
};

/// Species whose download may start now, at most `limit`.
pub async fn due(store: &Store, clock: &Clock, limit: usize) -> Result<Vec<rows::Due>, ImageError> {
    let now = clock.stamp();
    Ok(store.call(move |c| rows::due(c, now, limit)).await?)
}

/// Downloads `d` once and records how it went; `None` when another fetcher had claimed it (or
/// no source is configured).
pub async fn download(
    store: &Store,
    objects: &ObjectStore,
    clock: &Clock,
    images: &Images,
    d: rows::Due,
) -> Result<Option<ImageStatus>, ImageError> {
    let Some(fetcher) = &images.fetcher else { return Ok(None) };
    let (now, until) = (clock.stamp(), Timestamp(clock.now() + images.lease));
    let claim = d.clone();
    if !store.call(move |c| rows::claim(c, &claim, now, until)).await? {
        return Ok(None);
    }
    let attempt = d.attempts + 1;
    let outcome = fetcher.fetch(&d.scientific_name, &d.species_code).await;
    let result = match outcome {
        Ok(Fetched::Image(image)) => match keep(store, objects, clock, &d.species_code, attempt, &image).await {
            Ok(status) => return Ok(status),
            Err(e) => Err(Failure(format!("could not store the picture: {e}"))),
        },
        Ok(Fetched::Missing(reason)) => Ok(reason),
        Err(failure) => Err(failure),
    };
    let (status, error, retry_at) = match result {
        Ok(reason) => (ImageStatus::None, reason, None),
        Err(Failure(reason)) if attempt >= images.max_attempts => {
            (ImageStatus::Failed, format!("{reason}; gave up after {attempt} attempts"), None)
        }
        Err(Failure(reason)) => {
            let wait = chrono::Duration::from_std(retry_delay(attempt)).unwrap_or(chrono::Duration::days(1));
            (ImageStatus::Failed, reason, Some(Timestamp(clock.now() + wait)))
        }
    };
    if status == ImageStatus::Failed {
        tracing::info!(species = %d.species_code, attempt, error = %error, "species image download failed");
    }
    let (code, now) = (d.species_code.clone(), clock.stamp());
    let recorded = store.call(move |c| rows::record_miss(c, &code, attempt, status, &error, retry_at, now)).await?;
    Ok(recorded.then_some(status))
}

/// Stores `image` and records it; a picture whose claim was lost meanwhile (the cache was
/// cleared) is deleted again.
async fn keep(
    store: &Store,
    objects: &ObjectStore,
    clock: &Clock,
    code: &str,
    attempt: u32,
    image: &Image,
) -> Result<Option<ImageStatus>, ImageError> {
    let sha256 = hex::encode(Sha256::digest(&image.bytes));
    // The hash in the key: a picture stored again after a clear never shares a name with a stale one.
    let key = format!("species-images/{code}-{}.{}", &sha256[..16], image.kind.extension());
    let size = objects.put(&key, image.bytes.clone()).await?;
    let (c_code, c_key, now) = (code.to_owned(), key.clone(), clock.stamp());
    let (content_type, attribution, license, page) =
        (image.kind.mime(), image.attribution.clone(), image.license.clone(), image.source_page.clone());
    let recorded = store
        .call(move |c| {
            let s = rows::Stored {
                object_key: &c_key,
                content_type,
                bytes: size,
                sha256: &sha256,
                attribution: &attribution,
                license: &license,
                source_page: page.as_deref(),
            };
            rows::record_cached(c, &c_code, attempt, &s, now)
        })
        .await;
    match recorded {
        Ok(true) => Ok(Some(ImageStatus::Cached)),
        Ok(false) => {
            objects.delete(&key).await?;
            Ok(None)
        }
        Err(e) => {
            let _ = objects.delete(&key).await;
            Err(e.into())
        }
    }
}
