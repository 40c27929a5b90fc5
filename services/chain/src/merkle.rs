//! An OpenZeppelin-compatible Merkle tree of statement ids: what npm `@openzeppelin/merkle-tree`'s `StandardMerkleTree.of(values, ["bytes32"])` builds, so that its `verify` and Solidity's `MerkleProof.verify` accept the proofs made here.
//!
//! The layout follows the package's `core.js` and `merkletree.js` (1.0.8):
//! each leaf is `keccak256(keccak256(abi.encode(id)))` (the double hash
//! keeps a 64-byte inner node from passing for a leaf); leaves are sorted
//! ascending by hash; the tree is a flat array of `2n - 1` nodes whose
//! last `n` hold the sorted leaves in reverse, each inner node `i` hashing
//! its children `2i + 1` and `2i + 2` as a sorted pair; a proof is the
//! siblings from the leaf up to the root.

use alloy::primitives::{B256, keccak256};

/// A built tree: every node, and the leaves' places in it.
#[derive(Debug, Clone)]
pub struct StandardTree {
    nodes: Vec<B256>,
    /// For each value, in the order given, its node's index.
    places: Vec<usize>,
}

/// The leaf of one `bytes32` value: `keccak256(bytes.concat(keccak256(abi.encode(value))))`.
pub fn leaf(value: B256) -> B256 {
    // abi.encode of one bytes32 is the 32 bytes themselves.
    keccak256(keccak256(value))
}

/// The hash of two nodes as a sorted pair, OpenZeppelin's `commutativeKeccak256`.
pub fn node(a: B256, b: B256) -> B256 {
    let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
    let mut pair = [0u8; 64];
    pair[..32].copy_from_slice(lo.as_slice());
    pair[32..].copy_from_slice(hi.as_slice());
    keccak256(pair)
}

impl StandardTree {
    /// The tree of `values` (at least one), as `StandardMerkleTree.of(values, ["bytes32"])` builds it.
    pub fn of(values: &[B256]) -> StandardTree {
        assert!(!values.is_empty(), "a Merkle tree needs a leaf");
        let n = values.len();
        let mut hashed: Vec<(B256, usize)> = values
            .iter()
            .enumerate()
            .map(|(i, v)| (leaf(*v), i))
            .collect();
        // A stable sort by hash, as the package's Array.prototype.sort.
        hashed.sort_by_key(|a| a.0);
        let len = 2 * n - 1;
        let mut nodes = vec![B256::ZERO; len];
        let mut places = vec![0; n];
        for (i, (hash, value_index)) in hashed.iter().enumerate() {
            nodes[len - 1 - i] = *hash;
            places[*value_index] = len - 1 - i;
        }
        for i in (0..len - n).rev() {
            nodes[i] = node(nodes[2 * i + 1], nodes[2 * i + 2]);
        }
        StandardTree { nodes, places }
    }

    /// The root.
    pub fn root(&self) -> B256 {
        self.nodes[0]
    }

    /// The inclusion proof of the `index`-th value given to [`StandardTree::of`]:
    /// the siblings from its leaf up to the root.
    pub fn proof(&self, index: usize) -> Vec<B256> {
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
    pub fn verify(root: B256, value: B256, proof: &[B256]) -> bool {
        proof.iter().fold(leaf(value), |acc, p| node(acc, *p)) == root
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_member_proves_and_an_outsider_does_not() {
        for n in [1usize, 2, 3, 7, 64, 100] {
            let ids: Vec<B256> = (0..n as u64).map(|i| keccak256(i.to_be_bytes())).collect();
            let tree = StandardTree::of(&ids);
            for (i, id) in ids.iter().enumerate() {
                assert!(
                    StandardTree::verify(tree.root(), *id, &tree.proof(i)),
                    "{n}: {i}"
                );
            }
            let outsider = keccak256(b"outsider");
            assert!(!StandardTree::verify(tree.root(), outsider, &tree.proof(0)));
        }
    }

    #[test]
    fn one_leaf_is_its_own_root() {
        let id = keccak256(b"only");
        let tree = StandardTree::of(&[id]);
        assert_eq!(tree.root(), leaf(id));
        assert!(tree.proof(0).is_empty());
    }
}
