//! Planned maintenance windows agreed with the customer, excluded from an SLA's measurement.

use chrono::{DateTime, Duration, Utc};

use crate::window::Period;

/// Why a maintenance window is refused, naming the field as the API does.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MaintenanceWindowError {
    #[error("ends_at: must be after starts_at")]
    EndNotAfterStart,
    #[error("ends_at: a window may last at most {max_days} days")]
    TooLong { max_days: i64 },
    #[error("description: must be 1-{max} characters")]
    Description { max: usize },
}

impl MaintenanceWindowError {
    /// The field that is wrong.
    pub fn field(&self) -> &'static str {
        match self {
            Self::EndNotAfterStart | Self::TooLong { .. } => "ends_at",
            Self::Description { .. } => "description",
        }
    }

    /// What is wrong with it.
    pub fn rule(&self) -> String {
        let text = self.to_string();
        let prefix = format!("{}: ", self.field());
        text.strip_prefix(&prefix).unwrap_or(&text).to_owned()
    }
}

/// A stretch of time during which the SLA is not measured: events in it
/// count neither as good nor as total, and time slices in it weigh nothing.
///
/// At most [`MaintenanceWindow::MAX_DAYS`] long: a longer "maintenance" is
/// an outage being hidden, or a suspension of the SLA, which the contract
/// should state, not a window in the tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MaintenanceWindow {
    starts_at: DateTime<Utc>,
    ends_at: DateTime<Utc>,
    description: String,
}

impl MaintenanceWindow {
    /// The longest window accepted.
    pub const MAX_DAYS: i64 = 7;
    /// The longest description accepted, in characters.
    pub const MAX_DESCRIPTION: usize = 1000;

    /// A window `[starts_at, ends_at)` with what is being done (trimmed),
    /// refusing an end not after the start, windows longer than
    /// [`Self::MAX_DAYS`] and an empty or overlong description.
    pub fn new(
        starts_at: DateTime<Utc>,
        ends_at: DateTime<Utc>,
        description: &str,
    ) -> Result<Self, MaintenanceWindowError> {
        if ends_at <= starts_at {
            return Err(MaintenanceWindowError::EndNotAfterStart);
        }
        if ends_at - starts_at > Duration::days(Self::MAX_DAYS) {
            return Err(MaintenanceWindowError::TooLong {
                max_days: Self::MAX_DAYS,
            });
        }
        let description = description.trim();
        if description.is_empty() || description.chars().count() > Self::MAX_DESCRIPTION {
            return Err(MaintenanceWindowError::Description {
                max: Self::MAX_DESCRIPTION,
            });
        }
        Ok(Self {
            starts_at,
            ends_at,
            description: description.to_owned(),
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
}

#[cfg(test)]
mod tests {
    use super::*;

    fn utc(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    #[test]
    fn refuses_bad_windows_naming_the_field() {
        let t = utc("2024-01-01T00:00:00Z");
        let refused = |a, b, d: &str| MaintenanceWindow::new(a, b, d).unwrap_err();
        assert_eq!(refused(t, t, "x"), MaintenanceWindowError::EndNotAfterStart);
        assert_eq!(refused(t, t - Duration::hours(1), "x").field(), "ends_at");
        let long = refused(t, t + Duration::days(7) + Duration::seconds(1), "x");
        assert_eq!(long.field(), "ends_at");
        assert_eq!(long.rule(), "a window may last at most 7 days");
        assert_eq!(
            refused(t, t + Duration::hours(1), "  ").to_string(),
            "description: must be 1-1000 characters"
        );
        assert!(MaintenanceWindow::new(t, t + Duration::hours(1), &"é".repeat(1001)).is_err());
        let ok = MaintenanceWindow::new(t, t + Duration::days(7), " db upgrade ").unwrap();
        assert_eq!(ok.description(), "db upgrade");
        assert_eq!(ok.period().duration(), Duration::days(7));
    }
}
