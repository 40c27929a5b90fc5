//! Putting slaproof on a chain: EAS and its SchemaRegistry (unless the chain
//! has them), the resolvers, the batch checker and the three schemas; the
//! owner's controls (which keys may attest, which verifying keys the
//! verified path accepts); the record of where it all is; and what is there
//! now.

use std::path::Path;

use alloy::primitives::{Address, B256, Bytes, TxKind, keccak256};
use alloy::providers::Provider;
use alloy::sol_types::{SolCall, SolConstructor};
use serde::{Deserialize, Serialize};

use crate::anchor::{BATCH_SCHEMA, PERIOD_SCHEMA, VERIFIED_SCHEMA};
use crate::client::Chain;
use crate::contracts::{AttesterResolver, BatchCheck, EAS, SchemaRegistry, SlaproofResolver};
use crate::error::{ChainError, Result};
use crate::settings::Addresses;

/// The three schemas' UIDs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Schemas {
    /// Hash-only period attestations (resolved by the attester resolver).
    pub period: B256,
    /// Verified period attestations (resolved by the slaproof resolver).
    pub verified: B256,
    /// Batch roots (resolved by the attester resolver).
    pub batch_root: B256,
}

/// Where slaproof lives on one chain: what `slaproof chain deploy` writes and
/// every later operation reads.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Deployment {
    pub chain_id: u64,
    pub schema_registry: Address,
    pub eas: Address,
    /// The verified schema's resolver: runs the Groth16 verifier.
    pub slaproof_resolver: Address,
    /// The hash-only and batch-root schemas' resolver: checks the attester.
    pub attester_resolver: Address,
    /// Checks a statement's inclusion proof against a batch root.
    pub batch_check: Address,
    pub schemas: Schemas,
    /// The key that deployed (and owns) the resolvers.
    pub owner: Address,
    /// The block of the last deployment transaction: indexers start here.
    pub block: u64,
}

impl Deployment {
    /// Reads a deployment record.
    pub fn read(path: &Path) -> Result<Deployment> {
        let text = std::fs::read_to_string(path).map_err(|e| ChainError::Deployment {
            path: path.display().to_string(),
            message: e.to_string(),
        })?;
        serde_json::from_str(&text).map_err(|e| ChainError::Deployment {
            path: path.display().to_string(),
            message: e.to_string(),
        })
    }

    /// Writes the record (pretty JSON), creating the folder.
    pub fn write(&self, path: &Path) -> Result<()> {
        let failed = |e: std::io::Error| ChainError::Deployment {
            path: path.display().to_string(),
            message: e.to_string(),
        };
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(failed)?;
        }
        let mut text = serde_json::to_string_pretty(self).expect("a deployment serialises");
        text.push('\n');
        std::fs::write(path, text).map_err(failed)
    }
}

/// The UID EAS's SchemaRegistry gives a schema:
/// `keccak256(abi.encodePacked(schema, resolver, revocable))`.
pub fn schema_uid(schema: &str, resolver: Address, revocable: bool) -> B256 {
    let mut packed = schema.as_bytes().to_vec();
    packed.extend_from_slice(resolver.as_slice());
    packed.push(u8::from(revocable));
    keccak256(packed)
}

fn creation(bytecode: &Bytes, arguments: Vec<u8>) -> Bytes {
    [bytecode.as_ref(), &arguments].concat().into()
}

/// Deploys what `existing` does not name, registers the schemas (unless
/// registered already: a schema's UID is fixed by its text and resolver) and
/// authorises the deploying key as an attester.
pub async fn deploy(chain: &Chain, existing: &Addresses) -> Result<Deployment> {
    let mut block = 0;
    let mut last = |receipt: &alloy::rpc::types::TransactionReceipt| {
        block = block.max(receipt.block_number.unwrap_or_default());
    };
    let schema_registry = match existing.schema_registry {
        Some(address) => expect_code(chain, address, "SchemaRegistry").await?,
        None => {
            let (address, receipt) = chain
                .deploy(
                    creation(&SchemaRegistry::BYTECODE, Vec::new()),
                    "deploying SchemaRegistry",
                )
                .await?;
            last(&receipt);
            address
        }
    };
    let eas = match existing.eas {
        Some(address) => expect_code(chain, address, "EAS").await?,
        None => {
            let arguments = EAS::constructorCall {
                registry: schema_registry,
            }
            .abi_encode();
            let (address, receipt) = chain
                .deploy(creation(&EAS::BYTECODE, arguments), "deploying EAS")
                .await?;
            last(&receipt);
            address
        }
    };
    let (slaproof_resolver, receipt) = chain
        .deploy(
            creation(
                &SlaproofResolver::BYTECODE,
                SlaproofResolver::constructorCall { eas }.abi_encode(),
            ),
            "deploying SlaproofResolver",
        )
        .await?;
    last(&receipt);
    let (attester_resolver, receipt) = chain
        .deploy(
            creation(
                &AttesterResolver::BYTECODE,
                AttesterResolver::constructorCall { eas }.abi_encode(),
            ),
            "deploying AttesterResolver",
        )
        .await?;
    last(&receipt);
    let (batch_check, receipt) = chain
        .deploy(
            creation(&BatchCheck::BYTECODE, Vec::new()),
            "deploying BatchCheck",
        )
        .await?;
    last(&receipt);

    let mut register = async |schema: &str, resolver: Address, what: &str| -> Result<B256> {
        let uid = schema_uid(schema, resolver, false);
        let registry = &SchemaRegistry::new(schema_registry, chain.provider());
        let known = chain
            .read("reading a schema", || async move {
                registry.getSchema(uid).call().await
            })
            .await?;
        if known.uid != uid {
            let call = SchemaRegistry::registerCall {
                schema: schema.to_owned(),
                resolver,
                revocable: false,
            };
            let receipt = chain
                .send(
                    TxKind::Call(schema_registry),
                    call.abi_encode().into(),
                    &format!("registering the {what} schema"),
                )
                .await?;
            block = block.max(receipt.block_number.unwrap_or_default());
        }
        Ok(uid)
    };
    let schemas = Schemas {
        period: register(PERIOD_SCHEMA, attester_resolver, "period").await?,
        verified: register(VERIFIED_SCHEMA, slaproof_resolver, "verified period").await?,
        batch_root: register(BATCH_SCHEMA, attester_resolver, "batch-root").await?,
    };
    let deployment = Deployment {
        chain_id: chain.chain_id(),
        schema_registry,
        eas,
        slaproof_resolver,
        attester_resolver,
        batch_check,
        schemas,
        owner: chain.address(),
        block,
    };
    set_attester(chain, &deployment, chain.address(), true).await?;
    Ok(deployment)
}

async fn expect_code(chain: &Chain, address: Address, what: &'static str) -> Result<Address> {
    let code = chain
        .patiently("reading contract code", || async move {
            chain.provider().get_code_at(address).await
        })
        .await?;
    if code.is_empty() {
        return Err(ChainError::NoCode {
            what,
            address,
            chain_id: chain.chain_id(),
        });
    }
    Ok(address)
}

/// What is on the chain for a deployment, as `slaproof chain status` shows it.
#[derive(Debug, Clone, Serialize)]
pub struct Status {
    pub endpoint: String,
    pub chain_id: u64,
    pub head: u64,
    pub attester: Address,
    /// The attester's balance, in wei (as a decimal string: it passes u64).
    pub attester_balance_wei: String,
    /// Whether the attester may attest under both resolvers.
    pub attester_authorised: bool,
    /// Each contract and whether code is there.
    pub contracts: Vec<ContractStatus>,
    /// Each schema and whether the registry holds it.
    pub schemas: Vec<SchemaStatus>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ContractStatus {
    pub name: &'static str,
    pub address: Address,
    pub has_code: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct SchemaStatus {
    pub name: &'static str,
    pub uid: B256,
    pub registered: bool,
    pub schema: String,
}

/// Reads what `deployment` says is on the chain and checks it is there.
pub async fn status(chain: &Chain, deployment: &Deployment) -> Result<Status> {
    let provider = chain.provider();
    let head = chain
        .patiently("reading the head", || async move {
            provider.get_block_number().await
        })
        .await?;
    let balance = chain
        .patiently("reading the balance", || async move {
            provider.get_balance(chain.address()).await
        })
        .await?;
    let mut contracts = Vec::new();
    for (name, address) in [
        ("SchemaRegistry", deployment.schema_registry),
        ("EAS", deployment.eas),
        ("SlaproofResolver", deployment.slaproof_resolver),
        ("AttesterResolver", deployment.attester_resolver),
        ("BatchCheck", deployment.batch_check),
    ] {
        let code = chain
            .patiently("reading contract code", || async move {
                provider.get_code_at(address).await
            })
            .await?;
        contracts.push(ContractStatus {
            name,
            address,
            has_code: !code.is_empty(),
        });
    }
    let all_there = contracts.iter().all(|c| c.has_code);
    let mut schemas = Vec::new();
    let mut authorised = false;
    if all_there {
        let registry = &SchemaRegistry::new(deployment.schema_registry, provider);
        for (name, uid, text) in [
            ("period", deployment.schemas.period, PERIOD_SCHEMA),
            ("verified", deployment.schemas.verified, VERIFIED_SCHEMA),
            ("batch_root", deployment.schemas.batch_root, BATCH_SCHEMA),
        ] {
            let record = chain
                .read("reading a schema", || async move {
                    registry.getSchema(uid).call().await
                })
                .await?;
            schemas.push(SchemaStatus {
                name,
                uid,
                registered: record.uid == uid && record.schema == text,
                schema: text.to_owned(),
            });
        }
        let attesters = &AttesterResolver::new(deployment.attester_resolver, provider);
        let verified = &SlaproofResolver::new(deployment.slaproof_resolver, provider);
        authorised = chain
            .read("reading the attester set", || async move {
                attesters.isAttester(chain.address()).call().await
            })
            .await?
            && chain
                .read("reading the attester set", || async move {
                    verified.isAttester(chain.address()).call().await
                })
                .await?;
    }
    Ok(Status {
        endpoint: chain.endpoint().to_owned(),
        chain_id: chain.chain_id(),
        head,
        attester: chain.address(),
        attester_balance_wei: balance.to_string(),
        attester_authorised: authorised,
        contracts,
        schemas,
    })
}

impl Status {
    /// Whether everything the deployment names is on the chain.
    pub fn is_complete(&self) -> bool {
        self.contracts.iter().all(|c| c.has_code)
            && self.schemas.len() == 3
            && self.schemas.iter().all(|s| s.registered)
    }
}

/// Authorises (or withdraws) `attester` on both resolvers. Owner only.
pub async fn set_attester(
    chain: &Chain,
    deployment: &Deployment,
    attester: Address,
    allowed: bool,
) -> Result<()> {
    let doing = if allowed {
        "authorising an attester"
    } else {
        "withdrawing an attester"
    };
    for resolver in [deployment.attester_resolver, deployment.slaproof_resolver] {
        // Both resolvers share the Attesters base, so one call encodes for both.
        let call = AttesterResolver::setAttesterCall { attester, allowed };
        chain
            .send(TxKind::Call(resolver), call.abi_encode().into(), doing)
            .await?;
    }
    Ok(())
}

/// The verifier contract registered for the verifying key whose hash is
/// `vk_hash` (`None`: none is, and the verified path refuses its proofs).
pub async fn registered_verifier(
    chain: &Chain,
    deployment: &Deployment,
    vk_hash: B256,
) -> Result<Option<Address>> {
    let resolver = &SlaproofResolver::new(deployment.slaproof_resolver, chain.provider());
    let found = chain
        .read("reading a registered verifier", || async move {
            resolver.verifiers(vk_hash).call().await
        })
        .await?;
    Ok((found != Address::ZERO).then_some(found))
}

/// Registers the verifier contract of a verifying key (by the key's hash)
/// with the verified path's resolver. Owner only.
pub async fn register_verifier(
    chain: &Chain,
    deployment: &Deployment,
    vk_hash: B256,
    verifier: Address,
) -> Result<()> {
    let call = SlaproofResolver::registerVerifierCall {
        vkHash: vk_hash,
        verifier,
    };
    chain
        .send(
            TxKind::Call(deployment.slaproof_resolver),
            call.abi_encode().into(),
            "registering a verifier",
        )
        .await?;
    Ok(())
}
