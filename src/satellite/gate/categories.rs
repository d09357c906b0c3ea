//! Which of BirdNET 2.4's classes are not birds, and the `excludedClassifierCategories` category
//! each belongs to (`anthropogenic`, `human_voice`, `amphibian`, `insect`, `other_animal`), plus
//! `other` for the classes that name no source (`Noise`, `Environmental`).
//!
//! How the table was made: every line of `models/birdnet-v2.4/labels/en.txt` (6522 classes,
//! `Scientific name_Common name`) was grouped by the last word of its common name; the 927
//! distinct words were read one by one, and the classes whose word names no bird (Frog, Toad,
//! Treefrog, Peeper, Spadefoot, Cricket, Katydid, Conehead, Trig, Shieldback, Angle-wing, Bee,
//! Squirrel, Chipmunk, Coyote, Wolf, Deer, Monkey, Dog, and the human and sound classes) were
//! listed with their genus. That gives 101 non-bird classes: 11 sound/human/dog classes matched
//! by their whole scientific name, and 36 genera (41 amphibian, 42 insect and 7 mammal classes).
//! None of these genera holds a bird in the label set. A unit test re-checks the count and a few
//! known examples against the label file.

/// The category of a non-bird class.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Category {
    Anthropogenic,
    HumanVoice,
    Amphibian,
    Insect,
    OtherAnimal,
    /// Sound classes that name no source (`Noise`, `Environmental`); never a config category.
    Other,
}

impl Category {
    /// The name used in `excludedClassifierCategories` and in `Verdict::Classifier`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Anthropogenic => "anthropogenic",
            Self::HumanVoice => "human_voice",
            Self::Amphibian => "amphibian",
            Self::Insect => "insect",
            Self::OtherAnimal => "other_animal",
            Self::Other => "other",
        }
    }
}

/// Classes whose "scientific name" is the whole class (no genus/species).
const WHOLE: &[(&str, Category)] = &[
    ("Human vocal", Category::HumanVoice),
    ("Human whistle", Category::HumanVoice),
    ("Human non-vocal", Category::Anthropogenic),
    ("Engine", Category::Anthropogenic),
    ("Siren", Category::Anthropogenic),
    ("Gun", Category::Anthropogenic),
    ("Fireworks", Category::Anthropogenic),
    ("Power tools", Category::Anthropogenic),
    ("Dog", Category::OtherAnimal),
    ("Noise", Category::Other),
    ("Environmental", Category::Other),
];

/// Frogs and toads.
const AMPHIBIAN: &[&str] = &[
    "Acris",
    "Anaxyrus",
    "Dryophytes",
    "Eleutherodactylus",
    "Gastrophryne",
    "Hyliola",
    "Incilius",
    "Lithobates",
    "Pseudacris",
    "Scaphiopus",
    "Spea",
];

/// Crickets, katydids, coneheads, trigs and the honey bee.
const INSECT: &[&str] = &[
    "Allonemobius",
    "Amblycorypha",
    "Anaxipha",
    "Apis",
    "Atlanticus",
    "Conocephalus",
    "Cyrtoxipha",
    "Eunemobius",
    "Gryllus",
    "Microcentrum",
    "Miogryllus",
    "Neoconocephalus",
    "Neonemobius",
    "Oecanthus",
    "Orchelimum",
    "Orocharis",
    "Phyllopalpus",
    "Pterophylla",
    "Scudderia",
];

/// Mammals (besides `Dog`): howler monkey, coyote and wolf, deer, squirrels and chipmunk.
const MAMMAL: &[&str] = &["Alouatta", "Canis", "Odocoileus", "Sciurus", "Tamias", "Tamiasciurus"];

/// The category of a class by its scientific name; `None` for a bird.
pub fn category_of(scientific: &str) -> Option<Category> {
    let scientific = scientific.trim();
    if let Some((_, c)) = WHOLE.iter().find(|(name, _)| *name == scientific) {
        return Some(*c);
    }
    let genus = scientific.split_whitespace().next()?;
    if AMPHIBIAN.contains(&genus) {
        Some(Category::Amphibian)
    } else if INSECT.contains(&genus) {
        Some(Category::Insect)
    } else if MAMMAL.contains(&genus) {
        Some(Category::OtherAnimal)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inference::{ModelDir, labels::Labels};

    #[test]
    fn known_examples_map_right() {
        assert_eq!(category_of("Dog"), Some(Category::OtherAnimal));
        assert_eq!(category_of("Lithobates catesbeianus"), Some(Category::Amphibian));
        assert_eq!(category_of("Gryllus pennsylvanicus"), Some(Category::Insect));
        assert_eq!(category_of("Human vocal"), Some(Category::HumanVoice));
        assert_eq!(category_of("Engine"), Some(Category::Anthropogenic));
        assert_eq!(category_of("Noise"), Some(Category::Other));
        assert_eq!(category_of("Turdus merula"), None);
        assert_eq!(category_of("Acrocephalus newtoni"), None, "a bird whose common name mentions no frog");
        assert_eq!(Category::HumanVoice.as_str(), "human_voice");
        assert_eq!(Category::OtherAnimal.as_str(), "other_animal");
    }

    #[test]
    fn every_label_of_the_model_maps_to_bird_or_a_category() {
        let Ok(dir) = ModelDir::locate("") else {
            println!("note: no model directory (models/fetch.sh); label table check skipped");
            return;
        };
        let labels = Labels::load(&dir.file("labels/en.txt")).expect("labels");
        let mut counts = std::collections::HashMap::new();
        for label in labels.iter() {
            *counts.entry(category_of(&label.scientific)).or_insert(0) += 1;
            // Common names that only a non-bird has must never be taken for a bird.
            let last = label.common.rsplit(' ').next().unwrap_or_default();
            if ["Frog", "Toad", "Treefrog", "Katydid", "Conehead", "Chipmunk", "Squirrel"].contains(&last) {
                assert!(category_of(&label.scientific).is_some(), "{} {}", label.scientific, label.common);
            }
        }
        let n = |c: Option<Category>| counts.get(&c).copied().unwrap_or(0);
        assert_eq!(n(Some(Category::Amphibian)), 41);
        assert_eq!(n(Some(Category::Insect)), 42);
        assert_eq!(n(Some(Category::OtherAnimal)), 8, "7 mammals and Dog");
        assert_eq!(n(Some(Category::HumanVoice)), 2);
        assert_eq!(n(Some(Category::Anthropogenic)), 6);
        assert_eq!(n(Some(Category::Other)), 2);
        assert_eq!(n(None), labels.len() - 101);
        // Every table entry names a class of the model.
        for name in WHOLE.iter().map(|(n, _)| *n) {
            assert!(labels.iter().any(|l| l.scientific == name), "{name}");
        }
        for genus in AMPHIBIAN.iter().chain(INSECT).chain(MAMMAL) {
            assert!(labels.iter().any(|l| l.scientific.split(' ').next() == Some(*genus)), "{genus}");
        }
        let find = |common: &str| labels.iter().find(|l| l.common == common).map(|l| category_of(&l.scientific));
        assert_eq!(find("Eurasian Blackbird"), Some(None));
        assert_eq!(find("American Bullfrog"), Some(Some(Category::Amphibian)));
        assert_eq!(find("Fall Field Cricket"), Some(Some(Category::Insect)));
    }
}
