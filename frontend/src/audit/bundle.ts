// The auditor's bundle: the four files `slaproof verify` and snarkjs take
// (docs/CIRCUITS.md, "The auditor's bundle").

export const FILES = ['verification_key.json', 'proof.json', 'public.json', 'statement.json'] as const
export const FORMAT = 'slaproof-attestation/1'

export interface SnarkjsKey {
  protocol: string
  curve: string
  nPublic: number
  vk_alpha_1: string[]
  vk_beta_2: string[][]
  vk_gamma_2: string[][]
  vk_delta_2: string[][]
  IC: string[][]
}

export interface SnarkjsProof {
  pi_a: string[]
  pi_b: string[][]
  pi_c: string[]
  protocol: string
  curve: string
}

export interface Claim {
  tenant: string
  sla: string
  sla_version: number
  objective: string
  field: string
  unit: string
  operator: string
  threshold: number
  period_start: number
  period_end: number
  revision: number
}

/** A key's setup: one party's (it can forge), or a multi-party ceremony's. */
export type KeySetup =
  | { kind: 'development' }
  | {
      kind: 'ceremony'
      r1cs_sha256: string
      zkey_sha256: string
      ptau_sha256?: string
      contributions: { name: string; beacon?: string }[]
    }

export interface StatementFile {
  format: string
  summary: string
  claim: Claim
  slots: number
  quota_ppm: number
  public_inputs: { name: string; value: string; meaning: string }[]
  verifying_key_sha256: string
  proof_sha256: string
  statement_id: string
  /** `daily` when proven over the days anchored as the period went. */
  circuit?: string
  /** The anchored days of a daily proof (checked by `slaproof verify`). */
  days?: unknown[]
  /** Who set the proving key up, as the prover says (absent: development). */
  key_setup?: KeySetup
  anchor: {
    path: string
    chain_id: number
    eas: string
    uid: string
    inclusion_proof?: string[]
  }
}

export interface Bundle {
  key: SnarkjsKey
  proof: SnarkjsProof
  public: string[]
  statement: StatementFile
}

/** Reads the bundle from its files by name; says which file is missing or
 * not JSON. */
export function parseBundle(files: Record<string, string>): Bundle {
  const read = (name: (typeof FILES)[number]) => {
    const text = files[name]
    if (text === undefined) throw new Error(`${name} is missing`)
    try {
      return JSON.parse(text)
    } catch (e) {
      throw new Error(`${name} is not JSON: ${e instanceof Error ? e.message : String(e)}`)
    }
  }
  return {
    key: read('verification_key.json') as SnarkjsKey,
    proof: read('proof.json') as SnarkjsProof,
    public: read('public.json') as string[],
    statement: read('statement.json') as StatementFile,
  }
}
