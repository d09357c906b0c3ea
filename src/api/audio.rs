//! Listening and looking (SPEC 4.5): `GET /audio/:chunkId` streams a chunk's WAV with
//! `Content-Length` and byte `Range` support; `GET /detections/:id/spectrogram.png` renders the
//! detection's chunk as a spectrogram (STFT, 0 to 12 kHz, 80 dB range), made once and then kept
//! in the object store under `spectrograms/`.

use super::openapi::{err, tags};
use utoipa_axum::{router::OpenApiRouter, routes};

use axum::{
    extract::{Request, State},
    response::Response,
};

use super::{ApiError, Path, detections::find, files::serve_object};
use crate::{
    auth::Viewer,
    ids::{ChunkId, DetectionId, TenantId},
    inference::audio,
    media::spectrogram,
    state::AppState,
    store::{self, chunks::ChunkMeta},
};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(chunk_audio)).routes(routes!(detection_spectrogram))
}

async fn chunk_meta(state: &AppState, tenant: TenantId, chunk: ChunkId) -> Result<ChunkMeta, ApiError> {
    state
        .store
        .call(move |c| store::chunks::meta(c, tenant, chunk))
        .await?
        .ok_or_else(|| ApiError::NotFound("chunk_not_found", "no such audio chunk in this team".into()))
}

#[utoipa::path(
    get, path = "/audio/{chunk_id}", tag = tags::AUDIO,
    description = "Viewer+. Streams the WAV of a stored chunk; supports `Range` for seeking.",
    params(("chunk_id" = uuid::Uuid, Path, description = "chunk id")),
    responses((status = 200, description = "the WAV", content_type = "audio/wav"), (status = 206, description = "a byte range", content_type = "audio/wav"), err::Auth, err::NotFound)
)]
async fn chunk_audio(
    State(state): State<AppState>,
    Viewer(access): Viewer,
    Path(chunk): Path<ChunkId>,
    req: Request,
) -> Result<Response, ApiError> {
    let meta = chunk_meta(&state, access.tenant_id, chunk).await?;
    serve_object(&state.objects, &meta.storage_key, "audio/wav", req).await
}

#[utoipa::path(
    get, path = "/detections/{id}/spectrogram.png", tag = tags::AUDIO,
    description = "Viewer+. A PNG spectrogram of the detection's audio.",
    params(("id" = uuid::Uuid, Path, description = "detection id")),
    responses((status = 200, description = "the spectrogram", content_type = "image/png"), err::Auth, err::NotFound)
)]
async fn detection_spectrogram(
    State(state): State<AppState>,
    Viewer(access): Viewer,
    Path(id): Path<DetectionId>,
    req: Request,
) -> Result<Response, ApiError> {
    let detection = find(&state, access.tenant_id, id).await?;
    let chunk = detection.audio_chunk_id;
    let key = format!("spectrograms/{chunk}.png");
    if state.objects.size(&key).await.is_err() {
        let meta = chunk_meta(&state, access.tenant_id, chunk).await?;
        let wav = state.objects.get(&meta.storage_key).await?;
        let png = tokio::task::spawn_blocking(move || -> Result<Vec<u8>, ApiError> {
            let decoded = audio::decode_wav(&wav, 60.0).map_err(|e| {
                ApiError::Unprocessable("unreadable_audio", format!("the stored chunk is unreadable: {e}"))
            })?;
            spectrogram::render_png(&decoded.samples, decoded.sample_rate)
                .map_err(|e| ApiError::Unprocessable("unreadable_audio", format!("no spectrogram: {e}")))
        })
        .await
        .map_err(ApiError::internal)??;
        state.objects.put(&key, png).await?;
    }
    serve_object(&state.objects, &key, spectrogram::CONTENT_TYPE, req).await
}
