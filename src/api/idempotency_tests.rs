//! The cache's bounds with test-sized limits: a running first request is never dropped, one
//! caller's cap drops only that caller's oldest answers, and only creating answers are kept.

use std::sync::atomic::{AtomicUsize, Ordering};

use super::*;

fn small() -> Limits {
    Limits {
        total_bytes: 8 * 1024,
        caller_bytes: 4 * 1024,
        caller_entries: 3,
        max_body: 2048,
        running: 8,
        keep: Duration::from_secs(60),
        wait: Duration::from_secs(10),
    }
}

fn answer(status: StatusCode, body: String) -> Response {
    let mut resp = Response::new(Body::from(body));
    *resp.status_mut() = status;
    resp.headers_mut().insert(axum::http::header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    resp
}

/// Sends `id` as `caller`; the handler counts its runs and answers `status` with a numbered body.
async fn send(keys: &Keys, caller: &str, id: &str, runs: &AtomicUsize, status: StatusCode) -> (Response, usize) {
    let resp = keys
        .once(caller, id.to_owned(), || async {
            let n = runs.fetch_add(1, Ordering::SeqCst) + 1;
            answer(status, format!("{{\"run\":{n},\"pad\":\"{}\"}}", "x".repeat(600)))
        })
        .await;
    let n = runs.load(Ordering::SeqCst);
    (resp, n)
}

fn replayed(resp: &Response) -> bool {
    resp.headers().contains_key("idempotent-replayed")
}

#[tokio::test]
async fn a_running_request_is_not_dropped_when_the_cache_fills() {
    let keys = Keys::new(small());
    let runs = Arc::new(AtomicUsize::new(0));
    let (release, released) = tokio::sync::oneshot::channel::<()>();
    let first = {
        let (keys, runs) = (keys.clone(), runs.clone());
        tokio::spawn(async move {
            keys.once("alice", "K".into(), || async move {
                runs.fetch_add(1, Ordering::SeqCst);
                released.await.ok();
                answer(StatusCode::CREATED, "{\"id\":1}".into())
            })
            .await
        })
    };
    while runs.load(Ordering::SeqCst) == 0 {
        tokio::task::yield_now().await;
    }
    // Many callers fill the weighed cache well past its total while K runs.
    let other = AtomicUsize::new(0);
    for i in 0..200 {
        send(&keys, &format!("caller {i}"), &format!("fill {i}"), &other, StatusCode::CREATED).await;
    }
    keys.0.done.run_pending_tasks().await;
    assert!(keys.0.done.weighted_size() <= small().total_bytes, "the cache stays within its bytes");

    let repeat = {
        let keys = keys.clone();
        let runs = runs.clone();
        tokio::spawn(async move {
            keys.once("alice", "K".into(), || async move {
                runs.fetch_add(1, Ordering::SeqCst);
                answer(StatusCode::CREATED, "{\"id\":2}".into())
            })
            .await
        })
    };
    tokio::time::sleep(Duration::from_millis(50)).await;
    release.send(()).ok();
    let (a, b) = (first.await.expect("first"), repeat.await.expect("repeat"));
    assert_eq!((a.status(), b.status()), (StatusCode::CREATED, StatusCode::CREATED));
    assert!(replayed(&b), "the repeat waited for the first and got its answer");
    let body = axum::body::to_bytes(b.into_body(), 1024).await.expect("body");
    assert_eq!(&body[..], b"{\"id\":1}");
    assert_eq!(runs.load(Ordering::SeqCst), 1, "the handler ran once");
}

#[tokio::test]
async fn one_caller_over_its_cap_loses_only_its_own_oldest_answers() {
    let keys = Keys::new(small());
    let runs = AtomicUsize::new(0);
    let (bob, _) = send(&keys, "bob", "b1", &runs, StatusCode::CREATED).await;
    assert!(!replayed(&bob));
    for i in 1..=5 {
        send(&keys, "alice", &format!("a{i}"), &runs, StatusCode::CREATED).await;
    }
    keys.0.done.run_pending_tasks().await;
    let held = lock(&keys.0.callers).get("alice").map(|h| (h.entries.len(), h.bytes)).unwrap_or_default();
    assert!(held.0 <= 3 && held.1 <= small().caller_bytes, "alice holds {held:?}");

    let before = runs.load(Ordering::SeqCst);
    let (oldest, after) = send(&keys, "alice", "a1", &runs, StatusCode::CREATED).await;
    assert!(!replayed(&oldest) && after == before + 1, "alice's oldest answer was dropped: it runs again");
    let (newest, after) = send(&keys, "alice", "a5", &runs, StatusCode::CREATED).await;
    assert!(replayed(&newest) && after == before + 1, "alice's newest answer is kept");
    let (theirs, after) = send(&keys, "bob", "b1", &runs, StatusCode::CREATED).await;
    assert!(replayed(&theirs) && after == before + 1, "bob's answer stays");
}

#[tokio::test]
async fn only_answers_of_creating_routes_are_kept() {
    let keys = Keys::new(small());
    let runs = AtomicUsize::new(0);
    for status in [StatusCode::OK, StatusCode::NO_CONTENT, StatusCode::UNPROCESSABLE_ENTITY] {
        send(&keys, "alice", "k", &runs, status).await;
        let (again, _) = send(&keys, "alice", "k", &runs, status).await;
        assert!(!replayed(&again), "a {status} answer is not kept");
    }
    assert_eq!(runs.load(Ordering::SeqCst), 6);
    send(&keys, "alice", "job", &runs, StatusCode::ACCEPTED).await;
    let (again, n) = send(&keys, "alice", "job", &runs, StatusCode::ACCEPTED).await;
    assert!(replayed(&again) && n == 7, "a 202 is kept");
    assert!(lock(&keys.0.running).is_empty(), "no claim outlives its request");
}
