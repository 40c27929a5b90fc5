//! Exports for independent verifiers: snarkjs's JSON files (and reading them back, for the auditor's command) and a Solidity verifier contract.

use std::fs;
use std::path::Path;

use ark_bn254::{Bn254, Fq, Fq2, G1Affine, G2Affine};
use ark_ec::{AffineRepr, pairing::Pairing};
use ark_ff::{One, Zero};
use ark_groth16::VerifyingKey;
use serde_json::{Value, json};
use taceo_groth16_sol::askama::Template;

use crate::error::CircuitError;
use crate::proof::SlaProof;
use crate::statement::Statement;

fn fq(x: &Fq) -> Value {
    Value::String(x.to_string())
}

fn fq2(x: &Fq2) -> Value {
    json!([fq(&x.c0), fq(&x.c1)])
}

/// snarkjs writes points in projective form with `z = 1`; the point at
/// infinity is `(0, 1, 0)`.
fn g1(p: &G1Affine) -> Value {
    match p.xy() {
        Some((x, y)) => json!([fq(&x), fq(&y), "1"]),
        None => json!(["0", "1", "0"]),
    }
}

fn g2(p: &G2Affine) -> Value {
    match p.xy() {
        Some((x, y)) => json!([fq2(&x), fq2(&y), ["1", "0"]]),
        None => json!([["0", "0"], ["1", "0"], ["0", "0"]]),
    }
}

/// `verification_key.json` as `snarkjs zkey export verificationkey` writes it.
pub fn snarkjs_verification_key(vk: &VerifyingKey<Bn254>) -> Value {
    let alpha_beta = Bn254::pairing(vk.alpha_g1, vk.beta_g2).0;
    let fq6 = |x: &ark_bn254::Fq6| json!([fq2(&x.c0), fq2(&x.c1), fq2(&x.c2)]);
    json!({
        "protocol": "groth16",
        "curve": "bn128",
        "nPublic": vk.gamma_abc_g1.len() - 1,
        "vk_alpha_1": g1(&vk.alpha_g1),
        "vk_beta_2": g2(&vk.beta_g2),
        "vk_gamma_2": g2(&vk.gamma_g2),
        "vk_delta_2": g2(&vk.delta_g2),
        "vk_alphabeta_12": [fq6(&alpha_beta.c0), fq6(&alpha_beta.c1)],
        "IC": vk.gamma_abc_g1.iter().map(g1).collect::<Vec<_>>(),
    })
}

/// `proof.json` in snarkjs's layout.
pub fn snarkjs_proof(proof: &SlaProof) -> Value {
    let p = proof.groth16();
    json!({
        "pi_a": g1(&p.a),
        "pi_b": g2(&p.b),
        "pi_c": g1(&p.c),
        "protocol": "groth16",
        "curve": "bn128",
    })
}

/// `public.json`: the public inputs as decimal strings, in circuit order.
pub fn snarkjs_public(statement: &Statement) -> Value {
    Value::Array(
        statement
            .public_inputs()
            .iter()
            .map(|x| Value::String(x.to_string()))
            .collect(),
    )
}

/// Writes `verification_key.json`, `proof.json` and `public.json` into `dir`.
pub fn write_snarkjs(
    dir: &Path,
    vk: &VerifyingKey<Bn254>,
    statement: &Statement,
    proof: &SlaProof,
) -> Result<(), CircuitError> {
    fs::create_dir_all(dir).map_err(CircuitError::io(dir))?;
    for (name, value) in [
        ("verification_key.json", snarkjs_verification_key(vk)),
        ("proof.json", snarkjs_proof(proof)),
        ("public.json", snarkjs_public(statement)),
    ] {
        let path = dir.join(name);
        fs::write(&path, serde_json::to_vec_pretty(&value)?).map_err(CircuitError::io(&path))?;
    }
    Ok(())
}

/// A Solidity contract verifying proofs for `vk`, generated with
/// `taceo-groth16-sol` (gnark's verifier template). Its
/// `verifyProof(uint256[8] proof, uint256[4] input)` takes the proof as
/// [`solidity_proof`] lays it out.
pub fn solidity_verifier(vk: &VerifyingKey<Bn254>) -> Result<String, CircuitError> {
    let contract = taceo_groth16_sol::SolidityVerifierContext {
        vk: vk.clone(),
        config: taceo_groth16_sol::SolidityVerifierConfig::default(),
    };
    contract
        .render()
        .map_err(|e| CircuitError::Solidity(e.to_string()))
}

/// The proof as the generated contract's `uint256[8]`, decimal strings.
pub fn solidity_proof(proof: &SlaProof) -> [String; 8] {
    taceo_groth16_sol::prepare_uncompressed_proof(proof.groth16()).map(|x| x.to_string())
}

/// Reads `verification_key.json` as snarkjs writes it (the inverse of
/// [`snarkjs_verification_key`]): what an auditor was handed, checked point
/// by point (on the curve, in the subgroup) before it is trusted.
pub fn verifying_key_from_snarkjs(json: &Value) -> Result<VerifyingKey<Bn254>, CircuitError> {
    if json["protocol"] != "groth16" || json["curve"] != "bn128" {
        return Err(malformed("verification_key", "not a groth16 key on bn128"));
    }
    let ic = json["IC"]
        .as_array()
        .ok_or_else(|| malformed("verification_key", "no IC points"))?;
    let vk = VerifyingKey {
        alpha_g1: g1_from(&json["vk_alpha_1"], "vk_alpha_1")?,
        beta_g2: g2_from(&json["vk_beta_2"], "vk_beta_2")?,
        gamma_g2: g2_from(&json["vk_gamma_2"], "vk_gamma_2")?,
        delta_g2: g2_from(&json["vk_delta_2"], "vk_delta_2")?,
        gamma_abc_g1: ic
            .iter()
            .map(|p| g1_from(p, "IC"))
            .collect::<Result<_, _>>()?,
    };
    // A key with the point at infinity among α, β, γ, δ verifies forged
    // proofs (γ = δ = ∞ with A = α, B = β verifies any inputs); no setup
    // makes one.
    if AffineRepr::is_zero(&vk.alpha_g1)
        || AffineRepr::is_zero(&vk.beta_g2)
        || AffineRepr::is_zero(&vk.gamma_g2)
        || AffineRepr::is_zero(&vk.delta_g2)
    {
        return Err(malformed(
            "verification_key",
            "α, β, γ or δ is the point at infinity: not a key any setup makes",
        ));
    }
    // γ = δ folds the public inputs' term and C into one pairing, so
    // A = α, B = β, C = −Σ inputs·IC verifies any inputs at all; a setup
    // draws γ and δ independently.
    if vk.gamma_g2 == vk.delta_g2 {
        return Err(malformed(
            "verification_key",
            "γ = δ: such a key verifies a forged proof of any inputs; not a key any setup makes",
        ));
    }
    Ok(vk)
}

/// Reads `proof.json` as snarkjs writes it (the inverse of [`snarkjs_proof`]).
pub fn proof_from_snarkjs(json: &Value) -> Result<SlaProof, CircuitError> {
    if json["protocol"] != "groth16" || json["curve"] != "bn128" {
        return Err(malformed("proof", "not a groth16 proof on bn128"));
    }
    Ok(SlaProof(ark_groth16::Proof {
        a: g1_from(&json["pi_a"], "pi_a")?,
        b: g2_from(&json["pi_b"], "pi_b")?,
        c: g1_from(&json["pi_c"], "pi_c")?,
    }))
}

fn malformed(field: &'static str, reason: &str) -> CircuitError {
    CircuitError::Malformed {
        field,
        reason: reason.to_owned(),
    }
}

fn fq_from(value: &Value, field: &'static str) -> Result<Fq, CircuitError> {
    let text = value
        .as_str()
        .ok_or_else(|| malformed(field, "a coordinate is not a decimal string"))?;
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(malformed(field, "a coordinate is not a decimal integer"));
    }
    let x: Fq = text
        .parse()
        .map_err(|_| malformed(field, "a coordinate is not a base-field element"))?;
    if x.to_string() != text {
        return Err(malformed(field, "a coordinate is not canonical"));
    }
    Ok(x)
}

fn coordinates<'v>(value: &'v Value, field: &'static str) -> Result<&'v [Value], CircuitError> {
    value
        .as_array()
        .map(Vec::as_slice)
        .filter(|c| c.len() == 3)
        .ok_or_else(|| malformed(field, "a point is not three coordinates"))
}

fn g1_from(value: &Value, field: &'static str) -> Result<G1Affine, CircuitError> {
    let c = coordinates(value, field)?;
    let z = fq_from(&c[2], field)?;
    if z.is_zero() {
        return Ok(G1Affine::identity());
    }
    if z != Fq::one() {
        return Err(malformed(field, "a point is not affine (z must be 1)"));
    }
    let p = G1Affine::new_unchecked(fq_from(&c[0], field)?, fq_from(&c[1], field)?);
    if !p.is_on_curve() || !p.is_in_correct_subgroup_assuming_on_curve() {
        return Err(malformed(field, "a point is not on the curve"));
    }
    Ok(p)
}

fn fq2_from(value: &Value, field: &'static str) -> Result<Fq2, CircuitError> {
    let c = value
        .as_array()
        .filter(|c| c.len() == 2)
        .ok_or_else(|| malformed(field, "an Fq2 coordinate is not two elements"))?;
    Ok(Fq2::new(fq_from(&c[0], field)?, fq_from(&c[1], field)?))
}

fn g2_from(value: &Value, field: &'static str) -> Result<G2Affine, CircuitError> {
    let c = coordinates(value, field)?;
    let z = fq2_from(&c[2], field)?;
    if z.is_zero() {
        return Ok(G2Affine::identity());
    }
    if z != Fq2::one() {
        return Err(malformed(field, "a point is not affine (z must be 1)"));
    }
    let p = G2Affine::new_unchecked(fq2_from(&c[0], field)?, fq2_from(&c[1], field)?);
    if !p.is_on_curve() || !p.is_in_correct_subgroup_assuming_on_curve() {
        return Err(malformed(
            field,
            "a point is not on the curve or not in the subgroup",
        ));
    }
    Ok(p)
}
