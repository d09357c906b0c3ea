//! The hub's HTTP listener as axum serves it: every accepted connection gets TCP_NODELAY.
//!
//! With Nagle's algorithm a small write that follows another one still unacknowledged waits for
//! the client's delayed ACK (40 ms on Linux). WebSocket frames are exactly such writes: two
//! detections of one chunk, or a detection right after a heartbeat frame, and the second could
//! reach the browser 40 ms late (issue 39, detection to WebSocket).

use axum::serve::{ListenerExt, TapIo};
use tokio::net::{TcpListener, TcpStream};

/// `listener`, setting TCP_NODELAY on each connection it accepts.
pub fn without_nagle(listener: TcpListener) -> TapIo<TcpListener, fn(&mut TcpStream)> {
    listener.tap_io(set_nodelay as fn(&mut TcpStream))
}

fn set_nodelay(tcp: &mut TcpStream) {
    if let Err(e) = tcp.set_nodelay(true) {
        tracing::debug!(error = %e, "could not set TCP_NODELAY on an HTTP connection");
    }
}

#[cfg(test)]
mod tests {
    use axum::serve::Listener;

    use super::*;

    #[tokio::test]
    async fn accepted_connections_send_small_writes_at_once() {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let mut listener = without_nagle(listener);
        let _client = TcpStream::connect(addr).await.expect("connect");
        let (accepted, _) = listener.accept().await;
        assert!(accepted.nodelay().expect("nodelay"), "the hub's side of a connection has Nagle off");
    }
}
