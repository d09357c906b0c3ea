//! The species pieces of the detection settings: a species code's names in the viewer's language,
//! removable chips for a list of codes, the search picker that `detection_settings.js` fills from
//! `GET /api/species/search`, and the table of per-species minimum confidences. Codes are what is
//! stored and sent; people only ever see names.

use std::collections::BTreeMap;

use maud::{Markup, html};

use crate::{domain::detection_settings::OWLS, web::ctx::Ctx};

/// A species' (or other class's) names.
pub struct Named {
    pub common: String,
    pub scientific: String,
}

/// The language species names are shown in: the viewer's when the model ships it, else English.
pub fn lang(ctx: &Ctx) -> String {
    let names = &ctx.api_state().names;
    if names.installed().contains(&ctx.language) { ctx.language.clone() } else { "en".into() }
}

/// The names of `code` in `lang` (English, then the code itself, when the labels lack it).
pub fn named(ctx: &Ctx, lang: &str, code: &str) -> Named {
    if code == OWLS {
        return Named { common: "Owls (every owl species)".into(), scientific: String::new() };
    }
    let names = &ctx.api_state().names;
    let common = names.common_name(lang, code).or_else(|| names.common_name("en", code)).unwrap_or_else(|| code.into());
    let scientific = names
        .classes()
        .and_then(|c| c.index_of(code).and_then(|i| c.get(i)).map(|l| l.scientific.clone()))
        .unwrap_or_default();
    Named { common, scientific }
}

/// A name with the scientific name in italics (when it differs), for chips and table rows.
pub fn label(n: &Named) -> Markup {
    html! {
        span.common { (n.common) }
        @if !n.scientific.is_empty() && n.scientific != n.common { " " em.sci { (n.scientific) } }
    }
}

/// Names of several codes, joined for a sentence ("inherits team: Eurasian Blackbird, Tawny Owl").
pub fn sentence(ctx: &Ctx, lang: &str, codes: &[String]) -> String {
    if codes.is_empty() {
        return "none".into();
    }
    codes.iter().map(|c| named(ctx, lang, c).common).collect::<Vec<_>>().join(", ")
}

/// The search box that adds a species: typing asks the API for matches in `lang`.
/// `kind` is `bird` or `other` (the model's non-bird classes).
pub fn picker(id: &str, text: &str, lang: &str, kind: &str) -> Markup {
    html! {
        div.picker data-lang=(lang) data-classes=(kind) {
            label.sr for=(id) { (text) }
            input #(id) type="search" autocomplete="off" placeholder=(text) role="combobox" aria-expanded="false"
                aria-autocomplete="list" aria-controls=(format!("{id}-results"));
            ul.pick-results #(format!("{id}-results")) role="listbox" hidden {}
        }
    }
}

/// A list of codes as removable chips, with a picker to add more (`data-key` names the setting).
pub fn list(ctx: &Ctx, lang: &str, key: &str, codes: &[String], editable: bool, kind: &str, add: &str) -> Markup {
    html! {
        div.species-list data-key=(key) data-kind="list" {
            ul.chips aria-label=(add) {
                @for c in codes {
                    @let n = named(ctx, lang, c);
                    li.chip data-code=(c) {
                        (label(&n))
                        @if editable {
                            button.chip-remove type="button" aria-label=(format!("Remove {}", n.common)) title="Remove" { "×" }
                        }
                    }
                }
            }
            @if codes.is_empty() { p.muted.small.chips-empty { "None." } }
            @if editable { (picker(&format!("pick-{key}"), add, lang, kind)) }
        }
    }
}

/// The per-species minimum confidences: a row per species (name, value, remove) and a picker
/// that adds a row.
pub fn thresholds(ctx: &Ctx, lang: &str, key: &str, map: &BTreeMap<String, f64>, editable: bool) -> Markup {
    html! {
        div.species-map data-key=(key) data-kind="map" {
            div.table-scroll {
                table.list.thresholds {
                    thead { tr { th scope="col" { "Species" } th scope="col" { "Minimum confidence" } th { span.sr { "Remove" } } } }
                    tbody {
                        @for (code, v) in map {
                            @let n = named(ctx, lang, code);
                            tr data-code=(code) {
                                th scope="row" { (label(&n)) }
                                td {
                                    @if editable {
                                        input type="number" step="0.01" min="0.01" max="0.99" value=(v)
                                            aria-label=(format!("Minimum confidence for {}", n.common));
                                    } @else { span.mono { (format!("{v:.2}")) } }
                                }
                                td { @if editable { button.chip-remove type="button" aria-label=(format!("Remove {}", n.common)) { "Remove" } } }
                            }
                        }
                    }
                }
            }
            @if map.is_empty() { p.muted.small.map-empty { "No species has its own minimum." } }
            @if editable { (picker(&format!("pick-{key}"), "Add a species: type its name", lang, "bird")) }
        }
    }
}
