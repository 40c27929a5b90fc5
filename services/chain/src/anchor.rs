//! What slaproof anchors: the period statement, its id, and the data of each
//! schema (hash-only, verified, batch root), ABI-encoded as EAS stores them.
//!
//! The statement id is `keccak256(abi.encode(statement))`: anyone, a
//! contract too, recomputes it from the nine fields. It is not a hash of the
//! proof, which anyone holding one can re-randomise into another valid one.

use alloy::primitives::{B256, U256, keccak256};
use alloy::sol;
use alloy::sol_types::SolValue;

/// The hash-only period schema: the statement, the proof's hash, the id.
pub const PERIOD_SCHEMA: &str = "bytes32 tenantHash,bytes32 slaHash,bytes32 objective,\
uint64 periodStart,uint64 periodEnd,uint64 threshold,uint32 fractionPpm,\
bytes32 commitment,bytes32 vkHash,bytes32 proofHash,bytes32 statementId";

/// The verified period schema: the hash-only fields, then the proof as the
/// generated verifier takes it and its four public inputs.
pub const VERIFIED_SCHEMA: &str = "bytes32 tenantHash,bytes32 slaHash,bytes32 objective,\
uint64 periodStart,uint64 periodEnd,uint64 threshold,uint32 fractionPpm,\
bytes32 commitment,bytes32 vkHash,bytes32 proofHash,bytes32 statementId,\
uint256[8] proof,uint256[4] publicInputs";

/// The batch-root schema: one epoch's statements as a Merkle root.
pub const BATCH_SCHEMA: &str = "bytes32 root,uint64 epochStart,uint64 epochEnd,uint32 count";

sol! {
    /// One period's proven result, as the period schemas' first nine fields.
    #[derive(Debug, PartialEq, Eq)]
    struct Statement {
        bytes32 tenantHash;
        bytes32 slaHash;
        bytes32 objective;
        uint64 periodStart;
        uint64 periodEnd;
        uint64 threshold;
        uint32 fractionPpm;
        bytes32 commitment;
        bytes32 vkHash;
    }

    /// The hash-only schema's data.
    #[derive(Debug, PartialEq, Eq)]
    struct PeriodAnchor {
        Statement statement;
        bytes32 proofHash;
        bytes32 statementId;
    }

    /// The verified schema's data.
    #[derive(Debug, PartialEq, Eq)]
    struct VerifiedAnchor {
        Statement statement;
        bytes32 proofHash;
        bytes32 statementId;
        uint256[8] proof;
        uint256[4] publicInputs;
    }

    /// The batch-root schema's data.
    #[derive(Debug, PartialEq, Eq)]
    struct BatchRoot {
        bytes32 root;
        uint64 epochStart;
        uint64 epochEnd;
        uint32 count;
    }
}

impl Statement {
    /// keccak-256 of the ABI-encoded statement.
    pub fn id(&self) -> B256 {
        keccak256(self.abi_encode())
    }
}

impl PeriodAnchor {
    /// The anchor of `statement` proven by the proof whose hash is `proof_hash`.
    pub fn new(statement: Statement, proof_hash: B256) -> Self {
        let statement_id = statement.id();
        Self {
            statement,
            proofHash: proof_hash,
            statementId: statement_id,
        }
    }

    /// The attestation's `data`. Every field is static, so the struct encodes
    /// in place, field after field, as the schema's flat list of fields.
    pub fn data(&self) -> Vec<u8> {
        self.abi_encode()
    }

    /// Reads an attestation's `data` back.
    pub fn from_data(data: &[u8]) -> Result<Self, alloy::sol_types::Error> {
        Self::abi_decode(data)
    }
}

impl VerifiedAnchor {
    /// The verified anchor of `statement` with its proof and public inputs.
    pub fn new(
        statement: Statement,
        proof_hash: B256,
        proof: [U256; 8],
        public_inputs: [U256; 4],
    ) -> Self {
        let statement_id = statement.id();
        Self {
            statement,
            proofHash: proof_hash,
            statementId: statement_id,
            proof,
            publicInputs: public_inputs,
        }
    }

    /// The attestation's `data`.
    pub fn data(&self) -> Vec<u8> {
        self.abi_encode()
    }

    /// Reads an attestation's `data` back.
    pub fn from_data(data: &[u8]) -> Result<Self, alloy::sol_types::Error> {
        Self::abi_decode(data)
    }
}

impl BatchRoot {
    /// The attestation's `data`.
    pub fn data(&self) -> Vec<u8> {
        self.abi_encode()
    }

    /// Reads an attestation's `data` back.
    pub fn from_data(data: &[u8]) -> Result<Self, alloy::sol_types::Error> {
        Self::abi_decode(data)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn statement() -> Statement {
        Statement {
            tenantHash: keccak256("provider"),
            slaHash: keccak256("acme-enterprise"),
            objective: keccak256("p99-latency"),
            periodStart: 1_793_491_200,
            periodEnd: 1_796_083_200,
            threshold: 3_200_000,
            fractionPpm: 990_000,
            commitment: B256::repeat_byte(7),
            vkHash: B256::repeat_byte(9),
        }
    }

    #[test]
    fn the_statement_id_is_the_keccak_of_nine_words_and_the_data_is_flat() {
        let s = statement();
        let encoded = s.abi_encode();
        assert_eq!(encoded.len(), 9 * 32, "nine static words");
        assert_eq!(&encoded[..32], s.tenantHash.as_slice());
        // uint64 threshold right-aligned in the sixth word.
        assert_eq!(&encoded[5 * 32 + 24..6 * 32], &3_200_000u64.to_be_bytes());
        let anchor = PeriodAnchor::new(s, B256::repeat_byte(1));
        let data = anchor.data();
        assert_eq!(data.len(), 11 * 32, "the schema's eleven fields in place");
        assert_eq!(&data[10 * 32..], keccak256(&encoded).as_slice());
        assert_eq!(PeriodAnchor::from_data(&data).unwrap(), anchor);
    }

    #[test]
    fn the_verified_data_is_twenty_three_words() {
        let anchor = VerifiedAnchor::new(
            statement(),
            B256::ZERO,
            [U256::from(1); 8],
            [U256::from(2); 4],
        );
        assert_eq!(anchor.data().len(), 23 * 32);
        assert_eq!(VerifiedAnchor::from_data(&anchor.data()).unwrap(), anchor);
    }
}

/// The id a transparency log's day head is anchored under:
/// `keccak256(abi.encode(keccak256(origin), uint64 dayStart, uint64 size,
/// bytes32 root))`, where `root` is the log's RFC 6962 (SHA-256) root after
/// the day and `dayStart` the day's first second (Unix time). Anyone holding
/// the signed checkpoint and the day recomputes it.
pub fn log_head_id(origin: &str, day_start: u64, size: u64, root: [u8; 32]) -> B256 {
    keccak256(
        (
            keccak256(origin.as_bytes()),
            day_start,
            size,
            B256::from(root),
        )
            .abi_encode(),
    )
}

/// The batch-root attestation of one log day: the head's id as the one
/// member of OpenZeppelin's standard tree, over the day's epoch.
pub fn log_day_root(head_id: B256, day_start: u64) -> BatchRoot {
    log_day_batch(head_id, &[], day_start).0
}

/// The batch-root attestation of one log day whose anchor also carries
/// daily measurement commitments (`day_member_id`): the head's id first,
/// then the members, in OpenZeppelin's standard tree over the day's epoch;
/// with the tree, for each member's inclusion proof.
pub fn log_day_batch(
    head_id: B256,
    members: &[B256],
    day_start: u64,
) -> (BatchRoot, crate::merkle::StandardTree) {
    let mut values = Vec::with_capacity(1 + members.len());
    values.push(head_id);
    values.extend_from_slice(members);
    let tree = crate::merkle::StandardTree::of(&values);
    let root = BatchRoot {
        root: tree.root(),
        epochStart: day_start,
        epochEnd: day_start + 86_400,
        count: u32::try_from(values.len()).unwrap_or(u32::MAX),
    };
    (root, tree)
}

/// The member a daily measurement commitment is anchored as:
/// `keccak256(abi.encode(bytes32 dayContext, bytes32 commitment))`, the
/// day's context binding its whole label (tenant, SLA and version,
/// objective, field, unit, operator, threshold, the day's bounds, the
/// measurement's revision) and the commitment its salted weights.
pub fn day_member_id(day_context: [u8; 32], commitment: [u8; 32]) -> B256 {
    keccak256((B256::from(day_context), B256::from(commitment)).abi_encode())
}

#[cfg(test)]
mod log_tests {
    use super::*;

    #[test]
    fn a_log_head_id_binds_every_field() {
        let id = log_head_id("o/t", 86_400, 3, [1; 32]);
        assert_ne!(id, log_head_id("o/u", 86_400, 3, [1; 32]));
        assert_ne!(id, log_head_id("o/t", 0, 3, [1; 32]));
        assert_ne!(id, log_head_id("o/t", 86_400, 4, [1; 32]));
        assert_ne!(id, log_head_id("o/t", 86_400, 3, [2; 32]));
        let root = log_day_root(id, 86_400);
        assert_eq!((root.epochEnd, root.count), (172_800, 1));
        assert_ne!(root.root, id, "the standard tree hashes its leaf");
        // With members, the head and each member prove into the root.
        let members = [
            day_member_id([1; 32], [2; 32]),
            day_member_id([1; 32], [3; 32]),
        ];
        assert_ne!(members[0], members[1]);
        let (batch, tree) = log_day_batch(id, &members, 86_400);
        assert_eq!(batch.count, 3);
        assert_ne!(batch.root, root.root);
        for (i, value) in std::iter::once(id).chain(members).enumerate() {
            assert!(crate::merkle::StandardTree::verify(
                batch.root,
                value,
                &tree.proof(i)
            ));
        }
        assert!(!crate::merkle::StandardTree::verify(
            batch.root,
            day_member_id([1; 32], [4; 32]),
            &tree.proof(1)
        ));
    }
}
