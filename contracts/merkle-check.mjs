#!/usr/bin/env node
// Checks a Merkle tree built elsewhere (slaproof's Rust side) against npm
// `@openzeppelin/merkle-tree`, leaf encoding ["bytes32"].
//
//   node contracts/merkle-check.mjs < input.json
//
// Input: { "values": ["0x…", …], "checks": [{ "root": "0x…", "value": "0x…",
// "proof": ["0x…", …] }, …] }. Output on stdout: { "root": the root of
// StandardMerkleTree.of(values, ["bytes32"]), "verified": [the answer of
// StandardMerkleTree.verify(root, ["bytes32"], [value], proof) for each
// check] }.

import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)
const { StandardMerkleTree } = require('@openzeppelin/merkle-tree')

const ENCODING = ['bytes32']
const input = JSON.parse(readFileSync(0, 'utf8'))
const tree = StandardMerkleTree.of(input.values.map((v) => [v]), ENCODING)
const verified = (input.checks ?? []).map(({ root, value, proof }) =>
  StandardMerkleTree.verify(root, ENCODING, [value], proof),
)
console.log(JSON.stringify({ root: tree.root, verified }))
