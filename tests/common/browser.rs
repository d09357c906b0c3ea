//! A real browser for dashboard tests: Debian's headless `chromium`, driven through
//! `chromedriver` with fantoccini (`.ci/run` installs both). Pages record their script errors and
//! failed loads and Content-Security-Policy violations in `window.__bhErrors` (`assets/errors.js`);
//! tests fail on any of them.
//! Screenshots go to `<target dir>/dashboard-screenshots/` at 390 px and 1280 px.

use std::{
    net::TcpStream,
    path::PathBuf,
    process::{Child, Command, Stdio},
    time::Duration,
};

use fantoccini::{Client, ClientBuilder, Locator, elements::Element};
use serde_json::{Value, json};

use super::process::free_port;

pub const PHONE: u32 = 390;
pub const DESKTOP: u32 = 1280;

/// A chromedriver process and one browser session on it.
pub struct Browser {
    pub client: Client,
    /// `http://localhost:PORT` of the hub (localhost, so passkey pages are a secure context).
    pub base: String,
    /// The test's name, the prefix of its screenshots.
    pub test: String,
    driver: Child,
    _profile: tempfile::TempDir,
}

/// Where screenshots go: beside the test binaries, in the target dir.
pub fn screenshot_dir() -> PathBuf {
    let exe = PathBuf::from(env!("CARGO_BIN_EXE_birdhub"));
    let target = exe.parent().and_then(|p| p.parent()).map(PathBuf::from).unwrap_or_else(|| PathBuf::from("target"));
    target.join("dashboard-screenshots")
}

impl Browser {
    /// Starts chromedriver and a headless chromium for the hub at `http_port`.
    pub async fn start(http_port: u16, test: &str) -> Self {
        Self::start_with(http_port, test, None).await
    }

    /// [`Browser::start`], saving downloads into `dir` without asking.
    pub async fn start_downloading_to(http_port: u16, test: &str, dir: &std::path::Path) -> Self {
        let prefs = json!({
            "download.default_directory": dir.display().to_string(),
            "download.prompt_for_download": false,
            "download.directory_upgrade": true,
        });
        Self::start_with(http_port, test, Some(prefs)).await
    }

    async fn start_with(http_port: u16, test: &str, prefs: Option<Value>) -> Self {
        let port = free_port();
        let driver = Command::new("chromedriver")
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver runs (apt-get install chromium chromium-driver; .ci/run installs them)");
        for _ in 0..100 {
            if TcpStream::connect(("127.0.0.1", port)).is_ok() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let profile = tempfile::tempdir().expect("profile dir");
        let args = [
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--disable-background-networking",
            "--disable-component-update",
            "--no-first-run",
            "--disable-sync",
            "--autoplay-policy=no-user-gesture-required",
            "--hide-scrollbars",
            &format!("--window-size={DESKTOP},900"),
            &format!("--user-data-dir={}", profile.path().display()),
        ];
        let mut caps = serde_json::Map::new();
        caps.insert("browserName".into(), json!("chrome"));
        let mut options = json!({ "binary": "/usr/bin/chromium", "args": args });
        if let Some(prefs) = prefs {
            options["prefs"] = prefs;
        }
        caps.insert("goog:chromeOptions".into(), options);
        // The browser's console, read by `console_errors`: what no page script can catch
        // (an invalid `pattern`, a refused resource) shows only there.
        caps.insert("goog:loggingPrefs".into(), json!({ "browser": "ALL" }));
        let connector = hyper_util::client::legacy::connect::HttpConnector::new();
        let client = ClientBuilder::new(connector)
            .capabilities(caps)
            .connect(&format!("http://127.0.0.1:{port}"))
            .await
            .expect("a chromium session");
        Self { client, base: format!("http://localhost:{http_port}"), test: test.to_owned(), driver, _profile: profile }
    }

    pub async fn goto(&self, path: &str) {
        self.client.goto(&format!("{}{path}", self.base)).await.expect("navigate");
    }

    /// The path (and query) the browser is on.
    pub async fn path(&self) -> String {
        let url = self.client.current_url().await.expect("url");
        let q = url.query().map(|q| format!("?{q}")).unwrap_or_default();
        format!("{}{q}", url.path())
    }

    pub async fn find(&self, css: &str) -> Element {
        self.client
            .wait()
            .at_most(Duration::from_secs(10))
            .for_element(Locator::Css(css))
            .await
            .unwrap_or_else(|e| panic!("no element {css} on {}: {e}", self.base))
    }

    /// Whether `css` matches now (no waiting).
    pub async fn has(&self, css: &str) -> bool {
        self.client.find(Locator::Css(css)).await.is_ok()
    }

    pub async fn text(&self, css: &str) -> String {
        self.find(css).await.text().await.expect("text")
    }

    pub async fn fill(&self, css: &str, value: &str) {
        let el = self.find(css).await;
        el.clear().await.expect("clear");
        el.send_keys(value).await.expect("type");
    }

    pub async fn click(&self, css: &str) {
        self.find(css).await.click().await.unwrap_or_else(|e| panic!("click {css}: {e}"));
    }

    pub async fn js(&self, script: &str) -> Value {
        self.client.execute(script, vec![]).await.unwrap_or_else(|e| panic!("script failed: {e}\n{script}"))
    }

    /// Polls `script` (which returns a boolean) until it is true, for up to `secs`.
    pub async fn wait_until(&self, script: &str, secs: u64) -> bool {
        for _ in 0..secs * 10 {
            if self.js(script).await.as_bool() == Some(true) {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        false
    }

    /// The errors the current page recorded.
    pub async fn js_errors(&self) -> Vec<String> {
        let v = self.js("return window.__bhErrors || ['the page has no error recorder (not a birdhub page?)'];").await;
        v.as_array().map(|a| a.iter().map(|e| e.as_str().unwrap_or_default().to_owned()).collect()).unwrap_or_default()
    }

    pub async fn assert_no_js_errors(&self) {
        let errors = self.js_errors().await;
        let path = self.path().await;
        assert!(errors.is_empty(), "JavaScript errors on {path}: {errors:?}");
    }

    /// The browser console's errors (level SEVERE: script errors, uncaught exceptions, an invalid
    /// `pattern`, failed loads) since the last call, as "source: message". Reading empties the log.
    pub async fn console_errors(&self) -> Vec<String> {
        let v = self.client.issue_cmd(ConsoleLog).await.unwrap_or_else(|e| panic!("the browser's console: {e}"));
        v.as_array()
            .into_iter()
            .flatten()
            .filter(|e| e["level"] == "SEVERE")
            .map(|e| format!("{}: {}", e["source"].as_str().unwrap_or("?"), e["message"].as_str().unwrap_or_default()))
            .collect()
    }

    /// Fails on any console error since the last read (see [`Browser::console_errors`]).
    pub async fn assert_no_console_errors(&self) {
        let errors = self.console_errors().await;
        let path = self.path().await;
        assert!(errors.is_empty(), "console errors (read on {path}): {errors:#?}");
    }

    /// Screenshots of the whole current page at phone and desktop widths, named
    /// `<test>-<name>-<width>.png`; checks the page for script errors too.
    pub async fn shot(&self, name: &str) {
        self.shot_at(name, &[PHONE, DESKTOP]).await;
        self.assert_no_js_errors().await;
    }

    /// Screenshots like [`Browser::shot`] at the given widths, without the check for errors.
    pub async fn shot_at(&self, name: &str, widths: &[u32]) {
        let dir = screenshot_dir();
        std::fs::create_dir_all(&dir).expect("screenshot dir");
        for &width in widths {
            self.client.set_window_size(width, 900).await.expect("resize");
            tokio::time::sleep(Duration::from_millis(300)).await;
            // The window's frame takes some height even headless: size the viewport, not the window.
            let size = self
                .js("return [Math.min(4000, document.documentElement.scrollHeight), Math.max(0, window.outerHeight - window.innerHeight)];")
                .await;
            let height = size[0].as_u64().unwrap_or(900).max(600) + size[1].as_u64().unwrap_or(0);
            self.client.set_window_size(width, height as u32).await.expect("resize");
            tokio::time::sleep(Duration::from_millis(300)).await;
            let png = self.client.screenshot().await.expect("screenshot");
            std::fs::write(dir.join(format!("{}-{name}-{width}.png", self.test)), png).expect("write screenshot");
        }
        self.client.set_window_size(DESKTOP, 900).await.expect("resize");
    }

    /// Signs in through the form; `code` answers the second step when one is asked.
    pub async fn sign_in(&self, email: &str, password: &str, code: Option<&str>) {
        self.goto("/signin").await;
        self.fill("input[name=email]", email).await;
        self.fill("input[name=password]", password).await;
        self.click("form[action='/signin'] button[type=submit]").await;
        if let Some(code) = code {
            self.fill("input[name=code]", code).await;
            self.click("form[action='/signin/mfa'] button[type=submit]").await;
        }
        self.find("header.topbar nav.tabs").await;
    }

    /// Ends the session and the driver.
    pub async fn close(mut self) {
        let _ = self.client.clone().close().await;
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

/// chromedriver's log endpoint (`POST /session/{id}/se/log`), which the WebDriver standard lacks.
#[derive(Debug)]
struct ConsoleLog;

impl fantoccini::wd::WebDriverCompatibleCommand for ConsoleLog {
    fn endpoint(&self, base: &url::Url, session: Option<&str>) -> Result<url::Url, url::ParseError> {
        base.join(&format!("session/{}/se/log", session.unwrap_or_default()))
    }

    fn method_and_body(&self, _url: &url::Url) -> (axum::http::Method, Option<String>) {
        (axum::http::Method::POST, Some(json!({ "type": "browser" }).to_string()))
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.driver.kill();
    }
}
