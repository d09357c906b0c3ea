//! The hub's check of a chunk's stamp against its arrival (`domain::clock_sanity`): a chunk
//! stamped before its satellite's clock was plausibly set, or far in the future, is filed at a
//! corrected time, the stamp it carried kept beside it (`audio_chunks.reported_recorded_at`) and
//! counted on the satellite. The chunk is always stored: this never refuses one.

use super::Checked;
use crate::{
    clock::Clock,
    domain::clock_sanity::{self, Known, Verdict},
    store::{self, Store},
    time::Timestamp,
};

/// Judges `chunk`'s stamp now and corrects it when implausible. A plausible stamp of a chunk
/// that just arrived reads nothing; otherwise the satellite's last heartbeat is read.
pub async fn correct(store: &Store, clock: &Clock, chunk: &mut Checked) -> store::Result<()> {
    let (arrival, reported) = (clock.now(), chunk.up.recorded_at.at());
    let floor = clock_sanity::earliest_plausible(clock_sanity::build_date());
    if clock_sanity::surely_plausible(reported, arrival, floor) {
        return Ok(());
    }
    let (tenant, satellite) = (chunk.up.tenant, chunk.up.satellite);
    let facts = store.call(move |c| store::clock::facts(c, tenant, satellite)).await?;
    let fresh = |t: Option<Timestamp>| t.is_some_and(|t| t.at() > arrival - clock_sanity::OFFSET_FRESH_FOR);
    let backlog = facts
        .outbox_stats_json
        .as_deref()
        .and_then(|j| serde_json::from_str::<serde_json::Value>(j).ok())
        .and_then(|v| v.get("unackedCount").and_then(serde_json::Value::as_u64));
    let known = Known {
        recent_offset_ms: facts.offset_ms.filter(|_| fresh(facts.checked_at)),
        backlog: backlog.filter(|_| fresh(facts.heartbeat_at)),
    };
    if let Verdict::Corrected { at, how } = clock_sanity::judge(reported, arrival, chunk.wav_ms, floor, known) {
        tracing::info!(%satellite, chunk = %chunk.up.chunk, %reported, corrected = %at, ?how,
                       "implausible chunk stamp corrected");
        chunk.reported_at = Some(chunk.up.recorded_at);
        chunk.up.recorded_at = Timestamp(at);
    }
    Ok(())
}
