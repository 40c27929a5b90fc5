//! The committed contract artifacts (`contracts/artifacts/`): current with their sources (`node contracts/build.mjs --check`), and holding what a deployment needs.
//!
//! The Rust chain client embeds these artifacts, so that a deployment needs
//! no Solidity compiler; these tests keep them honest. The check needs
//! `npm ci --prefix contracts` (solc, both compilers, EAS and OpenZeppelin's
//! contracts); without it the test prints a loud SKIPPED message, except
//! under `CI`, where it fails. The second test reads only the committed
//! files.

use std::process::Command;

use slaproof_tests::chain::{self, eas, unhex};

/// What `contracts/build.mjs` writes, one artifact each.
const ARTIFACTS: [&str; 5] = [
    "SchemaRegistry",
    "EAS",
    "SlaproofResolver",
    "AttesterResolver",
    "BatchCheck",
];

#[test]
fn the_committed_artifacts_are_what_the_sources_compile_to() {
    if chain::tools_or_skip(
        "the_committed_artifacts_are_what_the_sources_compile_to",
        &[eas::PACKAGE, eas::SOLC_PACKAGE, eas::OPENZEPPELIN_PACKAGE],
    )
    .is_none()
    {
        return;
    }

    // build.mjs compiles every artifact into memory and compares it with
    // the committed file, byte for byte.
    let output = Command::new("node")
        .arg(chain::contracts_dir().join("build.mjs"))
        .arg("--check")
        .output()
        .expect("node runs build.mjs");

    assert!(
        output.status.success(),
        "contracts/artifacts is not what the sources compile to; run \
         `npm run build --prefix contracts` and commit the result:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn the_committed_artifacts_hold_what_a_deployment_needs() {
    let dir = chain::contracts_dir().join("artifacts");

    for name in ARTIFACTS {
        let artifact = chain::artifact(&dir, name);
        assert_eq!(artifact["contractName"], name, "{name}: contractName");
        for field in ["bytecode", "deployedBytecode"] {
            let code = artifact[field]
                .as_str()
                .unwrap_or_else(|| panic!("{name}: {field} is not a string"));
            assert!(
                code.starts_with("0x") && !unhex(code).is_empty(),
                "{name}: {field} is empty"
            );
        }
        assert!(
            artifact["abi"]
                .as_array()
                .is_some_and(|abi| !abi.is_empty()),
            "{name}: no ABI"
        );
        // The source unit name is in the metadata hash at the end of the
        // bytecode: an absolute path would tie the bytecode to one clone.
        let source = artifact["sourceName"]
            .as_str()
            .unwrap_or_else(|| panic!("{name}: no sourceName"));
        assert!(
            !source.starts_with('/') && !source.contains(':') && !source.contains('\\'),
            "{name}: source unit name {source} is an absolute path"
        );
        assert!(
            artifact["compiler"]["version"].is_string(),
            "{name}: no compiler version"
        );
    }

    // The deployment authorises its attesters on AttesterResolver
    // (`selector` panics when the ABI has no such function).
    let resolver = chain::artifact(&dir, "AttesterResolver");
    chain::selector(&resolver, "setAttester(address,bool)");
    chain::selector(&resolver, "isAttester(address)");
}
