//! The page shell: head, top bar (team switcher, tabs, account menu), the phone's bottom tab bar,
//! and small shared pieces (confidence bar, badges, empty states, relative times).

use maud::{DOCTYPE, Markup, PreEscaped, html};

use super::{assets, ctx::Ctx, icons};

/// The main tabs, in order; all of them are the phone's bottom bar too.
pub const TABS: [(&str, &str, &str); 6] = [
    ("live", "Live", "/"),
    ("detections", "Detections", "/detections"),
    ("species", "Species", "/species"),
    ("stats", "Stats", "/stats"),
    ("satellites", "Satellites", "/satellites"),
    ("alerts", "Alerts", "/alerts"),
];

/// htmx's settings (read from the `htmx-config` meta): nothing that needs `'unsafe-eval'` or an
/// inline `<style>`. Script tags in swapped HTML stay allowed: htmx would otherwise drop the JSON
/// islands of the fragments (stats charts), and the CSP refuses any inline script anyway.
const HTMX_CONFIG: &str = r#"{"includeIndicatorStyles":false,"allowEval":false}"#;

fn head(title: &str, csrf: &str, team: Option<&str>, time_format: &str) -> Markup {
    html! {
        head {
            meta charset="utf-8";
            meta name="viewport" content="width=device-width, initial-scale=1";
            meta name="color-scheme" content="light dark";
            meta name="csrf-token" content=(csrf);
            @if let Some(t) = team { meta name="bh-team" content=(t); }
            meta name="bh-time-format" content=(time_format);
            title { (title) " · birdhub" }
            // No inline scripts anywhere (the CSP allows only the hub's files). htmx is told not to
            // add its `<style>` or `eval`, neither of which pages use.
            meta name="htmx-config" content=(HTMX_CONFIG);
            // First and not deferred: every script error, failed load and CSP violation is kept,
            // so a person (or a browser test) can see what went wrong on a page.
            script src=(assets::url("errors.js")) {}
            link rel="icon" href=(assets::url("favicon.svg"));
            link rel="stylesheet" href=(assets::url("app.css"));
            script src=(assets::url("vendor/htmx.min.js")) defer {}
            script src=(assets::url("app.js")) defer {}
        }
    }
}

/// A signed-in page: `tab` is the highlighted tab's key, `scripts` the page's own scripts and
/// stylesheets (`live.js`, `stats.css`).
pub fn page(ctx: &Ctx, title: &str, tab: &str, scripts: &[&str], body: Markup) -> Markup {
    let team = ctx.team.as_ref();
    html! {
        (DOCTYPE)
        html lang=(ctx.language.split('_').next().unwrap_or("en")) {
            (head(title, &ctx.csrf, team.map(|t| t.id.as_str()), &ctx.time_format))
            body hx-headers=(format!(r#"{{"X-CSRF-Token":"{}"}}"#, ctx.csrf)) {
                a.skip href="#main" { "Skip to content" }
                header.topbar {
                    a.brand href="/" aria-label="birdhub home" { (icons::bird()) span { "birdhub" } }
                    @if ctx.teams.len() > 1 {
                        form.team-switch method="post" action="/team" {
                            input type="hidden" name="_csrf" value=(ctx.csrf);
                            input type="hidden" name="next" value=(ctx.uri.path());
                            label.sr for="team-select" { "Team" }
                            select #team-select name="team" data-autosubmit {
                                @for t in &ctx.teams {
                                    option value=(t.id) selected[team.is_some_and(|c| c.id == t.id)] { (t.name) }
                                }
                            }
                            noscript { button type="submit" { "Switch" } }
                        }
                    } @else if let Some(t) = team {
                        span.team-name { (t.name) }
                    }
                    nav.tabs aria-label="Main" {
                        @for (key, label, href) in TABS {
                            a href=(href) aria-current=[(key == tab).then_some("page")] { (icons::tab(key)) span { (label) } }
                        }
                    }
                    details.account {
                        summary aria-label="Account menu" { (icons::user()) span.account-name { (ctx.user.name) } }
                        div.menu {
                            a href="/account" { "My account" }
                            @if ctx.is_admin() { a href="/team" { "Team settings" } }
                            @if ctx.team.is_some() { a href="/team/detection" { "Detection settings" } }
                            a href="/alerts" { "Alerts" }
                            a href="/sessions" { "Recording sessions" }
                            a href="/quality" { "Detection quality" }
                            a href="/exports" { "Exports" }
                            @if ctx.user.is_platform_admin { a href="/admin" { "Platform admin" } }
                            form method="post" action="/signout" {
                                input type="hidden" name="_csrf" value=(ctx.csrf);
                                button.linkish type="submit" { "Sign out" }
                            }
                        }
                    }
                }
                main #main { (body) }
                nav.bottombar aria-label="Main (phone)" {
                    @for (key, label, href) in TABS {
                        a href=(href) aria-current=[(key == tab).then_some("page")] { (icons::tab(key)) span { (label) } }
                    }
                }
                (page_assets(scripts))
            }
        }
    }
}

/// A page's own scripts and stylesheets (`.css` names become links).
fn page_assets(names: &[&str]) -> Markup {
    html! {
        @for s in names {
            @if s.ends_with(".css") { link rel="stylesheet" href=(assets::url(s)); }
            @else { script src=(assets::url(s)) defer {} }
        }
    }
}

/// A page without the signed-in shell (sign-in, first run, errors, the public page).
pub fn bare(title: &str, body: Markup) -> Markup {
    bare_with(title, "", &[], body)
}

/// [`bare`] with a CSRF token for its forms and page scripts.
pub fn bare_with(title: &str, csrf: &str, scripts: &[&str], body: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            (head(title, csrf, None, ""))
            body.bare {
                header.topbar { a.brand href="/" aria-label="birdhub home" { (icons::bird()) span { "birdhub" } } }
                (body)
                (page_assets(scripts))
            }
        }
    }
}

/// A page of a team's public site: the team's name leads to `home`; no tabs, no account.
pub fn public(title: &str, team: &str, home: &str, scripts: &[&str], body: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            (head(title, "", None, ""))
            body.public {
                header.topbar {
                    a.brand href=(home) aria-label=(format!("{team}: today's birds")) { (icons::bird()) span { (team) } }
                    span.public-tag { "Public page" }
                }
                main #main { (body) }
                footer.public-foot {
                    p {
                        "Shared from a birdhub station. "
                        "Species are the classifier's suggestions (BirdNET, CC BY-NC-SA 4.0), not all checked by a person."
                    }
                }
                (page_assets(scripts))
            }
        }
    }
}

/// Confidence as a bar plus a number (`0.87` → 87 %).
pub fn confidence(c: f64, calibrated: bool) -> Markup {
    let pct = (c * 100.0).round().clamp(0.0, 100.0);
    html! {
        span.conf title=(if calibrated { "calibrated confidence" } else { "model confidence" }) {
            span.bar { span style=(format!("width:{pct}%")) {} }
            span.num { (format!("{pct:.0}")) "%" @if calibrated { abbr title="calibrated" { "c" } } }
        }
    }
}

/// A count as people read it: thousands separated by commas (`2,000,000`).
pub fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// An empty state that says why and what to do.
pub fn empty(title: &str, hint: Markup) -> Markup {
    html! { div.empty { p.empty-title { (title) } div.empty-hint { (hint) } } }
}

/// "3 min ago" for an RFC 3339 time, with the exact time as a tooltip; the browser keeps it fresh.
pub fn ago(rfc3339: &str) -> Markup {
    let plain = rfc3339.get(..16).map(|s| format!("{} UTC", s.replace('T', " "))).unwrap_or_else(|| rfc3339.to_owned());
    html! { time.ago datetime=(rfc3339) { (plain) } }
}

/// An exact time (RFC 3339), written by the browser in the viewer's zone and time format
/// (`assets/app.js`); without scripts it reads `2026-11-27 04:14 UTC`. Use it for every absolute
/// time a person sees, never the raw ISO text.
pub fn at(rfc3339: &str) -> Markup {
    let plain = rfc3339.get(..16).map(|s| format!("{} UTC", s.replace('T', " "))).unwrap_or_else(|| rfc3339.to_owned());
    html! { time.at datetime=(rfc3339) { (plain) } }
}

/// [`at`] in a station's zone (an IANA name, issue 37): the browser writes it in that zone with
/// the zone's short name ("Jan 15, 7:02 AM EST") when the viewer is in another zone, as [`at`]
/// otherwise. `None` (a zone not decided yet) is [`at`].
pub fn at_in(rfc3339: &str, zone: Option<&str>) -> Markup {
    let plain = rfc3339.get(..16).map(|s| format!("{} UTC", s.replace('T', " "))).unwrap_or_else(|| rfc3339.to_owned());
    html! { time.at datetime=(rfc3339) data-zone=[zone] { (plain) } }
}

/// [`ago`] in a station's zone: its tooltip (and the exact time it turns into after a day) is
/// written like [`at_in`].
pub fn ago_in(rfc3339: &str, zone: Option<&str>) -> Markup {
    let plain = rfc3339.get(..16).map(|s| format!("{} UTC", s.replace('T', " "))).unwrap_or_else(|| rfc3339.to_owned());
    html! { time.ago datetime=(rfc3339) data-zone=[zone] { (plain) } }
}

/// A day (`2026-11-27`), written by the browser as people write dates ("27 Nov 2026").
pub fn day(date: &str) -> Markup {
    html! { time.day datetime=(date) { (date) } }
}

/// A language as people read it in a list: its own name, and the English one when that differs
/// ("Deutsch (German)", "English", never "English (English)"); the code when it has no names.
pub fn language_name(code: &str, english: &str, native: &str) -> String {
    let native = Some(native).filter(|s| !s.is_empty());
    let english = Some(english).filter(|s| !s.is_empty());
    match (native, english) {
        (Some(n), Some(e)) if !n.eq_ignore_ascii_case(e) => format!("{n} ({e})"),
        (Some(n), _) => n.to_owned(),
        (None, Some(e)) => e.to_owned(),
        (None, None) => code.to_owned(),
    }
}

/// A species' names: common (user's language) and scientific in italics.
pub fn names(common: &str, scientific: &str) -> Markup {
    html! { span.names { strong.common { (common) } " " em.sci { (scientific) } } }
}

/// A JSON data island (`<script type="application/json">`) that page scripts read with
/// `JSON.parse(el.textContent)`; browsers never run it, so the page's CSP allows it.
pub fn json_script(id: &str, value: &serde_json::Value) -> Markup {
    html! { script type="application/json" id=(id) { (PreEscaped(script_safe_json(value))) } }
}

/// `value` as JSON text that cannot change how the HTML around it is parsed: `<`, `>` and `&`
/// (so neither `</script>` nor `<!--<script` can end or extend the element) and the two line
/// separators older JavaScript parsers choke on become `\uXXXX` escapes. Those characters only
/// ever occur inside JSON strings, where the escape means the same character.
pub fn script_safe_json(value: &serde_json::Value) -> String {
    let text = value.to_string();
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::{Value, json};

    use super::*;

    /// Any JSON value, its strings drawn to be heavy in the characters that matter here.
    fn any_json() -> impl Strategy<Value = Value> {
        let text = "[<>&/!\\-a-z\u{2028}\u{2029}\"\\\\ ]{0,12}|\\PC{0,8}";
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            text.prop_map(Value::from),
        ];
        leaf.prop_recursive(4, 48, 6, move |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                prop::collection::btree_map(text, inner, 0..6).prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn script_safe_json_has_no_markup_characters_and_round_trips(v in any_json()) {
            let out = script_safe_json(&v);
            for c in ['<', '>', '&', '\u{2028}', '\u{2029}'] {
                prop_assert!(!out.contains(c), "{c:?} in {out}");
            }
            let back: Value = serde_json::from_str(&out).expect("still JSON");
            prop_assert_eq!(back, v);
        }
    }

    #[test]
    fn languages_are_named_once_when_both_names_agree() {
        let (en, de) = (language_name("en", "English", "English"), language_name("de", "German", "Deutsch"));
        assert_eq!((en, de), ("English".into(), "Deutsch (German)".into()));
        assert_eq!(language_name("xx", "", ""), "xx");
    }

    #[test]
    fn a_rule_named_like_a_comment_opening_a_script_stays_inside_its_island() {
        let v = json!([{ "name": "<!--<script ", "note": "</script><b>&amp;\u{2028}" }]);
        let html = json_script("rules-data", &v).into_string();
        assert_eq!(
            html,
            r#"<script type="application/json" id="rules-data">[{"name":"\u003c!--\u003cscript ","note":"\u003c/script\u003e\u003cb\u003e\u0026amp;\u2028"}]</script>"#
        );
    }
}
