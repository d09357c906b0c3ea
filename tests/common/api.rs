//! A small JSON client over reqwest, with its own cookie jar (a browser) or a bearer credential.

use reqwest::{Method, StatusCode};
use serde_json::Value;

#[derive(Clone)]
pub struct Api {
    pub client: reqwest::Client,
    pub base: String,
    pub bearer: Option<String>,
    pub headers: Vec<(String, String)>,
}

impl Api {
    pub fn new(base: &str) -> Self {
        birdhub::install_tls_provider();
        let client = reqwest::Client::builder().cookie_store(true).build().expect("client");
        Self { client, base: base.to_owned(), bearer: None, headers: Vec::new() }
    }

    /// The same client sending `Authorization: Bearer <token>` (no cookies).
    pub fn with_bearer(base: &str, token: &str) -> Self {
        birdhub::install_tls_provider();
        let client = reqwest::Client::builder().build().expect("client");
        Self { client, base: base.to_owned(), bearer: Some(token.to_owned()), headers: Vec::new() }
    }

    pub fn header(mut self, k: &str, v: &str) -> Self {
        self.headers.push((k.to_owned(), v.to_owned()));
        self
    }

    pub async fn send(&self, method: Method, path: &str, body: Option<Value>) -> (StatusCode, Value) {
        let mut req = self.client.request(method, format!("{}/api{path}", self.base));
        if let Some(b) = &self.bearer {
            req = req.bearer_auth(b);
        }
        for (k, v) in &self.headers {
            req = req.header(k, v);
        }
        if let Some(b) = body {
            req = req.json(&b);
        }
        let resp = req.send().await.expect("request");
        let status = resp.status();
        let text = resp.text().await.expect("body");
        let value =
            if text.is_empty() { Value::Null } else { serde_json::from_str(&text).unwrap_or(Value::String(text)) };
        (status, value)
    }

    pub async fn get(&self, path: &str) -> (StatusCode, Value) {
        self.send(Method::GET, path, None).await
    }
    pub async fn post(&self, path: &str, body: Value) -> (StatusCode, Value) {
        self.send(Method::POST, path, Some(body)).await
    }
    pub async fn post_empty(&self, path: &str) -> (StatusCode, Value) {
        self.send(Method::POST, path, None).await
    }
    pub async fn put(&self, path: &str, body: Value) -> (StatusCode, Value) {
        self.send(Method::PUT, path, Some(body)).await
    }
    pub async fn delete(&self, path: &str) -> (StatusCode, Value) {
        self.send(Method::DELETE, path, None).await
    }
    pub async fn delete_with(&self, path: &str, body: Value) -> (StatusCode, Value) {
        self.send(Method::DELETE, path, Some(body)).await
    }
    /// POSTs `body`, asserts 201 and returns what was created.
    pub async fn create(&self, path: &str, body: Value) -> Value {
        let (status, created) = self.post(path, body.clone()).await;
        assert_eq!(status, 201, "{body} -> {created}");
        created
    }
}

/// Asserts a status and, for errors, the `{code, message}` body with `code`.
#[track_caller]
pub fn assert_error(got: &(StatusCode, Value), status: u16, code: &str) {
    assert_eq!(got.0.as_u16(), status, "body: {}", got.1);
    assert_eq!(got.1["code"], code, "body: {}", got.1);
    assert!(got.1["message"].as_str().is_some_and(|m| !m.is_empty()), "a message: {}", got.1);
}
