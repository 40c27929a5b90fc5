// SPDX-License-Identifier: Apache-2.0
pragma solidity 0.8.37;

import {MerkleProof} from "@openzeppelin/contracts/utils/cryptography/MerkleProof.sol";

/// @title BatchCheck
/// @notice Checks that a statement id is in a batch whose Merkle root was
/// attested through EAS (slaproof's batched path). The tree is the one the
/// npm package `openzeppelin/merkle-tree` builds with
/// `StandardMerkleTree.of(ids, ["bytes32"])`: leaves hashed twice, pairs
/// hashed sorted.
contract BatchCheck {
    /// @notice The leaf of `statementId` in a `StandardMerkleTree` with
    /// leaf encoding `["bytes32"]`.
    function leaf(bytes32 statementId) public pure returns (bytes32) {
        return keccak256(bytes.concat(keccak256(abi.encode(statementId))));
    }

    /// @notice Whether `proof` includes `statementId` under `root`.
    /// `verifyCalldata` is `MerkleProof.verify` reading the proof where the
    /// call data has it, without copying it to memory.
    function verify(bytes32[] calldata proof, bytes32 root, bytes32 statementId)
        external
        pure
        returns (bool)
    {
        return MerkleProof.verifyCalldata(proof, root, leaf(statementId));
    }
}
