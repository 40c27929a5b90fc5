// The auditor's checks, as `slaproof verify` runs them
// (services/attestation/src/audit.rs), in the browser: each named, with
// what it found in words, so that a failure says which link of the chain
// of evidence broke.

import { groth16 } from 'snarkjs'
import {
  type Address,
  type Hex,
  createPublicClient,
  decodeAbiParameters,
  encodeAbiParameters,
  http,
  keccak256,
  parseAbi,
  toBytes,
} from 'viem'
import { type Bundle, FORMAT, type StatementFile } from './bundle'
import { g1, g2, keyBytes, proofBytes, sha256Hex } from './serialize'

/** `not-checked`: a pin not given or a check not run here: never a pass. */
export type Status = 'passed' | 'failed' | 'not-checked'

export interface Check {
  name: string
  /** What it means, for someone who is not a cryptographer. */
  means: string
  status: Status
  detail: string
}

/** What the auditor pins, entered on the page (never taken from a link:
 * whoever sends the link would choose what the proof is checked against). */
export interface Pins {
  vkSha256?: string
  chainId?: number
  eas?: string
  attester?: string
}

/** What the checks add up to, as `slaproof verify`'s verdict: only
 * `verified` is green. */
export type Verdict =
  | { kind: 'verified' }
  | { kind: 'unverified'; notChecked: string[] }
  | { kind: 'failed'; failed: string[] }

export function verdictOf(checks: Check[]): Verdict {
  const failed = checks.filter((c) => c.status === 'failed').map((c) => c.name)
  if (failed.length > 0) return { kind: 'failed', failed }
  const notChecked = checks.filter((c) => c.status === 'not-checked').map((c) => c.name)
  return notChecked.length > 0 ? { kind: 'unverified', notChecked } : { kind: 'verified' }
}

const PERIOD_SCHEMA =
  'bytes32 tenantHash,bytes32 slaHash,bytes32 objective,uint64 periodStart,uint64 periodEnd,uint64 threshold,uint32 fractionPpm,bytes32 commitment,bytes32 vkHash,bytes32 proofHash,bytes32 statementId'
const VERIFIED_SCHEMA = `${PERIOD_SCHEMA},uint256[8] proof,uint256[4] publicInputs`
const BATCH_SCHEMA = 'bytes32 root,uint64 epochStart,uint64 epochEnd,uint32 count'

const STATEMENT = [
  { name: 'tenantHash', type: 'bytes32' },
  { name: 'slaHash', type: 'bytes32' },
  { name: 'objective', type: 'bytes32' },
  { name: 'periodStart', type: 'uint64' },
  { name: 'periodEnd', type: 'uint64' },
  { name: 'threshold', type: 'uint64' },
  { name: 'fractionPpm', type: 'uint32' },
  { name: 'commitment', type: 'bytes32' },
  { name: 'vkHash', type: 'bytes32' },
] as const

const MEANS: Record<string, string> = {
  files: 'The four files are all here and readable.',
  format: 'The files are in the format this page understands.',
  'verifying key': 'The key the proof is checked with is exactly the one the claim names.',
  'key pinned': 'That key is the one the provider publishes, which you gave: otherwise it is only the one the provider’s own files name.',
  'daily commitments': 'The data was fixed day by day, each day anchored as the period went, before its outcome was known.',
  'public inputs': 'The numbers the proof is about are the claim’s threshold and fraction.',
  'claim form': 'The claim is of the one form the proof system proves ("at least q of the values are at most T").',
  context: 'The proof is bound to this provider, SLA, objective and period, not to another claim.',
  summary: 'The sentence the provider wrote says what the checked numbers say; the claim shown above is rebuilt from those numbers, never from that sentence.',
  'key setup': 'No one party could forge a proof with this key: it comes from a ceremony in which one honest contributor to each phase suffices.',
  proof: 'The zero-knowledge proof is valid for this key: unless someone could forge with the key (key setup), the hidden data meet the claim.',
  'statement id': 'The claim’s fingerprint is what anyone recomputes from it.',
  anchor: 'The chain holds this very claim, written when it was anchored, so it cannot have been changed since.',
  inclusion: 'The claim is one of the batch whose root the chain holds.',
  attester: 'The chain entry was written by an attester slaproof’s contract authorises.',
  'attester pinned': 'The chain entry was written by the provider’s own attester address you gave.',
  'chain pinned': 'The chain entry is on the chain you gave.',
  'EAS pinned': 'The chain entry is in the attestation registry you gave.',
}

class Report {
  readonly checks: Check[] = []
  add(name: string, status: Status, detail: string): boolean {
    this.checks.push({ name, means: MEANS[name] ?? '', status, detail })
    return status === 'passed'
  }
  pass(name: string, detail: string): boolean {
    return this.add(name, 'passed', detail)
  }
  fail(name: string, detail: string): boolean {
    return this.add(name, 'failed', detail)
  }
  notChecked(name: string, detail: string): boolean {
    return this.add(name, 'not-checked', detail)
  }
}

const word = (n: bigint): Hex => `0x${n.toString(16).padStart(64, '0')}`
const hex32 = (digest: string): Hex => (digest.startsWith('0x') ? digest : `0x${digest}`) as Hex

const infinite = (bytes: Uint8Array) => (bytes[bytes.length - 1] & 0x40) !== 0
const same = (a: Uint8Array, b: Uint8Array) => a.length === b.length && a.every((x, i) => x === b[i])

/** Why a key would verify forged proofs, as `slaproof verify` refuses it
 * (`verifying_key_from_snarkjs`): a point at infinity among α, β, γ, δ, or
 * γ = δ (then A = α, B = β, C = −Σ inputs·IC verifies any inputs). */
function forges(key: Bundle['key']): string | null {
  const [gamma, delta] = [g2(key.vk_gamma_2), g2(key.vk_delta_2)]
  if ([g1(key.vk_alpha_1), g2(key.vk_beta_2), gamma, delta].some(infinite)) {
    return 'α, β, γ or δ is the point at infinity: such a key verifies forged proofs; no setup makes one'
  }
  if (same(gamma, delta)) return 'γ = δ: such a key verifies a forged proof of any inputs; no setup makes one'
  return null
}

/** sha256 of the claim's canonical encoding, first 31 bytes, as the
 * circuit's context input (docs/CIRCUITS.md, "Context hash"). */
async function contextOf(b: Bundle): Promise<bigint> {
  const c = b.statement.claim
  const parts: number[] = []
  const text = (s: string) => {
    const bytes = new TextEncoder().encode(s)
    parts.push(...u32(bytes.length), ...bytes)
  }
  const u32 = (n: number) => [(n >>> 24) & 255, (n >>> 16) & 255, (n >>> 8) & 255, n & 255]
  const i64 = (n: number | bigint) => {
    const out = new Uint8Array(8)
    new DataView(out.buffer).setBigInt64(0, BigInt(n))
    return Array.from(out)
  }
  parts.push(...new TextEncoder().encode('slaproof/context/v2'))
  text(c.tenant)
  text(c.sla)
  parts.push(...u32(c.sla_version))
  text(c.objective)
  text(c.field)
  text(c.unit)
  text(c.operator)
  parts.push(...i64(BigInt(c.threshold)))
  parts.push(...i64(c.period_start), ...i64(c.period_end))
  parts.push(...u32(c.revision))
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', new Uint8Array(parts)))
  return digest.slice(0, 31).reduce((acc, b) => (acc << 8n) | BigInt(b), 0n)
}

function statementOf(b: Bundle) {
  const s = b.statement
  return {
    tenantHash: keccak256(toBytes(s.claim.tenant)),
    slaHash: keccak256(toBytes(s.claim.sla)),
    objective: keccak256(toBytes(s.claim.objective)),
    periodStart: BigInt(s.claim.period_start),
    periodEnd: BigInt(s.claim.period_end),
    threshold: BigInt(s.claim.threshold),
    fractionPpm: s.quota_ppm,
    commitment: word(BigInt(b.public[0] ?? '0')),
    vkHash: hex32(s.verifying_key_sha256),
  }
}

/** OpenZeppelin's StandardMerkleTree leaf and pair hashing. */
function includes(root: Hex, id: Hex, proof: Hex[]): boolean {
  let node = keccak256(keccak256(id))
  for (const sibling of proof) {
    const [lo, hi] = BigInt(node) <= BigInt(sibling) ? [node, sibling] : [sibling, node]
    node = keccak256(`0x${lo.slice(2)}${hi.slice(2)}`)
  }
  return node.toLowerCase() === root.toLowerCase()
}

const EAS_ABI = parseAbi([
  'struct Attestation { bytes32 uid; bytes32 schema; uint64 time; uint64 expirationTime; uint64 revocationTime; bytes32 refUID; address recipient; address attester; bool revocable; bytes data; }',
  'function getAttestation(bytes32 uid) view returns (Attestation)',
  'function getSchemaRegistry() view returns (address)',
])
const REGISTRY_ABI = parseAbi([
  'struct SchemaRecord { bytes32 uid; address resolver; bool revocable; string schema; }',
  'function getSchema(bytes32 uid) view returns (SchemaRecord)',
])
const RESOLVER_ABI = parseAbi(['function isAttester(address attester) view returns (bool)'])

/** The claim with its proven fraction in one sentence, as `slaproof
 * verify` rebuilds it (`ClaimRecord::sentence` in the attestation crate):
 * from the fields the context input and the public inputs bind. */
export function sentence(s: StatementFile): string {
  const c = s.claim
  return (
    `At least ${s.quota_ppm / 10000}% of the weighted ${c.field} values of objective ${c.objective} ` +
    `of SLA ${c.sla} v${c.sla_version} (tenant ${c.tenant}) from ${c.period_start} to ${c.period_end} ` +
    `(Unix seconds, result revision ${c.revision}) are ${c.operator} ${c.threshold} ${c.unit}.`
  )
}

export async function audit(b: Bundle, rpcUrl: string | null, pins: Pins): Promise<Check[]> {
  const r = new Report()
  const s = b.statement
  r.pass('files', 'verification_key.json, proof.json, public.json, statement.json')
  r.add('format', s.format === FORMAT ? 'passed' : 'failed', s.format === FORMAT ? FORMAT : `statement.json is ${JSON.stringify(s.format)}, not ${FORMAT}`)

  // The key is the one the statement names: recomputed from its points.
  const keyHash = await sha256Hex(keyBytes(b.key))
  let keyOk = false
  const forged = forges(b.key)
  if (forged) {
    // First: whatever hash a provider anchored for it, no setup makes it.
    r.fail('verifying key', forged)
  } else if (keyHash !== s.verifying_key_sha256) {
    r.fail('verifying key', `its sha256 is ${keyHash}, the statement names ${s.verifying_key_sha256}`)
  } else if (pins.vkSha256 && pins.vkSha256.toLowerCase() !== keyHash) {
    r.fail('verifying key', `the bundle's key has sha256 ${keyHash}, the pinned key is ${pins.vkSha256}`)
  } else if (b.key.IC.length !== 5) {
    r.fail('verifying key', 'it does not take four public inputs')
  } else {
    keyOk = r.pass('verifying key', `sha256 ${keyHash}`)
    if (pins.vkSha256) r.pass('key pinned', `${keyHash}, as pinned`)
    else r.notChecked('key pinned', 'not pinned: the key is only the one the bundle names; give the provider’s published key hash')
  }

  // Who could forge with the key: never passed on this page.
  const setup = s.key_setup ?? { kind: 'development' }
  if (setup.kind === 'ceremony') {
    const steps = setup.contributions.map((c) => (c.beacon ? 'beacon' : c.name)).join(', ')
    r.notChecked('key setup', `the statement says the key comes from a ceremony of ${steps}; not checked on this page: slaproof verify --ceremony --ptau checks it with snarkjs`)
  } else {
    r.notChecked('key setup', 'development key: whoever ran the setup can forge a proof of any statement; keys from a ceremony (slaproof ceremony) are checked by slaproof verify --ceremony --ptau')
  }

  const listed = s.public_inputs.map((p) => p.value)
  const names = s.public_inputs.map((p) => p.name).join(',')
  if (names !== 'commitment,threshold,quota_ppm,context') r.fail('public inputs', `statement.json names ${names}`)
  else if (JSON.stringify(listed) !== JSON.stringify(b.public)) r.fail('public inputs', 'public.json differs from statement.json’s public inputs')
  else if (b.public[1] !== String(s.claim.threshold)) r.fail('public inputs', `the threshold input is ${b.public[1]}, the claim says ${s.claim.threshold}`)
  else if (b.public[2] !== String(s.quota_ppm)) r.fail('public inputs', `the quota input is ${b.public[2]}, the statement says ${s.quota_ppm}`)
  else r.pass('public inputs', `T = ${s.claim.threshold} ${s.claim.unit}, q = ${s.quota_ppm} ppm`)

  const form =
    s.claim.operator !== '<='
      ? `the claim says ${s.claim.operator}; only <= is proven`
      : s.claim.unit === 'us' || (s.claim.unit === 'verdict' && s.claim.threshold === 0)
        ? null
        : `the unit ${s.claim.unit} with T = ${s.claim.threshold} is not one slaproof proves`
  if (form) r.fail('claim form', form)
  else r.pass('claim form', s.claim.unit === 'us' ? 'values ≤ T, in microseconds' : 'verdicts: 0 good, 1 bad, T = 0')

  const context = await contextOf(b)
  // The claim as shown is rebuilt from the fields the context and the
  // public inputs bind, never taken from the bundle's free text.
  const claimed = sentence(s)
  if (String(context) === b.public[3]) r.pass('context', `the claim hashes to the context input (${claimed})`)
  else r.fail('context', 'the claim in statement.json does not hash to the context input: the proof is about another claim')
  if (s.summary.startsWith(claimed)) r.pass('summary', 'the bundle’s summary states the claim the fields make')
  else r.fail('summary', `the bundle’s summary says “${s.summary}”; the claim its checked fields make is “${claimed}”`)

  const proofHash = await sha256Hex(proofBytes(b.proof))
  if (!keyOk) r.notChecked('proof', 'no trusted verifying key')
  else {
    let valid = false
    try {
      valid = await groth16.verify(b.key, b.public, b.proof)
    } catch (e) {
      r.fail('proof', `snarkjs could not check it: ${e instanceof Error ? e.message : String(e)}`)
    }
    if (valid && proofHash === s.proof_sha256) r.pass('proof', 'Groth16 on BN254 verifies against the key and the inputs (snarkjs)')
    else if (valid) r.fail('proof', `it verifies, but its sha256 is ${proofHash}, the statement names ${s.proof_sha256}`)
    else if (!r.checks.some((c) => c.name === 'proof')) r.fail('proof', 'the proof does not verify against the key and the inputs')
  }

  const statement = statementOf(b)
  const id = keccak256(encodeAbiParameters([{ type: 'tuple', components: STATEMENT }], [statement]))
  const idOk =
    id.toLowerCase() === s.statement_id.toLowerCase()
      ? r.pass('statement id', id)
      : r.fail('statement id', `the statement hashes to ${id}, statement.json says ${s.statement_id}`)

  // The days are not checked in the browser (their commitments and
  // anchors): said so, never passed.
  if (s.circuit === 'daily' && s.days) {
    r.notChecked('daily commitments', `the ${s.days.length} anchored days are not checked on this page: slaproof verify checks each day’s commitment and anchor`)
  } else {
    r.notChecked('daily commitments', 'proven over a vector committed at the close, not over days anchored as the period went')
  }

  if (!rpcUrl) {
    r.notChecked(s.anchor.path === 'batched' ? 'inclusion' : 'anchor', 'no RPC address given: nothing on chain was read (the attestation, its chain, EAS and attester)')
    return r.checks
  }
  try {
    await checkAnchor(r, b, rpcUrl, pins, statement, id, idOk, proofHash)
  } catch (e) {
    r.fail('anchor', `reading the chain failed: ${e instanceof Error ? e.message : String(e)}`)
  }
  return r.checks
}

async function checkAnchor(
  r: Report,
  b: Bundle,
  rpcUrl: string,
  pins: Pins,
  statement: ReturnType<typeof statementOf>,
  id: Hex,
  idOk: boolean,
  proofHash: string,
): Promise<void> {
  const s = b.statement
  const a = s.anchor
  // Unpinned is not checked; only a pin the bundle contradicts stops the read.
  if (pins.chainId === undefined) r.notChecked('chain pinned', `not pinned: the chain is only the one the bundle names (${a.chain_id}); give its chain id`)
  else if (pins.chainId === a.chain_id) r.pass('chain pinned', `${a.chain_id}, as pinned`)
  else r.fail('chain pinned', `the bundle names chain ${a.chain_id}, the pinned chain is ${pins.chainId}`)
  if (!pins.eas) r.notChecked('EAS pinned', `not pinned: the EAS contract is only the one the bundle names (${a.eas}); give its address`)
  else if (pins.eas.toLowerCase() === a.eas.toLowerCase()) r.pass('EAS pinned', `${a.eas}, as pinned`)
  else r.fail('EAS pinned', `the bundle points at EAS ${a.eas}, the pinned EAS is ${pins.eas}`)
  if (r.checks.some((c) => (c.name === 'chain pinned' || c.name === 'EAS pinned') && c.status === 'failed')) {
    // A look-alike contract answers what it likes: not read at all.
    r.fail('anchor', 'not read: the bundle names another chain or EAS than the pinned one')
    return
  }
  const client = createPublicClient({ transport: http(rpcUrl) })
  const chainId = await client.getChainId()
  if (chainId !== a.chain_id) {
    r.fail('anchor', `the RPC serves chain ${chainId}, the anchor is on chain ${a.chain_id}`)
    return
  }
  const found = await client.readContract({
    address: a.eas as Address,
    abi: EAS_ABI,
    functionName: 'getAttestation',
    args: [a.uid as Hex],
  })
  if (BigInt(found.uid) === 0n) {
    r.fail('anchor', `EAS at ${a.eas} holds no attestation ${a.uid}`)
    return
  }
  if (found.revocationTime !== 0n) {
    r.fail('anchor', `the attestation ${a.uid} is revoked`)
    return
  }
  const when = new Date(Number(found.time) * 1000).toISOString()
  const name = a.path === 'batched' ? 'inclusion' : 'anchor'
  let held: string | null = null
  let schemaText = PERIOD_SCHEMA
  if (!idOk) held = 'not compared: the statement id is wrong'
  else if (a.path === 'hash-only' || a.path === 'verified') {
    schemaText = a.path === 'verified' ? VERIFIED_SCHEMA : PERIOD_SCHEMA
    const fields = [
      { type: 'tuple', components: STATEMENT },
      { type: 'bytes32' },
      { type: 'bytes32' },
      ...(a.path === 'verified' ? [{ type: 'uint256[8]' }, { type: 'uint256[4]' }] : []),
    ]
    const data = decodeAbiParameters(fields, found.data) as unknown[]
    const onChain = data[0] as typeof statement
    const same =
      JSON.stringify(onChain, (_k, v) => (typeof v === 'bigint' ? v.toString() : typeof v === 'string' ? v.toLowerCase() : v)) ===
      JSON.stringify(statement, (_k, v) => (typeof v === 'bigint' ? v.toString() : typeof v === 'string' ? v.toLowerCase() : v))
    if (!same) held = 'the attestation holds another statement'
    else if ((data[1] as string).toLowerCase() !== hex32(proofHash).toLowerCase()) held = 'the attestation holds another proof hash'
    else if ((data[2] as string).toLowerCase() !== id.toLowerCase()) held = 'the attestation holds another statement id'
    else if (a.path === 'verified') {
      const inputs = (data[4] as bigint[]).map(String)
      if (JSON.stringify(inputs) !== JSON.stringify(b.public)) held = 'the attestation holds other public inputs than the bundle’s'
    }
    if (held === null) {
      r.pass(name, `the attestation holds this statement${a.path === 'verified' ? ', its proof and inputs, which the resolver verified on chain' : ', proof hash and id'}; UID ${a.uid}, anchored ${when}`)
    }
  } else if (a.path === 'batched') {
    schemaText = BATCH_SCHEMA
    const [root, , , count] = decodeAbiParameters(
      [{ type: 'bytes32' }, { type: 'uint64' }, { type: 'uint64' }, { type: 'uint32' }],
      found.data,
    )
    if (!a.inclusion_proof) held = 'a batched anchor needs an inclusion proof'
    else if (!includes(root, id, a.inclusion_proof as Hex[])) held = `the inclusion proof does not lead to the root ${root}`
    else r.pass(name, `the statement id is in the batch of ${count} under root ${root}; anchored ${when}`)
  } else held = `unknown anchoring path ${a.path}`
  if (held !== null) r.fail(name, held)

  // Who wrote it: the schema must be slaproof's for the path, with a
  // resolver that authorises the attester.
  const registry = await client.readContract({ address: a.eas as Address, abi: EAS_ABI, functionName: 'getSchemaRegistry' })
  const record = await client.readContract({ address: registry, abi: REGISTRY_ABI, functionName: 'getSchema', args: [found.schema] })
  if (record.schema !== schemaText) r.fail('attester', `the attestation is under a schema that is not slaproof’s for this path: ${record.schema}`)
  else if (BigInt(record.resolver) === 0n) r.fail('attester', 'the schema has no resolver: anyone may attest under it')
  else {
    const allowed = await client.readContract({ address: record.resolver, abi: RESOLVER_ABI, functionName: 'isAttester', args: [found.attester] })
    if (allowed) r.pass('attester', `${found.attester}, authorised by the schema's resolver ${record.resolver}`)
    else r.fail('attester', `${found.attester} is not authorised by the schema's resolver`)
  }
  if (!pins.attester) r.notChecked('attester pinned', `not pinned: any attester the schema’s resolver authorises (${found.attester}); give the provider’s attester address`)
  else if (pins.attester.toLowerCase() === found.attester.toLowerCase()) r.pass('attester pinned', `${found.attester}, as pinned`)
  else r.fail('attester pinned', `the attestation is by ${found.attester}, the pinned attester is ${pins.attester}`)
}
