//! The chain client (`slaproof-chain`, alloy) on a real anvil: it deploys
//! slaproof from the committed artifacts, anchors on each path and reads the
//! anchors back (and so does Foundry's `cast`), refuses an unauthorised
//! attester, and loses nothing to a dropped transaction, a reorg, an RPC
//! outage or a second worker with the same key.
//!
//! Needs `npm ci --prefix contracts`; without it the tests print a loud
//! SKIPPED message, except under `CI`, where they fail.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use alloy::primitives::{B256, Bytes, U256, keccak256};
use alloy::providers::Provider;
use alloy::sol_types::SolError;
use secrecy::SecretString;
use slaproof_chain::anchor::{BatchRoot, PeriodAnchor, Statement, VerifiedAnchor};
use slaproof_chain::anvil::{self, Anvil};
use slaproof_chain::attest;
use slaproof_chain::contracts::EAS;
use slaproof_chain::merkle::StandardTree;
use slaproof_chain::{Chain, ChainError, Deployment, Settings};
use slaproof_circuits::export::{solidity_proof, solidity_verifier};
use slaproof_circuits::{CircuitKeys, build, prove, verify};
use slaproof_tests::chain;

/// anvil's second development account: public, never authorised here.
const STRANGER_KEY: &str = "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d";

fn anvil_or_skip(test: &str) -> Option<Anvil> {
    chain::tools_or_skip(test, &[])?;
    let root = chain::contracts_dir().parent().unwrap().to_path_buf();
    let binary = anvil::binary(&root).expect("anvil is installed");
    Some(Anvil::start(&binary, 0, None).expect("anvil starts"))
}

/// A client of `node` with its dev key, and slaproof deployed there.
async fn deployed(node: &Anvil) -> (Chain, Deployment) {
    let chain = Chain::connect(&settings(node)).await.unwrap();
    let deployment = slaproof_chain::deploy(&chain, &Default::default())
        .await
        .unwrap();
    (chain, deployment)
}

fn settings(anvil: &Anvil) -> Settings {
    Settings::local(anvil.url().clone(), anvil::dev_key())
}

async fn raw(chain: &Chain, method: &'static str, params: serde_json::Value) -> serde_json::Value {
    chain
        .provider()
        .raw_request::<_, serde_json::Value>(method.into(), params)
        .await
        .unwrap_or_else(|e| panic!("{method}: {e}"))
}

/// Waits until the node's pool holds a transaction (mining is off).
async fn until_pending(chain: &Chain, poll: Duration) {
    loop {
        let pool = raw(chain, "txpool_status", serde_json::json!([])).await;
        if pool["pending"] != "0x0" {
            return;
        }
        tokio::time::sleep(poll).await;
    }
}

/// Empties the pool once the client's transaction is in it, lets `meanwhile`
/// act on the node, then mines the client's transaction when it is sent
/// again (the client notices after `resend_after_secs`, 2 s locally).
async fn drop_then_mine_the_resend(chain: &Chain, meanwhile: impl AsyncFnOnce()) {
    until_pending(chain, Duration::from_millis(20)).await;
    raw(chain, "anvil_dropAllTransactions", serde_json::json!([])).await;
    meanwhile().await;
    until_pending(chain, Duration::from_millis(300)).await;
    raw(chain, "evm_mine", serde_json::json!([])).await;
}

fn statement(n: u64) -> Statement {
    Statement {
        tenantHash: keccak256("provider"),
        slaHash: keccak256("acme-enterprise"),
        objective: keccak256("p99-latency"),
        periodStart: 1_793_491_200 + n,
        periodEnd: 1_796_083_200 + n,
        threshold: 3_200_000,
        fractionPpm: 990_000,
        commitment: keccak256(n.to_be_bytes()),
        vkHash: B256::repeat_byte(9),
    }
}

/// The `cast` binary `@foundry-rs/cast` installs, if it is there.
fn cast_binary() -> Option<PathBuf> {
    let scope = chain::contracts_dir().join("node_modules/@foundry-rs");
    [
        "cast-linux-amd64/bin/cast",
        "cast-linux-arm64/bin/cast",
        "cast/dist/cast",
    ]
    .into_iter()
    .map(|p| scope.join(p))
    .find(|p| p.is_file())
}

#[tokio::test]
async fn slaproof_deploys_from_its_artifacts_and_anchors_on_every_path() {
    let Some(node) = anvil_or_skip("slaproof_deploys_from_its_artifacts_and_anchors_on_every_path")
    else {
        return;
    };
    let chain = Chain::connect(&settings(&node)).await.unwrap();
    assert_eq!(chain.chain_id(), 31337);

    // Deploy: EAS, the registry, both resolvers, the batch checker, three
    // schemas; the deployer authorised on both resolvers.
    let deployment = slaproof_chain::deploy(&chain, &Default::default())
        .await
        .unwrap();
    let status = slaproof_chain::status(&chain, &deployment).await.unwrap();
    assert!(status.is_complete(), "{status:#?}");
    assert!(status.attester_authorised, "{status:#?}");
    // The record survives a round trip through its file.
    let dir = tempfile::tempdir().unwrap();
    let record = dir.path().join("deployment.json");
    deployment.write(&record).unwrap();
    assert_eq!(Deployment::read(&record).unwrap(), deployment);
    // A second deploy against the same EAS reuses the schemas' UIDs' rules:
    // new resolvers make new schemas, the registry is not asked twice for one.
    let again = slaproof_chain::deploy(
        &chain,
        &slaproof_chain::Addresses {
            schema_registry: Some(deployment.schema_registry),
            eas: Some(deployment.eas),
        },
    )
    .await
    .unwrap();
    assert_eq!(again.eas, deployment.eas);
    assert_ne!(again.schemas.period, deployment.schemas.period);

    // Hash-only.
    let anchor = PeriodAnchor::new(statement(1), keccak256("proof bytes"));
    let attested = attest::attest_period(&chain, &deployment, &anchor)
        .await
        .unwrap();
    let back = attest::attestation(&chain, &deployment, attested.uid)
        .await
        .unwrap()
        .expect("the attestation is there");
    assert_eq!(back.schema, deployment.schemas.period);
    assert_eq!(back.attester, chain.address());
    assert!(!back.revocable);
    assert_eq!(PeriodAnchor::from_data(&back.data).unwrap(), anchor);
    assert_eq!(anchor.statementId, anchor.statement.id());
    eprintln!("hash-only attestation: {} gas", attested.gas_used);

    // Foundry's cast reads it back by its UID, knowing only EAS's ABI.
    match cast_binary() {
        Some(cast) => {
            let output = Command::new(cast)
                .args([
                    "call",
                    &deployment.eas.to_string(),
                    "getAttestation(bytes32)((bytes32,bytes32,uint64,uint64,uint64,bytes32,address,address,bool,bytes))",
                    &attested.uid.to_string(),
                    "--rpc-url",
                    node.url().as_str(),
                ])
                .output()
                .expect("cast runs");
            assert!(
                output.status.success(),
                "cast: {}",
                String::from_utf8_lossy(&output.stderr)
            );
            let text = String::from_utf8_lossy(&output.stdout).to_lowercase();
            let data_hex = alloy::primitives::hex::encode(anchor.data());
            for expected in [
                attested.uid.to_string(),
                deployment.schemas.period.to_string(),
                chain.address().to_string().to_lowercase(),
                data_hex,
            ] {
                assert!(
                    text.contains(&expected),
                    "cast's answer lacks {expected}:\n{text}"
                );
            }
        }
        None => {
            assert!(
                !chain::in_ci(),
                "cast is missing under CI: npm ci --prefix contracts"
            );
            eprintln!("\n!!! SKIPPED the cast read-back: npm ci --prefix contracts !!!\n");
        }
    }

    // Anyone else's key is refused by the resolver (EAS reverts).
    let stranger = Chain::connect(&Settings::local(
        node.url().clone(),
        SecretString::from(STRANGER_KEY),
    ))
    .await
    .unwrap();
    let refused = attest::attest_period(&stranger, &deployment, &anchor)
        .await
        .unwrap_err();
    assert_invalid_attestation(&refused);

    // Verified: a real key and proof, the verifier generated from the key.
    let keys = CircuitKeys::setup(64).unwrap();
    let context = chain::sample_context();
    let (proven, opening) = build(64, &[(40, 990), (70, 10)], 50, 990_000, context).unwrap();
    let proof = prove(&keys, &proven, &opening).unwrap();
    assert!(verify(keys.verifier(), &proven, &proof).unwrap());
    let inputs = proven
        .public_inputs()
        .map(|x| x.to_string().parse::<U256>().unwrap());
    let source = dir.path().join("Verifier.sol");
    std::fs::write(
        &source,
        solidity_verifier(keys.verifier().verifying_key()).unwrap(),
    )
    .unwrap();
    let out = dir.path().join("verifier");
    chain::compile(&[&source], &out, None);
    let code: Bytes = chain::creation_code(&chain::artifact(&out, "Verifier")).into();
    let (verifier, _) = chain.deploy(code, "deploying a verifier").await.unwrap();
    let vk_hash: B256 = keys.verifier().sha256().unwrap().parse().unwrap();
    slaproof_chain::register_verifier(&chain, &deployment, vk_hash, verifier)
        .await
        .unwrap();
    let verified_statement = Statement {
        threshold: 50,
        fractionPpm: 990_000,
        commitment: inputs[0].into(),
        vkHash: vk_hash,
        ..statement(2)
    };
    let proof_words = solidity_proof(&proof).map(|x| x.parse::<U256>().unwrap());
    let good = VerifiedAnchor::new(
        verified_statement.clone(),
        proof.sha256().unwrap().parse().unwrap(),
        proof_words,
        inputs,
    );
    let attested = attest::attest_verified(&chain, &deployment, &good)
        .await
        .unwrap();
    let back = attest::attestation(&chain, &deployment, attested.uid)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(VerifiedAnchor::from_data(&back.data).unwrap(), good);
    eprintln!("verified attestation: {} gas", attested.gas_used);
    // A changed proof word is refused, and nothing is attested.
    let mut bad = good.clone();
    bad.proof[0] += U256::from(1);
    assert_invalid_attestation(
        &attest::attest_verified(&chain, &deployment, &bad)
            .await
            .unwrap_err(),
    );

    // Batched: 100 statements, one root, inclusion checked on chain.
    let ids: Vec<B256> = (0..100).map(|n| statement(100 + n).id()).collect();
    let tree = StandardTree::of(&ids);
    let root = BatchRoot {
        root: tree.root(),
        epochStart: 1_796_083_200,
        epochEnd: 1_796_169_600,
        count: 100,
    };
    let attested = attest::attest_batch_root(&chain, &deployment, &root)
        .await
        .unwrap();
    let back = attest::attestation(&chain, &deployment, attested.uid)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(BatchRoot::from_data(&back.data).unwrap(), root);
    assert!(
        attest::batch_includes(&chain, &deployment, tree.root(), ids[42], &tree.proof(42))
            .await
            .unwrap()
    );
    let outsider = statement(7).id();
    assert!(
        !attest::batch_includes(&chain, &deployment, tree.root(), outsider, &tree.proof(42))
            .await
            .unwrap()
    );
    eprintln!("batch root attestation: {} gas", attested.gas_used);

    // An unknown UID reads as none.
    assert!(
        attest::attestation(&chain, &deployment, B256::repeat_byte(1))
            .await
            .unwrap()
            .is_none()
    );
}

fn assert_invalid_attestation(error: &ChainError) {
    match error {
        ChainError::Refused {
            data: Some(data), ..
        } => assert_eq!(
            data.as_ref(),
            EAS::InvalidAttestation::SELECTOR,
            "refused for another reason: {error}"
        ),
        other => panic!("expected EAS's InvalidAttestation, got {other}"),
    }
}

#[tokio::test]
async fn two_workers_with_one_key_never_collide() {
    let Some(node) = anvil_or_skip("two_workers_with_one_key_never_collide") else {
        return;
    };
    let (first, deployment) = deployed(&node).await;
    let second = Chain::connect(&settings(&node)).await.unwrap();
    let before = first
        .provider()
        .get_transaction_count(first.address())
        .await
        .unwrap();
    let run = async |chain: &Chain, base: u64| {
        let mut uids = Vec::new();
        for n in 0..6 {
            let anchor = PeriodAnchor::new(statement(base + n), B256::ZERO);
            uids.push(
                attest::attest_period(chain, &deployment, &anchor)
                    .await
                    .unwrap()
                    .uid,
            );
        }
        uids
    };
    let (a, b) = tokio::join!(run(&first, 1_000), run(&second, 2_000));
    let after = first
        .provider()
        .get_transaction_count(first.address())
        .await
        .unwrap();
    assert_eq!(
        after - before,
        12,
        "one transaction per attestation, no gaps"
    );
    for uid in a.iter().chain(&b) {
        assert!(
            attest::attestation(&first, &deployment, *uid)
                .await
                .unwrap()
                .is_some()
        );
    }
}

#[tokio::test]
async fn a_dropped_or_reorged_transaction_is_sent_again() {
    let Some(node) = anvil_or_skip("a_dropped_or_reorged_transaction_is_sent_again") else {
        return;
    };
    let (chain, deployment) = deployed(&node).await;

    // Dropped: mining off, the pool emptied once the send is in it.
    raw(&chain, "evm_setAutomine", serde_json::json!([false])).await;
    let anchor = PeriodAnchor::new(statement(1), B256::ZERO);
    let sending = attest::attest_period(&chain, &deployment, &anchor);
    let dropper = drop_then_mine_the_resend(&chain, async || {});
    let (attested, ()) = tokio::join!(sending, dropper);
    let attested = attested.unwrap();
    assert!(
        attest::attestation(&chain, &deployment, attested.uid)
            .await
            .unwrap()
            .is_some()
    );

    // Taken: dropped again, and meanwhile another transaction of the same
    // key (anvil signs for its dev account) takes the nonce and is mined.
    // The client finds its nonce used by something else and signs again.
    let anchor = PeriodAnchor::new(statement(3), B256::ZERO);
    let sending = attest::attest_period(&chain, &deployment, &anchor);
    let taker = drop_then_mine_the_resend(&chain, async || {
        let me = chain.address().to_string();
        raw(
            &chain,
            "eth_sendTransaction",
            serde_json::json!([{ "from": me, "to": me, "value": "0x1" }]),
        )
        .await;
        raw(&chain, "evm_mine", serde_json::json!([])).await;
    });
    let (attested, ()) = tokio::join!(sending, taker);
    let attested = attested.unwrap();
    assert!(
        attest::attestation(&chain, &deployment, attested.uid)
            .await
            .unwrap()
            .is_some()
    );
    raw(&chain, "evm_setAutomine", serde_json::json!([true])).await;

    // Reorged: three confirmations asked; the transaction's block is
    // replaced once mined, before the third.
    let mut settings = settings(&node);
    settings.confirmations = 3;
    let patient = Chain::connect(&settings).await.unwrap();
    let anchor = PeriodAnchor::new(statement(2), B256::ZERO);
    let start = chain.provider().get_block_number().await.unwrap();
    let sending = attest::attest_period(&patient, &deployment, &anchor);
    let reorger = async {
        while chain.provider().get_block_number().await.unwrap() == start {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        raw(&chain, "anvil_reorg", serde_json::json!([1, []])).await;
        for _ in 0..200 {
            tokio::time::sleep(Duration::from_millis(100)).await;
            raw(&chain, "evm_mine", serde_json::json!([])).await;
        }
    };
    let attested = tokio::select! {
        attested = sending => attested.unwrap(),
        () = reorger => panic!("the reorged attestation never became final"),
    };
    let back = attest::attestation(&chain, &deployment, attested.uid)
        .await
        .unwrap()
        .expect("the attestation sent again is on the canonical chain");
    assert_eq!(PeriodAnchor::from_data(&back.data).unwrap(), anchor);
}

#[tokio::test]
async fn an_rpc_outage_delays_and_limits_refuse_before_anything_is_sent() {
    let Some(probe) =
        anvil_or_skip("an_rpc_outage_delays_and_limits_refuse_before_anything_is_sent")
    else {
        return;
    };
    // A port nobody listens on yet; anvil starts there a second later.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    drop(probe);
    let url: url::Url = format!("http://127.0.0.1:{port}").parse().unwrap();
    let waiting = Settings::local(url, anvil::dev_key());
    let connecting = Chain::connect(&waiting);
    let root = chain::contracts_dir().parent().unwrap().to_path_buf();
    let binary = anvil::binary(&root).unwrap();
    let starting = async move {
        tokio::time::sleep(Duration::from_secs(1)).await;
        Anvil::start(&binary, port, None).expect("anvil starts on the freed port")
    };
    let (connected, node) = tokio::join!(connecting, starting);
    let chain = connected.expect("the client waited for the node");
    let deployment = slaproof_chain::deploy(&chain, &Default::default())
        .await
        .unwrap();

    // The spending limit and the fee cap refuse before signing.
    let nonce = chain
        .provider()
        .get_transaction_count(chain.address())
        .await
        .unwrap();
    let mut frugal = settings(&node);
    frugal.daily_spend_limit_gwei = 1;
    let frugal = Chain::connect(&frugal).await.unwrap();
    let anchor = PeriodAnchor::new(statement(1), B256::ZERO);
    let error = attest::attest_period(&frugal, &deployment, &anchor)
        .await
        .unwrap_err();
    assert!(matches!(error, ChainError::SpendLimit { .. }), "{error}");
    assert!(error.is_transient());
    let mut capped = settings(&node);
    capped.max_fee_per_gas_gwei = 0;
    let capped = Chain::connect(&capped).await.unwrap();
    let error = attest::attest_period(&capped, &deployment, &anchor)
        .await
        .unwrap_err();
    assert!(matches!(error, ChainError::FeeAboveCap { .. }), "{error}");
    assert!(error.to_string().contains("chain.max_fee_per_gas_gwei"));
    assert_eq!(
        chain
            .provider()
            .get_transaction_count(chain.address())
            .await
            .unwrap(),
        nonce,
        "nothing was sent"
    );
    // The key never shows in the client's Debug.
    let shown = format!("{chain:?}");
    assert!(!shown.contains(&anvil::DEV_KEY[2..]), "{shown}");
    assert!(shown.contains("attester"), "{shown}");
}
