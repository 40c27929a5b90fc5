//! The SLA definition: what a provider promises one customer about one service.

use std::collections::HashMap;

use crate::anchoring::AttestationPolicy;
use crate::credit::CreditPolicy;
use crate::minute::Arrival;
use crate::objective::{Objective, slug_type};
use crate::policy::SlaPolicy;
use crate::window::TimeWindow;

slug_type! {
    /// The name of an SLA, unique per tenant (`acme-enterprise`).
    SlaName
}

/// An SLA: objectives measured over a time window on the events of one
/// service, optionally for one customer.
///
/// Parsed from documents with [`SlaDefinition::from_document`] (native
/// `slaproof/v1` YAML or JSON, or OpenSLO v1), exported with
/// [`SlaDefinition::to_native_yaml`] and [`SlaDefinition::to_openslo_yaml`].
/// Serde reads and writes the native document as JSON, so that storage keeps
/// exactly what the provider wrote.
#[derive(Debug, Clone, PartialEq)]
pub struct SlaDefinition {
    pub name: SlaName,
    pub display_name: Option<String>,
    pub description: Option<String>,
    /// The `service` of the events this SLA measures.
    pub service: String,
    /// The customer's reference in the provider's own system, when the SLA
    /// is for one customer.
    pub customer: Option<String>,
    /// Whose requests the SLA is judged on (`spec.scope`): the customer's
    /// own, or the whole service's.
    pub scope: SlaScope,
    pub window: TimeWindow,
    /// At least one, with unique names.
    pub objectives: Vec<Objective>,
    /// Lateness, maintenance, degrade and no-data rules.
    pub policy: SlaPolicy,
    /// What a missed promise is worth (`spec.credits`); `None`: the SLA
    /// states no credits.
    pub credits: Option<CreditPolicy>,
    /// Where its period proofs are anchored (`spec.attestation`).
    pub attestation: AttestationPolicy,
}

/// Whose requests an SLA is judged on.
///
/// An SLA with a customer measures that customer's requests unless its
/// document says `scope: service`: a promise that is the same for every
/// customer of a service (a public SLA) and is judged on all of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum SlaScope {
    /// Only the events attributed to the SLA's customer (`customer` at
    /// ingest). Needs a customer.
    Customer,
    /// Every event of the service, whoever it served.
    #[default]
    Service,
}

impl SlaScope {
    /// The name used in documents and APIs.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Customer => "customer",
            Self::Service => "service",
        }
    }

    /// Reads a document's `scope`.
    pub fn parse(text: &str) -> Result<Self, String> {
        match text {
            "customer" => Ok(Self::Customer),
            "service" => Ok(Self::Service),
            other => Err(format!(
                "must be \"customer\" (the SLA's customer's own requests) or \"service\" (every request of the service), got {other:?}"
            )),
        }
    }

    /// The scope a document that names none means: its customer's own
    /// requests when it has a customer, else the service's.
    pub fn default_for(customer: Option<&str>) -> Self {
        if customer.is_some() {
            Self::Customer
        } else {
            Self::Service
        }
    }
}

impl std::fmt::Display for SlaScope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The format a document was written in, which decides how it applies to
/// an SLA that exists (see [`SlaDefinition::read_document`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DocumentFormat {
    /// `slaproof/v1`: the whole SLA.
    Native,
    /// OpenSLO v1 `SLO`s, often one per file: some of an SLA's objectives.
    /// `sets_policy`: whether an SLO carries the SLA's policy (the
    /// `slaproof.dev/policy` annotation); without it the definition's
    /// policy is the default, not something the document said.
    /// `sets_scope`: likewise for the `slaproof.dev/scope` annotation.
    OpenSlo { sets_policy: bool, sets_scope: bool },
}

/// The least late grace of an SLA with a gauge objective that sets none.
pub const GAUGE_LATE_GRACE: chrono::Duration = chrono::Duration::days(1);

/// Limits on free text, so that a document cannot carry a novel.
pub(crate) const MAX_DISPLAY_NAME: usize = 200;
pub(crate) const MAX_DESCRIPTION: usize = 1050;
pub(crate) const MAX_SERVICE: usize = 200;
/// More objectives than this is a sign of a generated document gone wrong.
pub const MAX_OBJECTIVES: usize = 64;

impl SlaDefinition {
    /// The display name, or the name when there is none.
    pub fn title(&self) -> &str {
        self.display_name.as_deref().unwrap_or(self.name.as_str())
    }

    /// The objective with this name.
    pub fn objective(&self, name: &str) -> Option<&Objective> {
        self.objectives.iter().find(|o| o.name.as_str() == name)
    }

    /// How long after a period's end the period closes: the SLA's own
    /// `policy.lateGrace`; else, for an SLA with a gauge objective, at least
    /// a day (quality scores come hours after their requests: the last
    /// hours' scores would otherwise always miss the close); else
    /// `default` (the platform's `evaluator.grace_secs`).
    pub fn late_grace_or(&self, default: chrono::Duration) -> chrono::Duration {
        let has_gauge = self
            .objectives
            .iter()
            .any(|o| matches!(o.sli, crate::objective::Sli::Gauge(_)));
        let default = if has_gauge {
            default.max(GAUGE_LATE_GRACE)
        } else {
            default
        };
        self.policy.late_grace_or(default)
    }

    /// Whether an event of `service` that served `customer` (the
    /// provider's reference, `None` when the event names none) is one this
    /// SLA measures: the one scoping rule the evaluator's rollups, its
    /// gauges and the log's recount share. A customer-scoped SLA counts its
    /// customer's requests only; events that name no customer count for
    /// service-wide SLAs only.
    pub fn measures(&self, service: Option<&str>, customer: Option<&str>) -> bool {
        service == Some(self.service.as_str())
            && match self.scope {
                SlaScope::Service => true,
                SlaScope::Customer => customer.is_some() && customer == self.customer.as_deref(),
            }
    }

    /// The customer whose requests this SLA counts, when it counts one
    /// customer's only.
    pub fn measured_customer(&self) -> Option<&str> {
        match self.scope {
            SlaScope::Customer => self.customer.as_deref(),
            SlaScope::Service => None,
        }
    }

    /// When an event (or value) arrived, judged against the close of its
    /// period under this SLA's window and late grace (`default` when the
    /// SLA sets none): the one rule the evaluator's rollups and an
    /// auditor's recount from the log both judge by.
    pub fn arrival(
        &self,
        occurred_at: chrono::DateTime<chrono::Utc>,
        received_at: chrono::DateTime<chrono::Utc>,
        default: chrono::Duration,
    ) -> Arrival {
        let grace = self.late_grace_or(default);
        Arrival::counted_until(&self.window, occurred_at, received_at, |to_next_end| {
            self.policy.counts_until(grace, to_next_end)
        })
    }

    /// Whether the SLA has a composite (some objective carries a weight).
    pub fn is_composite(&self) -> bool {
        self.objectives.iter().any(|o| o.weight.is_some())
    }
}

/// Checks a customer reference as the store keeps it (the rule of
/// `customers_external_ref_format`): 1 to 128 characters of `A-Z`, `a-z`,
/// `0-9`, `.`, `_`, `:` and `-`, the first a letter or digit. Events are
/// held to it too, so that every reference they name can be registered.
pub fn check_customer_ref(text: &str) -> Result<(), crate::quantity::QuantityError> {
    let ok = text.len() <= 128
        && text
            .bytes()
            .next()
            .is_some_and(|b| b.is_ascii_alphanumeric())
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b':' | b'-'));
    if ok {
        Ok(())
    } else {
        Err(crate::quantity::QuantityError(format!(
            "must be 1 to 128 characters of A-Z, a-z, 0-9, '.', '_', ':' and '-', starting with a letter or digit (the customer's reference in your system), got {text:?}"
        )))
    }
}

/// Rules across objectives, as `(objective index, field, rule)`.
pub(crate) fn cross_check(objectives: &[Objective]) -> Vec<(Option<usize>, &'static str, String)> {
    let mut problems = Vec::new();
    if objectives.is_empty() {
        problems.push((
            None,
            "objectives",
            "must hold at least one objective".to_owned(),
        ));
    }
    if objectives.len() > MAX_OBJECTIVES {
        problems.push((
            None,
            "objectives",
            format!(
                "must hold at most {MAX_OBJECTIVES} objectives, got {}",
                objectives.len()
            ),
        ));
    }
    let mut seen: HashMap<&str, usize> = HashMap::new();
    for (i, o) in objectives.iter().enumerate() {
        if let Some(first) = seen.insert(o.name.as_str(), i) {
            problems.push((
                Some(i),
                "name",
                format!(
                    "must be unique: objective {first} is also named {:?}",
                    o.name.as_str()
                ),
            ));
            seen.insert(o.name.as_str(), first);
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    const CUSTOMER_SLA: &str = "apiVersion: slaproof/v1\nkind: SLA\nmetadata: {name: acme}\nspec:\n  \
        service: chat\n  customer: acme-corp\n  window: {calendar: month, timeZone: UTC}\n  objectives:\n  \
        - {name: ok, target: 99%, ratio: {good: status < 500}}\n";

    #[test]
    fn a_customers_sla_measures_its_own_requests_unless_it_is_service_wide() {
        let sla = SlaDefinition::from_document(CUSTOMER_SLA).unwrap();
        assert_eq!(sla.scope, SlaScope::Customer);
        assert!(sla.measures(Some("chat"), Some("acme-corp")));
        assert!(!sla.measures(Some("chat"), Some("globex")));
        assert!(!sla.measures(Some("chat"), None));
        assert!(!sla.measures(Some("embed"), Some("acme-corp")));
        let wide = SlaDefinition::from_document(&CUSTOMER_SLA.replace(
            "customer: acme-corp\n",
            "customer: acme-corp\n  scope: service\n",
        ))
        .unwrap();
        assert!(wide.measures(Some("chat"), Some("globex")));
        assert!(wide.measures(Some("chat"), None));
        // A scope of the customer's needs a customer.
        let err = SlaDefinition::from_document(
            &CUSTOMER_SLA.replace("customer: acme-corp\n", "scope: customer\n"),
        )
        .unwrap_err();
        assert!(err.to_string().contains("spec.scope"), "{err}");
    }

    #[test]
    fn a_version_stored_before_scopes_keeps_its_service_wide_meaning() {
        // The store's JSON of a customer's SLA written before `scope`
        // existed: judged on the whole service then, and so now.
        let mut stored = SlaDefinition::from_document(CUSTOMER_SLA)
            .unwrap()
            .to_native_json();
        assert_eq!(
            stored["spec"]["scope"], "customer",
            "written explicitly now"
        );
        stored["spec"].as_object_mut().unwrap().remove("scope");
        let read: SlaDefinition = serde_json::from_value(stored.clone()).unwrap();
        assert_eq!(read.scope, SlaScope::Service);
        // The same text from a provider means the customer's requests.
        let provided = SlaDefinition::from_document(&stored.to_string()).unwrap();
        assert_eq!(provided.scope, SlaScope::Customer);
    }

    #[test]
    fn customer_references_follow_the_stores_rule() {
        for ok in ["acme-corp", "globex:eu-1", "A", "cust_00001", "x.y"] {
            assert!(check_customer_ref(ok).is_ok(), "{ok}");
        }
        let long = "a".repeat(129);
        for bad in ["", "-acme", ".x", "acme corp", "ä", long.as_str()] {
            assert!(check_customer_ref(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn an_sla_with_a_gauge_waits_a_day_for_its_scores_unless_it_says_otherwise() {
        let five_minutes = chrono::Duration::minutes(5);
        let every_field =
            SlaDefinition::from_document(include_str!("../fixtures/native-every-field.yaml"))
                .unwrap();
        let mut with_gauge = every_field.clone();
        with_gauge.policy.late_grace = None;
        assert_eq!(with_gauge.late_grace_or(five_minutes), GAUGE_LATE_GRACE);
        let mut without = with_gauge.clone();
        without
            .objectives
            .retain(|o| !matches!(o.sli, crate::objective::Sli::Gauge(_)));
        assert_eq!(without.late_grace_or(five_minutes), five_minutes);
        // The SLA's own grace wins.
        with_gauge.policy.late_grace = Some(crate::quantity::Span::parse("2h").unwrap());
        assert_eq!(
            with_gauge.late_grace_or(five_minutes),
            chrono::Duration::hours(2)
        );
    }
}
