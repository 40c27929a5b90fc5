//! The comparison gadget against its native twin, and against a prover who supplies a dishonest remainder.

use ark_bn254::Fr;
use ark_ff::{One, Zero};
use ark_relations::r1cs::{ConstraintSystem, ConstraintSystemRef};
use proptest::prelude::*;
use slaproof_circuits::gadgets::compare::constraints::{AtMostGadget, AtMostVar};
use slaproof_circuits::gadgets::compare::{at_most, offset_difference};
use slaproof_circuits::gadgets::linear::LinearVar;

/// Allocates `v` (witness index 0) and `T` (input), then the gadget's 32
/// remainder bits (witness indices 1..=32).
fn compare(value: u32, threshold: u32) -> (ConstraintSystemRef<Fr>, LinearVar) {
    let cs = ConstraintSystem::<Fr>::new_ref();
    let v = LinearVar::new_witness(&cs, Some(Fr::from(value))).unwrap();
    let t = LinearVar::new_input(&cs, Some(Fr::from(threshold))).unwrap();
    let good = AtMostVar::at_most(&cs, &v, &t).unwrap();
    (cs, good)
}

#[test]
fn costs_33_constraints() {
    let (cs, _) = compare(1, 2);
    assert_eq!(cs.num_constraints(), 33);
}

#[test]
fn edges_match_native() {
    let max = u32::MAX;
    for (v, t) in [
        (0, 0),
        (0, max),
        (max, 0),
        (max, max),
        (50, 50),
        (51, 50),
        (49, 50),
    ] {
        let (cs, good) = compare(v, t);
        assert!(cs.is_satisfied().unwrap(), "({v}, {t})");
        let expected = if at_most(v, t) { Fr::one() } else { Fr::zero() };
        assert_eq!(good.value().unwrap(), expected, "({v}, {t})");
        assert_eq!(at_most(v, t), v <= t);
    }
}

#[test]
fn a_dishonest_remainder_is_refused() {
    // v > T: the honest verdict is 0. Flipping it to 1 needs a remainder
    // x − 2³², which is negative; try the remainders a cheating prover might.
    for (v, t) in [(51u32, 50u32), (u32::MAX, 0), (1, 0), (50, 50)] {
        let x = offset_difference(v, t);
        let candidates = [
            0u64,
            1,
            x.wrapping_sub(1 << 32) & 0xffff_ffff,
            (1 << 32) - 1,
            x ^ 1,
        ];
        for remainder in candidates {
            if remainder == x & 0xffff_ffff {
                continue; // the honest remainder
            }
            let (cs, _) = compare(v, t);
            {
                let mut inner = cs.borrow_mut().unwrap();
                for j in 0..32 {
                    inner.witness_assignment[1 + j] = Fr::from((remainder >> j) & 1);
                }
            }
            assert!(
                !cs.is_satisfied().unwrap(),
                "({v}, {t}) with remainder {remainder}"
            );
        }
    }
}

proptest! {
    #[test]
    fn gadget_matches_native(v in any::<u32>(), t in any::<u32>()) {
        let (cs, good) = compare(v, t);
        prop_assert!(cs.is_satisfied().unwrap());
        prop_assert_eq!(good.value().unwrap() == Fr::one(), v <= t);
    }
}
