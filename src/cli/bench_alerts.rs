//! The alerts part of `birdhub bench pipeline`: ten active detection rules wired to one signed
//! webhook channel, and a real HTTP receiver in this process that checks each signature and
//! notes when each detection's alert arrived, for the detection-to-receiver latency.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use axum::{Router, body::Bytes, extract::State, http::HeaderMap, http::StatusCode};
use serde_json::json;

use crate::{
    app,
    ids::TenantId,
    notify::signature,
    store,
    usecases::{alert_channels, alert_rules},
};

const SECRET: &str = "bench-secret";

/// Each delivery the receiver accepted: the detection it was about and when it arrived.
pub type Arrivals = Arc<Mutex<Vec<(String, Instant)>>>;

/// A running receiver and what it has seen.
pub struct Receiver {
    pub arrivals: Arrivals,
    /// Requests whose signature did not verify (answered 401).
    pub refused: Arc<Mutex<usize>>,
}

/// Starts the receiver and gives `tenant` a webhook channel to it and ten detection rules: eight
/// that the fixture's warbler matches (each satellite alerts once per rule per cooldown) and two
/// that it does not.
pub async fn setup(hub: &app::Hub, tenant: TenantId) -> anyhow::Result<Receiver> {
    let rx = Receiver { arrivals: Arc::default(), refused: Arc::default() };
    let app = Router::new().fallback(receive).with_state((rx.arrivals.clone(), rx.refused.clone()));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/hook", listener.local_addr()?);
    tokio::spawn(async move { axum::serve(listener, app).await });

    let (store, now) = (&hub.state.store, hub.state.clock.stamp());
    let input: alert_channels::ChannelInput = serde_json::from_value(json!({
        "type": "webhook", "name": "bench receiver", "config": {"url": url, "secret": SECRET}
    }))?;
    let channel = alert_channels::create(store, &hub.state.secrets, tenant, input, now).await?;
    let matching = [
        json!({}),
        json!({"minConfidence": 0.3}),
        json!({"minConfidence": 0.5}),
        json!({"species": ["leiothlypis_peregrina"]}),
        json!({"species": ["Leiothlypis peregrina", "Turdus migratorius"]}),
        json!({"special": ["first_of_day", "rare"]}),
        json!({"hours": {"from": 0, "to": 23}, "minConfidence": 0.2}),
        json!({"species": ["leiothlypis_peregrina"], "minConfidence": 0.4}),
    ];
    let not_matching = [json!({"species": ["strix_varia"]}), json!({"minConfidence": 0.999})];
    for (i, conditions) in matching.iter().chain(&not_matching).enumerate() {
        let input: alert_rules::RuleInput = serde_json::from_value(json!({
            "name": format!("bench rule {i}"), "trigger": "detection", "conditions": conditions,
            "channelIds": [channel.id], "cooldownMinutes": 60
        }))?;
        alert_rules::create(store, &hub.state.names, tenant, input, now).await.map_err(|e| anyhow::anyhow!("{e}"))?;
    }
    Ok(rx)
}

async fn receive(
    State((arrivals, refused)): State<(Arrivals, Arc<Mutex<usize>>)>,
    headers: HeaderMap,
    body: Bytes,
) -> StatusCode {
    let at = Instant::now();
    let header = headers.get(signature::HEADER).and_then(|v| v.to_str().ok());
    if !signature::verify(SECRET.as_bytes(), &body, header) {
        if let Ok(mut n) = refused.lock() {
            *n += 1;
        }
        return StatusCode::UNAUTHORIZED;
    }
    let id = serde_json::from_slice::<serde_json::Value>(&body)
        .ok()
        .and_then(|v| v["data"]["detectionId"].as_str().map(str::to_owned));
    if let (Some(id), Ok(mut seen)) = (id, arrivals.lock()) {
        seen.push((id, at));
    }
    StatusCode::OK
}

/// Waits (at most 60 s) until the hub's outbox has nothing pending, and says how many
/// deliveries it made.
pub async fn wait_delivered(hub: &app::Hub) -> anyhow::Result<u64> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (pending, delivered): (i64, i64) = hub
            .state
            .store
            .call(|c| {
                Ok(c.query_row(
                    "SELECT count(*) FILTER (WHERE status = 'pending'), count(*) FILTER (WHERE status = 'delivered')
                     FROM alert_deliveries",
                    [],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )?)
            })
            .await
            .map_err(|e: store::Error| anyhow::anyhow!(e))?;
        if pending == 0 {
            return Ok(delivered.max(0) as u64);
        }
        anyhow::ensure!(Instant::now() < deadline, "{pending} deliveries still pending after 60 s");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Milliseconds from each detection's publication on the bus to each of its alerts arriving.
pub fn latencies(arrivals: &Arrivals, published: &HashMap<String, Instant>) -> anyhow::Result<Vec<f64>> {
    let arrivals = arrivals.lock().map_err(|_| anyhow::anyhow!("receiver lock"))?;
    let mut out: Vec<f64> = arrivals
        .iter()
        .filter_map(|(id, at)| published.get(id).map(|sent| at.saturating_duration_since(*sent).as_secs_f64() * 1e3))
        .collect();
    out.sort_by(f64::total_cmp);
    anyhow::ensure!(!out.is_empty(), "no alert reached the receiver");
    Ok(out)
}
