//! The ledger rule: how a period's newly computed credit becomes an entry — issued, corrected, or none — given what the ledger holds for that period.

/// Where a period's credit stands in the ledger: its latest entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Standing<Id> {
    pub entry: Id,
    pub revision: i32,
    /// The period's credit after that entry, in minor units.
    pub total_minor: i64,
}

/// What the ledger gains from a newly computed credit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step<Id> {
    /// Nothing owed and nothing issued before: no entry.
    Nothing,
    /// The ledger holds this credit already.
    Unchanged,
    /// The period's first credit.
    Issue { total_minor: i64 },
    /// A later result changed the credit: an entry of the difference,
    /// referencing the one it corrects.
    Correct {
        corrects: Id,
        revision: i32,
        amount_minor: i64,
        total_minor: i64,
    },
}

/// The entry, if any, that brings the period's credit from `standing` to
/// `total_minor`. The entries of a period then always add up to its latest
/// credit, whatever the order results arrive in.
pub fn next_step<Id: Copy>(standing: Option<Standing<Id>>, total_minor: i64) -> Step<Id> {
    match standing {
        None if total_minor == 0 => Step::Nothing,
        None => Step::Issue { total_minor },
        Some(s) if s.total_minor == total_minor => Step::Unchanged,
        Some(s) => Step::Correct {
            corrects: s.entry,
            revision: s.revision + 1,
            amount_minor: total_minor - s.total_minor,
            total_minor,
        },
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use proptest::prelude::*;

    use super::*;

    /// An in-memory ledger: entries (customer, period, revision, corrects,
    /// amount) appended by [`next_step`].
    #[derive(Default)]
    struct Ledger {
        entries: Vec<(u8, u8, i32, Option<usize>, i64)>,
        standing: BTreeMap<(u8, u8), Standing<usize>>,
    }

    impl Ledger {
        fn compute(&mut self, customer: u8, period: u8, total: i64) {
            let key = (customer, period);
            match next_step(self.standing.get(&key).copied(), total) {
                Step::Nothing | Step::Unchanged => {}
                Step::Issue { total_minor } => {
                    self.entries.push((customer, period, 1, None, total_minor));
                    self.standing.insert(
                        key,
                        Standing {
                            entry: self.entries.len() - 1,
                            revision: 1,
                            total_minor,
                        },
                    );
                }
                Step::Correct {
                    corrects,
                    revision,
                    amount_minor,
                    total_minor,
                } => {
                    self.entries
                        .push((customer, period, revision, Some(corrects), amount_minor));
                    self.standing.insert(
                        key,
                        Standing {
                            entry: self.entries.len() - 1,
                            revision,
                            total_minor,
                        },
                    );
                }
            }
        }
    }

    proptest! {
        /// Whatever order closes and corrections arrive in (any
        /// interleaving of each period's successive results), each
        /// customer's balance is the sum of its periods' latest credits,
        /// every correction references the entry before it in its period,
        /// and revisions count up from 1 without gaps.
        #[test]
        fn a_customers_balance_is_what_the_latest_results_give(
            arrivals in prop::collection::vec((0u8..3, 0u8..4, 0i64..100_000), 0..60)
        ) {
            let mut ledger = Ledger::default();
            let mut latest: BTreeMap<(u8, u8), i64> = BTreeMap::new();
            for &(customer, period, total) in &arrivals {
                ledger.compute(customer, period, total);
                latest.insert((customer, period), total);
            }
            for customer in 0..3u8 {
                let balance: i64 = ledger.entries.iter()
                    .filter(|e| e.0 == customer).map(|e| e.4).sum();
                let owed: i64 = latest.iter()
                    .filter(|((c, _), _)| *c == customer).map(|(_, t)| t).sum();
                prop_assert_eq!(balance, owed);
            }
            let mut last_of: BTreeMap<(u8, u8), (usize, i32)> = BTreeMap::new();
            for (i, &(customer, period, revision, corrects, amount)) in ledger.entries.iter().enumerate() {
                prop_assert!(amount != 0, "an entry always changes the credit");
                match last_of.get(&(customer, period)) {
                    None => {
                        prop_assert_eq!(revision, 1);
                        prop_assert_eq!(corrects, None);
                    }
                    Some(&(previous, previous_revision)) => {
                        prop_assert_eq!(revision, previous_revision + 1);
                        prop_assert_eq!(corrects, Some(previous));
                    }
                }
                last_of.insert((customer, period), (i, revision));
            }
        }
    }

    #[test]
    fn nothing_owed_first_is_no_entry_and_a_credit_withdrawn_is_a_negative_correction() {
        assert_eq!(next_step::<u8>(None, 0), Step::Nothing);
        let issued = Standing {
            entry: 7u8,
            revision: 1,
            total_minor: 10_000,
        };
        assert_eq!(next_step(Some(issued), 10_000), Step::Unchanged);
        assert_eq!(
            next_step(Some(issued), 0),
            Step::Correct {
                corrects: 7,
                revision: 2,
                amount_minor: -10_000,
                total_minor: 0
            }
        );
    }
}
