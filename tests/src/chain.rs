//! A real EVM for the chain tests: anvil from `contracts/node_modules`, a minimal JSON-RPC client, solc-js through `contracts/compile.mjs`, and hand ABI encoding for fixed layouts.
//!
//! No alloy here on purpose: the contract tests (`chain_eas`, `chain_resolver`,
//! `chain_batch`, `chain_verifier`) check the contracts and the encodings
//! themselves, so every byte sent and read is spelled out independently of
//! the alloy client (`slaproof-chain`), which `chain_client` tests.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};

/// The context of the claim the chain tests prove: tenant `ten_1`'s SLA
/// `sla_1` v1, its `p99` latency at most 50 µs over November 2026 (Unix
/// seconds), result revision 1.
pub fn sample_context() -> slaproof_circuits::ContextHash {
    slaproof_circuits::ContextHash::of(&slaproof_circuits::Claim {
        tenant: "ten_1",
        sla: "sla_1",
        sla_version: 1,
        objective: "p99",
        field: "latency",
        unit: "us",
        operator: "<=",
        threshold: 50,
        period_start: 1_793_491_200,
        period_end: 1_796_083_200,
        revision: 1,
    })
}

/// The workspace's `contracts/` folder.
pub fn contracts_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ sits in the workspace")
        .join("contracts")
}

/// The anvil binary when node, the pinned solc-js and anvil are all
/// installed (`npm ci --prefix contracts`); `None` otherwise.
pub fn tools() -> Option<PathBuf> {
    let contracts = contracts_dir();
    let node = Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    let solc = contracts.join("node_modules/solc/soljson.js").is_file();
    let anvil = slaproof_chain::anvil::binary(contracts.parent()?);
    (node && solc).then_some(anvil).flatten()
}

/// Whether the tests run under CI, where a missing tool is a failure rather than a skip.
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false" && v != "0")
}

/// The anvil binary when the tools and the npm `packages` a test needs
/// (folders under `contracts/node_modules`, e.g. `solc-0.8.29`) are
/// installed, or `None` after a loud SKIPPED message naming `test`; panics
/// under CI, where they must be installed.
pub fn tools_or_skip(test: &str, packages: &[&str]) -> Option<PathBuf> {
    let modules = contracts_dir().join("node_modules");
    let missing: Vec<&str> = packages
        .iter()
        .copied()
        .filter(|p| !modules.join(p).is_dir())
        .collect();
    let found = tools().filter(|_| missing.is_empty());
    if found.is_none() {
        assert!(
            !in_ci(),
            "solc, anvil or the npm packages {missing:?} are missing under CI: run \
             `npm ci --prefix contracts` before the tests"
        );
        eprintln!(
            "\n\n!!! SKIPPED {test}: node, contracts/node_modules/solc, the anvil binary or the \
             npm packages {missing:?} are missing; install them with `npm ci --prefix contracts` !!!\n\n"
        );
    }
    found
}

/// A running anvil (`slaproof_chain::anvil`), killed when dropped so that a
/// failing assertion does not leave a node behind.
#[derive(Debug)]
pub struct Anvil {
    _node: slaproof_chain::anvil::Anvil,
    pub url: String,
}

impl Anvil {
    /// Starts anvil on a port the kernel picks.
    pub fn start(binary: &Path) -> Anvil {
        let node = slaproof_chain::anvil::Anvil::start(binary, 0, None).expect("anvil starts");
        Anvil {
            url: node.url().as_str().trim_end_matches('/').to_owned(),
            _node: node,
        }
    }

    /// A JSON-RPC client of this node.
    pub fn rpc(&self) -> Rpc {
        Rpc {
            http: reqwest::Client::new(),
            url: self.url.clone(),
        }
    }
}

/// A minimal JSON-RPC client: the calls the chain tests make, nothing more.
#[derive(Debug)]
pub struct Rpc {
    http: reqwest::Client,
    url: String,
}

impl Rpc {
    /// The JSON-RPC answer: `Ok(result)` or `Err(error object)`.
    pub async fn call(&self, method: &str, params: Value) -> Result<Value, Value> {
        let body = json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params });
        let answer: Value = self
            .http
            .post(&self.url)
            .json(&body)
            .send()
            .await
            .unwrap_or_else(|e| panic!("{method}: {e}"))
            .json()
            .await
            .unwrap_or_else(|e| panic!("{method}: answer is not JSON: {e}"));
        match answer.get("error") {
            Some(error) => Err(error.clone()),
            None => Ok(answer["result"].clone()),
        }
    }

    /// The result of a call that must succeed.
    pub async fn ok(&self, method: &str, params: Value) -> Value {
        self.call(method, params)
            .await
            .unwrap_or_else(|e| panic!("{method} failed: {e}"))
    }

    /// The receipt of `tx`, polled: anvil mines at once, but a receipt may
    /// lag the answer to `eth_sendTransaction`.
    pub async fn receipt(&self, tx: &Value) -> Value {
        for _ in 0..100 {
            let receipt = self.ok("eth_getTransactionReceipt", json!([tx])).await;
            if !receipt.is_null() {
                return receipt;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let pending = self.ok("eth_getTransactionByHash", json!([tx])).await;
        panic!("no receipt for {tx} after 10 s; the transaction: {pending}");
    }

    /// Anvil's first dev account, unlocked: transactions from it need no signing.
    pub async fn dev_account(&self) -> String {
        let accounts = self.ok("eth_accounts", json!([])).await;
        accounts[0]
            .as_str()
            .expect("anvil has dev accounts")
            .to_owned()
    }

    /// Sends a transaction from `from` and returns its receipt, which must show success.
    pub async fn transact(&self, from: &str, to: Option<&str>, data: &[u8], what: &str) -> Value {
        let mut tx = json!({ "from": from, "data": format!("0x{}", hex(data)) });
        if let Some(to) = to {
            tx["to"] = json!(to);
        }
        let hash = self
            .call("eth_sendTransaction", json!([tx]))
            .await
            .unwrap_or_else(|e| panic!("{what}: the node refused the transaction: {e}"));
        let receipt = self.receipt(&hash).await;
        assert_eq!(receipt["status"], "0x1", "{what} failed: {receipt}");
        receipt
    }

    /// Deploys creation code (constructor arguments appended) and returns
    /// the contract's address and the deployment's gas.
    pub async fn deploy(&self, from: &str, code: &[u8], what: &str) -> (String, u64) {
        let receipt = self.transact(from, None, code, what).await;
        let address = receipt["contractAddress"]
            .as_str()
            .unwrap_or_else(|| panic!("{what}: no contract address in {receipt}"))
            .to_owned();
        (address, hex_u64(&receipt["gasUsed"]))
    }

    /// `eth_call` at the latest block; the return data, which must not be a revert.
    pub async fn view(&self, to: &str, data: &[u8], what: &str) -> Vec<u8> {
        let call = json!({ "to": to, "data": format!("0x{}", hex(data)) });
        let answer = self
            .call("eth_call", json!([call, "latest"]))
            .await
            .unwrap_or_else(|e| panic!("{what} reverted: {e}"));
        unhex(answer.as_str().expect("eth_call answers hex"))
    }

    /// Anvil's unlocked dev accounts: `eth_sendTransaction` and `eth_call`
    /// accept any of them as `from`.
    pub async fn dev_accounts(&self) -> Vec<String> {
        let accounts = self.ok("eth_accounts", json!([])).await;
        accounts
            .as_array()
            .expect("eth_accounts answers an array")
            .iter()
            .map(|a| a.as_str().expect("an address").to_owned())
            .collect()
    }

    /// The revert data of a call from `from` that must revert: `eth_call`
    /// at the latest block, which runs it as the transaction would run.
    pub async fn revert_data(&self, from: &str, to: &str, data: &[u8], what: &str) -> Vec<u8> {
        let call = json!({ "from": from, "to": to, "data": format!("0x{}", hex(data)) });
        let error = self
            .call("eth_call", json!([call, "latest"]))
            .await
            .expect_err(&format!("{what}: the call succeeded, it must revert"));
        unhex(
            error["data"]
                .as_str()
                .unwrap_or_else(|| panic!("{what}: a revert without data: {error}")),
        )
    }
}

/// Lower-case hex without a prefix.
/// keccak-256, the EVM's hash.
pub fn keccak(data: &[u8]) -> [u8; 32] {
    use sha3::{Digest, Keccak256};
    Keccak256::digest(data).into()
}

/// The log of `address` with event `signature` in a receipt.
pub fn find_log<'r>(receipt: &'r Value, address: &str, signature: &str) -> &'r Value {
    let topic = format!("0x{}", hex(&keccak(signature.as_bytes())));
    receipt["logs"]
        .as_array()
        .expect("a receipt has logs")
        .iter()
        .find(|log| {
            log["address"].as_str().map(str::to_lowercase) == Some(address.to_lowercase())
                && log["topics"][0] == topic
        })
        .unwrap_or_else(|| panic!("no {signature} log from {address} in {receipt}"))
}

/// Topic `i` of a log, as a word.
pub fn topic_word(log: &Value, i: usize) -> [u8; 32] {
    unhex(log["topics"][i].as_str().expect("a topic"))
        .try_into()
        .expect("a topic is 32 bytes")
}

pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Bytes from hex, with or without `0x`; panics on anything else (test input only).
pub fn unhex(s: &str) -> Vec<u8> {
    let s = s.strip_prefix("0x").unwrap_or(s);
    assert!(s.len().is_multiple_of(2), "odd-length hex: {s}");
    (0..s.len() / 2)
        .map(|i| {
            u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap_or_else(|_| panic!("not hex: {s}"))
        })
        .collect()
}

/// A decimal integer below 2²⁵⁶ as one ABI word (32 bytes, big-endian, hex).
pub fn abi_word(decimal: &str) -> String {
    hex(&decimal_word(decimal))
}

/// A decimal integer below 2²⁵⁶ as one big-endian word.
pub fn decimal_word(decimal: &str) -> [u8; 32] {
    let mut word = [0u8; 32];
    for digit in decimal.bytes() {
        assert!(digit.is_ascii_digit(), "not a decimal: {decimal}");
        let mut carry = u32::from(digit - b'0');
        for byte in word.iter_mut().rev() {
            let x = u32::from(*byte) * 10 + carry;
            *byte = (x & 0xff) as u8;
            carry = x >> 8;
        }
        assert_eq!(carry, 0, "{decimal} does not fit in 256 bits");
    }
    word
}

/// `verifyProof(uint256[8], uint256[4])` calldata: static arrays are encoded
/// in place, so it is the selector and twelve words.
pub fn verify_calldata(selector: &str, proof: &[String; 8], input: &[String; 4]) -> String {
    let words: String = proof.iter().chain(input).map(|x| abi_word(x)).collect();
    format!("0x{selector}{words}")
}

/// A JSON-RPC hex quantity (`"0x1a"`) as a number.
pub fn hex_u64(value: &Value) -> u64 {
    let s = value.as_str().expect("a hex quantity");
    u64::from_str_radix(s.trim_start_matches("0x"), 16).expect("a hex quantity")
}

/// Compiles `sources` with `contracts/compile.mjs` into `out`, with the
/// pinned solc or, given `solc`, the aliased package of that version.
/// Returns solc's warnings (empty when none); panics with its errors.
pub fn compile(sources: &[&Path], out: &Path, solc: Option<&str>) -> String {
    let mut command = Command::new("node");
    command.arg(contracts_dir().join("compile.mjs"));
    if let Some(version) = solc {
        command.args(["--solc", version]);
    }
    let output = command
        .arg("--out")
        .arg(out)
        .args(sources)
        .output()
        .expect("node runs compile.mjs");
    assert!(
        output.status.success(),
        "solc refused {sources:?}:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The artifact `compile` wrote for `contract`.
pub fn artifact(out: &Path, contract: &str) -> Value {
    let path = out.join(format!("{contract}.json"));
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_slice(&bytes).expect("the artifact is JSON")
}

/// The creation bytecode of an artifact.
pub fn creation_code(artifact: &Value) -> Vec<u8> {
    unhex(
        artifact["bytecode"]
            .as_str()
            .expect("the artifact has bytecode"),
    )
}

/// The 4-byte selector of `signature` (as solc writes it, e.g.
/// `getSchema(bytes32)`), read from the artifact's method identifiers.
pub fn selector(artifact: &Value, signature: &str) -> [u8; 4] {
    let id = artifact["methodIdentifiers"][signature]
        .as_str()
        .unwrap_or_else(|| panic!("{} has no {signature}", artifact["contractName"]));
    unhex(id).try_into().expect("a selector is 4 bytes")
}

/// ABI encoding and decoding (the Solidity contract ABI's `abi.encode`) for
/// the few types the tests use: static words, dynamic bytes and strings,
/// and tuples of them.
pub mod abi {
    /// A value to encode, or one decoded.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub enum Token {
        /// Any static 32-byte value: uintN, address, bool, bytes32.
        Word([u8; 32]),
        /// `bytes` or `string`: a length word, then the bytes padded to whole words.
        Bytes(Vec<u8>),
        /// A struct or a function's arguments.
        Tuple(Vec<Token>),
    }

    /// The shape to decode a value by.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub enum Kind {
        Word,
        Bytes,
        Tuple(Vec<Kind>),
    }

    impl Token {
        fn is_dynamic(&self) -> bool {
            match self {
                Token::Word(_) => false,
                Token::Bytes(_) => true,
                Token::Tuple(items) => items.iter().any(Token::is_dynamic),
            }
        }

        /// Words the value takes in its enclosing head: a static tuple
        /// sits there in place, anything else is one word (the value or
        /// an offset).
        fn head_words(&self) -> usize {
            match self {
                Token::Tuple(items) if !self.is_dynamic() => {
                    items.iter().map(Token::head_words).sum()
                }
                _ => 1,
            }
        }

        /// The word of a static value; panics on another token.
        pub fn word(&self) -> [u8; 32] {
            match self {
                Token::Word(w) => *w,
                other => panic!("expected a word, got {other:?}"),
            }
        }

        /// The bytes of a dynamic value; panics on another token.
        pub fn bytes(&self) -> &[u8] {
            match self {
                Token::Bytes(b) => b,
                other => panic!("expected bytes, got {other:?}"),
            }
        }

        /// The items of a tuple; panics on another token.
        pub fn items(&self) -> &[Token] {
            match self {
                Token::Tuple(items) => items,
                other => panic!("expected a tuple, got {other:?}"),
            }
        }

        /// A word as an unsigned integer that must fit in 128 bits.
        pub fn uint(&self) -> u128 {
            let w = self.word();
            assert!(
                w[..16].iter().all(|&b| b == 0),
                "{w:02x?} does not fit in u128"
            );
            u128::from_be_bytes(w[16..].try_into().expect("16 bytes"))
        }
    }

    impl Kind {
        fn is_dynamic(&self) -> bool {
            match self {
                Kind::Word => false,
                Kind::Bytes => true,
                Kind::Tuple(items) => items.iter().any(Kind::is_dynamic),
            }
        }

        /// Words a value of this kind takes in its enclosing head.
        fn head_words(&self) -> usize {
            match self {
                Kind::Tuple(items) if !self.is_dynamic() => {
                    items.iter().map(Kind::head_words).sum()
                }
                _ => 1,
            }
        }
    }

    /// An unsigned integer as a word.
    pub fn uint(value: u128) -> Token {
        let mut w = [0u8; 32];
        w[16..].copy_from_slice(&value.to_be_bytes());
        Token::Word(w)
    }

    /// A `bytes32` (or any 32 raw bytes) as a word.
    pub fn bytes32(value: [u8; 32]) -> Token {
        Token::Word(value)
    }

    /// A boolean as a word.
    pub fn boolean(value: bool) -> Token {
        uint(u128::from(value))
    }

    /// An address (`0x` + 40 hex digits, any case) as a word, right-aligned.
    pub fn address(hex: &str) -> Token {
        let bytes = super::unhex(hex);
        assert_eq!(bytes.len(), 20, "an address is 20 bytes: {hex}");
        let mut w = [0u8; 32];
        w[12..].copy_from_slice(&bytes);
        Token::Word(w)
    }

    /// `abi.encode(tokens...)`: the values as one tuple, heads then tails.
    pub fn encode(tokens: &[Token]) -> Vec<u8> {
        let head_len: usize = 32 * tokens.iter().map(Token::head_words).sum::<usize>();
        let mut head = Vec::with_capacity(head_len);
        let mut tail = Vec::new();
        for token in tokens {
            if token.is_dynamic() {
                // The offset of a dynamic value counts from the start of
                // the enclosing tuple's encoding.
                head.extend_from_slice(&uint((head_len + tail.len()) as u128).word());
                tail.extend(encode_one(token));
            } else {
                head.extend(encode_one(token));
            }
        }
        head.extend(tail);
        head
    }

    fn encode_one(token: &Token) -> Vec<u8> {
        match token {
            Token::Word(w) => w.to_vec(),
            Token::Bytes(b) => {
                let mut out = uint(b.len() as u128).word().to_vec();
                out.extend_from_slice(b);
                out.resize(32 + b.len().div_ceil(32) * 32, 0);
                out
            }
            Token::Tuple(items) => encode(items),
        }
    }

    /// Calldata: a selector, then the arguments encoded as a tuple.
    pub fn call(selector: [u8; 4], args: &[Token]) -> Vec<u8> {
        let mut out = selector.to_vec();
        out.extend(encode(args));
        out
    }

    /// Decodes `data` as the tuple of `kinds` (return data, event data,
    /// `abi.encode` output). Panics on data too short or offsets out of
    /// range, naming where.
    pub fn decode(data: &[u8], kinds: &[Kind]) -> Vec<Token> {
        let mut tokens = Vec::with_capacity(kinds.len());
        let mut at = 0;
        for kind in kinds {
            let token = if kind.is_dynamic() {
                let offset = word_as_usize(data, at);
                decode_one(data, offset, kind)
            } else {
                decode_one(data, at, kind)
            };
            tokens.push(token);
            at += 32 * kind.head_words();
        }
        tokens
    }

    fn decode_one(data: &[u8], at: usize, kind: &Kind) -> Token {
        match kind {
            Kind::Word => Token::Word(word_at(data, at)),
            Kind::Bytes => {
                let len = word_as_usize(data, at);
                let start = at + 32;
                let bytes = data.get(start..start + len).unwrap_or_else(|| {
                    panic!(
                        "bytes of length {len} at {start} overrun {} bytes",
                        data.len()
                    )
                });
                Token::Bytes(bytes.to_vec())
            }
            Kind::Tuple(items) => Token::Tuple(decode(
                data.get(at..)
                    .unwrap_or_else(|| panic!("tuple at {at} is past the end")),
                items,
            )),
        }
    }

    fn word_at(data: &[u8], at: usize) -> [u8; 32] {
        data.get(at..at + 32)
            .unwrap_or_else(|| panic!("no word at {at} in {} bytes", data.len()))
            .try_into()
            .expect("32 bytes")
    }

    fn word_as_usize(data: &[u8], at: usize) -> usize {
        let w = word_at(data, at);
        assert!(
            w[..24].iter().all(|&b| b == 0),
            "offset or length at {at} is too large"
        );
        u64::from_be_bytes(w[24..].try_into().expect("8 bytes")) as usize
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        fn words(hex: &[&str]) -> Vec<u8> {
            hex.iter()
                .flat_map(|w| {
                    let w = super::super::unhex(w);
                    let mut padded = vec![0u8; 32 - w.len()];
                    padded.extend(w);
                    padded
                })
                .collect()
        }

        /// The Solidity ABI specification's example: `f(uint256,uint32[],bytes10,bytes)`
        /// reduced to what is supported here, `(uint256 0x123, bytes "Hello, world!")`.
        #[test]
        fn a_dynamic_bytes_after_a_word_is_an_offset_then_a_padded_tail() {
            let encoded = encode(&[uint(0x123), Token::Bytes(b"Hello, world!".to_vec())]);
            let mut expected = words(&["0123", "40", "0d"]);
            let mut text = b"Hello, world!".to_vec();
            text.resize(32, 0);
            expected.extend(text);
            assert_eq!(encoded, expected);
            assert_eq!(
                decode(&encoded, &[Kind::Word, Kind::Bytes]),
                vec![uint(0x123), Token::Bytes(b"Hello, world!".to_vec())]
            );
        }

        #[test]
        fn empty_bytes_is_a_zero_length_and_no_tail_words() {
            assert_eq!(encode(&[Token::Bytes(Vec::new())]), words(&["20", "00"]));
        }

        #[test]
        fn a_dynamic_tuple_is_an_offset_and_its_offsets_count_from_the_tuple() {
            // (bytes32 s, (address a, bytes d, uint256 v)) as EAS's attest takes it, without the outer wrapper.
            let inner = Token::Tuple(vec![
                address("0x00000000000000000000000000000000000000aa"),
                Token::Bytes(vec![0xbe, 0xef]),
                uint(7),
            ]);
            let encoded = encode(&[bytes32([1; 32]), inner.clone()]);
            let mut expected = [1u8; 32].to_vec();
            expected.extend(words(&[
                "40", // the inner tuple starts after two head words
                "aa", // a
                "60", // d: three head words into the inner tuple
                "07", // v
                "02",
                "beef000000000000000000000000000000000000000000000000000000000000",
            ]));
            assert_eq!(encoded, expected);
            let kinds = [
                Kind::Word,
                Kind::Tuple(vec![Kind::Word, Kind::Bytes, Kind::Word]),
            ];
            assert_eq!(decode(&encoded, &kinds), vec![bytes32([1; 32]), inner]);
        }

        #[test]
        fn bytes_of_whole_words_take_no_padding() {
            let data = vec![0x11; 64];
            let encoded = encode(&[Token::Bytes(data.clone())]);
            assert_eq!(encoded.len(), 32 + 32 + 64);
            assert_eq!(decode(&encoded, &[Kind::Bytes]), vec![Token::Bytes(data)]);
        }

        #[test]
        fn static_values_encode_in_place() {
            let encoded = encode(&[uint(1), boolean(true), bytes32([0xff; 32])]);
            assert_eq!(encoded.len(), 96);
            assert_eq!(
                decode(&encoded, &[Kind::Word, Kind::Word, Kind::Word])[0].uint(),
                1
            );
        }

        #[test]
        #[should_panic(expected = "overrun")]
        fn a_length_past_the_end_is_refused() {
            let mut encoded = encode(&[Token::Bytes(vec![1, 2, 3])]);
            encoded[63] = 0xff;
            decode(&encoded, &[Kind::Bytes]);
        }
    }
}

/// EAS on anvil, as the chain tests set it up: compiled from its npm
/// package with the compiler its exact pragma names, SchemaRegistry then
/// EAS deployed, schemas registered, attestations made and read back.
pub mod resolver;

pub mod eas {
    use std::path::Path;

    use serde_json::Value;

    use super::abi::{self, Kind, Token};
    use super::{Rpc, find_log, topic_word, unhex};

    /// EAS's npm package.
    pub const PACKAGE: &str = "@ethereum-attestation-service/eas-contracts";
    /// The compiler EAS 1.9.0 pins (`pragma solidity 0.8.29;` in `EAS.sol`
    /// and `SchemaRegistry.sol`), installed as the npm alias below.
    pub const SOLC: &str = "0.8.29";
    pub const SOLC_PACKAGE: &str = "solc-0.8.29";
    /// What EAS imports and does not install itself.
    pub const OPENZEPPELIN_PACKAGE: &str = "@openzeppelin/contracts";
    pub const ZERO_ADDRESS: &str = "0x0000000000000000000000000000000000000000";

    const REGISTER: &str = "register(string,address,bool)";
    const REGISTERED: &str = "Registered(bytes32,address,(bytes32,address,bool,string))";
    const ATTEST: &str = "attest((bytes32,(address,uint64,bool,bytes32,bytes,uint256)))";
    const GET_ATTESTATION: &str = "getAttestation(bytes32)";

    /// SchemaRegistry and EAS compiled from the npm package into `out`;
    /// answers solc's warnings.
    pub fn compile(out: &Path) -> String {
        let sources = super::contracts_dir()
            .join("node_modules")
            .join(PACKAGE)
            .join("contracts");
        super::compile(
            &[
                &sources.join("SchemaRegistry.sol"),
                &sources.join("EAS.sol"),
            ],
            out,
            Some(SOLC),
        )
    }

    /// SchemaRegistry and EAS deployed on a chain, with their ABIs and what
    /// each deployment cost.
    #[derive(Debug)]
    pub struct Eas {
        pub registry: String,
        pub registry_gas: u64,
        pub registry_abi: Value,
        pub address: String,
        pub gas: u64,
        pub abi: Value,
    }

    impl Eas {
        /// SchemaRegistry, then EAS over it, from what [`compile`] wrote to
        /// `out`, deployed by `from`.
        pub async fn deploy(rpc: &Rpc, from: &str, out: &Path) -> Self {
            let registry_abi = super::artifact(out, "SchemaRegistry");
            let abi = super::artifact(out, "EAS");
            let (registry, registry_gas) = rpc
                .deploy(from, &super::creation_code(&registry_abi), "SchemaRegistry")
                .await;
            let mut code = super::creation_code(&abi);
            code.extend(abi::encode(&[abi::address(&registry)]));
            let (address, gas) = rpc.deploy(from, &code, "EAS").await;
            Self {
                registry,
                registry_gas,
                registry_abi,
                address,
                gas,
                abi,
            }
        }

        /// Registers `schema` (with `resolver`, or none); answers the UID
        /// the `Registered` log gives and the receipt.
        pub async fn register(
            &self,
            rpc: &Rpc,
            from: &str,
            schema: &str,
            resolver: Option<&str>,
            revocable: bool,
        ) -> ([u8; 32], Value) {
            let call = abi::call(
                super::selector(&self.registry_abi, REGISTER),
                &[
                    Token::Bytes(schema.as_bytes().to_vec()),
                    abi::address(resolver.unwrap_or(ZERO_ADDRESS)),
                    abi::boolean(revocable),
                ],
            );
            let receipt = rpc
                .transact(from, Some(&self.registry), &call, "register")
                .await;
            let uid = topic_word(find_log(&receipt, &self.registry, REGISTERED), 1);
            (uid, receipt)
        }

        /// `attest` calldata for `schema` with `data`: no recipient, no
        /// expiry, not revocable, no reference, no value.
        pub fn attest_call(&self, schema: [u8; 32], data: Vec<u8>) -> Vec<u8> {
            abi::call(
                super::selector(&self.abi, ATTEST),
                &[Token::Tuple(vec![
                    abi::bytes32(schema),
                    Token::Tuple(vec![
                        abi::address(ZERO_ADDRESS),
                        abi::uint(0),
                        abi::boolean(false),
                        abi::bytes32([0; 32]),
                        Token::Bytes(data),
                        abi::uint(0),
                    ]),
                ])],
            )
        }

        /// `getAttestation(uid)`: uid, schema, time, expirationTime,
        /// revocationTime, refUID, recipient, attester, revocable, data.
        pub async fn attestation(&self, rpc: &Rpc, uid: [u8; 32]) -> Vec<Token> {
            let answer = rpc
                .view(
                    &self.address,
                    &abi::call(
                        super::selector(&self.abi, GET_ATTESTATION),
                        &[abi::bytes32(uid)],
                    ),
                    "getAttestation",
                )
                .await;
            let mut fields = vec![Kind::Word; 9];
            fields.push(Kind::Bytes);
            abi::decode(&answer, &[Kind::Tuple(fields)])[0]
                .items()
                .to_vec()
        }
    }

    /// The UID the registry gives a schema:
    /// `keccak256(abi.encodePacked(schema, resolver, revocable))`.
    pub fn schema_uid(schema: &str, resolver: Option<&str>, revocable: bool) -> [u8; 32] {
        let mut packed = schema.as_bytes().to_vec();
        packed.extend(unhex(resolver.unwrap_or(ZERO_ADDRESS)));
        packed.push(u8::from(revocable));
        super::keccak(&packed)
    }
}
