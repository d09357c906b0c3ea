//! Checks of the detection settings that need the model: every species code in a team's settings
//! or a satellite's overrides must be one of the model's ([`check_codes`]).

use crate::{
    domain::{
        detection_settings::{self, KnownClasses},
        settings::TenantSettings,
    },
    inference::{
        labels::{self, Labels},
        translations::Translations,
    },
};

/// The names of the hub's filter counters per satellite (`hubFilterStats`), in display order.
pub const COUNTERS: &[&str] = &[
    "privacyDropped",
    "suppressed",
    "excluded",
    "notIncluded",
    "belowThreshold",
    "notExpectedDropped",
    "secondLookConfirmed",
    "secondLookDiscarded",
    "secondLookHidden",
];

struct Known<'a>(&'a Labels);

impl KnownClasses for Known<'_> {
    fn is_species(&self, code: &str) -> bool {
        self.0.index_of(code).and_then(|i| self.0.get(i)).is_some_and(|l| l.scientific != l.common)
    }

    fn is_other_class(&self, code: &str) -> bool {
        self.0.index_of(code).and_then(|i| self.0.get(i)).is_some_and(|l| l.scientific == l.common)
    }
}

/// Refuses species codes the model does not know, naming them. Only codes that `next` adds to
/// `before` are checked: a code stored earlier (the defaults' `dog` on a model without it, or a
/// code a newer model dropped) never blocks an unrelated change. Without an installed model
/// nothing can be checked, and the codes are kept as given.
pub fn check_codes(names: &Translations, next: &TenantSettings, before: &TenantSettings) -> Result<(), String> {
    let Some(labels) = names.classes() else { return Ok(()) };
    let added = |now: &Vec<String>, was: &Vec<String>| now.iter().filter(|c| !was.contains(c)).cloned().collect();
    let added_only = TenantSettings {
        species_min_confidence: next
            .species_min_confidence
            .iter()
            .filter(|(k, _)| !before.species_min_confidence.contains_key(*k))
            .map(|(k, v)| (k.clone(), *v))
            .collect(),
        exclude_species: added(&next.exclude_species, &before.exclude_species),
        include_species: added(&next.include_species, &before.include_species),
        suppress_species: added(&next.suppress_species, &before.suppress_species),
        suppress_classes: added(&next.suppress_classes, &before.suppress_classes),
        ..TenantSettings::default()
    };
    detection_settings::check_codes(&added_only, &Known(&labels))
}

/// The entries of `entries` (species codes or scientific names, as alert rules take them) that
/// name no species of the model, in their order. Without an installed model nothing can be
/// checked, and none is refused.
pub fn unknown_species(names: &Translations, entries: &[String]) -> Vec<String> {
    let Some(labels) = names.classes() else { return Vec::new() };
    let known = Known(&labels);
    entries.iter().filter(|e| !known.is_species(e) && !known.is_species(&labels::species_code(e))).cloned().collect()
}
