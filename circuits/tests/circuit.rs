//! The circuit's shape (pinned constraint counts and public inputs) and its verdicts on honest and dishonest assignments.

use ark_bn254::Fr;
use ark_ff::{One, Zero};
use ark_relations::r1cs::{ConstraintSynthesizer, ConstraintSystem, SynthesisMode};
use proptest::prelude::*;
use slaproof_circuits::circuit::{PublicValues, WitnessValues};
use slaproof_circuits::statement::{PUBLIC_INPUTS, commit, pack};
use slaproof_circuits::{
    Claim, ContextHash, Slot, ThresholdCircuit, build_with_salt, constraint_count,
};

mod common;

fn context() -> ContextHash {
    common::context_of("p99")
}

/// Whether the circuit accepts this assignment.
fn satisfied(circuit: ThresholdCircuit) -> bool {
    let cs = ConstraintSystem::<Fr>::new_ref();
    circuit.generate_constraints(cs.clone()).unwrap();
    cs.is_satisfied().unwrap()
}

fn honest(slots: usize, pairs: &[(u64, u64)], t: u32, q: u32) -> (bool, bool) {
    let (statement, opening) =
        build_with_salt(slots, pairs, t, q, context(), Fr::from(99u64)).unwrap();
    (
        satisfied(ThresholdCircuit::new(&statement, &opening)),
        opening.meets(t, q),
    )
}

/// A raw assignment whose commitment is computed from the raw integers
/// (so a value of 2³² packs as it would if the circuit accepted it).
fn raw(slots: usize, pairs: &[(u64, u64)], t: u64, q: u64) -> ThresholdCircuit {
    let salt = Fr::from(3u64);
    let mut padded = pairs.to_vec();
    padded.resize(slots, (0, 0));
    let elements: Vec<Fr> = padded
        .chunks(3)
        .map(|c| {
            c.iter().enumerate().fold(Fr::zero(), |acc, (j, (v, w))| {
                let shift = Fr::from(2u64).pow_u(72 * j as u64);
                acc + shift * (Fr::from(*v) + Fr::from(*w) * Fr::from(1u64 << 32))
            })
        })
        .collect();
    let seed = slaproof_circuits::statement::seed(slots, context(), salt).unwrap();
    let commitment = slaproof_circuits::gadgets::poseidon::chain(seed, &elements).unwrap();
    ThresholdCircuit::from_raw(
        slots,
        PublicValues {
            commitment,
            threshold: Fr::from(t),
            quota_ppm: Fr::from(q),
            context: context().as_field(),
        },
        WitnessValues {
            salt,
            slots: padded,
        },
    )
}

trait PowU {
    fn pow_u(self, e: u64) -> Self;
}
impl PowU for Fr {
    fn pow_u(self, e: u64) -> Self {
        ark_ff::Field::pow(&self, [e])
    }
}

#[test]
fn constraint_counts_are_pinned() {
    // 106 per slot + 504 per Poseidon step (less 3 per zero-padding word)
    // + 139 fixed: ranges of T (33) and q (21), the commitment equality,
    // the total (its equality, its inverse), q·total and the slack (81)
    // + 258 for the seed Poseidon(size tag, context, r) (88 S-boxes, two
    // of them on constants).
    assert_eq!(constraint_count(64).unwrap(), 8_189);
    assert_eq!(constraint_count(1024).unwrap(), 125_039);
    assert_eq!(constraint_count(16384).unwrap(), 1_987_574);
    for slots in [64, 1024, 16384] {
        let per_slot = constraint_count(slots).unwrap() as f64 / slots as f64;
        assert!(
            per_slot <= 128.0,
            "{slots}: {per_slot} constraints per slot"
        );
    }
}

#[test]
fn public_input_layout_is_pinned() {
    assert_eq!(
        PUBLIC_INPUTS,
        ["commitment", "threshold", "quota_ppm", "context"]
    );
    for slots in [64, 1024] {
        let cs = ConstraintSystem::<Fr>::new_ref();
        cs.set_mode(SynthesisMode::Setup);
        ThresholdCircuit::blank(slots)
            .generate_constraints(cs.clone())
            .unwrap();
        // `One` plus the four public inputs.
        assert_eq!(cs.num_instance_variables(), 5);
    }
    let (statement, _) =
        build_with_salt(64, &[(1, 1)], 7, 500_000, context(), Fr::from(5u64)).unwrap();
    let inputs = statement.public_inputs();
    assert_eq!(inputs[0], statement.commitment());
    assert_eq!(inputs[1], Fr::from(7u64));
    assert_eq!(inputs[2], Fr::from(500_000u64));
    assert_eq!(inputs[3], context().as_field());
}

#[test]
fn packing_puts_three_slots_in_one_element() {
    let slots = [
        Slot::parse(0, 1, 2).unwrap(),
        Slot::parse(1, 3, 4).unwrap(),
        Slot::parse(2, u64::from(u32::MAX), (1 << 40) - 1).unwrap(),
        Slot::parse(3, 9, 0).unwrap(),
    ];
    let two = Fr::from(2u64);
    let e0 = Fr::from(1u64)
        + Fr::from(2u64) * two.pow_u(32)
        + (Fr::from(3u64) + Fr::from(4u64) * two.pow_u(32)) * two.pow_u(72)
        + (Fr::from(u64::from(u32::MAX)) + Fr::from((1u64 << 40) - 1) * two.pow_u(32))
            * two.pow_u(144);
    assert_eq!(pack(&slots), vec![e0, Fr::from(9u64)]);
    assert_ne!(
        commit(context(), Fr::one(), &slots).unwrap(),
        commit(context(), Fr::zero(), &slots).unwrap()
    );
}

#[test]
fn meets_target_is_accepted() {
    // 9 of 10 weight good at q = 90%.
    assert_eq!(honest(64, &[(10, 9), (60, 1)], 50, 900_000), (true, true));
}

#[test]
fn value_equal_to_threshold_counts_as_good() {
    assert_eq!(honest(64, &[(50, 1)], 50, 1_000_000), (true, true));
    assert_eq!(honest(64, &[(51, 1)], 50, 1), (false, false));
    // Extremes of the ranges.
    assert_eq!(
        honest(
            64,
            &[(u64::from(u32::MAX), (1 << 40) - 1)],
            u32::MAX,
            1_000_000
        ),
        (true, true)
    );
    assert_eq!(honest(64, &[(0, 1)], 0, 1_000_000), (true, true));
}

#[test]
fn just_under_target_is_refused() {
    // 899,999 ppm good against q = 900,000.
    assert_eq!(
        honest(64, &[(10, 899_999), (60, 100_001)], 50, 900_000),
        (false, false)
    );
    assert_eq!(
        honest(64, &[(10, 900_000), (60, 100_000)], 50, 900_000),
        (true, true)
    );
}

#[test]
fn zero_total_weight_is_refused() {
    assert_eq!(honest(64, &[(10, 0)], 50, 0), (false, false));
    assert!(!satisfied(raw(64, &[], 50, 0)));
}

#[test]
fn value_or_weight_out_of_range_is_refused() {
    assert!(satisfied(raw(64, &[(5, 1)], 50, 1)));
    assert!(!satisfied(raw(64, &[(1 << 32, 1)], u64::from(u32::MAX), 1)));
    assert!(!satisfied(raw(64, &[(5, 1 << 40)], 50, 1)));
    // A field element standing for a "negative" value is out of range too.
    let mut circuit_pairs = vec![(5u64, 1u64)];
    circuit_pairs.push((u64::MAX, 1));
    assert!(!satisfied(raw(64, &circuit_pairs, 50, 1)));
    assert!(Slot::parse(0, 1 << 32, 1).is_err());
    assert!(Slot::parse(0, 1, 1 << 40).is_err());
}

#[test]
fn threshold_or_quota_out_of_range_is_refused() {
    assert!(!satisfied(raw(64, &[(5, 1)], 1 << 32, 1)));
    assert!(!satisfied(raw(64, &[(5, 1)], 50, 1 << 20)));
}

#[test]
fn wrong_commitment_threshold_or_quota_is_refused() {
    let (statement, opening) = build_with_salt(
        64,
        &[(10, 9), (60, 1)],
        50,
        900_000,
        context(),
        Fr::from(1u64),
    )
    .unwrap();
    let honest = PublicValues::from(&statement);
    let witness = WitnessValues {
        salt: opening.salt(),
        slots: opening
            .slots()
            .iter()
            .map(|s| (u64::from(s.value()), s.weight()))
            .collect(),
    };
    let with =
        |public: PublicValues| satisfied(ThresholdCircuit::from_raw(64, public, witness.clone()));
    assert!(with(honest));
    assert!(!with(PublicValues {
        commitment: honest.commitment + Fr::one(),
        ..honest
    }));
    // A threshold under 60 but a quota above 90%: both make the claim false.
    assert!(!with(PublicValues {
        quota_ppm: Fr::from(900_001u64),
        ..honest
    }));
    let (low_t, _) = build_with_salt(
        64,
        &[(10, 9), (60, 1)],
        9,
        900_000,
        context(),
        Fr::from(1u64),
    )
    .unwrap();
    assert!(!with(PublicValues {
        threshold: Fr::from(low_t.threshold()),
        ..honest
    }));
    // Another salt does not open the same commitment.
    let other_salt = WitnessValues {
        salt: Fr::from(2u64),
        ..witness.clone()
    };
    assert!(!satisfied(ThresholdCircuit::from_raw(
        64, honest, other_salt
    )));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    #[test]
    fn circuit_verdict_matches_native(
        pairs in prop::collection::vec((0u64..8, 0u64..5), 0..=7),
        t in 0u32..8,
        q in prop_oneof![Just(0u32), Just(1_000_000u32), 0u32..=1_000_000],
    ) {
        let (circuit, native) = honest(7, &pairs, t, q);
        prop_assert_eq!(circuit, native);
    }
}

#[test]
fn statement_json_refuses_non_canonical_field_elements() {
    use slaproof_circuits::statement::parse_field;
    assert_eq!(parse_field("commitment", "0").unwrap(), Fr::zero());
    assert_eq!(parse_field("commitment", "42").unwrap(), Fr::from(42u64));
    for bad in [
        "",
        "042",
        "-1",
        "0x10",
        "1 ",
        // The modulus itself.
        "21888242871839275222246405745257275088548364400416034343698204186575808495617",
    ] {
        assert!(parse_field("commitment", bad).is_err(), "{bad:?}");
    }
}

/// Issue 16's first attack: with `h₀ = r`, any intermediate value of a
/// longer vector's chain was a valid salt for a shorter vector of its
/// remaining slots, and the verifier takes the slot count from the
/// statement. 99 slots are 33 packed elements, three chain runs of 11; the
/// 66 slots after the first run would open the same commitment.
#[test]
fn a_shorter_vector_opened_at_an_intermediate_chain_value_is_refused() {
    use slaproof_circuits::gadgets::poseidon::{self, CHAIN_RATE};
    use slaproof_circuits::statement::seed;
    let pairs: Vec<(u64, u64)> = (0..99).map(|i| (i % 60, 1 + i % 3)).collect();
    let (statement, opening) =
        build_with_salt(99, &pairs, 50, 800_000, context(), Fr::from(7u64)).unwrap();
    let elements = pack(opening.slots());
    assert_eq!(elements.len(), 3 * CHAIN_RATE);
    let first_run = poseidon::chain(
        seed(99, context(), opening.salt()).unwrap(),
        &elements[..CHAIN_RATE],
    )
    .unwrap();
    // The chain still composes (this is what the attack used) ...
    assert_eq!(
        poseidon::chain(first_run, &elements[CHAIN_RATE..]).unwrap(),
        statement.commitment()
    );
    // ... but the suffix's own chain starts at seed(66, context, r'),
    // so the intermediate value as r' opens nothing.
    let suffix = &opening.slots()[3 * CHAIN_RATE..];
    assert_eq!(suffix.len(), 66);
    assert_ne!(
        commit(context(), first_run, suffix).unwrap(),
        statement.commitment()
    );
    let circuit = ThresholdCircuit::from_raw(
        66,
        PublicValues {
            commitment: statement.commitment(),
            threshold: Fr::from(50u64),
            quota_ppm: Fr::from(800_000u64),
            context: context().as_field(),
        },
        WitnessValues {
            salt: first_run,
            slots: suffix
                .iter()
                .map(|s| (u64::from(s.value()), s.weight()))
                .collect(),
        },
    );
    assert!(!satisfied(circuit), "a suffix opened the longer commitment");
}

/// Issue 16's second attack: the commitment did not bind the context, so an
/// opening made under one context proved a claim under another.
#[test]
fn a_commitment_made_under_one_context_opens_under_no_other() {
    let pairs = [(10, 9), (70, 1)];
    let (statement, opening) =
        build_with_salt(64, &pairs, 50, 900_000, context(), Fr::from(11u64)).unwrap();
    assert!(satisfied(ThresholdCircuit::new(&statement, &opening)));
    let other = common::context_of("p95");
    let moved = ThresholdCircuit::from_raw(
        64,
        PublicValues {
            commitment: statement.commitment(),
            threshold: Fr::from(50u64),
            quota_ppm: Fr::from(900_000u64),
            context: other.as_field(),
        },
        WitnessValues {
            salt: opening.salt(),
            slots: pairs.to_vec(),
        },
    );
    assert!(
        !satisfied(moved),
        "the opening proved a claim under another context"
    );
}

#[test]
fn the_context_changes_with_every_field_of_the_claim() {
    let base = common::claim("p99", 1_793_491_200);
    let variants = [
        Claim {
            tenant: "ten_2",
            ..base
        },
        Claim {
            sla: "sla_2",
            ..base
        },
        Claim {
            sla_version: 2,
            ..base
        },
        Claim {
            objective: "p95",
            ..base
        },
        Claim {
            field: "ttft",
            ..base
        },
        Claim { unit: "ms", ..base },
        Claim {
            operator: "<",
            ..base
        },
        Claim {
            threshold: 51,
            ..base
        },
        Claim {
            period_start: base.period_start + 1,
            ..base
        },
        Claim {
            period_end: base.period_end + 1,
            ..base
        },
        Claim {
            revision: 2,
            ..base
        },
        // Length prefixes: moving a character between fields changes it too.
        Claim {
            tenant: "ten_1s",
            sla: "la_1",
            ..base
        },
    ];
    let context = ContextHash::of(&base);
    for variant in variants {
        assert_ne!(ContextHash::of(&variant), context, "{variant:?}");
    }
}

#[test]
fn a_derived_salt_is_reproducible_and_secret_dependent() {
    use slaproof_circuits::derive_salt;
    let secret = [7u8; 32];
    assert_eq!(
        derive_salt(&secret, context()),
        derive_salt(&secret, context())
    );
    assert_ne!(
        derive_salt(&secret, context()),
        derive_salt(&[8u8; 32], context())
    );
    assert_ne!(
        derive_salt(&secret, context()),
        derive_salt(&secret, common::context_of("p95"))
    );
}
