//! What a team (and each satellite) keeps as a detection: the closed sets of the detection
//! settings, their defaults and their range checks. The fields live in
//! [`super::settings::TenantSettings`] (team) and [`super::satellite_config::Overrides`]
//! (satellite); `docs/detection-quality.md` explains each one to users.
//!
//! Species codes are checked against the model's labels by the caller
//! ([`check_codes`]), since the domain does not know the model.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::settings::{Invalid, TenantSettings, label};

/// The group name that stands for every owl (the default of `suppress_species`).
pub const OWLS: &str = "owls";

/// Owl genera (orders Strigiformes: families Strigidae and Tytonidae), so the `owls` group finds
/// every owl in the labels by its scientific name, whatever its common name in any language.
const OWL_GENERA: &[&str] = &[
    "Aegolius",
    "Asio",
    "Athene",
    "Bubo",
    "Ciccaba",
    "Glaucidium",
    "Gymnasio",
    "Heteroglaux",
    "Ketupa",
    "Lophostrix",
    "Margarobyas",
    "Megascops",
    "Micrathene",
    "Mimizuku",
    "Nesasio",
    "Ninox",
    "Otus",
    "Phodilus",
    "Psiloscops",
    "Pseudoscops",
    "Ptilopsis",
    "Pulsatrix",
    "Pyrroglaux",
    "Sceloglaux",
    "Scotopelia",
    "Strix",
    "Surnia",
    "Taenioptynx",
    "Tyto",
    "Uroglaux",
    "Xenoglaux",
];

/// Whether a scientific name is an owl's (its genus is an owl genus).
pub fn is_owl(scientific: &str) -> bool {
    scientific.split_whitespace().next().is_some_and(|genus| OWL_GENERA.contains(&genus))
}

/// The detection settings a satellite may override (the others are the team's alone).
pub const SATELLITE_KEYS: &[&str] = &[
    "min_confidence",
    "sensitivity",
    "species_min_confidence",
    "exclude_species",
    "include_species",
    "range_filter_threshold",
    "not_expected_action",
];

/// The detection settings only a team sets (a satellite inherits them as they are).
pub const TEAM_KEYS: &[&str] = &[
    "second_look_enabled",
    "second_look_sure_confidence",
    "second_look_min_confidence",
    "second_look_wait_sec",
    "second_look_unconfirmed",
    "privacy_filter_enabled",
    "privacy_min_confidence",
    "suppress_classes",
    "suppress_species",
    "suppress_min_confidence",
    "suppress_seconds",
];

/// Whether a team setting is one of the detection settings edited on their own page (the
/// learned-threshold ones live on the Detection quality page and the general form).
pub fn is_detection_key(key: &str) -> bool {
    SATELLITE_KEYS.contains(&key) || TEAM_KEYS.contains(&key)
}

/// Most entries a species list or map may hold (the model has about 6,500 classes).
pub const MAX_SPECIES_ENTRIES: usize = 2000;

/// What happens to a detection of a species the location filter does not expect here this week.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum NotExpectedAction {
    /// Keep it, flagged rare (`not_expected_here`), as birdhub did before these settings.
    Flag,
    /// Hold it until a second look confirms it (see `second_look_*`).
    SecondLook,
    /// Never keep it (as BirdNET-Pi and BirdNET-Go do); counted per satellite.
    #[default]
    Drop,
}

/// What happens to a held detection that its second look did not confirm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum UnconfirmedAction {
    /// Gone, leaving only a counter.
    #[default]
    Discard,
    /// Kept out of every list, stat, alert and feed, but listed on the Detection quality page,
    /// where a member can still confirm it by hand.
    Hide,
}

/// Range checks of the detection fields of a team's settings (already merged with a
/// satellite's overrides, when there are any), with the species named by their codes (as
/// scientific names). The message is in words, the setting named by its label.
pub fn validate(s: &TenantSettings) -> Result<(), String> {
    check(s, &scientific_name).map_err(|e| e.message)
}

/// A species code as the scientific name it was made from (`parus_major` is "Parus major"):
/// what a refusal says of a species when no label names it.
pub fn scientific_name(code: &str) -> String {
    let words = code.replace('_', " ");
    let mut chars = words.chars();
    chars.next().map(|c| c.to_uppercase().chain(chars).collect()).unwrap_or_default()
}

/// [`validate`], saying which setting (its key, or `key.code` for one species' entry) was
/// refused; `name` names a species in the message.
pub fn check(s: &TenantSettings, name: &dyn Fn(&str) -> String) -> Result<(), Invalid> {
    let unit = |v: f64| (0.01..=0.99).contains(&v);
    let within = |key: &str, ok: bool, rule: &str| {
        if ok { Ok(()) } else { Err(Invalid::new(key, format!("{} must be {rule}.", label(key)))) }
    };
    within(
        "min_confidence",
        s.min_confidence.is_none_or(unit),
        "between 0.01 and 0.99, or blank for the hub's default",
    )?;
    within(
        "sensitivity",
        s.sensitivity.is_none_or(|v| (0.5..=1.5).contains(&v)),
        "between 0.5 and 1.5, or blank for 1.0",
    )?;
    for (code, v) in &s.species_min_confidence {
        if !unit(*v) {
            let message = format!("The minimum confidence for {} must be between 0.01 and 0.99.", name(code));
            return Err(Invalid::new(&format!("species_min_confidence.{code}"), message));
        }
    }
    for (key, n) in [
        ("species_min_confidence", s.species_min_confidence.len()),
        ("exclude_species", s.exclude_species.len()),
        ("include_species", s.include_species.len()),
        ("suppress_species", s.suppress_species.len()),
        ("suppress_classes", s.suppress_classes.len()),
    ] {
        within(key, n <= MAX_SPECIES_ENTRIES, &format!("at most {MAX_SPECIES_ENTRIES} entries, not {n}"))?;
    }
    within("range_filter_threshold", (0.0..=0.99).contains(&s.range_filter_threshold), "between 0 and 0.99")?;
    within("second_look_sure_confidence", (0.0..=1.0).contains(&s.second_look_sure_confidence), "between 0 and 1")?;
    within("second_look_min_confidence", unit(s.second_look_min_confidence), "between 0.01 and 0.99")?;
    within("second_look_wait_sec", (1..=600).contains(&s.second_look_wait_sec), "1 to 600 seconds")?;
    within("privacy_min_confidence", unit(s.privacy_min_confidence), "between 0.01 and 0.99")?;
    within("suppress_min_confidence", unit(s.suppress_min_confidence), "between 0.01 and 0.99")?;
    within("suppress_seconds", (1..=3600).contains(&s.suppress_seconds), "1 to 3600 seconds")?;
    within(
        "learned_threshold_precision",
        (0.5..=0.999).contains(&s.learned_threshold_precision),
        "between 0.5 and 0.999",
    )?;
    within("learned_threshold_min_votes", (5..=100_000).contains(&s.learned_threshold_min_votes), "5 to 100000 votes")?;
    Ok(())
}

/// What the model knows, for [`check_codes`]: species codes, and the codes of its classes that
/// are not species (dog, engine, human vocal ...).
pub trait KnownClasses {
    fn is_species(&self, code: &str) -> bool;
    fn is_other_class(&self, code: &str) -> bool;
}

/// Every species code in the detection settings must name a species of the model (and every
/// `suppress_classes` entry one of its other classes). The error names the unknown codes.
pub fn check_codes(s: &TenantSettings, known: &impl KnownClasses) -> Result<(), String> {
    let species_fields: [(&str, Vec<&String>); 4] = [
        ("species_min_confidence", s.species_min_confidence.keys().collect()),
        ("exclude_species", s.exclude_species.iter().collect()),
        ("include_species", s.include_species.iter().collect()),
        ("suppress_species", s.suppress_species.iter().filter(|c| c.as_str() != OWLS).collect()),
    ];
    for (field, codes) in species_fields {
        let unknown: BTreeSet<&str> = codes.into_iter().filter(|c| !known.is_species(c)).map(String::as_str).collect();
        if !unknown.is_empty() {
            return Err(format!("The model knows no species {} (in {}).", quoted(&unknown), label(field)));
        }
    }
    let unknown: BTreeSet<&str> =
        s.suppress_classes.iter().filter(|c| !known.is_other_class(c)).map(String::as_str).collect();
    if !unknown.is_empty() {
        return Err(format!(
            "{} is not one of the sounds the model knows (such as dog, engine or siren).",
            quoted(&unknown)
        ));
    }
    Ok(())
}

fn quoted(codes: &BTreeSet<&str>) -> String {
    codes.iter().map(|c| format!("“{c}”")).collect::<Vec<_>>().join(", ")
}

/// A satellite's detection overrides over its team's: scalars replace, `species_min_confidence`
/// entries replace the team's for the same species, `exclude_species` adds to the team's list,
/// and `include_species` replaces the team's list.
pub struct Merge<'a> {
    pub min_confidence: Option<f64>,
    pub sensitivity: Option<f64>,
    pub species_min_confidence: Option<&'a BTreeMap<String, f64>>,
    pub exclude_species: Option<&'a Vec<String>>,
    pub include_species: Option<&'a Vec<String>>,
    pub range_filter_threshold: Option<f64>,
    pub not_expected_action: Option<NotExpectedAction>,
}

impl Merge<'_> {
    /// The team's settings with these overrides applied to the detection fields.
    pub fn apply(&self, t: &mut TenantSettings) {
        if let Some(v) = self.min_confidence {
            t.min_confidence = Some(v);
        }
        if let Some(v) = self.sensitivity {
            t.sensitivity = Some(v);
        }
        if let Some(m) = self.species_min_confidence {
            t.species_min_confidence.extend(m.iter().map(|(k, v)| (k.clone(), *v)));
        }
        if let Some(list) = self.exclude_species {
            for code in list {
                if !t.exclude_species.contains(code) {
                    t.exclude_species.push(code.clone());
                }
            }
        }
        if let Some(list) = self.include_species {
            t.include_species = list.clone();
        }
        if let Some(v) = self.range_filter_threshold {
            t.range_filter_threshold = v;
        }
        if let Some(v) = self.not_expected_action {
            t.not_expected_action = v;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Known;
    impl KnownClasses for Known {
        fn is_species(&self, code: &str) -> bool {
            matches!(code, "turdus_merula" | "strix_aluco")
        }
        fn is_other_class(&self, code: &str) -> bool {
            matches!(code, "dog" | "engine")
        }
    }

    #[test]
    fn owls_are_found_by_genus() {
        assert!(is_owl("Strix aluco"));
        assert!(is_owl("Ninox novaeseelandiae"), "the Morepork has no 'owl' in its name");
        assert!(!is_owl("Turdus merula"));
    }

    #[test]
    fn ranges_and_codes_are_checked_with_the_field_named() {
        let ok = TenantSettings::default();
        assert!(validate(&ok).is_ok());
        assert!(check_codes(&ok, &Known).is_ok(), "the defaults (dog, owls) are known");
        let bad = TenantSettings { min_confidence: Some(1.5), ..ok.clone() };
        let refused = check(&bad, &scientific_name).expect_err("range");
        assert_eq!(refused.field, "min_confidence");
        assert_eq!(
            refused.message,
            "Minimum confidence must be between 0.01 and 0.99, or blank for the hub's default."
        );
        let mut bad = ok.clone();
        bad.species_min_confidence.insert("turdus_merula".into(), 0.0);
        assert_eq!(
            validate(&bad).expect_err("range"),
            "The minimum confidence for Turdus merula must be between 0.01 and 0.99."
        );
        let named = check(&bad, &|_| "Eurasian Blackbird".into()).expect_err("range");
        assert_eq!(named.field, "species_min_confidence.turdus_merula");
        assert!(named.message.contains("for Eurasian Blackbird"), "{}", named.message);
        let bad = TenantSettings { exclude_species: vec!["robin".into()], ..ok.clone() };
        assert_eq!(
            check_codes(&bad, &Known).expect_err("unknown"),
            "The model knows no species \u{201c}robin\u{201d} (in Never record these species)."
        );
        let bad = TenantSettings { suppress_classes: vec!["turdus_merula".into()], ..ok.clone() };
        assert!(check_codes(&bad, &Known).expect_err("not a class").contains("sounds the model knows"));
    }

    #[test]
    fn a_satellite_adds_exclusions_and_replaces_thresholds() {
        let mut team = TenantSettings { exclude_species: vec!["turdus_merula".into()], ..TenantSettings::default() };
        team.species_min_confidence.insert("turdus_merula".into(), 0.8);
        let sat_map: BTreeMap<String, f64> = [("turdus_merula".to_owned(), 0.9)].into();
        let sat_excl = vec!["strix_aluco".to_owned()];
        Merge {
            min_confidence: Some(0.5),
            sensitivity: None,
            species_min_confidence: Some(&sat_map),
            exclude_species: Some(&sat_excl),
            include_species: None,
            range_filter_threshold: None,
            not_expected_action: Some(NotExpectedAction::Flag),
        }
        .apply(&mut team);
        assert_eq!(team.min_confidence, Some(0.5));
        assert_eq!(team.species_min_confidence["turdus_merula"], 0.9);
        assert_eq!(team.exclude_species, ["turdus_merula", "strix_aluco"]);
        assert_eq!(team.not_expected_action, NotExpectedAction::Flag);
    }
}
