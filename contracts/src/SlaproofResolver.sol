// SPDX-License-Identifier: Apache-2.0
// slaproof's EAS schema resolver for the verified path (issue 15): an
// attestation of a period statement is accepted only if the Groth16 proof it
// carries verifies, with the verifier generated from the statement's
// verifying key, against public inputs that agree with the statement.
pragma solidity 0.8.29;

import { SchemaResolver } from "@ethereum-attestation-service/eas-contracts/contracts/resolver/SchemaResolver.sol";
import { IEAS, Attestation } from "@ethereum-attestation-service/eas-contracts/contracts/IEAS.sol";
import { Attesters } from "./Attesters.sol";

/// The verifier `circuits/` generates: returns nothing on a valid proof and
/// reverts (`ProofInvalid()`) on anything else.
interface IGroth16Verifier {
    function verifyProof(uint256[8] calldata proof, uint256[4] calldata input) external view;
}

/// The resolver of slaproof's verified period schema:
///
///     bytes32 tenantHash,bytes32 slaHash,bytes32 objective,uint64 periodStart,
///     uint64 periodEnd,uint64 threshold,uint32 fractionPpm,bytes32 commitment,
///     bytes32 vkHash,bytes32 proofHash,bytes32 statementId,uint256[8] proof,
///     uint256[4] publicInputs
///
/// The hash-only schema's eleven fields, then the proof (the verifier's
/// eight words) and its four public inputs: commitment, threshold,
/// quota_ppm, context (docs/CIRCUITS.md).
///
/// Access control: one set of attesters per deployment. The attester is the
/// provider whose measurements the statement is about; the holders of its
/// key (its slaproof deployments) attest for all of its tenants, and a
/// tenant trusts the statement through the proof, not through who sent it.
/// Per-tenant attesters (a mapping from tenantHash to attester) are a later
/// option if one resolver is ever shared between providers. The owner and
/// the attester set come from `Attesters`, which AttesterResolver shares.
contract SlaproofResolver is SchemaResolver, Attesters {
    /// The verified schema's data, as `abi.decode` reads it: every field is
    /// static, so the encoding is 23 words in place.
    struct Verified {
        bytes32 tenantHash;
        bytes32 slaHash;
        bytes32 objective;
        uint64 periodStart;
        uint64 periodEnd;
        uint64 threshold;
        uint32 fractionPpm;
        bytes32 commitment;
        bytes32 vkHash;
        bytes32 proofHash;
        bytes32 statementId;
        uint256[8] proof;
        uint256[4] publicInputs;
    }

    /// The statement: the data's first nine words, as `abi.encode` writes them.
    uint256 private constant STATEMENT_BYTES = 9 * 32;

    error NoCode(address verifier);

    event VerifierRegistered(bytes32 indexed vkHash, address indexed verifier);
    /// One per accepted attestation: an indexer follows the verified
    /// statements by id, and finds the EAS attestation by `uid`.
    event StatementVerified(bytes32 indexed statementId, bytes32 indexed vkHash, bytes32 indexed uid);

    /// Verifier contracts by the sha256 of the compressed verifying key they were generated from.
    mapping(bytes32 vkHash => address verifier) public verifiers;

    constructor(IEAS eas) SchemaResolver(eas) {}

    /// Accepts proofs made with the key `vkHash`, checked by `verifier`. A
    /// key registered again points at the new verifier; `address(0)` retires it.
    function registerVerifier(bytes32 vkHash, address verifier) external onlyOwner {
        if (verifier != address(0) && verifier.code.length == 0) revert NoCode(verifier);
        verifiers[vkHash] = verifier;
        emit VerifierRegistered(vkHash, verifier);
    }

    /// EAS calls this after setting the attestation's `uid`; false makes EAS
    /// revert the attestation (`InvalidAttestation()`).
    function onAttest(Attestation calldata attestation, uint256 /* value */) internal override returns (bool) {
        if (!isAttester(attestation.attester)) return false;
        Verified memory v = abi.decode(attestation.data, (Verified));
        address verifier = verifiers[v.vkHash];
        if (verifier == address(0)) return false;
        // The statement id is the keccak of the ABI-encoded statement, which
        // is the data's first nine words (abi.decode has checked that each
        // is a canonical encoding of its type).
        if (v.statementId != keccak256(attestation.data[:STATEMENT_BYTES])) return false;
        // The public inputs the proof is checked against must be the
        // statement's. The fourth, the context, is a hash of the tenant's and
        // the SLA's names, the objective and the period, which the statement
        // carries only as hashes: it is checked off chain by whoever knows
        // the names.
        if (v.publicInputs[0] != uint256(v.commitment)) return false;
        if (v.publicInputs[1] != v.threshold) return false;
        if (v.publicInputs[2] != v.fractionPpm) return false;
        try IGroth16Verifier(verifier).verifyProof(v.proof, v.publicInputs) {
            emit StatementVerified(v.statementId, v.vkHash, attestation.uid);
            return true;
        } catch {
            return false;
        }
    }

    /// Verified statements are not revocable: the schema says so, and this refuses anyway.
    function onRevoke(Attestation calldata, uint256) internal pure override returns (bool) {
        return false;
    }
}
