//! `Sender::post` against a real local receiver that answers every way a receiver can.

use std::convert::Infallible;

use axum::{
    Router,
    body::{Body, Bytes},
    http::{HeaderMap, StatusCode, header},
    routing::post,
};

use super::*;
use crate::notify::signature;

const SECRET: &[u8] = b"hook-secret";
static CHUNK: [u8; 64 * 1024] = [b'x'; 64 * 1024];
/// 800 chunks of 64 KiB: a 50 MiB reply.
const HUGE_CHUNKS: usize = 800;

fn huge_body(pause: Duration) -> Body {
    let chunks = futures_util::stream::unfold(0, move |i| async move {
        if i == HUGE_CHUNKS {
            return None;
        }
        if !pause.is_zero() {
            tokio::time::sleep(pause).await;
        }
        Some((Ok::<_, Infallible>(Bytes::from_static(&CHUNK)), i + 1))
    });
    Body::from_stream(chunks)
}

/// A receiver on 127.0.0.1 with one route per kind of answer; returns its base URL.
async fn receiver() -> String {
    let app = Router::new()
        .route("/ok", post(|| async { "ok" }))
        .route("/down", post(|| async { (StatusCode::SERVICE_UNAVAILABLE, "  down for\nmaintenance ") }))
        .route("/busy", post(|| async { (StatusCode::TOO_MANY_REQUESTS, [(header::RETRY_AFTER, "7")], "slow down") }))
        .route("/very-busy", post(|| async { (StatusCode::TOO_MANY_REQUESTS, [(header::RETRY_AFTER, "86400")]) }))
        .route("/missing", post(|| async { (StatusCode::NOT_FOUND, "no such hook") }))
        .route("/moved", post(|| async { (StatusCode::FOUND, [(header::LOCATION, "/ok")]) }))
        // 50 MiB at 64 KiB per 10 ms: reading all of it would take 8 s.
        .route("/huge-error", post(|| async { (StatusCode::BAD_GATEWAY, huge_body(Duration::from_millis(10))) }))
        .route(
            "/hang",
            post(|| async {
                tokio::time::sleep(Duration::from_secs(3600)).await;
                "late"
            }),
        )
        .route(
            "/signed",
            post(|headers: HeaderMap, body: Bytes| async move {
                let signature = headers.get(signature::HEADER).and_then(|v| v.to_str().ok());
                let json = headers.get(header::CONTENT_TYPE).is_some_and(|v| v == "application/json");
                let agent = headers.get(header::USER_AGENT).and_then(|v| v.to_str().ok()).unwrap_or_default();
                if signature::verify(SECRET, &body, signature) && json && agent.starts_with("birdhub/") {
                    StatusCode::NO_CONTENT
                } else {
                    StatusCode::UNAUTHORIZED
                }
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{addr}")
}

fn request<'a>(url: &'a str, body: &'a [u8]) -> Request<'a> {
    Request { url, body, content_type: "application/json", headers: Vec::new() }
}

#[tokio::test]
async fn each_answer_gets_its_verdict_status_and_reason() {
    let base = receiver().await;
    let sender = Sender::new();
    let retry = |s| Verdict::Retry { after: Some(Duration::from_secs(s)) };
    let cases: [(&str, Verdict, Option<u16>, Option<&str>); 6] = [
        ("/ok", Verdict::Delivered, Some(200), None),
        ("/down", Verdict::Retry { after: None }, Some(503), Some("HTTP 503: down for maintenance")),
        ("/busy", retry(7), Some(429), Some("HTTP 429: slow down")),
        ("/very-busy", retry(3600), Some(429), Some("HTTP 429 Too Many Requests")),
        ("/missing", Verdict::Failed, Some(404), Some("HTTP 404: no such hook")),
        ("/moved", Verdict::Failed, Some(302), Some("HTTP 302 Found: redirect to /ok not followed")),
    ];
    for (path, verdict, status, error) in cases {
        let url = format!("{base}{path}");
        let out = sender.post(request(&url, b"{}")).await;
        assert_eq!((out.verdict, out.http_status, out.error.as_deref()), (verdict, status, error), "{path}");
    }
}

#[tokio::test]
async fn the_signature_content_type_and_user_agent_arrive() {
    let base = receiver().await;
    let url = format!("{base}/signed");
    let body = br#"{"event":"test"}"#;
    let mut req = request(&url, body);
    req.headers.push((signature::HEADER, signature::sign(SECRET, body)));
    let out = Sender::new().post(req).await;
    assert_eq!((out.verdict, out.http_status), (Verdict::Delivered, Some(204)));
    let mut req = request(&url, body);
    req.headers.push((signature::HEADER, signature::sign(b"wrong", body)));
    let out = Sender::new().post(req).await;
    assert_eq!((out.verdict, out.http_status), (Verdict::Failed, Some(401)));
}

#[tokio::test]
async fn a_50_mb_reply_is_not_read() {
    // Counts the chunks the receiver managed to hand to the socket before the hub hung up.
    let sent = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = sent.clone();
    let app = Router::new().route(
        "/huge",
        post(move || {
            let counter = counter.clone();
            async move {
                let chunks = futures_util::stream::unfold(0, move |i| {
                    let counter = counter.clone();
                    async move {
                        if i == HUGE_CHUNKS {
                            return None;
                        }
                        counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        Some((Ok::<_, Infallible>(Bytes::from_static(&CHUNK)), i + 1))
                    }
                });
                Body::from_stream(chunks)
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://{}/huge", listener.local_addr().expect("addr"));
    tokio::spawn(async move { axum::serve(listener, app).await });
    let out = Sender::new().post(request(&url, b"{}")).await;
    assert_eq!((out.verdict, out.http_status, out.error), (Verdict::Delivered, Some(200), None));
    tokio::time::sleep(Duration::from_millis(200)).await; // let the receiver notice the hang-up
    let produced = sent.load(std::sync::atomic::Ordering::Relaxed);
    assert!(produced < HUGE_CHUNKS / 2, "the hub read on: {produced} of {HUGE_CHUNKS} chunks left the receiver");
}

#[tokio::test]
async fn an_error_reply_is_read_only_up_to_the_cap() {
    let base = receiver().await;
    let url = format!("{base}/huge-error");
    // Reading the whole 8-second reply would run into this deadline and so take the full 3 s.
    let timeout = Duration::from_secs(3);
    let out = Sender::with_timeout(timeout).post(request(&url, b"{}")).await;
    assert_eq!((out.verdict, out.http_status), (Verdict::Retry { after: None }, Some(502)));
    // The reason quotes the capped reply: the read stopped at the cap, not at the deadline (which
    // would say "timed out").
    let error = out.error.expect("reason");
    assert!(error.starts_with("HTTP 502: xxxx") && error.chars().count() <= "HTTP 502: ".len() + 200, "{error}");
}

#[tokio::test]
async fn a_receiver_that_never_answers_times_out_as_retry() {
    let base = receiver().await;
    let url = format!("{base}/hang");
    let out = Sender::with_timeout(Duration::from_millis(300)).post(request(&url, b"{}")).await;
    assert_eq!(out.verdict, Verdict::Retry { after: None });
    assert_eq!(out.http_status, None);
    assert_eq!(out.error.as_deref(), Some("timed out after 300 ms"));
}

#[tokio::test]
async fn a_closed_port_is_connection_refused_and_retried() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port();
    let url = format!("http://127.0.0.1:{port}/hook");
    let out = Sender::new().post(request(&url, b"{}")).await;
    assert_eq!(out.verdict, Verdict::Retry { after: None });
    assert_eq!(out.http_status, None);
    assert_eq!(out.error.as_deref(), Some("connection refused"));
}

#[tokio::test]
async fn an_unusable_url_fails_without_a_request() {
    let sender = Sender::new();
    for url in ["not a url", "ftp://example.org/hook", "file:///etc/passwd", "/relative/hook"] {
        let out = sender.post(request(url, b"{}")).await;
        assert_eq!((out.verdict, out.http_status), (Verdict::Failed, None), "{url}");
        assert!(out.error.as_deref().is_some_and(|e| e.starts_with("invalid URL")), "{url}: {:?}", out.error);
    }
}

#[test]
fn backoff_doubles_from_2_s_up_to_an_hour() {
    assert_eq!(backoff(0), Duration::ZERO);
    let seconds: Vec<u64> = (1..=5).map(|a| backoff(a).as_secs()).collect();
    assert_eq!(seconds, [2, 4, 8, 16, 32]);
    assert_eq!(backoff(11), Duration::from_secs(2048));
    assert_eq!(backoff(12), Duration::from_secs(3600));
    assert_eq!(backoff(64), Duration::from_secs(3600));
    assert_eq!(backoff(u32::MAX), Duration::from_secs(3600));
    assert_eq!(GIVE_UP_AFTER, chrono::Duration::hours(24));
}
