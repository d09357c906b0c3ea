//! The audit log card of `/admin`: who (name and email) did what to what (in words, with what
//! changed from → to), in which team, when; filtered
//! by action, person and days, and paged through the whole log with a GET form (the URL keeps it).

use maud::{Markup, html};
use serde_json::Value;

use crate::{
    domain::audit_words,
    web::{ctx::Ctx, error::PageError, layout, words},
};

/// Entries per page.
const PER_PAGE: u64 = 25;

/// The audit filters of the page's query string.
#[derive(Debug, Default, Clone)]
pub struct Filter {
    pub action: String,
    pub person: String,
    pub from: String,
    pub to: String,
    pub page: u64,
    /// The users search of the same page, kept when the audit filter changes.
    pub search: String,
}

fn enc(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

impl Filter {
    pub fn from_query(q: Option<&str>) -> Self {
        let v = |k: &str| super::auth::query_value(q, k);
        let day = |k: &str| {
            let s = v(k);
            if chrono::NaiveDate::parse_from_str(&s, "%Y-%m-%d").is_ok() { s } else { String::new() }
        };
        let person = v("person");
        Self {
            action: v("action")
                .chars()
                .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_'))
                .take(80)
                .collect(),
            person: if uuid::Uuid::parse_str(&person).is_ok() { person } else { String::new() },
            from: day("from"),
            to: day("to"),
            page: v("page").parse::<u64>().unwrap_or(1).max(1),
            search: v("search"),
        }
    }

    /// The API's query for this filter's `page`.
    fn api_path(&self, page: u64) -> String {
        let mut p = format!("/admin/audit-log?limit={PER_PAGE}&offset={}", (page - 1) * PER_PAGE);
        for (k, v) in [("action", &self.action), ("userId", &self.person), ("from", &self.from), ("to", &self.to)] {
            if !v.is_empty() {
                p.push_str(&format!("&{k}={}", enc(v)));
            }
        }
        p
    }

    /// This page's URL at audit page `page`.
    fn page_url(&self, page: u64) -> String {
        let mut u = format!("/admin?page={page}");
        for (k, v) in [
            ("action", &self.action),
            ("person", &self.person),
            ("from", &self.from),
            ("to", &self.to),
            ("search", &self.search),
        ] {
            if !v.is_empty() {
                u.push_str(&format!("&{k}={}", enc(v)));
            }
        }
        u.push_str("#audit");
        u
    }
}

/// "user.mfa_enabled" → "Two-factor sign-in turned on": an action in words, for the filter.
pub fn action_words(action: &str) -> String {
    audit_words::label(action)
}

/// The audit log at the filter's page (the last page when it asks past the end), and the people
/// to filter by.
pub async fn card(ctx: &Ctx, f: &Filter) -> Result<Markup, PageError> {
    let first_path = f.api_path(f.page);
    let (first, people) =
        tokio::try_join!(ctx.api.get::<Value>(&first_path), ctx.api.get::<Value>("/admin/users?limit=500"),)?;
    let total = first["total"].as_u64().unwrap_or(0);
    let pages = total.div_ceil(PER_PAGE).max(1);
    let page = f.page.min(pages);
    let log = if page == f.page { first } else { ctx.api.get::<Value>(&f.api_path(page)).await? };
    let entries = log["entries"].as_array().cloned().unwrap_or_default();
    let actions: Vec<String> = log["actions"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).map(str::to_owned).collect())
        .unwrap_or_default();
    let people = people["users"].as_array().cloned().unwrap_or_default();
    let filtered = !(f.action.is_empty() && f.person.is_empty() && f.from.is_empty() && f.to.is_empty());
    Ok(html! {
        section.card #audit {
            h2 { "Audit log" }
            form.audit-filter method="get" action="/admin#audit" {
                input type="hidden" name="search" value=(f.search);
                label for="audit-action" { "Action"
                    select #audit-action name="action" {
                        option value="" { "Any action" }
                        @for a in &actions { option value=(a) selected[*a == f.action] { (action_words(a)) } }
                    }
                }
                label for="audit-person" { "Person"
                    select #audit-person name="person" {
                        option value="" { "Anyone" }
                        @for p in &people {
                            @let id = p["id"].as_str().unwrap_or_default();
                            option value=(id) selected[id == f.person] {
                                (p["name"].as_str().unwrap_or_default()) " (" (p["email"].as_str().unwrap_or_default()) ")"
                            }
                        }
                    }
                }
                label for="audit-from" { "From" input #audit-from type="date" name="from" value=(f.from); }
                label for="audit-to" { "To" input #audit-to type="date" name="to" value=(f.to); }
                div.row {
                    button type="submit" { "Filter" }
                    @if filtered { a.button href=(format!("/admin?search={}#audit", enc(&f.search))) { "Clear" } }
                }
            }
            @if entries.is_empty() {
                p.muted { (if filtered { "Nothing matches these filters." } else { "Nothing recorded yet." }) }
            } @else {
                div.table-scroll {
                    table.list.audit {
                        thead { tr { th scope="col" { "When" } th scope="col" { "What" } th scope="col" { "Who" } th scope="col" { "Team" } th scope="col" { "From" } } }
                        tbody {
                            @for e in &entries { (row(e)) }
                        }
                    }
                }
                nav.pager aria-label="Audit log pages" {
                    @if page > 1 { a rel="prev" href=(f.page_url(page - 1)) { "← Newer" } } @else { span.muted { "← Newer" } }
                    span.page-of { "Page " (page) " of " (pages) " (" (words::count(total, "entry", "entries")) ")" }
                    @if page < pages { a rel="next" href=(f.page_url(page + 1)) { "Older →" } } @else { span.muted { "Older →" } }
                }
            }
        }
    })
}

fn row(e: &Value) -> Markup {
    let s = |k: &str| e[k].as_str().unwrap_or_default();
    html! {
        tr {
            td { (layout::at(s("createdAt"))) }
            td {
                @if s("summary").is_empty() {
                    (audit_words::summary(s("action"), None, &e["details"]))
                } @else {
                    (s("summary"))
                }
                @let lines = e["changeLines"].as_array().cloned().unwrap_or_default();
                @if !lines.is_empty() {
                    ul.audit-changes {
                        @for l in &lines { li { (l.as_str().unwrap_or_default()) } }
                    }
                }
            }
            td {
                @if !s("userName").is_empty() {
                    (s("userName")) br; span.muted.small { (s("userEmail")) }
                } @else if !s("actorApiKeyId").is_empty() {
                    "An API key"
                } @else if !s("actorUserId").is_empty() {
                    span.muted { "A deleted account" }
                } @else {
                    span.muted { "The hub" }
                }
            }
            td {
                @if !s("tenantName").is_empty() { (s("tenantName")) }
                @else if !s("tenantId").is_empty() { span.muted { "A deleted team" } }
                @else { span.muted { "Hub-wide" } }
            }
            td { (s("ip")) }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn actions_read_as_words_and_filters_stay_in_the_url() {
        assert_eq!(action_words("admin.member_removed"), "Member removed from the team");
        assert_eq!(action_words("user.login"), "Signed in");
        assert_eq!(action_words("admin.tenant_settings_updated"), "Team settings updated");
        let f = Filter::from_query(Some("action=user.login&person=nope&from=2026-11-01&to=soon&page=3"));
        assert_eq!((f.person.as_str(), f.to.as_str(), f.page), ("", "", 3));
        assert_eq!(f.api_path(2), "/admin/audit-log?limit=25&offset=25&action=user.login&from=2026-11-01");
        assert!(f.page_url(4).starts_with("/admin?page=4&action=user.login&from=2026-11-01"));
    }
}
