//! EAS on a real anvil, the hash-only path: SchemaRegistry and EAS from `@ethereum-attestation-service/eas-contracts`, slaproof's period-attestation schema, and one statement attested and read back.
//!
//! Needs `npm ci --prefix contracts` (solc, EAS and anvil from npm); without
//! it the test prints a loud SKIPPED message, except under `CI`, where it
//! fails.

use serde_json::json;
use slaproof_tests::chain::abi::{self, Kind, Token};
use slaproof_tests::chain::eas::{self, Eas};
use slaproof_tests::chain::{self, Anvil, find_log, hex_u64, keccak, topic_word, unhex};

/// slaproof's schema for one period's proven result. Hashes, not names:
/// an attestation is public, the tenant's and the SLA's identifiers are not.
/// The fields up to `vkHash` are the statement; `proofHash` says which proof
/// was checked, and `statementId` names the statement (see [`Statement::id`]).
const PERIOD_SCHEMA: &str = "bytes32 tenantHash,bytes32 slaHash,bytes32 objective,\
uint64 periodStart,uint64 periodEnd,uint64 threshold,uint32 fractionPpm,\
bytes32 commitment,bytes32 vkHash,bytes32 proofHash,bytes32 statementId";

const GET_SCHEMA: &str = "getSchema(bytes32)";
const ATTESTED: &str = "Attested(address,address,bytes32,bytes32)";

/// One period's proven result, as the schema's first nine fields carry it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Statement {
    tenant_hash: [u8; 32],
    sla_hash: [u8; 32],
    objective: [u8; 32],
    period_start: u64,
    period_end: u64,
    threshold: u64,
    fraction_ppm: u32,
    commitment: [u8; 32],
    vk_hash: [u8; 32],
}

impl Statement {
    fn tokens(&self) -> Vec<Token> {
        vec![
            abi::bytes32(self.tenant_hash),
            abi::bytes32(self.sla_hash),
            abi::bytes32(self.objective),
            abi::uint(self.period_start.into()),
            abi::uint(self.period_end.into()),
            abi::uint(self.threshold.into()),
            abi::uint(self.fraction_ppm.into()),
            abi::bytes32(self.commitment),
            abi::bytes32(self.vk_hash),
        ]
    }

    fn from_tokens(tokens: &[Token]) -> Statement {
        let uint64 = |t: &Token| u64::try_from(t.uint()).expect("a uint64 field");
        Statement {
            tenant_hash: tokens[0].word(),
            sla_hash: tokens[1].word(),
            objective: tokens[2].word(),
            period_start: uint64(&tokens[3]),
            period_end: uint64(&tokens[4]),
            threshold: uint64(&tokens[5]),
            fraction_ppm: u32::try_from(tokens[6].uint()).expect("a uint32 field"),
            commitment: tokens[7].word(),
            vk_hash: tokens[8].word(),
        }
    }

    /// keccak-256 of the ABI-encoded statement: what a contract gets from
    /// `keccak256(abi.encode(tenantHash, …, vkHash))`. Not the proof: a
    /// Groth16 proof can be re-randomised, the statement cannot.
    fn id(&self) -> [u8; 32] {
        keccak(&abi::encode(&self.tokens()))
    }

    /// The attestation's `data`: the statement, the proof hash and the statement id.
    fn attestation_data(&self, proof_hash: [u8; 32]) -> Vec<u8> {
        let mut tokens = self.tokens();
        tokens.push(abi::bytes32(proof_hash));
        tokens.push(abi::bytes32(self.id()));
        abi::encode(&tokens)
    }
}

fn sample_statement() -> Statement {
    Statement {
        tenant_hash: keccak(b"ten_01HZX4R6K8M2N3P4Q5R6S7T8V9"),
        sla_hash: keccak(b"sla_01HZX4R6K8M2N3P4Q5R6S7T8W0"),
        objective: keccak(b"ttft_ms p99 <= 800"),
        // November 2026 in UTC, [start, end).
        period_start: 1_793_491_200,
        period_end: 1_796_083_200,
        threshold: 800,
        fraction_ppm: 990_000,
        commitment: keccak(b"commitment"),
        vk_hash: keccak(b"verifying key"),
    }
}

fn address_bytes(address: &str) -> Vec<u8> {
    let bytes = unhex(address);
    assert_eq!(bytes.len(), 20, "an address: {address}");
    bytes
}

#[tokio::test]
async fn a_statement_attested_on_eas_reads_back_with_its_statement_id() {
    let Some(anvil_bin) = chain::tools_or_skip(
        "a_statement_attested_on_eas_reads_back_with_its_statement_id",
        &[eas::PACKAGE, eas::SOLC_PACKAGE, eas::OPENZEPPELIN_PACKAGE],
    ) else {
        return;
    };

    // Arrange: EAS compiled from the npm package with the compiler it pins.
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let warnings = eas::compile(&out);
    if !warnings.trim().is_empty() {
        eprintln!("solc's warnings on EAS:\n{warnings}");
    }

    let anvil = Anvil::start(&anvil_bin);
    let rpc = anvil.rpc();
    let from = rpc.dev_account().await;
    let deployed = Eas::deploy(&rpc, &from, &out).await;
    let version = deployed.abi["compiler"]["version"].as_str().unwrap();
    assert!(
        version.starts_with(&format!("{}+", eas::SOLC)),
        "EAS compiled with {version}"
    );
    let (registry, registry_gas) = (&deployed.registry, deployed.registry_gas);
    let (eas, eas_gas) = (&deployed.address, deployed.gas);

    // Act 1: register the schema, no resolver, not revocable.
    let (schema_uid, receipt) = deployed
        .register(&rpc, &from, PERIOD_SCHEMA, None, false)
        .await;
    let register_gas = hex_u64(&receipt["gasUsed"]);

    // Assert 1: the UID is the registry's keccak256(abi.encodePacked(schema,
    // resolver, revocable)), and getSchema gives the record back.
    assert_eq!(
        schema_uid,
        eas::schema_uid(PERIOD_SCHEMA, None, false),
        "schema UID"
    );
    let answer = rpc
        .view(
            registry,
            &abi::call(
                chain::selector(&deployed.registry_abi, GET_SCHEMA),
                &[abi::bytes32(schema_uid)],
            ),
            "getSchema",
        )
        .await;
    let record = &abi::decode(
        &answer,
        &[Kind::Tuple(vec![
            Kind::Word,
            Kind::Word,
            Kind::Word,
            Kind::Bytes,
        ])],
    )[0];
    let record = record.items();
    assert_eq!(record[0].word(), schema_uid, "getSchema: uid");
    assert_eq!(
        record[1],
        abi::address(eas::ZERO_ADDRESS),
        "getSchema: no resolver"
    );
    assert_eq!(record[2], abi::boolean(false), "getSchema: not revocable");
    assert_eq!(
        String::from_utf8(record[3].bytes().to_vec()).unwrap(),
        PERIOD_SCHEMA,
        "getSchema: the schema string"
    );

    // Act 2: attest one statement on the hash-only path.
    let statement = sample_statement();
    let proof_hash = keccak(b"proof bytes");
    let data = statement.attestation_data(proof_hash);
    // No recipient, no expiry, not revocable, no reference, no value.
    let attest = deployed.attest_call(schema_uid, data.clone());
    let receipt = rpc.transact(&from, Some(eas), &attest, "attest").await;
    let attest_gas = hex_u64(&receipt["gasUsed"]);
    let attested = find_log(&receipt, eas, ATTESTED);
    assert_eq!(
        topic_word(attested, 1),
        abi::address(eas::ZERO_ADDRESS).word()
    );
    assert_eq!(topic_word(attested, 2), abi::address(&from).word());
    assert_eq!(topic_word(attested, 3), schema_uid, "Attested: schema");
    let uid: [u8; 32] = unhex(attested["data"].as_str().unwrap())
        .try_into()
        .expect("Attested's data is the UID");

    // Assert 2: getAttestation gives the statement back under the same UID.
    let a = deployed.attestation(&rpc, uid).await;
    assert_eq!(a[0].word(), uid, "uid");
    assert_eq!(a[1].word(), schema_uid, "schema");
    let time = u64::try_from(a[2].uint()).unwrap();
    assert!(time > 0, "time is set");
    assert_eq!(a[3].uint(), 0, "expirationTime");
    assert_eq!(a[4].uint(), 0, "revocationTime");
    assert_eq!(a[5].word(), [0; 32], "refUID");
    assert_eq!(a[6], abi::address(eas::ZERO_ADDRESS), "recipient");
    assert_eq!(a[7], abi::address(&from), "attester");
    assert_eq!(a[8], abi::boolean(false), "revocable");
    assert_eq!(a[9].bytes(), data.as_slice(), "data");

    let words = abi::decode(a[9].bytes(), &vec![Kind::Word; 11]);
    let read = Statement::from_tokens(&words[..9]);
    assert_eq!(read, statement, "the statement read back");
    assert_eq!(words[9].word(), proof_hash, "proofHash");
    assert_eq!(
        words[10].word(),
        read.id(),
        "statementId = keccak256(abi.encode(statement))"
    );
    assert_eq!(
        read.id(),
        keccak(&a[9].bytes()[..9 * 32]),
        "the statement id is the keccak of the data's first nine words"
    );

    // Anyone can recompute the UID: EAS's keccak256(abi.encodePacked(schema,
    // recipient, attester, time, expirationTime, revocable, refUID, data, bump)),
    // bump 0 for the first attestation of these values.
    let mut packed = schema_uid.to_vec();
    packed.extend(address_bytes(eas::ZERO_ADDRESS));
    packed.extend(address_bytes(&from));
    packed.extend(time.to_be_bytes());
    packed.extend(0u64.to_be_bytes());
    packed.push(0);
    packed.extend([0u8; 32]);
    packed.extend(&data);
    packed.extend(0u32.to_be_bytes());
    assert_eq!(uid, keccak(&packed), "attestation UID");

    // Calldata cost, 16 gas per non-zero byte and 4 per zero byte, so that
    // the attestation's figure splits into what the caller sends and what EAS stores.
    let calldata_gas: u64 = attest.iter().map(|&b| if b == 0 { 4 } else { 16 }).sum();
    let registry_code = rpc.ok("eth_getCode", json!([registry, "latest"])).await;
    let eas_code = rpc.ok("eth_getCode", json!([eas, "latest"])).await;
    eprintln!(
        "EAS on anvil (hash-only path): SchemaRegistry deployment {registry_gas} gas \
         (runtime {} bytes), EAS deployment {eas_gas} gas (runtime {} bytes), schema \
         registration {register_gas} gas, one attestation {attest_gas} gas ({} bytes of \
         data, {} bytes of calldata costing {calldata_gas} gas); compiler {version} {}",
        registry_code.as_str().unwrap().len() / 2 - 1,
        eas_code.as_str().unwrap().len() / 2 - 1,
        data.len(),
        attest.len(),
        deployed.abi["compiler"]["settings"],
    );
    drop(anvil);
}
