// SPDX-License-Identifier: Apache-2.0
// Access control shared by slaproof's EAS schema resolvers (issue 15): an
// owner, who manages the resolver, and the set of attesters whose
// attestations it accepts.
//
// Exact pragma 0.8.29, the compiler EAS 1.9.0 pins: every resolver that
// inherits this also imports EAS's sources, and one compilation takes one
// compiler.
pragma solidity 0.8.29;

/// The owner and the authorised attesters of a resolver.
///
/// One set of attesters per deployment: the provider's key holders (its
/// slaproof deployments), who attest for all of its tenants
/// (SlaproofResolver says why that is enough). A schema's UID covers its
/// resolver's address, so slaproof's schemas registered with a
/// deployment's resolvers have UIDs of their own, and whoever follows those
/// UIDs sees only what the deployment's attesters attested: anyone may
/// register the same schema string, but under another UID, and no one else
/// can attest under these. Per-tenant attesters (a mapping from tenantHash
/// to attester) are a later option if one resolver is ever shared between
/// providers.
///
/// Hand-written rather than OpenZeppelin's `Ownable` (v5 takes the owner
/// as a constructor argument and reverts with its own errors): the few
/// lines here keep the ABI SlaproofResolver was first deployed and tested
/// with (`owner()`, `NotOwner()`, `attesters(address)`).
abstract contract Attesters {
    error NotOwner();
    /// `transferOwnership(address(0))`: giving the resolver up would freeze
    /// its attester set (and SlaproofResolver's verifiers) for good, which
    /// is a redeployment's job, not a typo's.
    error ZeroAddress();

    event OwnershipTransferred(address indexed previous, address indexed next);
    event AttesterSet(address indexed attester, bool allowed);

    address public owner;
    /// Public under this name since SlaproofResolver's first ABI; `isAttester` is the check to call.
    mapping(address attester => bool allowed) public attesters;

    modifier onlyOwner() {
        if (msg.sender != owner) revert NotOwner();
        _;
    }

    /// The deployer owns the resolver and authorises no one yet: nothing
    /// is accepted until the owner names its attesters.
    constructor() {
        owner = msg.sender;
        emit OwnershipTransferred(address(0), msg.sender);
    }

    function transferOwnership(address next) external onlyOwner {
        if (next == address(0)) revert ZeroAddress();
        emit OwnershipTransferred(owner, next);
        owner = next;
    }

    /// Authorises `attester` (`allowed`) or withdraws its authorisation.
    /// Withdrawing affects later attestations only: those already accepted
    /// stay on EAS.
    function setAttester(address attester, bool allowed) external onlyOwner {
        attesters[attester] = allowed;
        emit AttesterSet(attester, allowed);
    }

    function isAttester(address attester) public view returns (bool) {
        return attesters[attester];
    }
}
