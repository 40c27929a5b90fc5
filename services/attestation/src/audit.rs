//! The auditor's checks of a bundle: each one named, with what it found, so
//! that a failure says which link of the chain of evidence broke.
//!
//! Off chain: the files parse; the verifying key is the one the statement
//! names (its sha256); the public inputs are the statement's; the context is
//! the claim's; the proof verifies (Rust's verifier on snarkjs's files, the
//! same files `snarkjs groth16 verify` takes); the statement id is the
//! keccak of the anchored statement. On chain: the attestation exists under
//! the UID, holds exactly this statement, proof hash and id (or, for a
//! batch, a root the inclusion proof leads to), and its attester is one the
//! schema's resolver authorises. A period proven over its daily
//! commitments also has each day checked: off chain, that the days tile
//! the period and aggregate to the commitment input; on chain, that each
//! day's batch root is attested by the same attester, and when.

use std::path::Path;

use alloy::primitives::{Address, B256, U256};
use serde_json::Value;
use slaproof_chain::Chain;
use slaproof_chain::anchor::{
    BATCH_SCHEMA, BatchRoot, PERIOD_SCHEMA, PeriodAnchor, VERIFIED_SCHEMA, VerifiedAnchor,
};
use slaproof_chain::contracts::{AttesterResolver, EAS, SchemaRegistry};
use slaproof_chain::merkle::StandardTree;
use slaproof_circuits::export::{proof_from_snarkjs, solidity_proof, verifying_key_from_snarkjs};
use slaproof_circuits::statement::PUBLIC_INPUTS;
use slaproof_circuits::{ContextHash, Statement, StatementJson, VerifierKey, verify};
use slaproof_domain::period_vector::VERDICT_UNIT;
use slaproof_domain::provable::{OPERATOR, UNIT};

use crate::bundle::{FORMAT, StatementFile, anchored_statement};
pub use crate::setup::CheckedCeremony;
use crate::verdict::line;
pub use crate::verdict::{Check, Outcome, Report, Verdict, Waiver, pin, where_anchored};

/// What the auditor pins rather than takes from the bundle: the bundle is
/// the prover's, so a value it names proves nothing about itself. Each
/// value left unpinned is reported NOT CHECKED, which leaves the verdict
/// unverified unless the auditor waives it by name ([`Waiver`]).
#[derive(Debug, Clone, Default)]
pub struct Pins {
    /// The verifying key's sha256, as the provider publishes it (or as the
    /// verified path's resolver registers it).
    pub vk_sha256: Option<String>,
    /// The EAS contract of the chain.
    pub eas: Option<Address>,
    /// The provider's attester address.
    pub attester: Option<Address>,
    /// The chain the anchor must be on.
    pub chain_id: Option<u64>,
    /// The key's ceremony as the auditor checked it, or why it did not
    /// check: without it, the key's setup is only what the statement says.
    pub ceremony: Option<Result<crate::setup::CheckedCeremony, String>>,
}

fn read_json(dir: &Path, name: &str) -> Result<Value, String> {
    let path = dir.join(name);
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
}

/// The files' contents once parsed.
struct Files {
    key: Value,
    proof: Value,
    public: Vec<String>,
    statement: StatementFile,
}

fn read_files(dir: &Path) -> Result<Files, String> {
    let key = read_json(dir, "verification_key.json")?;
    let proof = read_json(dir, "proof.json")?;
    let public = read_json(dir, "public.json")?;
    let public = public
        .as_array()
        .and_then(|a| a.iter().map(|v| v.as_str().map(str::to_owned)).collect())
        .ok_or("public.json: not an array of decimal strings")?;
    let public: Vec<String> = public;
    if public.len() != PUBLIC_INPUTS.len() {
        return Err(format!(
            "public.json has {} inputs, the circuit takes {}",
            public.len(),
            PUBLIC_INPUTS.len()
        ));
    }
    let statement = StatementFile::read(dir).map_err(|e| e.to_string())?;
    Ok(Files {
        key,
        proof,
        public,
        statement,
    })
}

/// Runs every check on the bundle in `dir`; with `rpc_url`, the anchor's
/// too (an auditor's own node: nothing of ours is asked).
pub async fn audit(dir: &Path, rpc_url: Option<&url::Url>, pins: &Pins) -> Report {
    let mut report = Report::default();
    let files = match read_files(dir) {
        Ok(files) => {
            report.pass(
                "files",
                "verification_key.json, proof.json, public.json, statement.json",
            );
            files
        }
        Err(reason) => {
            report.fail("files", reason);
            return report;
        }
    };
    let s = &files.statement;
    report.check(
        "format",
        if s.format == FORMAT {
            Ok(FORMAT.to_owned())
        } else {
            Err(format!("statement.json is {:?}, not {FORMAT:?}", s.format))
        },
    );

    // The verifying key is the one the statement names.
    let key = verifying_key_from_snarkjs(&files.key)
        .map_err(|e| e.to_string())
        .and_then(|vk| {
            let verifier = VerifierKey::new(s.slots, vk);
            let digest = verifier.sha256().map_err(|e| e.to_string())?;
            if digest != s.verifying_key_sha256 {
                return Err(format!(
                    "its sha256 is {digest}, the statement names {}",
                    s.verifying_key_sha256
                ));
            }
            if verifier.verifying_key().gamma_abc_g1.len() != PUBLIC_INPUTS.len() + 1 {
                return Err("it does not take four public inputs".into());
            }
            Ok(verifier)
        });
    let key = key.and_then(|verifier| match &pins.vk_sha256 {
        Some(pinned) if *pinned != s.verifying_key_sha256 => Err(format!(
            "the bundle's key has sha256 {}, the pinned key is {pinned}",
            s.verifying_key_sha256
        )),
        _ => Ok(verifier),
    });
    let key = match key {
        Ok(verifier) => {
            report.pass(
                "verifying key",
                format!("sha256 {}", s.verifying_key_sha256),
            );
            match &pins.vk_sha256 {
                Some(pinned) => report.pass("key pinned", format!("{pinned}, as pinned")),
                None => report.not_checked(
                    "key pinned",
                    "not pinned: the key is only the one the bundle names; pass --vk-sha256 \
                     with the provider's published key hash",
                ),
            }
            Some(verifier)
        }
        Err(reason) => {
            report.fail("verifying key", reason);
            None
        }
    };

    // Who could forge with that key.
    crate::setup::check(&mut report, s, pins.ceremony.as_ref());

    // The public inputs are the statement's, and the context is the claim's.
    let listed: Vec<&str> = s.public_inputs.iter().map(|p| p.value.as_str()).collect();
    let names: Vec<&str> = s.public_inputs.iter().map(|p| p.name.as_str()).collect();
    report.check(
        "public inputs",
        if names != PUBLIC_INPUTS {
            Err(format!(
                "statement.json names {names:?}, not {PUBLIC_INPUTS:?}"
            ))
        } else if files.public != listed {
            Err("public.json differs from statement.json's public inputs".into())
        } else if files.public[1] != s.claim.threshold.to_string() {
            Err(format!(
                "the threshold input is {}, the claim says {}",
                files.public[1], s.claim.threshold
            ))
        } else if files.public[2] != s.quota_ppm.to_string() {
            Err(format!(
                "the quota input is {}, the statement says {}",
                files.public[2], s.quota_ppm
            ))
        } else {
            Ok(format!(
                "T = {} {}, q = {} ppm",
                s.claim.threshold, s.claim.unit, s.quota_ppm
            ))
        },
    );
    report.check(
        "claim form",
        if s.claim.operator != OPERATOR {
            Err(format!(
                "the claim says {:?}; the circuit proves only `{OPERATOR}` (other comparisons \
                 are proven mirrored, as `{OPERATOR}`)",
                s.claim.operator
            ))
        } else if s.claim.unit == UNIT {
            Ok("values ≤ T, in microseconds".into())
        } else if s.claim.unit == VERDICT_UNIT && s.claim.threshold == 0 {
            Ok("verdicts: 0 good, 1 bad, T = 0".into())
        } else if s.claim.unit == VERDICT_UNIT {
            Err(format!(
                "a claim about verdicts (0 good, 1 bad) proves T = 0, not {}",
                s.claim.threshold
            ))
        } else {
            Err(format!(
                "the unit {:?} is not one slaproof proves in ({UNIT} or {VERDICT_UNIT})",
                s.claim.unit
            ))
        },
    );
    let context = ContextHash::of(&s.claim.claim()).as_field().to_string();
    // The claim as shown is rebuilt from the fields the context and the
    // public inputs bind, never taken from the bundle's free text.
    let sentence = s.claim.sentence(s.quota_ppm);
    report.check(
        "context",
        if files.public.get(3) == Some(&context) {
            Ok(format!("the claim hashes to the context input ({sentence})"))
        } else {
            Err("the claim in statement.json does not hash to the context input: the proof is about another claim".into())
        },
    );
    report.check(
        "summary",
        if s.summary.starts_with(&sentence) {
            Ok("the bundle's summary states the claim the fields make".into())
        } else {
            Err(format!(
                "the bundle's summary says {:?}; the claim its checked fields make is {sentence:?}",
                s.summary
            ))
        },
    );

    // The proof verifies, and is the one the statement names.
    let statement = Statement::from_json(&StatementJson {
        slots: s.slots,
        commitment: files.public[0].clone(),
        threshold: s.claim.threshold.try_into().unwrap_or(u32::MAX),
        quota_ppm: s.quota_ppm,
        context: files.public.get(3).cloned().unwrap_or_default(),
    });
    match (key, statement, proof_from_snarkjs(&files.proof)) {
        (Some(verifier), Ok(statement), Ok(proof)) => {
            let digest = proof.sha256().unwrap_or_default();
            let verified = verify(&verifier, &statement, &proof);
            report.check(
                "proof",
                match verified {
                    Ok(true) if digest == s.proof_sha256 => {
                        Ok("Groth16 on BN254 verifies against the key and the inputs".into())
                    }
                    Ok(true) => Err(format!(
                        "it verifies, but its sha256 is {digest}, the statement names {}",
                        s.proof_sha256
                    )),
                    Ok(false) => {
                        Err("the proof does not verify against the key and the inputs".into())
                    }
                    Err(e) => Err(e.to_string()),
                },
            );
        }
        (None, _, _) => report.not_checked("proof", "no trusted verifying key"),
        (_, Err(e), _) => report.fail("proof", format!("the statement: {e}")),
        (_, _, Err(e)) => report.fail("proof", format!("proof.json: {e}")),
    }

    // The statement id is what anyone recomputes from the statement.
    let commitment = files.public[0].parse().map_err(|_| ());
    let anchored = commitment
        .ok()
        .and_then(|c| anchored_statement(&s.claim, s.quota_ppm, c, &s.verifying_key_sha256).ok());
    let id_ok = report.check(
        "statement id",
        match &anchored {
            Some(a) if a.id() == s.statement_id => Ok(format!("{}", s.statement_id)),
            Some(a) => Err(format!(
                "the statement hashes to {}, statement.json says {}",
                a.id(),
                s.statement_id
            )),
            None => Err("the statement cannot be put in anchored form".into()),
        },
    );

    // A period proven over its daily commitments: they tile the period,
    // each is anchored as a member of its log day's batch, and their
    // aggregate is the commitment input.
    match (&s.days, s.circuit.as_str()) {
        (Some(days), "daily") => {
            let checked = files.public[0]
                .parse()
                .map_err(|_| "the commitment input is not a field element".to_owned())
                .and_then(|commitment| {
                    crate::daily::check_days(
                        &s.claim,
                        s.slots,
                        commitment,
                        ContextHash::of(&s.claim.claim()),
                        days,
                    )
                });
            report.check(
                "daily commitments",
                checked.map(|()| {
                    format!(
                        "the commitment is the aggregate of {} daily commitments, each a member of its log day's anchored batch",
                        days.len()
                    )
                }),
            );
        }
        (_, "daily") => report.fail("daily commitments", "the bundle lists no days"),
        _ => report.not_checked(
            "daily commitments",
            "proven over a vector committed at the close, not over days anchored as the period went",
        ),
    }

    match (rpc_url, anchored) {
        (None, _) => report.not_checked(
            "anchor",
            "no RPC URL given: nothing on chain was read (the attestation, its EAS, chain and \
             attester, the day anchors)",
        ),
        (_, None) => report.not_checked("anchor", "no statement to look for"),
        (Some(url), Some(anchored)) => {
            let expected = PeriodAnchor::new(
                anchored,
                crate::bundle::hex_word(&s.proof_sha256).unwrap_or_default(),
            );
            let evidence = Evidence::of(&files);
            let mut lines = Vec::new();
            if let Err(reason) =
                check_anchor(url, s, &expected, &evidence, id_ok, pins, &mut lines).await
            {
                lines.push(Check {
                    name: "anchor",
                    outcome: Outcome::Failed(reason),
                });
            }
            report.checks.extend(lines);
        }
    }
    report
}

/// The bundle's proof and inputs as the verifier contract takes them, to
/// compare with what a verified attestation stores.
struct Evidence {
    proof: Option<[U256; 8]>,
    inputs: Option<[U256; 4]>,
}

impl Evidence {
    fn of(files: &Files) -> Self {
        let words = |decimals: &[String]| -> Option<Vec<U256>> {
            decimals.iter().map(|d| d.parse().ok()).collect()
        };
        let proof = proof_from_snarkjs(&files.proof)
            .ok()
            .and_then(|p| words(&solidity_proof(&p)))
            .and_then(|w| w.try_into().ok());
        let inputs = words(&files.public).and_then(|w| w.try_into().ok());
        Self { proof, inputs }
    }
}

async fn check_anchor(
    url: &url::Url,
    s: &StatementFile,
    expected: &PeriodAnchor,
    evidence: &Evidence,
    id_ok: bool,
    pins: &Pins,
    lines: &mut Vec<Check>,
) -> Result<(), String> {
    let (location, readable) =
        where_anchored(pins.chain_id, pins.eas, s.anchor.chain_id, s.anchor.eas);
    lines.extend(location);
    if !readable {
        return Err("not read: the bundle names another EAS or chain than the pinned one".into());
    }
    let chain = Chain::reader(url.clone())
        .await
        .map_err(|e| e.to_string())?;
    if chain.chain_id() != s.anchor.chain_id {
        return Err(format!(
            "the RPC serves chain {}, the anchor is on chain {}",
            chain.chain_id(),
            s.anchor.chain_id
        ));
    }
    let found = slaproof_chain::attest::attestation_at(&chain, s.anchor.eas, s.anchor.uid)
        .await
        .map_err(|e| e.to_string())?
        .ok_or_else(|| {
            format!(
                "EAS at {} holds no attestation {}",
                s.anchor.eas, s.anchor.uid
            )
        })?;
    if found.revoked {
        return Err(format!("the attestation {} is revoked", found.uid));
    }
    let schema_text = match s.anchor.path.as_str() {
        "hash-only" => PERIOD_SCHEMA,
        "verified" => VERIFIED_SCHEMA,
        _ => BATCH_SCHEMA,
    };
    let holds = match s.anchor.path.as_str() {
        "hash-only" => match PeriodAnchor::from_data(&found.data) {
            Ok(data) if &data == expected => Ok("the attestation holds this statement, proof hash and id".into()),
            Ok(_) => Err("the attestation holds another statement".into()),
            Err(e) => Err(format!("the attestation's data is not a period anchor: {e}")),
        },
        "verified" => match VerifiedAnchor::from_data(&found.data) {
            Ok(data)
                if data.statement == expected.statement
                    && data.proofHash == expected.proofHash
                    && data.statementId == expected.statementId
                    && Some(data.proof) == evidence.proof
                    && Some(data.publicInputs) == evidence.inputs =>
            {
                Ok("the attestation holds this statement, id, proof and inputs, which the resolver verified on chain".into())
            }
            Ok(data)
                if data.statement == expected.statement && data.statementId == expected.statementId =>
            {
                Err("the attestation holds this statement, but another proof or other inputs than the bundle's".into())
            }
            Ok(_) => Err("the attestation holds another statement".into()),
            Err(e) => Err(format!("the attestation's data is not a verified anchor: {e}")),
        },
        "batched" => match (BatchRoot::from_data(&found.data), &s.anchor.inclusion_proof) {
            (Ok(root), Some(proof)) => {
                if StandardTree::verify(root.root, expected.statementId, proof) {
                    Ok(format!(
                        "the statement id is in the batch of {} under root {}",
                        root.count, root.root
                    ))
                } else {
                    Err(format!("the inclusion proof does not lead to the root {}", root.root))
                }
            }
            (Ok(_), None) => Err("a batched anchor needs an inclusion proof".into()),
            (Err(e), _) => Err(format!("the attestation's data is not a batch root: {e}")),
        },
        other => Err(format!("unknown anchoring path {other:?}")),
    };
    let holds = if id_ok {
        holds
    } else {
        Err("not compared: the statement id is wrong".into())
    };
    lines.push(line(
        if s.anchor.path == "batched" {
            "inclusion"
        } else {
            "anchor"
        },
        holds.map(|d| format!("{d}; UID {}, block time {}", found.uid, found.time)),
    ));
    lines.push(line(
        "attester",
        authorised(
            &chain,
            s.anchor.eas,
            found.schema,
            schema_text,
            found.attester,
        )
        .await,
    ));
    if let Some(days) = &s.days {
        let anchors = crate::daily::check_day_anchors(
            &chain,
            s.anchor.eas,
            days,
            found.attester,
            s.claim.period_end,
        )
        .await;
        lines.push(line(
            "day anchors",
            anchors
                .as_ref()
                .map(|a| a.summary.clone())
                .map_err(Clone::clone),
        ));
        // Days anchored late prove nothing wrong with the data, but not
        // that it was fixed before the outcome: not established, which
        // only the auditor may accept (`--allow-unpinned timely`).
        let timing = match &anchors {
            Ok(a) => match a.in_time(days.len()) {
                Ok(d) => Outcome::Passed(d),
                Err(why) => Outcome::NotChecked(why),
            },
            Err(_) => Outcome::NotChecked("the day anchors were not read".into()),
        };
        lines.push(Check {
            name: "days in time",
            outcome: timing,
        });
    }
    lines.push(pin(
        "attester pinned",
        pins.attester,
        found.attester,
        "the attestation's attester",
        "--attester with the provider's attester address",
    ));
    Ok(())
}

/// Whether the schema's resolver authorises `attester`.
pub async fn authorised(
    chain: &Chain,
    eas: Address,
    schema: B256,
    schema_text: &str,
    attester: Address,
) -> Result<String, String> {
    let eas = &EAS::new(eas, chain.provider());
    let registry = chain
        .read("reading the registry", || async move {
            eas.getSchemaRegistry().call().await
        })
        .await
        .map_err(|e| e.to_string())?;
    let registry = &SchemaRegistry::new(registry, chain.provider());
    let record = chain
        .read("reading the schema", || async move {
            registry.getSchema(schema).call().await
        })
        .await
        .map_err(|e| e.to_string())?;
    if record.schema != schema_text {
        return Err(format!(
            "the attestation is under a schema that is not slaproof's for this path: {:?}",
            record.schema
        ));
    }
    if record.resolver == Address::ZERO {
        return Err(format!(
            "the schema {schema} has no resolver: anyone may attest under it"
        ));
    }
    let resolver = &AttesterResolver::new(record.resolver, chain.provider());
    let allowed = chain
        .read("reading the attester set", || async move {
            resolver.isAttester(attester).call().await
        })
        .await
        .map_err(|e| e.to_string())?;
    if allowed {
        Ok(format!(
            "{attester} is authorised by the schema's resolver {}",
            record.resolver
        ))
    } else {
        Err(format!(
            "{attester} is not authorised by the schema's resolver {}",
            record.resolver
        ))
    }
}
