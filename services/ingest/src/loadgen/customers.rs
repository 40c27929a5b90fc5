//! Whose requests the loadgen draws: the demo's customers, thousands with Zipf-like shares, or none.

use rand::Rng;

/// The customers requests are drawn for, each with its share of the
/// traffic and, optionally, the models it uses (else the fleet's mix).
#[derive(Debug, Clone, Default)]
pub struct Customers {
    pub(super) refs: Vec<String>,
    /// Cumulative shares, ending at 1.
    cumulative: Vec<f64>,
    /// Per customer, the share of each of the loadgen's three models (in
    /// their order); `None`: the fleet's mix.
    pub(super) models: Vec<Option<[f64; 3]>>,
}

/// The demo's customers (`slaproof up --loadgen`): three with SLAs of their
/// own and a tail of references the provider has not registered.
const DEMO_CUSTOMERS: &[(&str, f64, Option<[f64; 3]>)] = &[
    // Mostly the 70B model: the incident hits most of its requests.
    ("acme-corp", 0.50, Some([0.30, 0.70, 0.0])),
    // The 8B model only: the incident passes it by.
    ("globex", 0.30, Some([1.0, 0.0, 0.0])),
    ("initech", 0.15, Some([0.40, 0.0, 0.60])),
];
/// Unregistered references sharing the rest of the demo's traffic.
const DEMO_TAIL: u32 = 5;

impl Customers {
    /// Requests that name no customer.
    pub fn none() -> Self {
        Self::default()
    }

    /// The demo's: acme-corp (half the traffic, mostly on
    /// [`INCIDENT_MODEL`]), globex (8B only), initech, and a tail of
    /// `trial-N` references no customer has.
    pub fn demo() -> Self {
        let mut refs = Vec::new();
        let mut shares = Vec::new();
        let mut models = Vec::new();
        for (name, share, mix) in DEMO_CUSTOMERS {
            refs.push((*name).to_owned());
            shares.push(*share);
            models.push(*mix);
        }
        let rest = 1.0 - shares.iter().sum::<f64>();
        for i in 1..=DEMO_TAIL {
            refs.push(format!("trial-{i}"));
            shares.push(rest / f64::from(DEMO_TAIL));
            models.push(None);
        }
        Self::from_shares(refs, &shares, models)
    }

    /// `n` customers `cust-00001`, `cust-00002`, … whose shares fall as
    /// `1 / rank^exponent` (Zipf): a few large customers and a long tail.
    pub fn zipf(n: u32, exponent: f64) -> Self {
        let refs: Vec<String> = (1..=n).map(|i| format!("cust-{i:05}")).collect();
        let shares: Vec<f64> = (1..=n).map(|i| f64::from(i).powf(-exponent)).collect();
        let models = vec![None; refs.len()];
        Self::from_shares(refs, &shares, models)
    }

    fn from_shares(refs: Vec<String>, shares: &[f64], models: Vec<Option<[f64; 3]>>) -> Self {
        let total: f64 = shares.iter().sum();
        let mut acc = 0.0;
        let cumulative = shares
            .iter()
            .map(|s| {
                acc += s / total;
                acc
            })
            .collect();
        Self {
            refs,
            cumulative,
            models,
        }
    }

    /// The references, in order of share (largest first for Zipf).
    pub fn refs(&self) -> &[String] {
        &self.refs
    }

    /// The index of a customer drawn by share, `None` when there is none.
    pub(super) fn pick(&self, rng: &mut impl Rng) -> Option<usize> {
        if self.refs.is_empty() {
            return None;
        }
        let u: f64 = rng.random();
        let i = self.cumulative.partition_point(|c| *c <= u);
        Some(i.min(self.refs.len() - 1))
    }
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    use super::*;

    #[test]
    fn zipf_customers_are_a_few_large_and_a_long_tail() {
        let customers = Customers::zipf(10_000, 1.0);
        assert_eq!(customers.refs().len(), 10_000);
        assert_eq!(customers.refs()[0], "cust-00001");
        let mut rng = StdRng::seed_from_u64(1);
        let mut counts = std::collections::HashMap::<usize, u32>::new();
        for _ in 0..100_000 {
            *counts.entry(customers.pick(&mut rng).unwrap()).or_default() += 1;
        }
        // The largest customer has about 1/H(10,000) ≈ 10% of the traffic;
        // thousands of customers are seen at all.
        let first = counts.get(&0).copied().unwrap_or_default();
        assert!((8_000..13_000).contains(&first), "{first}");
        assert!(counts.len() > 3_000, "{}", counts.len());
        assert!(Customers::none().pick(&mut rng).is_none());
    }
}
