//! A browser's `User-Agent` in words for a person ("Chrome on Android", "Firefox on Windows"):
//! how remembered devices are told apart on My account. A best guess from well-known tokens,
//! never a full parser; anything unknown reads "Unknown browser".

/// "Browser on System", "Browser", "on System" or "Unknown browser" for a user agent.
pub fn describe(ua: Option<&str>) -> String {
    let ua = ua.unwrap_or_default();
    match (browser(ua), system(ua)) {
        (Some(b), Some(s)) => format!("{b} on {s}"),
        (Some(b), None) => b.to_owned(),
        (None, Some(s)) => format!("A browser on {s}"),
        (None, None) => "Unknown browser".to_owned(),
    }
}

/// The browser, by the tokens that tell them apart (order matters: Edge and Opera also say
/// "Chrome", Chrome also says "Safari").
fn browser(ua: &str) -> Option<&'static str> {
    let has = |t: &str| ua.contains(t);
    Some(if has("Edg/") || has("EdgA/") || has("EdgiOS/") {
        "Edge"
    } else if has("OPR/") || has("Opera") {
        "Opera"
    } else if has("SamsungBrowser/") {
        "Samsung Internet"
    } else if has("Firefox/") || has("FxiOS/") {
        "Firefox"
    } else if has("HeadlessChrome/") {
        "Chrome (headless)"
    } else if has("Chrome/") || has("CriOS/") || has("Chromium/") {
        "Chrome"
    } else if has("Safari/") {
        "Safari"
    } else if has("curl/") {
        "curl"
    } else {
        return None;
    })
}

/// The operating system (Android before Linux: Android's agents say both).
fn system(ua: &str) -> Option<&'static str> {
    let has = |t: &str| ua.contains(t);
    Some(if has("Android") {
        "Android"
    } else if has("iPhone") || has("iPad") || has("iPod") {
        "iOS"
    } else if has("Windows") {
        "Windows"
    } else if has("Mac OS X") || has("Macintosh") {
        "macOS"
    } else if has("CrOS") {
        "ChromeOS"
    } else if has("Linux") || has("X11") {
        "Linux"
    } else {
        return None;
    })
}

#[cfg(test)]
mod tests {
    use super::describe;

    #[test]
    fn common_browsers_read_as_words() {
        let cases = [
            (
                "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Mobile Safari/537.36",
                "Chrome on Android",
            ),
            (
                "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1",
                "Safari on iOS",
            ),
            ("Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:133.0) Gecko/20100101 Firefox/133.0", "Firefox on Windows"),
            (
                "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 Edg/131.0.0.0",
                "Edge on Windows",
            ),
            (
                "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/131.0.0.0 Safari/537.36",
                "Chrome (headless) on Linux",
            ),
            ("curl/8.5.0", "curl"),
            ("", "Unknown browser"),
        ];
        for (ua, want) in cases {
            assert_eq!(describe(Some(ua)), want, "{ua}");
        }
        assert_eq!(describe(None), "Unknown browser");
    }
}
