//! Instants taken from a request, bounded at the edge by the domain's rule ([`slaproof_domain::minute::check_instant`]), so that no arithmetic behind it can overflow and no out-of-range date reaches Postgres.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Deserializer, de};
use slaproof_domain::minute::check_instant;

/// An RFC 3339 instant within the bounds (`#[serde(deserialize_with)]`).
pub(crate) fn required<'de, D: Deserializer<'de>>(d: D) -> Result<DateTime<Utc>, D::Error> {
    check_instant(DateTime::<Utc>::deserialize(d)?).map_err(de::Error::custom)
}

/// An optional RFC 3339 instant within the bounds (with `#[serde(default)]`).
pub(crate) fn optional<'de, D: Deserializer<'de>>(d: D) -> Result<Option<DateTime<Utc>>, D::Error> {
    Option::<DateTime<Utc>>::deserialize(d)?
        .map(|at| check_instant(at).map_err(de::Error::custom))
        .transpose()
}

#[cfg(test)]
mod tests {
    use super::*;
    use slaproof_domain::minute::INSTANT_BOUNDS;

    #[test]
    fn only_instants_within_the_bounds_are_taken() {
        let read = |text: &str| optional(serde_json::Value::String(text.to_owned()));
        assert!(read("1970-01-01T00:00:00Z").unwrap().is_some());
        assert!(read("2199-12-31T23:59:59Z").unwrap().is_some());
        for out in [
            "1969-12-31T23:59:59Z",
            "2200-01-01T00:00:00Z",
            "+262142-12-31T23:59:30Z",
        ] {
            let err = read(out).unwrap_err().to_string();
            assert!(err.contains(INSTANT_BOUNDS), "{out}: {err}");
        }
    }
}
