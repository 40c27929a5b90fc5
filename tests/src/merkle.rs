//! An OpenZeppelin-compatible Merkle tree of statement ids: what npm `@openzeppelin/merkle-tree`'s `StandardMerkleTree.of(values, ["bytes32"])` builds, so that its `verify` and Solidity's `MerkleProof.verify` accept the proofs made here.
//!
//! The layout follows the package's `core.js` and `merkletree.js` (1.0.8):
//! each leaf is `keccak256(keccak256(abi.encode(id)))` (the double hash
//! keeps a 64-byte inner node from passing for a leaf); leaves are sorted
//! ascending by hash; the tree is a flat array of `2n - 1` nodes whose
//! last `n` hold the sorted leaves in reverse, each inner node `i` hashing
//! its children `2i + 1` and `2i + 2` as a sorted pair; a proof is the
//! siblings from the leaf up to the root. keccak is passed in: the crate
//! only has it as a dev-dependency.

/// keccak-256, as the caller provides it.
pub type Keccak = fn(&[u8]) -> [u8; 32];

/// A built tree: every node, and the leaves' places in it.
#[derive(Debug, Clone)]
pub struct StandardTree {
    nodes: Vec<[u8; 32]>,
    /// For each value, in the order given, its node's index.
    places: Vec<usize>,
    keccak: Keccak,
}

/// The leaf of one `bytes32` value: `keccak256(bytes.concat(keccak256(abi.encode(value))))`.
pub fn leaf(value: [u8; 32], keccak: Keccak) -> [u8; 32] {
    // abi.encode of one bytes32 is the 32 bytes themselves.
    keccak(&keccak(&value))
}

/// The hash of two nodes as a sorted pair, OpenZeppelin's `commutativeKeccak256`.
pub fn node(a: [u8; 32], b: [u8; 32], keccak: Keccak) -> [u8; 32] {
    let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
    let mut pair = [0u8; 64];
    pair[..32].copy_from_slice(&lo);
    pair[32..].copy_from_slice(&hi);
    keccak(&pair)
}

impl StandardTree {
    /// The tree of `values` (at least one), as `StandardMerkleTree.of(values, ["bytes32"])` builds it.
    pub fn of(values: &[[u8; 32]], keccak: Keccak) -> StandardTree {
        assert!(!values.is_empty(), "a Merkle tree needs a leaf");
        let n = values.len();
        let mut hashed: Vec<([u8; 32], usize)> = values
            .iter()
            .enumerate()
            .map(|(i, v)| (leaf(*v, keccak), i))
            .collect();
        // A stable sort by hash, as the package's Array.prototype.sort.
        hashed.sort_by_key(|a| a.0);
        let len = 2 * n - 1;
        let mut nodes = vec![[0u8; 32]; len];
        let mut places = vec![0; n];
        for (i, (hash, value_index)) in hashed.iter().enumerate() {
            nodes[len - 1 - i] = *hash;
            places[*value_index] = len - 1 - i;
        }
        for i in (0..len - n).rev() {
            nodes[i] = node(nodes[2 * i + 1], nodes[2 * i + 2], keccak);
        }
        StandardTree {
            nodes,
            places,
            keccak,
        }
    }

    /// The root.
    pub fn root(&self) -> [u8; 32] {
        self.nodes[0]
    }

    /// The inclusion proof of the `index`-th value given to [`StandardTree::of`]:
    /// the siblings from its leaf up to the root.
    pub fn proof(&self, index: usize) -> Vec<[u8; 32]> {
        let mut at = self.places[index];
        let mut proof = Vec::new();
        while at > 0 {
            let sibling = if at % 2 == 1 { at + 1 } else { at - 1 };
            proof.push(self.nodes[sibling]);
            at = (at - 1) / 2;
        }
        proof
    }

    /// Whether `proof` takes `value`'s leaf to `root`, as `StandardMerkleTree.verify` checks it.
    pub fn verify(&self, root: [u8; 32], value: [u8; 32], proof: &[[u8; 32]]) -> bool {
        let keccak = self.keccak;
        proof
            .iter()
            .fold(leaf(value, keccak), |acc, p| node(acc, *p, keccak))
            == root
    }
}
