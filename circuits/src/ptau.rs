//! Phase-1 files (powers of τ): the public Hermez files known by the blake2b-512 their publisher gives, so that a ceremony says whose phase 1 its keys rest on.
//!
//! A Groth16 key from a two-phase setup is sound if one contributor of each
//! phase was honest. Phase 2 is the parties' own (`slaproof ceremony`);
//! phase 1 is universal and usually taken from a public ceremony. The
//! Hermez files (54 contributions and a beacon) are the ones snarkjs's
//! README publishes with their blake2b-512; a file with one of those hashes
//! is that file. Any other phase 1 is only as good as whoever made it,
//! and an auditor pins it by hash or the verdict says it was not checked.

use std::io::Read;
use std::path::Path;

use blake2::{Blake2b512, Digest};

/// `(power, blake2b-512)` of each `powersOfTau28_hez_final_NN.ptau` (the
/// file of 2^28 powers is `powersOfTau28_hez_final.ptau`), as snarkjs
/// 0.7.6's README publishes them.
const HERMEZ: [(u32, &str); 21] = [
    (
        8,
        "d6a8fb3a04feb600096c3b791f936a578c4e664d262e4aa24beed1b7a9a96aa5eb72864d628db247e9293384b74b36ffb52ca8d148d6e1b8b51e279fdf57b583",
    ),
    (
        9,
        "94f108a80e81b5d932d8e8c9e8fd7f46cf32457e31462deeeef37af1b71c2c1b3c71fb0d9b59c654ec266b042735f50311f9fd1d4cadce47ab234ad163157cb5",
    ),
    (
        10,
        "6cfeb8cda92453099d20120bdd0e8a5c4e7706c2da9a8f09ccc157ed2464d921fd0437fb70db42104769efd7d6f3c1f964bcf448c455eab6f6c7d863e88a5849",
    ),
    (
        11,
        "47c282116b892e5ac92ca238578006e31a47e7c7e70f0baa8b687f0a5203e28ea07bbbec765a98dcd654bad618475d4661bfaec3bd9ad2ed12e7abc251d94d33",
    ),
    (
        12,
        "ded2694169b7b08e898f736d5de95af87c3f1a64594013351b1a796dbee393bd825f88f9468c84505ddd11eb0b1465ac9b43b9064aa8ec97f2b73e04758b8a4a",
    ),
    (
        13,
        "58efc8bf2834d04768a3d7ffcd8e1e23d461561729beaac4e3e7a47829a1c9066d5320241e124a1a8e8aa6c75be0ba66f65bc8239a0542ed38e11276f6fdb4d9",
    ),
    (
        14,
        "eeefbcf7c3803b523c94112023c7ff89558f9b8e0cf5d6cdcba3ade60f168af4a181c9c21774b94fbae6c90411995f7d854d02ebd93fb66043dbb06f17a831c1",
    ),
    (
        15,
        "982372c867d229c236091f767e703253249a9b432c1710b4f326306bfa2428a17b06240359606cfe4d580b10a5a1f63fbed499527069c18ae17060472969ae6e",
    ),
    (
        16,
        "6a6277a2f74e1073601b4f9fed6e1e55226917efb0f0db8a07d98ab01df1ccf43eb0e8c3159432acd4960e2f29fe84a4198501fa54c8dad9e43297453efec125",
    ),
    (
        17,
        "6247a3433948b35fbfae414fa5a9355bfb45f56efa7ab4929e669264a0258976741dfbe3288bfb49828e5df02c2e633df38d2245e30162ae7e3bcca5b8b49345",
    ),
    (
        18,
        "7e6a9c2e5f05179ddfc923f38f917c9e6831d16922a902b0b4758b8e79c2ab8a81bb5f29952e16ee6c5067ed044d7857b5de120a90704c1d3b637fd94b95b13e",
    ),
    (
        19,
        "bca9d8b04242f175189872c42ceaa21e2951e0f0f272a0cc54fc37193ff6648600eaf1c555c70cdedfaf9fb74927de7aa1d33dc1e2a7f1a50619484989da0887",
    ),
    (
        20,
        "89a66eb5590a1c94e3f1ee0e72acf49b1669e050bb5f93c73b066b564dca4e0c7556a52b323178269d64af325d8fdddb33da3a27c34409b821de82aa2bf1a27b",
    ),
    (
        21,
        "9aef0573cef4ded9c4a75f148709056bf989f80dad96876aadeb6f1c6d062391f07a394a9e756d16f7eb233198d5b69407cca44594c763ab4a5b67ae73254678",
    ),
    (
        22,
        "0d64f63dba1a6f11139df765cb690da69d9b2f469a1ddd0de5e4aa628abb28f787f04c6a5fb84a235ec5ea7f41d0548746653ecab0559add658a83502d1cb21b",
    ),
    (
        23,
        "3063a0bd81d68711197c8820a92466d51aeac93e915f5136d74f63c394ee6d88c5e8016231ea6580bec02e25d491f319d92e77f5c7f46a9caa8f3b53c0ea544f",
    ),
    (
        24,
        "fa404d140d5819d39984833ca5ec3632cd4995f81e82db402371a4de7c2eae8687c62bc632a95b0c6aadba3fb02680a94e09174b7233ccd26d78baca2647c733",
    ),
    (
        25,
        "0377d860cdb09a8a31ea1b0b8c04335614c8206357181573bf294c25d5ca7dff72387224fbd868897e6769f7805b3dab02854aec6d69d7492883b5e4e5f35eeb",
    ),
    (
        26,
        "418dee4a74b9592198bd8fd02ad1aea76f9cf3085f206dfd7d594c9e264ae919611b1459a1cc920c2f143417744ba9edd7b8d51e44be9452344a225ff7eead19",
    ),
    (
        27,
        "10ffd99837c512ef99752436a54b9810d1ac8878d368fb4b806267bdd664b4abf276c9cd3c4b9039a1fa4315a0c326c0e8e9e8fe0eb588ffd4f9021bf7eae1a1",
    ),
    (
        28,
        "55c77ce8562366c91e7cda394cf7b7c15a06c12d8c905e8b36ba9cf5e13eb37d1a429c589e8eaba4c591bc4b88a0e2828745a53e170eac300236f5c1a326f41a",
    ),
];

/// A published phase-1 file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Published {
    /// The file holds 2^power powers: circuits of up to 2^power constraints.
    pub power: u32,
}

impl Published {
    /// The file's name where it is published.
    pub fn file_name(self) -> String {
        if self.power == 28 {
            "powersOfTau28_hez_final.ptau".to_owned()
        } else {
            format!("powersOfTau28_hez_final_{:02}.ptau", self.power)
        }
    }

    /// Who made it, in a verdict's words.
    pub fn describe(self) -> String {
        format!(
            "the Hermez phase 1 {} (54 contributions and a beacon; blake2b-512 as published)",
            self.file_name()
        )
    }
}

/// The published file whose blake2b-512 is `blake2b` (hex), if any.
pub fn published(blake2b: &str) -> Option<Published> {
    HERMEZ
        .iter()
        .find(|(_, hash)| hash.eq_ignore_ascii_case(blake2b))
        .map(|&(power, _)| Published { power })
}

/// blake2b-512 of the file at `path`, in hex: what the publishers of phase-1
/// files give (and `b2sum` prints).
pub fn blake2b_file(path: &Path) -> std::io::Result<String> {
    digest_file::<Blake2b512>(path)
}

/// The digest `D` of the file at `path`, in hex, read a mebibyte at a
/// time: a phase-1 file is 2.4 GB at 2^21 and must not be held in memory
/// to be hashed.
pub fn digest_file<D: Digest>(path: &Path) -> std::io::Result<String> {
    let mut file = std::fs::File::open(path)?;
    let mut hasher = D::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(hex::encode(hasher.finalize()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_hashes_as_b2sum_does() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("abc");
        std::fs::write(&path, b"abc").unwrap();
        // RFC 7693, appendix A: BLAKE2b-512("abc").
        assert_eq!(
            blake2b_file(&path).unwrap(),
            "ba80a53f981c4d0d6a2797b69f12f6e94c212f14685ac4b74b12bb6fdbffa2d1\
             7d87c5392aab792dc252d5de4533cc9518d38aa8dbf1925ab92386edd4009923"
        );
    }

    #[test]
    fn every_published_power_is_known_by_its_hash_alone() {
        for (i, (power, hash)) in HERMEZ.iter().enumerate() {
            assert_eq!(*power, 8 + i as u32);
            assert_eq!(hash.len(), 128);
            assert_eq!(published(hash), Some(Published { power: *power }));
            assert_eq!(
                published(&hash.to_uppercase()).map(|p| p.power),
                Some(*power)
            );
        }
        assert_eq!(
            Published { power: 14 }.file_name(),
            "powersOfTau28_hez_final_14.ptau"
        );
        assert_eq!(published(&"0".repeat(128)), None);
    }
}
