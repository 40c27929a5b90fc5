//! The dashboard of one SLA in one read: current compliance and budget per
//! objective and its one-minute points (good, total, ratio) over a range,
//! from the evaluator's minute rollups, in one tenant transaction.
//!
//! Field rule as everywhere: an objective's numbers need its family scope;
//! its minutes are a time series, so they need `sla:read:history` too;
//! the maintenance windows need `maintenance:read`. What is left out is
//! named in `redacted`.

use chrono::{DateTime, Duration, Utc};
use serde::Serialize;
use slaproof_domain::budget::Tally;
use slaproof_domain::minute::{ceil_minute, floor_minute};
use slaproof_domain::sketch::Summary;
use slaproof_domain::window::Period;
use slaproof_store::{charts, evaluations, maintenance};

use crate::authz::Scope;
use crate::compliance::{ComplianceNumbers, compliance_view};
use crate::slas::Family;
use crate::thresholds::{ThresholdView, threshold_view};
use crate::{App, AppError, Caller, Redaction};

/// The range answered when none is asked: the last day.
pub const DEFAULT_RANGE_MINUTES: i64 = 24 * 60;
/// The most points per series one dashboard answers, so one read stays
/// bounded: two days of minutes, four months of hours, years of days.
pub const MAX_POINTS: i64 = 2 * 24 * 60;

/// The widths a dashboard's points may have, by name (`?step=`).
pub const STEPS: [(&str, i64); 6] = [
    ("1m", 60),
    ("5m", 300),
    ("15m", 900),
    ("1h", 3_600),
    ("6h", 21_600),
    ("1d", 86_400),
];

/// A point width by name (`1m` when none is given).
pub fn parse_step(text: Option<&str>) -> Result<Duration, AppError> {
    let text = text.unwrap_or("1m");
    STEPS
        .iter()
        .find(|(name, _)| *name == text)
        .map(|(_, secs)| Duration::seconds(*secs))
        .ok_or_else(|| {
            let names: Vec<&str> = STEPS.iter().map(|(n, _)| *n).collect();
            AppError::invalid(
                "step",
                format!("must be one of {}, got {text:?}", names.join(", ")),
            )
        })
}

/// An SLA's dashboard.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct DashboardView {
    pub sla: String,
    pub version: i32,
    /// The range of the minutes, whole UTC minutes `[from, to)`.
    pub from: DateTime<Utc>,
    pub to: DateTime<Utc>,
    /// The width of every point in seconds (`?step=`: 60 by default).
    pub step_secs: i64,
    /// The time zone the SLA's calendar periods follow (`Europe/Berlin`);
    /// absent for a rolling window. Instants are UTC throughout.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time_zone: Option<String>,
    /// Whose requests the SLA is judged on: `customer` (its customer's
    /// own) or `service` (every request of the service, the same promise
    /// to everyone).
    pub scope: SlaScopeView,
    pub objectives: Vec<ObjectiveDashboard>,
    /// Latency, TTFT and TPOT percentiles of the requests the SLA measures
    /// (its customer's, or its whole service's) per minute with events,
    /// from the evaluator's chart sketches (each within 1%);
    /// absent (and listed in `redacted`) without `sla:read:latency` and
    /// `sla:read:history`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub percentiles: Option<Vec<PercentilePoint>>,
    /// The maintenance excluded from the verdict that overlaps the range:
    /// planned windows within the SLA's cap and accepted ones, merged where
    /// they touch (emergency windows and time beyond the cap count, and are
    /// not here); absent without `maintenance:read`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub maintenance: Option<Vec<MaintenanceSpan>>,
    /// The credit owed for each of the last 12 closed periods that earned
    /// one, newest first (the ledger's latest entry of each period); absent
    /// (and listed in `redacted`) without `sla:read:credits`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub credits: Option<Vec<PeriodCredit>>,
    pub redacted: Vec<Redaction>,
}

/// Whose requests an SLA is judged on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum SlaScopeView {
    /// The requests of the SLA's customer only.
    Customer,
    /// Every request of the service.
    Service,
}

impl SlaScopeView {
    /// The name REST serializes it as (`customer`, `service`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Customer => "customer",
            Self::Service => "service",
        }
    }
}

impl From<slaproof_domain::SlaScope> for SlaScopeView {
    fn from(scope: slaproof_domain::SlaScope) -> Self {
        match scope {
            slaproof_domain::SlaScope::Customer => Self::Customer,
            slaproof_domain::SlaScope::Service => Self::Service,
        }
    }
}

/// A closed period's credit as it stands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct PeriodCredit {
    pub period_start: DateTime<Utc>,
    pub period_end: DateTime<Utc>,
    pub currency: String,
    /// Decimal text in the currency's unit.
    pub total: String,
    pub total_minor: i64,
    /// The ledger entry it stands at (`cred_…`).
    pub credit: String,
    /// How many times a later result corrected it.
    pub corrections: i32,
}

/// How many closed periods' credits the dashboard shows.
const DASHBOARD_CREDIT_PERIODS: i64 = 12;

/// One objective on the dashboard.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct ObjectiveDashboard {
    pub objective: String,
    pub family: Family,
    /// For a time-slice objective, its slices' length in seconds: `good`
    /// and `total` in `numbers` count slices, not requests. Absent for
    /// other objectives.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slice_secs: Option<u64>,
    /// The latest evaluation (compliance and budget): `null` before the
    /// first; absent (and listed in `redacted`) without the family's scope.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub numbers: Option<Option<ComplianceNumbers>>,
    /// One point per minute that counted events, oldest first; absent (and
    /// listed in `redacted`) without the family's scope or
    /// `sla:read:history`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub minutes: Option<Vec<MinutePoint>>,
    /// The customer's own alert lines on this objective, for the chart to
    /// draw: `null` when none are set; absent (and listed in `redacted`)
    /// without the family's scope. Never the contract's target.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thresholds: Option<Option<ThresholdView>>,
}

/// The events of one minute as the evaluator counted them for an objective.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct MinutePoint {
    /// The UTC minute the events occurred in.
    pub minute: DateTime<Utc>,
    pub good: i64,
    pub total: i64,
    /// Parts per million of good events, rounded down.
    pub ratio_ppm: Option<u32>,
    /// Present when the minute overlaps maintenance: `whole` (none of its
    /// events count in the verdict) or `part` (those inside the window do
    /// not).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub maintenance: Option<MinuteMaintenance>,
}

/// The distributions of one minute's events.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct PercentilePoint {
    pub minute: DateTime<Utc>,
    pub latency: Percentiles,
    pub ttft: Percentiles,
    pub tpot: Percentiles,
    /// As on the minute points: `whole` or `part` under maintenance.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub maintenance: Option<MinuteMaintenance>,
}

/// Percentiles of one measure in microseconds, within 1% (absent when no
/// event of the minute carried the measure).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct Percentiles {
    /// Events that carried the measure.
    pub count: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub p50_us: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub p95_us: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub p99_us: Option<u64>,
}

/// The quantiles the dashboard charts.
const QUANTILES: [f64; 3] = [0.5, 0.95, 0.99];

impl From<&Summary> for Percentiles {
    fn from(s: &Summary) -> Self {
        // Microseconds are whole; the sketch's estimate is rounded.
        let at = |i: usize| {
            s.quantiles
                .get(i)
                .filter(|q| q.is_finite() && **q >= 0.0)
                .map(|q| q.round() as u64)
        };
        Percentiles {
            count: s.count,
            p50_us: at(0),
            p95_us: at(1),
            p99_us: at(2),
        }
    }
}

/// How much of a minute maintenance covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum MinuteMaintenance {
    Whole,
    Part,
}

/// A stretch of maintenance (windows merged where they overlap or touch).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct MaintenanceSpan {
    pub starts_at: DateTime<Utc>,
    pub ends_at: DateTime<Utc>,
}

/// The whole minutes `[from, to)` a dashboard answers in points of `step`:
/// the last day by default, at most [`MAX_POINTS`] points (points start at
/// `from`, so a day's points follow the period's own midnight).
pub fn dashboard_range(
    from: Option<DateTime<Utc>>,
    to: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
    step: Duration,
) -> Result<(DateTime<Utc>, DateTime<Utc>), AppError> {
    // Any caller's instants, bounded before any minute arithmetic.
    crate::check_instants(&[("from", from), ("to", to)])?;
    let to = ceil_minute(to.unwrap_or(now));
    let from = floor_minute(from.unwrap_or(to - Duration::minutes(DEFAULT_RANGE_MINUTES)));
    if to <= from {
        return Err(AppError::invalid("to", "must be after from"));
    }
    let width = step.num_seconds().max(60);
    let points = ((to - from).num_seconds() + width - 1) / width;
    if points > MAX_POINTS {
        return Err(AppError::invalid(
            "from",
            format!(
                "the range gives {points} points of {} s; at most {MAX_POINTS} are answered at once (a wider step shows a longer range)",
                step.num_seconds()
            ),
        ));
    }
    Ok((from, to))
}

/// How `periods` (disjoint, sorted) cover the point `[minute, minute + step)`.
fn coverage(
    periods: &[Period],
    minute: DateTime<Utc>,
    step: Duration,
) -> Option<MinuteMaintenance> {
    let end = minute + step;
    let i = periods.partition_point(|p| p.end <= minute);
    let p = periods.get(i).filter(|p| p.start < end)?;
    Some(if p.start <= minute && p.end >= end {
        MinuteMaintenance::Whole
    } else {
        MinuteMaintenance::Part
    })
}

impl App {
    /// Compliance, budget and the minutes of `[from, to)` (default: the
    /// last day) of every objective of one SLA the caller may see.
    #[tracing::instrument(skip(self, caller), fields(tenant = %caller.tenant()))]
    pub async fn sla_dashboard(
        &self,
        caller: &Caller,
        name: &str,
        from: Option<DateTime<Utc>>,
        to: Option<DateTime<Utc>>,
        step: Duration,
    ) -> Result<DashboardView, AppError> {
        let (from, to) = dashboard_range(from, to, Utc::now(), step)?;
        let mut tx = self.tx(caller).await?;
        let (stored, customer_ref) = self.visible_sla(&mut tx, caller, name, None).await?;
        let latest = self
            .latest_readable(&mut tx, caller, &stored, customer_ref.as_deref())
            .await?;
        let lines = match stored.customer {
            Some(c) => slaproof_store::thresholds::list(&mut tx, stored.id, Some(c)).await?,
            None => Vec::new(),
        };
        let compliance = compliance_view(caller, &stored, &latest);
        let mut redacted = compliance.redacted;
        // The objectives whose minutes this caller may read.
        let charted: Vec<String> = compliance
            .objectives
            .iter()
            .filter(|o| caller.has(o.family.scope()) && caller.has(Scope::SlaReadHistory))
            .map(|o| o.objective.clone())
            .collect();
        let rows =
            evaluations::minutes(&mut tx, stored.id, stored.version, &charted, from, to, step)
                .await?;
        let charts_latency = caller.has(Scope::SlaReadLatency) && caller.has(Scope::SlaReadHistory);
        let sketches = if charts_latency {
            // A customer's user reads the sketches of the versions that
            // were its own only: an SLA moved from another customer keeps
            // that customer's latencies.
            let versions = self
                .readable_versions(&mut tx, caller, &stored, customer_ref.as_deref())
                .await?;
            Some(
                charts::percentiles(
                    &mut tx,
                    stored.id,
                    versions.as_deref(),
                    from,
                    to,
                    step,
                    &QUANTILES,
                )
                .await?,
            )
        } else {
            None
        };
        let periods =
            maintenance::periods(&mut tx, stored.id, &stored.definition, from, to).await?;
        let scope = SlaScopeView::from(stored.definition.scope);
        let time_zone = match stored.definition.window {
            slaproof_domain::window::TimeWindow::Calendar { time_zone, .. } => {
                Some(time_zone.name().to_owned())
            }
            slaproof_domain::window::TimeWindow::Rolling { .. } => None,
        };
        let credits = match stored.customer {
            Some(customer) if caller.has(Scope::SlaReadCredits) => Some(
                slaproof_store::credits::period_totals(
                    &mut tx,
                    stored.id,
                    customer,
                    DASHBOARD_CREDIT_PERIODS,
                )
                .await?
                .into_iter()
                .map(|e| {
                    Ok(PeriodCredit {
                        total: e.currency()?.amount_text(e.total_minor),
                        period_start: e.period_start,
                        period_end: e.period_end,
                        currency: e.currency,
                        total_minor: e.total_minor,
                        credit: e.id.to_string(),
                        corrections: e.revision - 1,
                    })
                })
                .collect::<Result<_, slaproof_store::StoreError>>()?,
            ),
            Some(_) => {
                redacted.push(Redaction {
                    field: "credits".to_owned(),
                    scope: Scope::SlaReadCredits.as_str(),
                });
                None
            }
            // An SLA without a customer credits nobody.
            None => Some(Vec::new()),
        };
        tx.commit().await?;

        let mut minutes: std::collections::HashMap<String, Vec<MinutePoint>> =
            charted.iter().map(|o| (o.clone(), Vec::new())).collect();
        for evaluations::MinuteRollup {
            objective,
            minute,
            good,
            total,
        } in rows
        {
            let tally = Tally {
                good: u64::try_from(good).unwrap_or(0),
                total: u64::try_from(total).unwrap_or(0),
            };
            if let Some(points) = minutes.get_mut(&objective) {
                points.push(MinutePoint {
                    minute,
                    good,
                    total,
                    ratio_ppm: tally.compliance_ppm(),
                    maintenance: coverage(&periods, minute, step),
                });
            }
        }
        let objectives = compliance
            .objectives
            .into_iter()
            .map(|o| {
                let points = minutes.remove(&o.objective);
                if points.is_none() {
                    // The family's scope is already named for `numbers`
                    // when it is missing; otherwise history is.
                    let scope = if caller.has(o.family.scope()) {
                        Scope::SlaReadHistory
                    } else {
                        o.family.scope()
                    };
                    redacted.push(Redaction {
                        field: format!("objectives[{}].minutes", o.objective),
                        scope: scope.as_str(),
                    });
                }
                let thresholds = if caller.has(o.family.scope()) {
                    Some(lines.iter().find(|l| l.objective == o.objective).map(|l| {
                        threshold_view(l, o.family, customer_ref.as_deref().unwrap_or(""))
                    }))
                } else {
                    redacted.push(Redaction {
                        field: format!("objectives[{}].thresholds", o.objective),
                        scope: o.family.scope().as_str(),
                    });
                    None
                };
                ObjectiveDashboard {
                    objective: o.objective,
                    family: o.family,
                    slice_secs: o.slice_secs,
                    numbers: o.numbers,
                    minutes: points,
                    thresholds,
                }
            })
            .collect();
        let percentiles = match sketches {
            Some(points) => Some(
                points
                    .iter()
                    .filter(|p| p.latency.count + p.ttft.count + p.tpot.count > 0)
                    .map(|p| PercentilePoint {
                        minute: p.start,
                        latency: (&p.latency).into(),
                        ttft: (&p.ttft).into(),
                        tpot: (&p.tpot).into(),
                        maintenance: coverage(&periods, p.start, step),
                    })
                    .collect(),
            ),
            None => {
                redacted.push(Redaction {
                    field: "percentiles".to_owned(),
                    scope: if caller.has(Scope::SlaReadLatency) {
                        Scope::SlaReadHistory.as_str()
                    } else {
                        Scope::SlaReadLatency.as_str()
                    },
                });
                None
            }
        };
        let maintenance = if caller.has(Scope::MaintenanceRead) {
            Some(
                periods
                    .iter()
                    .map(|p| MaintenanceSpan {
                        starts_at: p.start,
                        ends_at: p.end,
                    })
                    .collect(),
            )
        } else {
            redacted.push(Redaction {
                field: "maintenance".to_owned(),
                scope: Scope::MaintenanceRead.as_str(),
            });
            None
        };
        Ok(DashboardView {
            sla: compliance.sla,
            version: compliance.version,
            from,
            to,
            step_secs: step.num_seconds(),
            time_zone,
            scope,
            objectives,
            percentiles,
            maintenance,
            credits,
            redacted,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use slaproof_domain::window::merge_periods;

    fn at(text: &str) -> DateTime<Utc> {
        text.parse().unwrap()
    }

    #[test]
    fn ranges_default_to_the_last_day_in_whole_minutes_and_are_bounded() {
        let now = at("2026-11-30T12:34:56Z");
        let (from, to) = dashboard_range(None, None, now, Duration::minutes(1)).unwrap();
        assert_eq!(to, at("2026-11-30T12:35:00Z"));
        assert_eq!(from, at("2026-11-29T12:35:00Z"));
        let (from, to) = dashboard_range(
            Some(at("2026-11-30T10:00:30Z")),
            Some(at("2026-11-30T11:00:00Z")),
            now,
            Duration::minutes(1),
        )
        .unwrap();
        assert_eq!(
            (from, to),
            (at("2026-11-30T10:00:00Z"), at("2026-11-30T11:00:00Z"))
        );
        let backwards = dashboard_range(
            Some(now),
            Some(now - Duration::hours(1)),
            now,
            Duration::minutes(1),
        );
        assert!(matches!(backwards, Err(AppError::Invalid { field, .. }) if field == "to"));
        let long = dashboard_range(
            Some(now - Duration::days(3)),
            Some(now),
            now,
            Duration::minutes(1),
        );
        assert!(matches!(long, Err(AppError::Invalid { field, .. }) if field == "from"));
        let two_days = at("2026-11-28T12:35:00Z");
        assert!(dashboard_range(Some(two_days), Some(now), now, Duration::minutes(1)).is_ok());
        // A wider step answers a longer range: a month of hours, a year of days.
        let month = at("2026-11-01T00:00:00Z");
        assert!(dashboard_range(Some(month), Some(now), now, Duration::hours(1)).is_ok());
        assert!(
            dashboard_range(
                Some(now - Duration::days(366)),
                Some(now),
                now,
                Duration::days(1)
            )
            .is_ok()
        );
        assert_eq!(parse_step(Some("1h")).unwrap(), Duration::hours(1));
        assert!(
            matches!(parse_step(Some("2h")), Err(AppError::Invalid { field, .. }) if field == "step")
        );
    }

    #[test]
    fn minutes_know_how_much_maintenance_covers_them() {
        let periods = merge_periods(vec![
            Period {
                start: at("2026-11-30T10:00:30Z"),
                end: at("2026-11-30T10:03:00Z"),
            },
            Period {
                start: at("2026-11-30T10:05:00Z"),
                end: at("2026-11-30T10:06:00Z"),
            },
        ]);
        let cover = |m: &str| coverage(&periods, at(m), Duration::minutes(1));
        assert_eq!(cover("2026-11-30T09:59:00Z"), None);
        assert_eq!(cover("2026-11-30T10:00:00Z"), Some(MinuteMaintenance::Part));
        assert_eq!(
            cover("2026-11-30T10:01:00Z"),
            Some(MinuteMaintenance::Whole)
        );
        assert_eq!(
            cover("2026-11-30T10:02:00Z"),
            Some(MinuteMaintenance::Whole)
        );
        assert_eq!(cover("2026-11-30T10:03:00Z"), None);
        assert_eq!(cover("2026-11-30T10:04:00Z"), None);
        assert_eq!(
            cover("2026-11-30T10:05:00Z"),
            Some(MinuteMaintenance::Whole)
        );
        assert_eq!(cover("2026-11-30T10:06:00Z"), None);
    }
}
