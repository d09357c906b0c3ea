//! `Sender::post` against a real local receiver that answers every way a receiver can.

use std::convert::Infallible;

use axum::{
    Router,
    body::{Body, Bytes},
    http::{HeaderMap, StatusCode, header},
    routing::post,
};

use super::*;
use crate::{domain::outbound::TargetPolicy, notify::signature};

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
    // The receivers of these tests listen on 127.0.0.1.
    Request { url, body, content_type: "application/json", headers: Vec::new(), policy: TargetPolicy::Loopback }
}

/// (reason, public text, detail) of an outcome's failure.
type Why<'a> = (Reason, &'a str, Option<&'a str>);

fn why(out: &Outcome) -> Option<Why<'_>> {
    out.failure.as_ref().map(|f| (f.reason, f.public.as_str(), f.detail.as_deref()))
}

#[tokio::test]
async fn each_answer_gets_its_verdict_status_and_reason() {
    let base = receiver().await;
    let sender = Sender::new();
    let retry = |s| Verdict::Retry { after: Some(Duration::from_secs(s)) };
    // The public text never quotes the receiver (issue 34, finding 5): its words go to the detail,
    // which only the hub's log gets.
    let http = Reason::HttpStatus;
    let cases: [(&str, Verdict, Option<u16>, Option<Why<'_>>); 6] = [
        ("/ok", Verdict::Delivered, Some(200), None),
        (
            "/down",
            Verdict::Retry { after: None },
            Some(503),
            Some((http, "HTTP 503 Service Unavailable", Some("down for maintenance"))),
        ),
        ("/busy", retry(7), Some(429), Some((http, "HTTP 429 Too Many Requests", Some("slow down")))),
        ("/very-busy", retry(3600), Some(429), Some((http, "HTTP 429 Too Many Requests", None))),
        ("/missing", Verdict::Failed, Some(404), Some((http, "HTTP 404 Not Found", Some("no such hook")))),
        (
            "/moved",
            Verdict::Failed,
            Some(302),
            Some((Reason::RedirectRefused, "HTTP 302 Found: redirects are not followed", Some("redirect to /ok"))),
        ),
    ];
    for (path, verdict, status, failure) in cases {
        let url = format!("{base}{path}");
        let out = sender.post(request(&url, b"{}")).await;
        assert_eq!((out.verdict, out.http_status, why(&out)), (verdict, status, failure), "{path}");
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
    assert_eq!((out.verdict, out.http_status, out.failure), (Verdict::Delivered, Some(200), None));
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
    // The detail quotes the capped reply: the read stopped at the cap, not at the deadline (which
    // would say "timed out"). The public text is the status alone.
    let failure = out.failure.expect("reason");
    assert_eq!((failure.reason, failure.public.as_str()), (Reason::HttpStatus, "HTTP 502 Bad Gateway"));
    let detail = failure.detail.expect("detail");
    assert!(detail.starts_with("xxxx") && detail.chars().count() <= 200, "{detail}");
}

#[tokio::test]
async fn a_receiver_that_never_answers_times_out_as_retry() {
    let base = receiver().await;
    let url = format!("{base}/hang");
    let out = Sender::with_timeout(Duration::from_millis(300)).post(request(&url, b"{}")).await;
    assert_eq!(out.verdict, Verdict::Retry { after: None });
    assert_eq!(out.http_status, None);
    assert_eq!(why(&out), Some((Reason::Timeout, "timed out after 300 ms", None)));
}

#[tokio::test]
async fn a_closed_port_is_connection_refused_and_retried() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port();
    let url = format!("http://127.0.0.1:{port}/hook");
    let out = Sender::new().post(request(&url, b"{}")).await;
    assert_eq!(out.verdict, Verdict::Retry { after: None });
    assert_eq!(out.http_status, None);
    let (reason, public, _) = why(&out).expect("a failure");
    assert_eq!((reason, public), (Reason::ConnectionRefused, "connection refused"));
}

#[tokio::test]
async fn an_unusable_url_fails_without_a_request() {
    let sender = Sender::new();
    for url in ["not a url", "ftp://example.org/hook", "file:///etc/passwd", "/relative/hook"] {
        let out = sender.post(request(url, b"{}")).await;
        assert_eq!((out.verdict, out.http_status), (Verdict::Failed, None), "{url}");
        let failure = out.failure.expect("a failure");
        assert_eq!(failure.reason, Reason::InvalidUrl, "{url}");
        assert!(failure.public.starts_with("invalid URL"), "{url}: {failure:?}");
    }
}

#[tokio::test]
async fn a_target_the_policy_refuses_is_never_connected() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.set_nonblocking(true).expect("nonblocking");
    let port = listener.local_addr().expect("addr").port();
    let sender = Sender::new();
    let cases = [
        (format!("http://127.0.0.1:{port}/hook"), TargetPolicy::Lan),
        (format!("http://localhost:{port}/hook"), TargetPolicy::Lan),
        (format!("http://[::ffff:127.0.0.1]:{port}/hook"), TargetPolicy::Public),
        ("http://169.254.169.254/latest/meta-data/".to_owned(), TargetPolicy::Loopback),
        ("http://[::ffff:a9fe:a9fe]/latest/meta-data/".to_owned(), TargetPolicy::Loopback),
    ];
    for (url, policy) in cases {
        let out = sender.post(Request { policy, ..request(&url, b"{}") }).await;
        assert_eq!((out.verdict, out.http_status), (Verdict::Failed, None), "{url}");
        assert_eq!(out.failure.map(|f| f.reason), Some(Reason::TargetNotAllowed), "{url}");
    }
    let accepted = listener.accept().map(|_| ()).map_err(|e| e.kind());
    assert_eq!(accepted, Err(io::ErrorKind::WouldBlock), "no connection was made");
    // A name that resolves to the hub itself is reached under the policy that allows it.
    let base = receiver().await.replace("127.0.0.1", "localhost");
    let url = format!("{base}/ok");
    let out = sender.post(Request { policy: TargetPolicy::Loopback, ..request(&url, b"{}") }).await;
    assert_eq!((out.verdict, out.http_status), (Verdict::Delivered, Some(200)), "{out:?}");
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
