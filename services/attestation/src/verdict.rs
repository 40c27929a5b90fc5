//! The auditor's verdict: each check PASS, FAIL or NOT CHECKED, the checks an auditor waives by name, and the verdict that fails closed (`slaproof verify`, `slaproof log verify-proof`).

/// One check's result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Passed(String),
    Failed(String),
    /// Not checked: a trust anchor not pinned, an input not given, or a
    /// check it rests on failed. Never a pass.
    NotChecked(String),
}

/// A named check and its outcome.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    pub name: &'static str,
    pub outcome: Outcome,
}

/// A check the auditor accepts not checked, by name (`--allow-unpinned`):
/// without it, that check left unchecked makes the verdict
/// [`Verdict::Unverified`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Waiver {
    /// The verifying key is only the one the bundle names.
    Vk,
    /// The EAS contract is only the one the bundle names.
    Eas,
    /// The attester is any the schema's resolver authorises.
    Attester,
    /// The chain is only the one the bundle names.
    Chain,
    /// Nothing on chain was read (no RPC URL).
    Anchor,
    /// The period was proven over data committed only at its close.
    Daily,
    /// A dispute's days were opened but not recounted from the log.
    Recount,
    /// Days anchored after the period ended, later than the allowance:
    /// not shown fixed before the outcome was known.
    Timely,
    /// The key's setup not shown to be a ceremony: a development key, or a
    /// ceremony's files not given.
    Setup,
}

impl Waiver {
    /// Each waiver with the name the auditor gives it and the check it
    /// lets stand unchecked: the one table the names are read from.
    const TABLE: [(Waiver, &'static str, &'static str); 9] = [
        (Waiver::Vk, "vk", "key pinned"),
        (Waiver::Eas, "eas", "eas pinned"),
        (Waiver::Attester, "attester", "attester pinned"),
        (Waiver::Chain, "chain", "chain pinned"),
        (Waiver::Anchor, "anchor", "anchor"),
        (Waiver::Daily, "daily", "daily commitments"),
        (Waiver::Recount, "recount", "day recount"),
        (Waiver::Timely, "timely", "days in time"),
        (Waiver::Setup, "setup", "key setup"),
    ];

    /// Every waiver, in the table's order.
    pub fn all() -> impl Iterator<Item = Waiver> {
        Self::TABLE.into_iter().map(|(w, _, _)| w)
    }

    fn entry(self) -> (Waiver, &'static str, &'static str) {
        Self::TABLE
            .into_iter()
            .find(|(w, _, _)| *w == self)
            .unwrap_or((self, "", ""))
    }

    /// The name the auditor gives it.
    pub fn name(self) -> &'static str {
        self.entry().1
    }

    /// The check it lets stand unchecked.
    pub fn check(self) -> &'static str {
        self.entry().2
    }

    /// The waiver of the check named `check`, if it has one.
    pub fn of_check(check: &str) -> Option<Waiver> {
        Self::all().find(|w| w.check() == check)
    }
}

impl std::str::FromStr for Waiver {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Waiver::all().find(|w| w.name() == s).ok_or_else(|| {
            let names: Vec<&str> = Waiver::all().map(Waiver::name).collect();
            format!(
                "{s:?} is not a check that can be waived; one of {}",
                names.join(", ")
            )
        })
    }
}

/// What the checks add up to. Only [`Verdict::Verified`] is green.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Every check passed, but for those the auditor waived by name.
    Verified {
        /// The checks waived, not checked.
        waived: Vec<&'static str>,
    },
    /// No check failed, but these were not checked and not waived.
    Unverified { not_checked: Vec<&'static str> },
    /// These checks failed.
    Failed { failed: Vec<&'static str> },
}

/// Every check's outcome, in order.
#[derive(Debug, Clone, Default)]
pub struct Report {
    pub checks: Vec<Check>,
}

impl Report {
    pub(crate) fn pass(&mut self, name: &'static str, detail: impl Into<String>) {
        self.checks.push(Check {
            name,
            outcome: Outcome::Passed(detail.into()),
        });
    }

    pub(crate) fn fail(&mut self, name: &'static str, reason: impl Into<String>) {
        self.checks.push(Check {
            name,
            outcome: Outcome::Failed(reason.into()),
        });
    }

    /// Records a check not run, and why.
    pub fn not_checked(&mut self, name: &'static str, why: impl Into<String>) {
        self.checks.push(Check {
            name,
            outcome: Outcome::NotChecked(why.into()),
        });
    }

    /// Records a check's result; answers whether it passed.
    pub fn check(&mut self, name: &'static str, result: Result<String, String>) -> bool {
        match result {
            Ok(detail) => {
                self.pass(name, detail);
                true
            }
            Err(reason) => {
                self.fail(name, reason);
                false
            }
        }
    }

    /// The names of the checks not checked.
    pub fn not_checked_names(&self) -> Vec<&'static str> {
        self.names_where(|o| matches!(o, Outcome::NotChecked(_)))
    }

    /// The names of the failed checks.
    pub fn failed(&self) -> Vec<&'static str> {
        self.names_where(|o| matches!(o, Outcome::Failed(_)))
    }

    fn names_where(&self, pick: impl Fn(&Outcome) -> bool) -> Vec<&'static str> {
        self.checks
            .iter()
            .filter(|c| pick(&c.outcome))
            .map(|c| c.name)
            .collect()
    }

    /// The verdict with the checks in `waived` accepted unchecked: a
    /// failure fails it, and any other check not checked leaves it
    /// unverified.
    pub fn verdict(&self, waived: &[Waiver]) -> Verdict {
        let failed = self.failed();
        if !failed.is_empty() {
            return Verdict::Failed { failed };
        }
        let (waived, not_checked): (Vec<&'static str>, Vec<&'static str>) = self
            .not_checked_names()
            .into_iter()
            .partition(|name| Waiver::of_check(name).is_some_and(|w| waived.contains(&w)));
        if not_checked.is_empty() {
            Verdict::Verified { waived }
        } else {
            Verdict::Unverified { not_checked }
        }
    }

    /// The report as lines a person reads, nothing waived.
    pub fn render(&self) -> String {
        self.render_with(&[])
    }

    /// The report as lines a person reads, with the checks in `waived`
    /// marked so.
    pub fn render_with(&self, waived: &[Waiver]) -> String {
        let mut out = String::new();
        for check in &self.checks {
            let (mark, text) = match &check.outcome {
                Outcome::Passed(d) => ("PASS", d),
                Outcome::Failed(r) => ("FAIL", r),
                Outcome::NotChecked(w)
                    if Waiver::of_check(check.name).is_some_and(|w| waived.contains(&w)) =>
                {
                    ("WAIVED", w)
                }
                Outcome::NotChecked(w) => ("NOT CHECKED", w),
            };
            out.push_str(&format!("{mark:<11}  {:<17} {text}\n", check.name));
        }
        out
    }
}

/// A pin's check: passed when the pinned value is the one found, not
/// checked when nothing was pinned.
pub fn pin<T: PartialEq + std::fmt::Display>(
    name: &'static str,
    pinned: Option<T>,
    found: T,
    what: &str,
    flag: &str,
) -> Check {
    let outcome = match pinned {
        None => Outcome::NotChecked(format!(
            "not pinned: {what} is only the one the files handed over name ({found}); pass {flag}"
        )),
        Some(p) if p == found => Outcome::Passed(format!("{p}, as pinned")),
        Some(p) => Outcome::Failed(format!("{what} is {found}, the pinned one is {p}")),
    };
    Check { name, outcome }
}

pub(crate) fn line(name: &'static str, result: Result<String, String>) -> Check {
    Check {
        name,
        outcome: match result {
            Ok(d) => Outcome::Passed(d),
            Err(r) => Outcome::Failed(r),
        },
    }
}

/// The chain and EAS a proof names, against the pinned ones: their two
/// rows, and whether the chain may be read (nothing differs from a pin; a
/// look-alike EAS answers what it likes, so it is not read at all).
pub fn where_anchored(
    pins_chain: Option<u64>,
    pins_eas: Option<alloy::primitives::Address>,
    chain_id: u64,
    eas: alloy::primitives::Address,
) -> (Vec<Check>, bool) {
    let checks = vec![
        pin(
            "chain pinned",
            pins_chain,
            chain_id,
            "the chain",
            "--chain-id",
        ),
        pin(
            "eas pinned",
            pins_eas,
            eas,
            "the EAS contract",
            "--eas with the chain's EAS address",
        ),
    ];
    let readable = !checks
        .iter()
        .any(|c| matches!(c.outcome, Outcome::Failed(_)));
    (checks, readable)
}
