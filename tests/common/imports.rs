//! Uploading an old station to a test hub as the dashboard does (`POST /api/imports`,
//! multipart) and waiting for its job, for the import tests.

use std::{path::Path, time::Duration};

use reqwest::StatusCode;
use serde_json::Value;

use super::{TestHub, api::Api};

/// `POST /api/imports` with `file` and the text fields. The team's import slot is freed just
/// after the previous job ends, so a 409 is tried again.
pub async fn upload(hub: &TestHub, api: &Api, file: &Path, fields: &[(&str, &str)]) -> (StatusCode, Value) {
    let bytes = std::fs::read(file).expect("file");
    let name = file.file_name().expect("name").to_string_lossy().into_owned();
    for _ in 0..200 {
        let mut form = reqwest::multipart::Form::new();
        for (k, v) in fields {
            form = form.text(k.to_string(), v.to_string());
        }
        form = form.part("file", reqwest::multipart::Part::bytes(bytes.clone()).file_name(name.clone()));
        let resp = api.client.post(hub.api("/imports")).multipart(form).send().await.expect("upload");
        let status = resp.status();
        if status != StatusCode::CONFLICT {
            return (status, resp.json().await.unwrap_or(Value::Null));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the team's import slot stayed busy");
}

/// Polls job `id` until it is done or failed (at most two minutes).
pub async fn finished(api: &Api, id: &str) -> Value {
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    loop {
        let (status, job) = api.get(&format!("/imports/{id}")).await;
        assert_eq!(status, StatusCode::OK, "{job}");
        if job["status"] == "done" || job["status"] == "failed" {
            return job;
        }
        assert!(std::time::Instant::now() < deadline, "the job never ended: {job}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
