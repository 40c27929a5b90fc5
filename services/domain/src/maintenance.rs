//! Planned maintenance windows agreed with the customer, excluded from an SLA's measurement.

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};

use crate::window::Period;

/// Why a maintenance window is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MaintenanceWindowError {
    #[error("endsAt: must be after startsAt ({starts_at}), got {ends_at}")]
    EndNotAfterStart {
        starts_at: DateTime<Utc>,
        ends_at: DateTime<Utc>,
    },
    #[error("endsAt: a maintenance window lasts at most {max_hours} hours, got {hours} hours")]
    TooLong { max_hours: i64, hours: String },
    #[error("description: must be at most {max} characters, got {got}")]
    DescriptionTooLong { max: usize, got: usize },
}

/// A stretch of time during which the SLA is not measured: events in it
/// count neither as good nor as total, and time slices in it weigh nothing.
///
/// At most [`MaintenanceWindow::MAX_HOURS`] (7 days) long: a longer outage
/// is not maintenance but a suspension of the SLA, which the contract
/// should state, not a window in the tool.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MaintenanceWindow {
    starts_at: DateTime<Utc>,
    ends_at: DateTime<Utc>,
    description: String,
}

impl MaintenanceWindow {
    /// The longest window accepted, in hours (7 days).
    pub const MAX_HOURS: i64 = 7 * 24;
    /// The longest description accepted, in characters.
    pub const MAX_DESCRIPTION: usize = 1050;

    /// A window `[starts_at, ends_at)`, refusing an end not after the start
    /// and windows longer than 7 days.
    pub fn new(
        starts_at: DateTime<Utc>,
        ends_at: DateTime<Utc>,
        description: String,
    ) -> Result<Self, MaintenanceWindowError> {
        if ends_at <= starts_at {
            return Err(MaintenanceWindowError::EndNotAfterStart { starts_at, ends_at });
        }
        let length = ends_at - starts_at;
        if length > Duration::hours(Self::MAX_HOURS) {
            return Err(MaintenanceWindowError::TooLong {
                max_hours: Self::MAX_HOURS,
                hours: format!("{:.1}", length.num_seconds() as f64 / 3600.0),
            });
        }
        let chars = description.chars().count();
        if chars > Self::MAX_DESCRIPTION {
            return Err(MaintenanceWindowError::DescriptionTooLong {
                max: Self::MAX_DESCRIPTION,
                got: chars,
            });
        }
        Ok(Self {
            starts_at,
            ends_at,
            description,
        })
    }

    /// First instant of maintenance.
    pub fn starts_at(&self) -> DateTime<Utc> {
        self.starts_at
    }

    /// First instant after maintenance.
    pub fn ends_at(&self) -> DateTime<Utc> {
        self.ends_at
    }

    /// What is being done, for the customer's dashboard.
    pub fn description(&self) -> &str {
        &self.description
    }

    /// The window as a period.
    pub fn period(&self) -> Period {
        Period {
            start: self.starts_at,
            end: self.ends_at,
        }
    }

    /// Whether an event at `at` falls in the window (start inclusive, end exclusive).
    pub fn contains(&self, at: DateTime<Utc>) -> bool {
        self.period().contains(at)
    }

    /// How much of `period` this window covers.
    pub fn overlap(&self, period: &Period) -> Duration {
        period
            .intersection(&self.period())
            .map_or(Duration::zero(), |p| p.duration())
    }
}

impl<'de> Deserialize<'de> for MaintenanceWindow {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase", deny_unknown_fields)]
        struct Raw {
            starts_at: DateTime<Utc>,
            ends_at: DateTime<Utc>,
            #[serde(default)]
            description: String,
        }
        let raw = Raw::deserialize(d)?;
        Self::new(raw.starts_at, raw.ends_at, raw.description).map_err(serde::de::Error::custom)
    }
}

/// How much of `period` the windows cover together, counting time where
/// windows overlap each other once.
pub fn excluded_duration(windows: &[MaintenanceWindow], period: &Period) -> Duration {
    excluded_periods(windows, period)
        .iter()
        .map(Period::duration)
        .fold(Duration::zero(), |a, b| a + b)
}

/// The parts of `period` under maintenance, merged and in order.
pub fn excluded_periods(windows: &[MaintenanceWindow], period: &Period) -> Vec<Period> {
    let mut parts: Vec<Period> = windows
        .iter()
        .filter_map(|w| period.intersection(&w.period()))
        .collect();
    parts.sort();
    let mut merged: Vec<Period> = Vec::with_capacity(parts.len());
    for p in parts {
        match merged.last_mut() {
            Some(last) if p.start <= last.end => last.end = last.end.max(p.end),
            _ => merged.push(p),
        }
    }
    merged
}

#[cfg(test)]
mod tests {
    use super::*;

    fn utc(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    fn window(a: &str, b: &str) -> MaintenanceWindow {
        MaintenanceWindow::new(utc(a), utc(b), "db upgrade".into()).unwrap()
    }

    #[test]
    fn refuses_bad_windows() {
        let e = MaintenanceWindow::new(
            utc("2024-01-02T00:00:00Z"),
            utc("2024-01-01T00:00:00Z"),
            String::new(),
        );
        assert!(matches!(
            e,
            Err(MaintenanceWindowError::EndNotAfterStart { .. })
        ));
        let t = utc("2024-01-01T00:00:00Z");
        assert!(MaintenanceWindow::new(t, t, String::new()).is_err());
        let e = MaintenanceWindow::new(t, t + Duration::hours(169), String::new()).unwrap_err();
        assert_eq!(
            e.to_string(),
            "endsAt: a maintenance window lasts at most 168 hours, got 169.0 hours"
        );
        assert!(MaintenanceWindow::new(t, t + Duration::hours(168), String::new()).is_ok());
    }

    #[test]
    fn overlap_with_a_period() {
        let p = Period {
            start: utc("2024-01-01T00:00:00Z"),
            end: utc("2024-02-01T00:00:00Z"),
        };
        assert_eq!(
            window("2023-12-31T23:00:00Z", "2024-01-01T02:00:00Z").overlap(&p),
            Duration::hours(2)
        );
        assert_eq!(
            window("2024-01-10T00:00:00Z", "2024-01-10T00:30:00Z").overlap(&p),
            Duration::minutes(30)
        );
        assert_eq!(
            window("2024-02-01T00:00:00Z", "2024-02-01T01:00:00Z").overlap(&p),
            Duration::zero()
        );
        assert_eq!(
            window("2024-01-31T23:00:00Z", "2024-02-01T01:00:00Z").overlap(&p),
            Duration::hours(1)
        );
    }

    #[test]
    fn overlapping_windows_count_once() {
        let p = Period {
            start: utc("2024-01-01T00:00:00Z"),
            end: utc("2024-02-01T00:00:00Z"),
        };
        let ws = [
            window("2024-01-10T00:00:00Z", "2024-01-10T02:00:00Z"),
            window("2024-01-10T01:00:00Z", "2024-01-10T03:00:00Z"),
            window("2024-01-20T00:00:00Z", "2024-01-20T01:00:00Z"),
        ];
        assert_eq!(excluded_duration(&ws, &p), Duration::hours(4));
        assert_eq!(excluded_periods(&ws, &p).len(), 2);
    }

    #[test]
    fn serde_validates() {
        let ok = r#"{"startsAt":"2024-01-10T00:00:00Z","endsAt":"2024-01-10T02:00:00Z","description":"x"}"#;
        let w: MaintenanceWindow = serde_json::from_str(ok).unwrap();
        assert_eq!(serde_json::to_string(&w).unwrap(), ok);
        let bad = r#"{"startsAt":"2024-01-10T00:00:00Z","endsAt":"2024-01-09T02:00:00Z"}"#;
        assert!(serde_json::from_str::<MaintenanceWindow>(bad).is_err());
    }
}
