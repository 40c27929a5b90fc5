//! The auditor's `key setup` check: who could forge with the verifying key. A development key says so and is never passed; a ceremony passes only when the auditor checked it (`slaproof verify --ceremony`); a ceremony over another constraint system than this build's fails.

use slaproof_circuits::{Circuit, Provenance};

use crate::bundle::StatementFile;
use crate::verdict::Report;

/// A ceremony the auditor checked itself (`slaproof ceremony verify`:
/// the r1cs rebuilt from source, `snarkjs zkey verify` over its phase 1 and
/// every step).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckedCeremony {
    /// sha256 of the final key's compressed verifying key.
    pub vk_sha256: String,
    /// Who took part, in order; the beacon last.
    pub steps: Vec<String>,
    /// Whose phase 1 the key rests on (a published file, or one the auditor
    /// pinned by hash), or why nothing vouches for it.
    pub phase1: Result<String, String>,
}

const CHECK: &str = "key setup";

/// Adds the `key setup` check of statement `s`; `checked` is the
/// auditor's own check of a ceremony, or why it failed.
pub(crate) fn check(
    report: &mut Report,
    s: &StatementFile,
    checked: Option<&Result<CheckedCeremony, String>>,
) {
    match checked {
        Some(Ok(c)) if c.vk_sha256 != s.verifying_key_sha256 => report.fail(
            CHECK,
            format!(
                "the ceremony's final key has sha256 {}, the bundle's key is {}",
                c.vk_sha256, s.verifying_key_sha256
            ),
        ),
        // Sound if one contributor of each phase was honest: a phase 1
        // nobody vouches for leaves the verdict resting on its maker.
        Some(Ok(c)) => match &c.phase1 {
            Ok(phase1) => report.pass(
                CHECK,
                format!(
                    "the key is the final key of a ceremony checked with snarkjs: {}; over {phase1}; \
                     sound if one contributor of each phase was honest",
                    c.steps.join(", ")
                ),
            ),
            Err(why) => report.not_checked(
                CHECK,
                format!(
                    "phase 2 checked with snarkjs ({}), but {why}",
                    c.steps.join(", ")
                ),
            ),
        },
        Some(Err(why)) => {
            report.fail(CHECK, format!("the ceremony did not check: {why}"));
        }
        None => unchecked(report, s),
    }
}

/// Without the ceremony's files: what the statement says, never a pass.
fn unchecked(report: &mut Report, s: &StatementFile) {
    let ceremony = match &s.key_setup {
        Provenance::Development => {
            report.not_checked(
                CHECK,
                "development key: whoever ran the setup can forge a proof of any statement; \
                 keys from a ceremony (slaproof ceremony) are checked with --ceremony and --ptau",
            );
            return;
        }
        Provenance::Ceremony(c) => c,
    };
    // The constraint system the ceremony set up must be this build's
    // circuit: rebuilt from source, never taken from the statement.
    let rebuilt = Circuit::of_name(&s.circuit)
        .ok_or_else(|| format!("{:?} is not a slaproof circuit", s.circuit))
        .and_then(|circuit| {
            slaproof_circuits::r1cs::export(circuit, s.slots).map_err(|e| e.to_string())
        });
    match rebuilt {
        Ok(r1cs) if r1cs.sha256() == ceremony.r1cs_sha256 => {
            let steps: Vec<&str> = ceremony
                .contributions
                .iter()
                .map(|c| match c.beacon {
                    Some(_) => "beacon",
                    None => c.name.as_str(),
                })
                .collect();
            report.not_checked(
                CHECK,
                format!(
                    "the statement says the key comes from a ceremony of {} over this build's \
                     circuit; not checked: give the ceremony's folder and phase 1 \
                     (--ceremony, --ptau)",
                    steps.join(", ")
                ),
            );
        }
        Ok(r1cs) => report.fail(
            CHECK,
            format!(
                "the statement's ceremony set up the r1cs {}, but this build's {} circuit of size \
                 {} is {}: keys for another constraint system",
                ceremony.r1cs_sha256,
                s.circuit,
                s.slots,
                r1cs.sha256()
            ),
        ),
        Err(why) => report.fail(CHECK, format!("the circuit cannot be rebuilt: {why}")),
    }
}
