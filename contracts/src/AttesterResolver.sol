// SPDX-License-Identifier: Apache-2.0
// slaproof's EAS schema resolver for the schemas whose attestations carry
// no proof (issue 15): an attestation is accepted only from an attester the
// deployment has authorised.
pragma solidity 0.8.29;

import { SchemaResolver } from "@ethereum-attestation-service/eas-contracts/contracts/resolver/SchemaResolver.sol";
import { IEAS, Attestation } from "@ethereum-attestation-service/eas-contracts/contracts/IEAS.sol";
import { Attesters } from "./Attesters.sol";

/// The resolver of two schemas, each registered with it and not revocable:
///
/// - the hash-only period schema,
///
///       bytes32 tenantHash,bytes32 slaHash,bytes32 objective,uint64 periodStart,
///       uint64 periodEnd,uint64 threshold,uint32 fractionPpm,bytes32 commitment,
///       bytes32 vkHash,bytes32 proofHash,bytes32 statementId
///
/// - and the batch-root schema,
///
///       bytes32 root,uint64 epochStart,uint64 epochEnd,uint32 count
///
/// Neither carries a proof the chain could check, so the statement's only
/// warrant on chain is who attested it: without a resolver, an attestation
/// under slaproof's schema UID from anyone's key would stand beside the
/// provider's, and a reader would have to filter by attester itself. With
/// this resolver EAS refuses it (`InvalidAttestation()`) unless the
/// attester is authorised, so everything under the schema UID is the
/// deployment's. One set of attesters per deployment, as SlaproofResolver
/// explains; one resolver may serve both schemas, since the set is the same.
///
/// Nothing is emitted beyond EAS's own `Attested` event, which is what
/// indexers follow: the resolver adds no information to it.
contract AttesterResolver is SchemaResolver, Attesters {
    constructor(IEAS eas) SchemaResolver(eas) {}

    /// EAS calls this for each attestation under a schema registered with
    /// this resolver; false makes EAS revert it (`InvalidAttestation()`).
    /// The data is not read: its shape is the schema's, and its truth is
    /// the attester's word (for a period, the proof named by `proofHash`
    /// lets anyone check it off chain).
    function onAttest(Attestation calldata attestation, uint256 /* value */) internal view override returns (bool) {
        return isAttester(attestation.attester);
    }

    /// Period and batch attestations are not revocable: the schemas are
    /// registered so, and this refuses anyway.
    function onRevoke(Attestation calldata, uint256) internal pure override returns (bool) {
        return false;
    }
}
