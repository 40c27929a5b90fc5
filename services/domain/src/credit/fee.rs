//! From when a customer's fee applies: a date read in each SLA's own time zone, as a contract states it, or an exact instant.

use chrono::{DateTime, NaiveDate, Utc};
use chrono_tz::Tz;

/// From when a fee applies to an SLA's periods.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FeeStart {
    /// To the periods that start on or after this date, read in each
    /// SLA's time zone: "from 1 January" reaches a Berlin month and a New
    /// York month alike from their own local midnights.
    Date(NaiveDate),
    /// To the periods that start at or after this instant.
    Instant(DateTime<Utc>),
}

impl From<DateTime<Utc>> for FeeStart {
    fn from(at: DateTime<Utc>) -> Self {
        Self::Instant(at)
    }
}

impl FeeStart {
    /// `2026-01-01` (a date) or an RFC 3339 instant, the rule in words otherwise.
    pub fn parse(text: &str) -> Result<Self, String> {
        let text = text.trim();
        if let Ok(date) = NaiveDate::parse_from_str(text, "%Y-%m-%d") {
            return Ok(Self::Date(date));
        }
        DateTime::parse_from_rfc3339(text)
            .map(|t| Self::Instant(t.with_timezone(&Utc)))
            .map_err(|_| {
                format!(
                    "must be a date (2026-01-01: from each SLA's local midnight of that day) or an RFC 3339 instant, got {text:?}"
                )
            })
    }

    /// Whether the fee applies to a period starting at `start` of an SLA
    /// in `zone`.
    pub fn reaches(&self, start: DateTime<Utc>, zone: Tz) -> bool {
        match *self {
            Self::Date(date) => start.with_timezone(&zone).date_naive() >= date,
            Self::Instant(at) => start >= at,
        }
    }

    /// The instant a date's midnight is in UTC, the instant itself
    /// otherwise: where the fee sits among a customer's fees recorded as
    /// instants (the key they are stored under).
    pub fn utc_key(&self) -> DateTime<Utc> {
        match *self {
            Self::Date(date) => date.and_time(chrono::NaiveTime::MIN).and_utc(),
            Self::Instant(at) => at,
        }
    }

    /// The date, for a date-based fee.
    pub fn date(&self) -> Option<NaiveDate> {
        match *self {
            Self::Date(date) => Some(date),
            Self::Instant(_) => None,
        }
    }
}

impl std::fmt::Display for FeeStart {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Date(date) => write!(f, "{date}"),
            Self::Instant(at) => {
                f.write_str(&at.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_date_reaches_each_slas_periods_from_its_own_local_midnight() {
        let january = FeeStart::parse("2026-01-01").unwrap();
        let berlin: Tz = "Europe/Berlin".parse().unwrap();
        let new_york: Tz = "America/New_York".parse().unwrap();
        // Berlin's January starts at 23:00 UTC on 31 December: reached.
        let berlin_january: DateTime<Utc> = "2025-12-31T23:00:00Z".parse().unwrap();
        assert!(january.reaches(berlin_january, berlin));
        // Found in review: the same fee as the instant 00:00 UTC missed it.
        let utc_midnight = FeeStart::parse("2026-01-01T00:00:00Z").unwrap();
        assert!(!utc_midnight.reaches(berlin_january, berlin));
        // New York's December starts on 1 December local: not reached.
        let ny_december: DateTime<Utc> = "2025-12-01T05:00:00Z".parse().unwrap();
        assert!(!january.reaches(ny_december, new_york));
        assert!(january.reaches("2026-01-01T05:00:00Z".parse().unwrap(), new_york));
        assert_eq!(january.to_string(), "2026-01-01");
        assert_eq!(january.utc_key().to_rfc3339(), "2026-01-01T00:00:00+00:00");
        let err = FeeStart::parse("January").unwrap_err();
        assert!(err.contains("a date (2026-01-01"), "{err}");
    }
}
