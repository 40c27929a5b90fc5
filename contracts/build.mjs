#!/usr/bin/env node
// Compiles the contracts a slaproof deployment deploys into the committed
// artifacts, contracts/artifacts/<Contract>.json, or checks that those are
// current.
//
//   node contracts/build.mjs           (npm run build --prefix contracts)
//   node contracts/build.mjs --check   (npm run check --prefix contracts)
//
// The artifacts are committed because the Rust chain client embeds them: a
// deployment deploys EAS (where a chain has none), the resolvers and
// BatchCheck without a Solidity compiler. `--check` compiles into memory and
// exits 1 naming every artifact that is missing, stale (differs from what
// the sources compile to) or unexpected (not one this script writes);
// tests/tests/chain_artifacts.rs runs it, so a source, compiler or setting
// changed without a rebuild fails the tests.
//
// Compilers, settings and the artifact format are compile.mjs's: EAS,
// SchemaRegistry and the resolvers with solc 0.8.29 (EAS's exact pragma,
// and the resolvers import EAS's sources), BatchCheck with the pinned solc.
//
// Reproducible byte for byte on any machine and in any clone directory:
// each contract is compiled alone, its source named by a path relative to
// contracts/ (`src/...`) or by its package path (`@ethereum-attestation-
// service/...`), never by an absolute path, and its imports resolve to
// names of the same kind. The names are in the metadata whose hash solc
// appends to the bytecode, so an absolute name would make the bytecode
// depend on where the repository was cloned. Compiling each contract alone
// keeps its bytecode independent of what else is in this list. The
// sources themselves come from the working tree and from node_modules as
// package-lock.json pins it.

import { mkdirSync, readdirSync, readFileSync, writeFileSync, existsSync } from 'node:fs'
import { join } from 'node:path'
import {
  CONTRACTS_DIR,
  CompileError,
  SETTINGS,
  artifactOf,
  artifactText,
  compileSources,
  hasErrors,
  importResolver,
  loadSolc,
} from './compile.mjs'

const EAS = '@ethereum-attestation-service/eas-contracts/contracts'

// What a deployment deploys, one artifact each: the contract, its source
// unit name and the compiler.
const TARGETS = Object.freeze([
  { contract: 'SchemaRegistry', source: `${EAS}/SchemaRegistry.sol`, solc: '0.8.29' },
  { contract: 'EAS', source: `${EAS}/EAS.sol`, solc: '0.8.29' },
  { contract: 'SlaproofResolver', source: 'src/SlaproofResolver.sol', solc: '0.8.29' },
  { contract: 'AttesterResolver', source: 'src/AttesterResolver.sol', solc: '0.8.29' },
  { contract: 'BatchCheck', source: 'src/BatchCheck.sol', solc: '0.8.37' },
])

const ARTIFACTS_DIR = join(CONTRACTS_DIR, 'artifacts')

// Source unit names resolve against contracts/ (`src/...`), then its
// packages: never the machine's absolute paths.
const SEARCH_DIRS = [CONTRACTS_DIR, join(CONTRACTS_DIR, 'node_modules')]

// The text of every target's artifact, by file name; solc's warnings go to
// stderr, and an error in any source throws.
function build() {
  const resolveImport = importResolver(SEARCH_DIRS)
  const solcs = new Map()
  const texts = new Map()
  for (const { contract, source, solc: version } of TARGETS) {
    if (!solcs.has(version)) solcs.set(version, loadSolc(version))
    const solc = solcs.get(version)
    const found = resolveImport(source)
    if (found.error) throw new CompileError(found.error)
    // Only the target's bytecode is asked for; outputSelection is not in
    // the metadata and does not change the code.
    const settings = {
      ...SETTINGS,
      outputSelection: {
        [source]: { [contract]: ['abi', 'evm.bytecode.object', 'evm.deployedBytecode.object', 'evm.methodIdentifiers'] },
      },
    }
    const { messages, contracts } = compileSources(solc, { [source]: { content: found.contents } }, SEARCH_DIRS, settings)
    for (const m of messages) console.error(m.formattedMessage ?? m.message)
    if (hasErrors(messages)) throw new CompileError(`${source} does not compile`)
    const c = contracts[source]?.[contract]
    if (!c) throw new CompileError(`${source} has no contract ${contract}`)
    if (c.evm.bytecode.object.length === 0) throw new CompileError(`${contract} is abstract or an interface: no bytecode`)
    texts.set(`${contract}.json`, artifactText(artifactOf(solc, source, contract, c)))
  }
  return texts
}

// Every file of contracts/artifacts that is missing, stale or unexpected, as a sentence each.
function problems(texts) {
  const found = existsSync(ARTIFACTS_DIR) ? readdirSync(ARTIFACTS_DIR) : []
  const shown = (name) => `contracts/artifacts/${name}`
  const out = []
  for (const [name, text] of texts) {
    if (!found.includes(name)) out.push(`missing: ${shown(name)}`)
    else if (readFileSync(join(ARTIFACTS_DIR, name), 'utf8') !== text) out.push(`stale: ${shown(name)} differs from what its sources compile to`)
  }
  for (const name of found) {
    if (!texts.has(name)) out.push(`unexpected: ${shown(name)} is not an artifact build.mjs writes`)
  }
  return out
}

function main(argv) {
  const check = argv.includes('--check')
  const unknown = argv.filter((a) => a !== '--check')
  if (unknown.length > 0) {
    console.error(`build.mjs: unknown arguments ${unknown.join(' ')}`)
    console.error('usage: node contracts/build.mjs [--check]')
    process.exit(2)
  }
  const texts = build()
  if (check) {
    const found = problems(texts)
    for (const p of found) console.error(`build.mjs: ${p}`)
    if (found.length > 0) {
      console.error('build.mjs: contracts/artifacts is not current; run `npm run build --prefix contracts` and commit the result')
      process.exit(1)
    }
    console.log(`build.mjs: all ${texts.size} artifacts in contracts/artifacts are current`)
    return
  }
  mkdirSync(ARTIFACTS_DIR, { recursive: true })
  for (const [name, text] of texts) {
    const path = join(ARTIFACTS_DIR, name)
    if (!existsSync(path) || readFileSync(path, 'utf8') !== text) writeFileSync(path, text)
    console.log(`contracts/artifacts/${name}`)
  }
  // What this script does not write would fail --check: say so rather than delete it.
  const extra = problems(texts)
  for (const p of extra) console.error(`build.mjs: ${p}; remove it`)
  if (extra.length > 0) process.exit(1)
}

try {
  main(process.argv.slice(2))
} catch (e) {
  if (!(e instanceof CompileError)) throw e
  console.error(`build.mjs: ${e.message}`)
  process.exit(1)
}
