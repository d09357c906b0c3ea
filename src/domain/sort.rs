//! `sortBy` / `sortDir` of every list, read by one parser. Each list names its fields (the text the
//! API takes and the enum value it means) and its default; an unknown value is refused with a
//! message that lists the allowed ones.

/// A closed set of sort fields of one list.
pub trait SortField: Copy + PartialEq + 'static {
    /// `(the API's name, the field)`, the default first.
    const FIELDS: &'static [(&'static str, Self)];

    /// Whether this field sorts descending when no `sortDir` is given.
    fn descending_by_default(self) -> bool {
        true
    }
}

/// A parsed sort: the field and the direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sort<F> {
    pub by: F,
    pub descending: bool,
}

/// A `sortBy` or `sortDir` outside its set.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct BadSort(pub String);

/// Reads `sortBy` and `sortDir` (`asc` | `desc`); absent values take the list's defaults.
pub fn parse<F: SortField>(by: Option<&str>, dir: Option<&str>) -> Result<Sort<F>, BadSort> {
    let by = match by.filter(|s| !s.is_empty()) {
        None => F::FIELDS[0].1,
        Some(name) => F::FIELDS.iter().find(|(n, _)| *n == name).map(|(_, f)| *f).ok_or_else(|| {
            let names: Vec<&str> = F::FIELDS.iter().map(|(n, _)| *n).collect();
            BadSort(format!("sortBy must be one of {}, not {name:?}", names.join(", ")))
        })?,
    };
    let descending = match dir.filter(|s| !s.is_empty()) {
        None => by.descending_by_default(),
        Some("desc") => true,
        Some("asc") => false,
        Some(other) => return Err(BadSort(format!("sortDir must be asc or desc, not {other:?}"))),
    };
    Ok(Sort { by, descending })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    enum Demo {
        Name,
        Date,
    }

    impl SortField for Demo {
        const FIELDS: &'static [(&'static str, Self)] = &[("name", Demo::Name), ("date", Demo::Date)];
        fn descending_by_default(self) -> bool {
            self != Demo::Name
        }
    }

    #[test]
    fn defaults_names_and_directions() {
        assert_eq!(parse::<Demo>(None, None), Ok(Sort { by: Demo::Name, descending: false }));
        assert_eq!(parse::<Demo>(Some("date"), None), Ok(Sort { by: Demo::Date, descending: true }));
        assert_eq!(parse::<Demo>(Some("date"), Some("asc")), Ok(Sort { by: Demo::Date, descending: false }));
        assert_eq!(parse::<Demo>(Some(""), Some("desc")), Ok(Sort { by: Demo::Name, descending: true }));
        let bad = parse::<Demo>(Some("size"), None).expect_err("unknown field");
        assert_eq!(bad.0, "sortBy must be one of name, date, not \"size\"");
        assert!(parse::<Demo>(None, Some("up")).is_err());
    }
}
