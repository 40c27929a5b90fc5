//! Bindings to the contracts slaproof deploys and calls, generated from the
//! compiled artifacts committed in `contracts/artifacts/` (ABI and bytecode),
//! so that a deployment needs no Solidity compiler and the Rust types cannot
//! drift from the contracts: `contracts/build.mjs --check` fails when an
//! artifact is stale, and this crate is rebuilt when one changes.

#![allow(missing_docs, clippy::too_many_arguments)]

use alloy::sol;

sol!(
    #[sol(rpc)]
    SchemaRegistry,
    "../../contracts/artifacts/SchemaRegistry.json"
);

sol!(
    #[sol(rpc)]
    EAS,
    "../../contracts/artifacts/EAS.json"
);

sol!(
    #[sol(rpc)]
    SlaproofResolver,
    "../../contracts/artifacts/SlaproofResolver.json"
);

sol!(
    #[sol(rpc)]
    AttesterResolver,
    "../../contracts/artifacts/AttesterResolver.json"
);

sol!(
    #[sol(rpc)]
    BatchCheck,
    "../../contracts/artifacts/BatchCheck.json"
);
