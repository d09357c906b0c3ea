//! A tiny SMTP sink for tests: accepts every message on 127.0.0.1 and keeps it.

use std::sync::{Arc, Mutex};

use tokio::{
    io::{AsyncBufReadExt, AsyncWriteExt, BufReader},
    net::TcpListener,
    sync::Notify,
};

#[derive(Clone, Default)]
pub struct Sink {
    pub port: u16,
    messages: Arc<Mutex<Vec<String>>>,
    arrived: Arc<Notify>,
}

impl Sink {
    pub async fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind smtp sink");
        let sink = Sink { port: listener.local_addr().expect("addr").port(), ..Default::default() };
        let s = sink.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let s = s.clone();
                tokio::spawn(async move {
                    let _ = s.session(stream).await;
                });
            }
        });
        sink
    }

    async fn session(&self, stream: tokio::net::TcpStream) -> std::io::Result<()> {
        let (read, mut write) = stream.into_split();
        let mut lines = BufReader::new(read).lines();
        write.write_all(b"220 sink ESMTP ready\r\n").await?;
        while let Some(line) = lines.next_line().await? {
            let upper = line.to_ascii_uppercase();
            if upper.starts_with("EHLO") {
                write.write_all(b"250-sink\r\n250 8BITMIME\r\n").await?;
            } else if upper.starts_with("DATA") {
                write.write_all(b"354 go ahead\r\n").await?;
                let mut message = String::new();
                while let Some(l) = lines.next_line().await? {
                    if l == "." {
                        break;
                    }
                    message.push_str(&l);
                    message.push('\n');
                }
                self.messages.lock().expect("lock").push(message);
                self.arrived.notify_waiters();
                write.write_all(b"250 queued\r\n").await?;
            } else if upper.starts_with("QUIT") {
                write.write_all(b"221 bye\r\n").await?;
                return Ok(());
            } else {
                write.write_all(b"250 OK\r\n").await?;
            }
        }
        Ok(())
    }

    pub fn messages(&self) -> Vec<String> {
        self.messages.lock().expect("lock").clone()
    }

    /// Waits (up to 10 s) until at least `n` messages arrived.
    pub async fn wait_for(&self, n: usize) -> Vec<String> {
        for _ in 0..200 {
            let got = self.messages();
            if got.len() >= n {
                return got;
            }
            let _ = tokio::time::timeout(std::time::Duration::from_millis(50), self.arrived.notified()).await;
        }
        panic!("expected {n} mails, got {}", self.messages().len());
    }
}

/// The message body with quoted-printable soft breaks and `=3D` undone.
pub fn decoded(message: &str) -> String {
    message.replace("=\n", "").replace("=3D", "=")
}
