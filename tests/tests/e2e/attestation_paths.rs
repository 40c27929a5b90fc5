//! The verified and batched anchoring paths end to end: an SLA document
//! choosing its path, the worker proving November's results and anchoring
//! them on a real anvil on that path, and the auditor's checks passing on
//! the bundles stored. Verified: refused (and said why) until the key's
//! verifier contract is generated, compiled by solc-js, deployed and
//! registered; then the resolver verifies each proof on chain. Batched: the
//! statements proven within one epoch wait for its end, then go on chain
//! as one root, each bundle carrying its inclusion proof.

use std::time::Duration;

use slaproof_attestation::audit::{Pins, audit};
use slaproof_attestation::verifiers::register_missing;
use slaproof_attestation::worker::Worker;
use slaproof_chain::anvil::Anvil;
use slaproof_store::attestations::{self, Attestation};
use slaproof_tests::scenario::Scenario;

use crate::attestation::{
    SLA, anchored_worker, anchors_under, anvil_binary, attestations_of, chain_on,
    closed_november_under, keys_64, provable, solc_js,
};

/// The November SLA, anchored on `path` (proven over the close's counts
/// when the days cannot be: the workers here have no daily keys).
pub(crate) fn sla_on(path: &str) -> String {
    let doc = SLA.replace(
        "  attestation: {circuit: threshold}\n",
        &format!("  attestation: {{anchor: {path}, circuit: threshold}}\n"),
    );
    assert_ne!(doc, SLA);
    doc
}

/// Runs the worker until every provable attestation is anchored, for at most `secs`.
pub(crate) async fn until_anchored(s: &Scenario, w: &Worker, secs: u64) -> Vec<Attestation> {
    let deadline = std::time::Instant::now() + Duration::from_secs(secs);
    loop {
        w.work_due().await.unwrap();
        let rows = provable(attestations_of(s).await);
        if rows.iter().all(|r| r.status == "anchored") {
            return rows;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "not all anchored in {secs} s: {rows:#?}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// Exports `row`'s stored bundle into a folder and runs the auditor's checks on it.
pub(crate) async fn audited(
    s: &Scenario,
    row: &Attestation,
    node: &Anvil,
    pins: &Pins,
) -> (tempfile::TempDir, slaproof_attestation::audit::Report) {
    let dir = tempfile::tempdir().unwrap();
    let mut tx = s.db.tenant_tx(s.tenant).await.unwrap();
    let bundle = attestations::bundle(&mut tx, row.id)
        .await
        .unwrap()
        .unwrap();
    tx.commit().await.unwrap();
    slaproof_attestation::export::write(&bundle, dir.path()).unwrap();
    let report = audit(dir.path(), Some(node.url()), pins).await;
    (dir, report)
}

#[tokio::test(flavor = "multi_thread")]
async fn the_verified_path_waits_for_the_keys_verifier_then_the_chain_verifies_every_proof() {
    let Some(binary) = anvil_binary() else {
        return;
    };
    let Some(solc) = solc_js() else {
        return;
    };
    let s = closed_november_under(&sla_on("verified")).await;
    let rows = provable(attestations_of(&s).await);
    assert_eq!(rows.len(), 3);
    assert!(rows.iter().all(|r| r.anchor_path == "verified"), "{rows:?}");

    let node = Anvil::start(&binary, 0, None).expect("anvil starts");
    let (chain, deployment) = chain_on(&node, 30).await;
    let w = anchored_worker(&s, &chain, &deployment).await;

    // No verifier for the key yet: proven, not anchored, and the reason
    // names the command that mends it. Nothing reached the chain.
    w.work_due().await.unwrap();
    for row in provable(attestations_of(&s).await) {
        assert_eq!(row.status, "proven", "{row:?}");
        let reason = row.reason.unwrap_or_default();
        assert!(
            reason.contains("no verifier is registered") && reason.contains("register-verifiers"),
            "{reason}"
        );
    }
    assert_eq!(
        anchors_under(&chain, &deployment, deployment.schemas.verified).await,
        0
    );

    // The key's verifier generated, compiled, deployed and registered; a
    // second call finds it and does nothing.
    let keys = vec![(64, keys_64().verifier().clone())];
    let done = register_missing(&chain, &deployment, &keys, &solc)
        .await
        .unwrap();
    assert!(done.len() == 1 && done[0].new, "{done:?}");
    let again = register_missing(&chain, &deployment, &keys, &solc)
        .await
        .unwrap();
    assert!(
        !again[0].new && again[0].verifier == done[0].verifier,
        "{again:?}"
    );

    // The retries anchor each once on the verified schema; the auditor's
    // checks pass, reading the anchor and the resolver's verification.
    let rows = until_anchored(&s, &w, 60).await;
    assert_eq!(
        anchors_under(&chain, &deployment, deployment.schemas.verified).await,
        3
    );
    assert_eq!(
        anchors_under(&chain, &deployment, deployment.schemas.period).await,
        0
    );
    let pins = Pins {
        vk_sha256: rows[0].vk_sha256.clone(),
        eas: Some(deployment.eas),
        attester: Some(chain.address()),
        chain_id: Some(chain.chain_id()),
        ceremony: None,
    };
    for row in &rows {
        assert_eq!(row.anchor.as_ref().unwrap()["path"], "verified");
        assert!(row.reason.is_none(), "{row:?}");
        let (_dir, report) = audited(&s, row, &node, &pins).await;
        assert!(report.failed().is_empty(), "{}", report.render());
        // Over a vector committed at the close, with a development key:
        // the days and the key's setup are not checked.
        assert_eq!(
            report.not_checked_names(),
            vec!["key setup", "daily commitments"],
            "{}",
            report.render()
        );
    }
    assert_eq!(s.told_of("attestation.anchored").await.len(), 3);
    node.stop();
}

#[tokio::test(flavor = "multi_thread")]
async fn the_batched_path_anchors_an_epochs_statements_as_one_root_when_the_epoch_ends() {
    let Some(binary) = anvil_binary() else {
        return;
    };
    let s = closed_november_under(&sla_on("batched")).await;
    let node = Anvil::start(&binary, 0, None).expect("anvil starts");
    let (chain, deployment) = chain_on(&node, 30).await;
    let mut w = anchored_worker(&s, &chain, &deployment).await;
    // Ten-second epochs, started at the beginning of one, so that three
    // proofs are made well before it ends.
    const EPOCH: u64 = 10;
    w.settings.batch_epoch_secs = EPOCH;
    let now = chrono::Utc::now();
    let into = (now.timestamp_millis() % (EPOCH as i64 * 1000)) as u64;
    tokio::time::sleep(Duration::from_millis(EPOCH * 1000 - into + 50)).await;

    // Proven and gathered into the epoch's batch; nothing on chain yet.
    assert_eq!(w.work_due().await.unwrap(), 3);
    let rows = provable(attestations_of(&s).await);
    assert!(rows.iter().all(|r| r.status == "proven"), "{rows:#?}");
    let batch = rows[0].batch_id.expect("in a batch");
    assert!(rows.iter().all(|r| r.batch_id == Some(batch)), "{rows:#?}");
    assert_eq!(
        anchors_under(&chain, &deployment, deployment.schemas.batch_root).await,
        0
    );
    // Not due again before the epoch ends.
    assert_eq!(w.work_due().await.unwrap(), 0);

    // Once it has ended: one root on chain for the three, each bundle with
    // its inclusion proof, each fact told once.
    let rows = until_anchored(&s, &w, 3 * EPOCH).await;
    assert_eq!(
        anchors_under(&chain, &deployment, deployment.schemas.batch_root).await,
        1
    );
    assert_eq!(
        anchors_under(&chain, &deployment, deployment.schemas.period).await,
        0
    );
    let uid = &rows[0].anchor.as_ref().unwrap()["uid"];
    assert!(
        rows.iter()
            .all(|r| &r.anchor.as_ref().unwrap()["uid"] == uid
                && r.anchor.as_ref().unwrap()["count"] == 3),
        "{rows:#?}"
    );
    assert_eq!(s.told_of("attestation.anchored").await.len(), 3);
    assert_eq!(w.work_due().await.unwrap(), 0);
    let pins = Pins {
        vk_sha256: rows[0].vk_sha256.clone(),
        eas: Some(deployment.eas),
        attester: Some(chain.address()),
        chain_id: Some(chain.chain_id()),
        ceremony: None,
    };
    for row in &rows {
        assert_eq!(row.anchor.as_ref().unwrap()["path"], "batched");
        let (dir, report) = audited(&s, row, &node, &pins).await;
        assert!(report.failed().is_empty(), "{}", report.render());
        // Over a vector committed at the close, with a development key:
        // the days and the key's setup are not checked.
        assert_eq!(
            report.not_checked_names(),
            vec!["key setup", "daily commitments"],
            "{}",
            report.render()
        );
        // Another member's proof does not take this statement to the root.
        let other = rows.iter().find(|o| o.id != row.id).unwrap();
        let path = dir.path().join("statement.json");
        let mut statement: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        let proof = &other.anchor.as_ref().unwrap()["inclusionProof"];
        statement["anchor"]["inclusion_proof"] = proof.clone();
        if statement["anchor"]["inclusion_proof"] != row.anchor.as_ref().unwrap()["inclusionProof"]
        {
            std::fs::write(&path, serde_json::to_vec(&statement).unwrap()).unwrap();
            let report = audit(dir.path(), Some(node.url()), &pins).await;
            assert!(
                report.failed().contains(&"inclusion"),
                "{}",
                report.render()
            );
        }
    }
    node.stop();
}
