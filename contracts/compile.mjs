#!/usr/bin/env node
// Compiles Solidity sources with the pinned solc-js (no network, no native
// solc) and writes one JSON artifact per contract: ABI, creation and runtime
// bytecode, function selectors, and the compiler version and settings.
//
//   node contracts/compile.mjs [--solc <version>] --out <dir> <file.sol>...
//
// The compiler is npm `solc` (slaproof's own pin) unless `--solc <version>`
// asks for another: then the package `solc-<version>` (an npm alias of
// `solc@<version>` in package.json). Third-party sources that pin an exact
// pragma compile with the version they pin: EAS 1.9.0 says
// `pragma solidity 0.8.29`, and its own build uses that compiler.
//
// Settings: optimizer on with 200 runs, evmVersion shanghai. Shanghai, not
// paris: every chain slaproof anchors on (Ethereum and the OP Stack and
// Arbitrum L2s that carry EAS) has run it since 2023-24, and its PUSH0 makes
// code smaller and a little cheaper. Not cancun or later: nothing here needs
// transient storage or MCOPY, and an older target runs on more chains.
// Imports resolve against the importing file's directory, contracts/, and
// contracts/node_modules.
//
// Artifacts go to files rather than stdout, because piped output over 64 KiB
// can be cut short. Exit status 1 with solc's formatted messages on stderr
// when any source has an error; warnings are printed and do not fail.
//
// The functions below are exported for build.mjs, which compiles the
// committed artifacts with the same compilers, settings and artifact
// format; the command line runs only when this file is the script node runs.

import { mkdirSync, readFileSync, realpathSync, writeFileSync, existsSync } from 'node:fs'
import { basename, dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)

/// contracts/: where imports are looked up after the sources' own directories.
export const CONTRACTS_DIR = dirname(fileURLToPath(import.meta.url))
const here = CONTRACTS_DIR

export const SETTINGS = Object.freeze({
  optimizer: { enabled: true, runs: 200 },
  evmVersion: 'shanghai',
  outputSelection: {
    '*': {
      '*': ['abi', 'evm.bytecode.object', 'evm.deployedBytecode.object', 'evm.methodIdentifiers'],
    },
  },
})

// A refusal the command line reports as `compile.mjs: <message>`, exit 1.
export class CompileError extends Error {}

function usage(message) {
  if (message) console.error(`compile.mjs: ${message}`)
  console.error('usage: node contracts/compile.mjs [--solc <version>] --out <dir> <file.sol>...')
  process.exit(2)
}

function parseArgs(argv) {
  let out
  let version
  const files = []
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--out') {
      out = argv[++i]
      if (!out) usage('--out needs a directory')
    } else if (argv[i] === '--solc') {
      version = argv[++i]
      if (!version) usage('--solc needs a version')
    } else if (argv[i].startsWith('--')) {
      usage(`unknown option ${argv[i]}`)
    } else {
      files.push(argv[i])
    }
  }
  if (!out) usage('--out is required')
  if (files.length === 0) usage('no source files given')
  return { out, version, files }
}

// The pinned compiler, or the aliased package of the version asked for;
// either way its reported version must be the one asked for.
export function loadSolc(version) {
  if (!version) return require('solc')
  const pinned = require('solc')
  const solc = pinned.version().startsWith(`${version}+`) ? pinned : loadAlias(version)
  if (!solc.version().startsWith(`${version}+`)) {
    throw new CompileError(`asked for solc ${version}, package reports ${solc.version()}`)
  }
  return solc
}

function loadAlias(version) {
  try {
    return require(`solc-${version}`)
  } catch {
    throw new CompileError(`solc ${version} is not installed; add "solc-${version}": "npm:solc@${version}" to contracts/package.json`)
  }
}

// Imports are looked up by their source unit name in `searchDirs`, in order.
export function importResolver(searchDirs) {
  return (path) => {
    for (const dir of searchDirs) {
      const candidate = resolve(dir, path)
      if (existsSync(candidate)) return { contents: readFileSync(candidate, 'utf8') }
    }
    return { error: `file not found: ${path} (looked in ${searchDirs.join(', ')})` }
  }
}

// Compiles `sources` (source unit name -> { content }) with standard JSON.
// The names are what the metadata, and so the metadata hash at the end of
// the bytecode, records: a name that is an absolute path makes the bytecode
// depend on where the tree sits. Answers solc's messages (warnings and
// errors, `severity` telling them apart) and its contracts.
export function compileSources(solc, sources, searchDirs, settings = SETTINGS) {
  const input = { language: 'Solidity', sources, settings }
  const output = JSON.parse(solc.compile(JSON.stringify(input), { import: importResolver(searchDirs) }))
  return { messages: output.errors ?? [], contracts: output.contracts ?? {} }
}

export function hasErrors(messages) {
  return messages.some((m) => m.severity === 'error')
}

// The artifact of one contract of solc's output: what deploying and
// calling it needs, and what compiled it.
export function artifactOf(solc, sourceName, contractName, c) {
  return {
    contractName,
    sourceName,
    abi: c.abi,
    bytecode: `0x${c.evm.bytecode.object}`,
    deployedBytecode: `0x${c.evm.deployedBytecode.object}`,
    methodIdentifiers: c.evm.methodIdentifiers,
    compiler: {
      version: solc.version(),
      settings: { optimizer: SETTINGS.optimizer, evmVersion: SETTINGS.evmVersion },
    },
  }
}

// An artifact file's exact text: two-space JSON and a final newline.
export function artifactText(artifact) {
  return `${JSON.stringify(artifact, null, 2)}\n`
}

function main() {
  const { out, version, files } = parseArgs(process.argv.slice(2))
  const solc = loadSolc(version)
  const sources = {}
  const searchDirs = []
  for (const file of files) {
    // Source units are named by the file's name alone, and imports are
    // looked up in the directories of the given sources, then in
    // contracts/ and its packages.
    const name = basename(file)
    if (sources[name]) usage(`two sources named ${name}`)
    sources[name] = { content: readFileSync(file, 'utf8') }
    const dir = dirname(resolve(file))
    if (!searchDirs.includes(dir)) searchDirs.push(dir)
  }
  searchDirs.push(here, join(here, 'node_modules'))

  const { messages, contracts } = compileSources(solc, sources, searchDirs)
  for (const m of messages) console.error(m.formattedMessage ?? m.message)
  if (hasErrors(messages)) process.exit(1)

  mkdirSync(out, { recursive: true })
  const written = new Map()
  for (const [sourceName, byName] of Object.entries(contracts)) {
    for (const [contractName, c] of Object.entries(byName)) {
      // One file per contract name: two contracts of one name would
      // overwrite each other's artifact.
      if (written.has(contractName)) {
        console.error(`compile.mjs: contract ${contractName} is in both ${written.get(contractName)} and ${sourceName}`)
        process.exit(1)
      }
      written.set(contractName, sourceName)
      const path = join(out, `${contractName}.json`)
      writeFileSync(path, artifactText(artifactOf(solc, sourceName, contractName, c)))
      console.log(path)
    }
  }
}

// Run as a script (`node contracts/compile.mjs ...`), not when imported.
if (process.argv[1] && realpathSync(process.argv[1]) === fileURLToPath(import.meta.url)) {
  try {
    main()
  } catch (e) {
    if (!(e instanceof CompileError)) throw e
    console.error(`compile.mjs: ${e.message}`)
    process.exit(1)
  }
}
