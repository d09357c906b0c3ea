//! The messages of rejected JSON bodies, query strings and path parameters (`extract.rs`), in
//! words that name the field (`domain::serde_words`), never serde's or axum's own text.

use std::error::Error as StdError;

use crate::domain::serde_words::{expected, field_message, strip_position};

use axum::extract::{
    path::ErrorKind,
    rejection::{JsonRejection, PathRejection, QueryRejection},
};

type JsonPathError = serde_path_to_error::Error<serde_json::Error>;
type QueryPathError = serde_path_to_error::Error<serde::de::value::Error>;

/// The first error of type `E` in `e`'s chain of sources.
fn find<'a, E: StdError + 'static>(e: &'a (dyn StdError + 'static)) -> Option<&'a E> {
    let mut cur = Some(e);
    while let Some(err) = cur {
        if let Some(found) = err.downcast_ref::<E>() {
            return Some(found);
        }
        cur = err.source();
    }
    None
}

/// The message for a JSON body serde could not read into the route's type.
pub fn json_data(r: &JsonRejection) -> String {
    match find::<JsonPathError>(r) {
        Some(e) => field_message(&e.path().to_string(), &strip_position(&e.inner().to_string())),
        None => "the body does not have the fields this endpoint expects".into(),
    }
}

/// The message for a body that is not JSON at all (or ends early).
pub fn json_syntax(r: &JsonRejection) -> String {
    let inner = find::<JsonPathError>(r).map(|e| e.inner()).or_else(|| find::<serde_json::Error>(r));
    match inner {
        Some(e) if e.is_eof() => "the body is not complete JSON (it ends too early)".into(),
        Some(e) if e.line() > 0 => {
            format!("the body is not valid JSON (line {}, column {})", e.line(), e.column())
        }
        _ => "the body is not valid JSON".into(),
    }
}

/// The message for a query string that does not fit the route's parameters.
pub fn query(r: &QueryRejection) -> String {
    match find::<QueryPathError>(r) {
        Some(e) => field_message(&e.path().to_string(), &e.inner().to_string()),
        None => "the query string is not valid for this endpoint".into(),
    }
}

/// The message for a path parameter that does not fit (`/satellites/not-a-uuid`).
pub fn path(r: &PathRejection) -> String {
    let PathRejection::FailedToDeserializePathParams(e) = r else {
        return "the address is missing a part this endpoint needs".into();
    };
    match e.kind() {
        ErrorKind::ParseErrorAtKey { key, value, expected_type } => {
            format!("`{key}` in the address must be {}, not {value:?}", expected(expected_type))
        }
        ErrorKind::ParseErrorAtIndex { value, expected_type, .. } | ErrorKind::ParseError { value, expected_type } => {
            format!("{value:?} in the address must be {}", expected(expected_type))
        }
        ErrorKind::DeserializeError { key, value, .. } => format!("{value:?} is not a valid `{key}`"),
        ErrorKind::InvalidUtf8InPathParam { key } => format!("`{key}` in the address is not valid text"),
        _ => "the address does not fit this endpoint".into(),
    }
}
