// arkworks' compressed encoding of BN254 points, to recompute the sha256 of
// the verifying key and of the proof that the statement (and the chain)
// names: each point is its x coordinate, little-endian (Fp2: c0 then c1),
// with two flags in the top bits of its last byte — 0x80 when y is the
// larger of ±y (for Fp2, c1 compared first), 0x40 for the point at
// infinity. A key swapped for another that verifies a forged proof is
// caught here: its hash is not the one anchored.

const P = 21888242871839275222246405745257275088696311157806242266208583745826423697363n

function le32(x: bigint): Uint8Array {
  const out = new Uint8Array(32)
  let v = x
  for (let i = 0; i < 32; i++) {
    out[i] = Number(v & 0xffn)
    v >>= 8n
  }
  return out
}

/** Whether y is the larger of y and −y. */
function negative(y: bigint): boolean {
  return y > (P - y) % P
}

function negative2(y0: bigint, y1: bigint): boolean {
  const n1 = (P - y1) % P
  if (y1 !== n1) return y1 > n1
  return negative(y0)
}

function withFlags(bytes: Uint8Array, flags: number): Uint8Array {
  bytes[bytes.length - 1] |= flags
  return bytes
}

/** A G1 point from snarkjs's projective `[x, y, z]` (z = 1, or the point
 * at infinity `[0, 1, 0]`). */
export function g1(point: string[]): Uint8Array {
  const [x, y, z] = point.map(BigInt)
  if (z === 0n) return withFlags(le32(0n), 0x40)
  return withFlags(le32(x), negative(y) ? 0x80 : 0)
}

export function g2(point: string[][]): Uint8Array {
  const [x, y, z] = point.map((c) => c.map(BigInt))
  const out = new Uint8Array(64)
  if (z[0] === 0n && z[1] === 0n) {
    out[63] = 0x40
    return out
  }
  out.set(le32(x[0]), 0)
  out.set(le32(x[1]), 32)
  if (negative2(y[0], y[1])) out[63] |= 0x80
  return out
}

function concat(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0))
  let at = 0
  for (const p of parts) {
    out.set(p, at)
    at += p.length
  }
  return out
}

function u64le(n: number): Uint8Array {
  const out = new Uint8Array(8)
  new DataView(out.buffer).setBigUint64(0, BigInt(n), true)
  return out
}

export function keyBytes(key: {
  vk_alpha_1: string[]
  vk_beta_2: string[][]
  vk_gamma_2: string[][]
  vk_delta_2: string[][]
  IC: string[][]
}): Uint8Array {
  return concat([
    g1(key.vk_alpha_1),
    g2(key.vk_beta_2),
    g2(key.vk_gamma_2),
    g2(key.vk_delta_2),
    u64le(key.IC.length),
    ...key.IC.map(g1),
  ])
}

export function proofBytes(proof: { pi_a: string[]; pi_b: string[][]; pi_c: string[] }): Uint8Array {
  return concat([g1(proof.pi_a), g2(proof.pi_b), g1(proof.pi_c)])
}

export async function sha256Hex(bytes: Uint8Array): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', bytes as BufferSource))
  return Array.from(digest, (b) => b.toString(16).padStart(2, '0')).join('')
}
