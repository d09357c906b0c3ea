//! Checks of the detection settings that need the model: every species code in a team's settings
//! or a satellite's overrides must be one of the model's ([`check_codes`]).

use crate::{
    domain::{
        detection_settings::{self, KnownClasses},
        settings::TenantSettings,
    },
    inference::{labels::Labels, translations::Translations},
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

/// Refuses species codes the model does not know, naming them. Without an installed model
/// nothing can be checked, and the codes are kept as given.
pub fn check_codes(names: &Translations, settings: &TenantSettings) -> Result<(), String> {
    match names.classes() {
        Some(labels) => detection_settings::check_codes(settings, &Known(&labels)),
        None => Ok(()),
    }
}
