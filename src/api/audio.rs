//! Listening and looking (SPEC 4.5): `GET /audio/:chunkId` streams a chunk's WAV with
//! `Content-Length` and byte `Range` support; `GET /detections/:id/spectrogram.png` renders the
//! detection's chunk as a spectrogram (10.7 ms STFT frames, 75% overlap, 70 dB range; see
//! [`crate::media::spectrogram`]) over `?minHz=&maxHz=` (default 0 to 12 kHz). The default range
//! is made once and then kept in the object store under `spectrograms/v2/` (the key names the
//! range); other ranges are drawn per request, so chosen ranges cannot fill the disk. A picture
//! shows at most the file's first minute, read within bounds, one drawing per core at a time, and
//! a file that did not decode is refused at once the next time ([`crate::media::audio_source`]).
//! Every PNG
//! comes with its pixel mapping in `X-Spectrogram-*` headers, so the page can place annotation
//! boxes on the notes.

use super::openapi::{err, tags};
use utoipa_axum::{router::OpenApiRouter, routes};

use axum::{
    body::Body,
    extract::{Request, State},
    http::{HeaderName, HeaderValue, header},
    response::Response,
};
use serde::Deserialize;

use super::{ApiError, Path, Query, detections::find, files::serve_object};
use crate::{
    auth::Viewer,
    ids::{ChunkId, DetectionId, TenantId},
    media::{audio_source::SourceError, spectrogram},
    state::AppState,
    store::{self, chunks::ChunkMeta},
};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(chunk_audio)).routes(routes!(detection_spectrogram))
}

async fn chunk_meta(state: &AppState, tenant: TenantId, chunk: ChunkId) -> Result<ChunkMeta, ApiError> {
    let (meta, no_audio) = state
        .store
        .call(move |c| {
            Ok((store::chunks::meta(c, tenant, chunk)?, store::import_rows::chunk_without_audio(c, tenant, chunk)?))
        })
        .await?;
    if no_audio {
        return Err(ApiError::Gone(
            "no_audio",
            "no audio: this detection was imported from an old station that no longer had its clip".into(),
        ));
    }
    meta.ok_or_else(|| ApiError::NotFound("chunk_not_found", "no such audio chunk in this team".into())).and_then(|m| {
        match m.audio_expired_at {
            Some(at) => Err(expired(at)),
            None => Ok(m),
        }
    })
}

/// The media type of a stored chunk, from its key's extension: the hub's own chunks are WAV,
/// imported clips keep the old station's format (issue 38).
pub fn content_type(key: &str) -> &'static str {
    let ext = key.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase()).unwrap_or_default();
    match ext.as_str() {
        "wav" => "audio/wav",
        "mp3" => "audio/mpeg",
        "flac" => "audio/flac",
        "ogg" | "oga" | "opus" => "audio/ogg",
        "m4a" | "aac" => "audio/mp4",
        _ => "application/octet-stream",
    }
}

/// 410 for audio that retention deleted.
pub fn expired(at: crate::time::Timestamp) -> ApiError {
    ApiError::Gone(
        "audio_expired",
        format!(
            "audio expired: retention deleted this recording on {} to keep the disk from filling; the detection is kept",
            at.to_string().get(..10).unwrap_or_default()
        ),
    )
}

#[utoipa::path(
    get, path = "/audio/{chunk_id}", tag = tags::AUDIO,
    description = "Viewer+. Streams the audio of a stored chunk; supports `Range` for seeking. The hub's own \
        chunks are WAV; clips imported from an old station keep their format (`audio/mpeg`, `audio/flac`, \
        `audio/ogg`, `audio/wav`). 410 `audio_expired` when retention deleted it, 410 `no_audio` for an imported \
        detection whose clip the old station no longer had.",
    params(("chunk_id" = uuid::Uuid, Path, description = "chunk id")),
    responses((status = 200, description = "the audio", content_type = "audio/wav"), (status = 206, description = "a byte range", content_type = "audio/wav"), err::Auth, err::NotFound, err::Gone)
)]
async fn chunk_audio(
    State(state): State<AppState>,
    Viewer(access): Viewer,
    Path(chunk): Path<ChunkId>,
    req: Request,
) -> Result<Response, ApiError> {
    let meta = chunk_meta(&state, access.tenant_id, chunk).await?;
    serve_object(&state.objects, &meta.storage_key, content_type(&meta.storage_key), req).await
}

/// The frequency band a person asks for; either end may be left out.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct SpectrogramQuery {
    min_hz: Option<f64>,
    max_hz: Option<f64>,
}

#[utoipa::path(
    get, path = "/detections/{id}/spectrogram.png", tag = tags::AUDIO,
    description = "Viewer+. A PNG spectrogram of the detection's audio chunk, 256 px tall, one column per \
        ~2.7 ms (a quarter of the 10.7 ms analysis window), dark noise floor. `minHz`/`maxHz` choose the band \
        (default 0 to 12 kHz or Nyquist; `0 <= minHz < maxHz <= Nyquist`, else 422 `invalid_frequency_range`). \
        The `X-Spectrogram-*` headers give the pixel mapping: column `c` covers `[c, c+1) * SecondsPerPixel` \
        seconds from the chunk start; row `r` (0 = top) covers `(MaxHz - (r+1) * HzPerPixel, MaxHz - r * HzPerPixel]`.",
    params(
        ("id" = uuid::Uuid, Path, description = "detection id"),
        ("minHz" = Option<f64>, Query, description = "bottom edge of the picture in Hz (default 0)"),
        ("maxHz" = Option<f64>, Query, description = "top edge of the picture in Hz (default 12000, or Nyquist if lower)"),
    ),
    responses(
        (status = 200, description = "the spectrogram", content_type = "image/png", headers(
            ("X-Spectrogram-Seconds-Per-Pixel" = f64, description = "seconds covered by one column"),
            ("X-Spectrogram-Hz-Per-Pixel" = f64, description = "Hz covered by one row"),
            ("X-Spectrogram-Min-Hz" = f64, description = "frequency at the bottom edge of the bottom row"),
            ("X-Spectrogram-Max-Hz" = f64, description = "frequency at the top edge of the top row"),
            ("X-Spectrogram-Duration-Seconds" = f64, description = "length of the drawn audio"),
        )),
        err::BadRequest, err::Auth, err::NotFound, err::Gone, err::Unprocessable
    )
)]
async fn detection_spectrogram(
    State(state): State<AppState>,
    Viewer(access): Viewer,
    Path(id): Path<DetectionId>,
    Query(q): Query<SpectrogramQuery>,
    req: Request,
) -> Result<Response, ApiError> {
    let detection = find(&state, access.tenant_id, id).await?;
    spectrogram_of(&state, access.tenant_id, detection.audio_chunk_id, (q.min_hz, q.max_hz), req).await
}

/// The spectrogram PNG of `tenant`'s `chunk` over the band asked for, with its `X-Spectrogram-*`
/// mapping headers; a share link's page draws the same picture.
pub(super) async fn spectrogram_of(
    state: &AppState,
    tenant: TenantId,
    chunk: ChunkId,
    (min_hz, max_hz): (Option<f64>, Option<f64>),
    req: Request,
) -> Result<Response, ApiError> {
    let meta = chunk_meta(state, tenant, chunk).await?;
    // One drawing per core at a time, from at most the file's first minute (finding 4 of issue 48).
    let _turn = state.spectrograms.slot().await;
    let decoded = state.spectrograms.first_minute(&state.objects, &meta.storage_key).await.map_err(|e| match e {
        SourceError::Unreadable(why) => {
            ApiError::Unprocessable("unreadable_audio", format!("the stored chunk is unreadable: {why}"))
        }
        SourceError::Object(o) => o.into(),
    })?;
    let range = spectrogram::FrequencyRange::choose(min_hz, max_hz, decoded.sample_rate)
        .map_err(|e| ApiError::Unprocessable("invalid_frequency_range", e.to_string()))?;
    let map = spectrogram::mapping(decoded.samples.len(), decoded.sample_rate, range)
        .map_err(|e| ApiError::Unprocessable("unreadable_audio", format!("no spectrogram: {e}")))?;
    let is_default = range == spectrogram::FrequencyRange::default_for(decoded.sample_rate);
    let key = format!("spectrograms/v2/{chunk}_{}-{}Hz.png", range.min_hz, range.max_hz);
    let mut resp = if is_default && state.objects.size(&key).await.is_ok() {
        serve_object(&state.objects, &key, spectrogram::CONTENT_TYPE, req).await?
    } else {
        let png =
            tokio::task::spawn_blocking(move || spectrogram::render(&decoded.samples, decoded.sample_rate, range))
                .await
                .map_err(ApiError::internal)?
                .map_err(|e| ApiError::Unprocessable("unreadable_audio", format!("no spectrogram: {e}")))?
                .0;
        if is_default {
            state.objects.put(&key, png).await?;
            serve_object(&state.objects, &key, spectrogram::CONTENT_TYPE, req).await?
        } else {
            let mut resp = Response::new(Body::from(png));
            let headers = resp.headers_mut();
            headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(spectrogram::CONTENT_TYPE));
            headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("private, max-age=3600"));
            resp
        }
    };
    let headers = resp.headers_mut();
    for (name, value) in [
        ("x-spectrogram-seconds-per-pixel", map.seconds_per_pixel),
        ("x-spectrogram-hz-per-pixel", map.hz_per_pixel),
        ("x-spectrogram-min-hz", map.min_hz),
        ("x-spectrogram-max-hz", map.max_hz),
        ("x-spectrogram-duration-seconds", map.duration_seconds),
    ] {
        headers.insert(
            HeaderName::from_static(name),
            HeaderValue::from_str(&value.to_string()).map_err(ApiError::internal)?,
        );
    }
    Ok(resp)
}
