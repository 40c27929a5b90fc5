//! The log's Merkle tree over *stored hashes* (the C2SP tlog layout of Go's
//! checksum database): appending a batch, the root, and record (inclusion)
//! and tree (consistency) proofs. Storage is the caller's: each computation
//! first names the stored hashes it reads (`*_reads`), the caller fetches
//! them into [`Hashes`], and the computation runs over those alone.

use std::cell::RefCell;
use std::collections::HashMap;

use tlog_tiles::{HashReader, tlog};

use super::{Hash, TransparencyError};

pub use tlog_tiles::{EMPTY_HASH, stored_hash_count, stored_hash_index};

/// Stored hashes fetched by the caller, by stored index.
#[derive(Debug, Default, Clone)]
pub struct Hashes(HashMap<u64, Hash>);

impl Hashes {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn insert(&mut self, index: u64, hash: Hash) {
        self.0.insert(index, hash);
    }

    pub fn get(&self, index: u64) -> Option<Hash> {
        self.0.get(&index).copied()
    }

    /// Every stored hash of a log, from index 0: for small logs and tests.
    pub fn from_all(stored: &[Hash]) -> Self {
        Self((0u64..).zip(stored.iter().copied()).collect())
    }
}

impl HashReader for Hashes {
    fn read_hashes(&self, indexes: &[u64]) -> Result<Vec<Hash>, tlog::Error> {
        indexes
            .iter()
            .map(|i| self.0.get(i).copied().ok_or(tlog::Error::IndexesNotInTree))
            .collect()
    }
}

/// Notes what a computation reads; the values it hands back are dummies,
/// which is enough because tlog's reads depend on sizes and indexes only.
#[derive(Default)]
struct Recorder(RefCell<Vec<u64>>);

impl HashReader for Recorder {
    fn read_hashes(&self, indexes: &[u64]) -> Result<Vec<Hash>, tlog::Error> {
        self.0.borrow_mut().extend_from_slice(indexes);
        Ok(vec![EMPTY_HASH; indexes.len()])
    }
}

fn reads<T>(f: impl FnOnce(&Recorder) -> Result<T, tlog::Error>) -> Vec<u64> {
    let recorder = Recorder::default();
    // The dummy values may make a proof come out wrong; only the reads count.
    let _ = f(&recorder);
    let mut indexes = recorder.0.into_inner();
    indexes.sort_unstable();
    indexes.dedup();
    indexes
}

fn missing(err: tlog::Error) -> TransparencyError {
    TransparencyError::Proof(err.to_string())
}

/// The stored hashes that appending to a log of `size` leaves reads: the
/// roots of the complete subtrees on its right edge, one per set bit.
pub fn append_reads(size: u64) -> Vec<u64> {
    (0..64u8)
        .filter(|level| size >> level & 1 == 1)
        .map(|level| stored_hash_index(level, (size >> level) - 1))
        .collect()
}

/// The stored hashes that appending `leaves` (leaf hashes) to a log of
/// `size` leaves adds, in stored order from `stored_hash_count(size)`.
/// `edge` holds at least [`append_reads`]`(size)`.
pub fn append(
    size: u64,
    leaves: impl IntoIterator<Item = Hash>,
    edge: &Hashes,
) -> Result<Vec<Hash>, TransparencyError> {
    struct Appending<'a> {
        edge: &'a Hashes,
        base: u64,
        added: Vec<Hash>,
    }
    impl HashReader for Appending<'_> {
        fn read_hashes(&self, indexes: &[u64]) -> Result<Vec<Hash>, tlog::Error> {
            indexes
                .iter()
                .map(|&i| match i.checked_sub(self.base) {
                    Some(k) => self
                        .added
                        .get(k as usize)
                        .copied()
                        .ok_or(tlog::Error::IndexesNotInTree),
                    None => self.edge.read_hashes(&[i]).map(|h| h[0]),
                })
                .collect()
        }
    }
    let mut appending = Appending {
        edge,
        base: stored_hash_count(size),
        added: Vec::new(),
    };
    for (n, leaf) in (size..).zip(leaves) {
        let stored = tlog_tiles::stored_hashes_for_record_hash(n, leaf, &appending)
            .map_err(|_| TransparencyError::MissingHash(n))?;
        appending.added.extend(stored);
    }
    Ok(appending.added)
}

/// The stored hashes the root of a log of `size` leaves reads.
pub fn root_reads(size: u64) -> Vec<u64> {
    reads(|r| tlog_tiles::tree_hash(size, r))
}

/// The root of a log of `size` leaves (RFC 6962's Merkle tree hash).
pub fn root(size: u64, hashes: &Hashes) -> Result<Hash, TransparencyError> {
    tlog_tiles::tree_hash(size, hashes).map_err(missing)
}

/// The root of a tree of exactly these leaf hashes: for auditors who
/// rebuild a log from exported leaves.
pub fn root_of(leaves: &[Hash]) -> Hash {
    let stored = append(0, leaves.iter().copied(), &Hashes::new())
        .expect("a log built from nothing reads only what it added");
    root(leaves.len() as u64, &Hashes::from_all(&stored)).expect("every hash was just made")
}

/// The stored hashes an inclusion proof of leaf `index` in a log of `size`
/// leaves reads.
pub fn inclusion_reads(size: u64, index: u64) -> Vec<u64> {
    reads(|r| tlog_tiles::prove_record(size, index, r))
}

/// The audit path of leaf `index` in a log of `size` leaves (RFC 9162
/// §2.1.3).
pub fn prove_inclusion(
    size: u64,
    index: u64,
    hashes: &Hashes,
) -> Result<Vec<Hash>, TransparencyError> {
    tlog_tiles::prove_record(size, index, hashes).map_err(missing)
}

/// Checks that `leaf` is leaf `index` of the log of `size` leaves whose
/// root is `root`.
pub fn verify_inclusion(
    proof: &[Hash],
    size: u64,
    root: Hash,
    index: u64,
    leaf: Hash,
) -> Result<(), TransparencyError> {
    tlog_tiles::check_record(&proof.to_vec(), size, root, index, leaf).map_err(|_| {
        TransparencyError::Proof(format!(
            "leaf {index} does not lead to the root of the log of {size} leaves"
        ))
    })
}

/// The stored hashes a consistency proof from `old_size` to `size` reads.
pub fn consistency_reads(old_size: u64, size: u64) -> Vec<u64> {
    reads(|r| tlog_tiles::prove_tree(size, old_size, r))
}

/// Proof that the log of `old_size` leaves is a prefix of the log of `size`
/// leaves (RFC 9162 §2.1.4).
pub fn prove_consistency(
    old_size: u64,
    size: u64,
    hashes: &Hashes,
) -> Result<Vec<Hash>, TransparencyError> {
    tlog_tiles::prove_tree(size, old_size, hashes).map_err(missing)
}

/// Checks that the log of `old_size` leaves with root `old_root` is a prefix
/// of the log of `size` leaves with root `root`.
pub fn verify_consistency(
    proof: &[Hash],
    old_size: u64,
    old_root: Hash,
    size: u64,
    root: Hash,
) -> Result<(), TransparencyError> {
    tlog_tiles::check_tree(&proof.to_vec(), size, root, old_size, old_root).map_err(|_| {
        TransparencyError::Proof(format!(
            "the log of {old_size} leaves is not a prefix of the log of {size} leaves"
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leaf(i: u64) -> Hash {
        tlog_tiles::record_hash(&i.to_be_bytes())
    }

    /// A log grown in batches of the given sizes: its stored hashes.
    fn grown(batches: &[u64]) -> Vec<Hash> {
        let mut stored = Vec::new();
        let mut size = 0;
        for &k in batches {
            let mut edge = Hashes::new();
            for i in append_reads(size) {
                edge.insert(i, stored[i as usize]);
            }
            stored.extend(append(size, (size..size + k).map(leaf), &edge).unwrap());
            size += k;
            assert_eq!(stored.len() as u64, stored_hash_count(size));
        }
        stored
    }

    #[test]
    fn the_empty_and_one_leaf_roots_are_rfc_6962s() {
        assert_eq!(root_of(&[]), EMPTY_HASH);
        assert_eq!(root_of(&[leaf(0)]), leaf(0));
        assert_eq!(
            root_of(&[leaf(0), leaf(1)]),
            tlog_tiles::node_hash(leaf(0), leaf(1))
        );
    }

    #[test]
    fn batches_grow_the_same_log_as_one_append_and_read_only_the_right_edge() {
        let whole = grown(&[37]);
        for batches in [&[1, 36][..], &[5, 5, 27], &[16, 16, 5], &[0, 37, 0]] {
            assert_eq!(grown(batches), whole, "{batches:?}");
        }
        // The right edge is what appending reads, for every size.
        for size in 0..70 {
            let recorded = reads(|r| {
                let mut added = Vec::new();
                for n in size..size + 3 {
                    added.extend(tlog_tiles::stored_hashes_for_record_hash(n, leaf(n), r)?);
                }
                Ok(added)
            });
            let edge = append_reads(size);
            assert!(
                recorded
                    .iter()
                    .filter(|&&i| i < stored_hash_count(size))
                    .all(|i| edge.contains(i)),
                "{size}: {recorded:?} vs {edge:?}"
            );
        }
    }

    #[test]
    fn inclusion_and_consistency_proofs_verify_and_refuse_any_change() {
        let stored = grown(&[10, 13, 1, 20]);
        let hashes = Hashes::from_all(&stored);
        for size in [1u64, 10, 23, 24, 44] {
            let head = root(size, &hashes).unwrap();
            for index in 0..size {
                let proof = prove_inclusion(size, index, &hashes).unwrap();
                // Only what the reads named is needed.
                let mut fetched = Hashes::new();
                for i in inclusion_reads(size, index) {
                    fetched.insert(i, stored[i as usize]);
                }
                assert_eq!(prove_inclusion(size, index, &fetched).unwrap(), proof);
                verify_inclusion(&proof, size, head, index, leaf(index)).unwrap();
                assert!(verify_inclusion(&proof, size, head, index, leaf(index + 1)).is_err());
                if size > 1 {
                    let other = (index + 1) % size;
                    assert!(verify_inclusion(&proof, size, head, other, leaf(index)).is_err());
                }
            }
            for old in 1..=size {
                let old_root = root(old, &hashes).unwrap();
                let proof = prove_consistency(old, size, &hashes).unwrap();
                let mut fetched = Hashes::new();
                for i in consistency_reads(old, size) {
                    fetched.insert(i, stored[i as usize]);
                }
                assert_eq!(prove_consistency(old, size, &fetched).unwrap(), proof);
                verify_consistency(&proof, old, old_root, size, head).unwrap();
                if old < size {
                    assert!(verify_consistency(&proof, old, leaf(999), size, head).is_err());
                }
            }
        }
        // A log whose earlier leaf was altered is not an extension of the old.
        let mut altered: Vec<Hash> = (0..44).map(leaf).collect();
        altered[3] = leaf(1000);
        let rebuilt =
            Hashes::from_all(&append(0, altered.iter().copied(), &Hashes::new()).unwrap());
        let proof = prove_consistency(10, 44, &rebuilt).unwrap();
        assert!(
            verify_consistency(
                &proof,
                10,
                root(10, &hashes).unwrap(),
                44,
                root(44, &rebuilt).unwrap()
            )
            .is_err()
        );
    }
}
