// SPDX-License-Identifier: MIT
pragma solidity 0.8.30;

/// @title PreflightAccount
/// @notice A minimal smart account for an agent: it moves funds only with a fresh `proceed` verdict,
/// signed by the Preflight service's attester, for exactly the call it makes, once, and, when the
/// owner pinned a policy, made under that policy.
/// See docs/attestations.md in the Preflight repository.
contract PreflightAccount {
    /// @notice The signed verdict, field for field as the service's EIP-712 `Verdict` type.
    struct Verdict {
        bytes32 id;
        uint8 verdict;
        uint8 risk;
        uint16 confidenceBps;
        bytes32 requestHash;
        bytes32 actionHash;
        bytes32 policyHash;
        uint64 issuedAt;
        uint64 expiresAt;
    }

    bytes32 private constant DOMAIN_TYPEHASH = keccak256("EIP712Domain(string name,string version,uint256 chainId)");
    bytes32 private constant VERDICT_TYPEHASH = keccak256(
        "Verdict(bytes32 id,uint8 verdict,uint8 risk,uint16 confidenceBps,bytes32 requestHash,bytes32 actionHash,bytes32 policyHash,uint64 issuedAt,uint64 expiresAt)"
    );
    bytes32 private constant NAME_HASH = keccak256("Preflight");
    bytes32 private constant VERSION_HASH = keccak256("2");
    /// @dev Half the secp256k1 group order: a signature with a larger s is the malleable twin.
    uint256 private constant HALF_ORDER = 0x7fffffffffffffffffffffffffffffff5d576e7357a4501ddfe92f46681b20a0;
    uint8 private constant PROCEED = 0;

    /// @notice Who may call `execute` (the agent's key).
    address public immutable owner;
    /// @notice Whose verdicts the account accepts (the service's signer, from /v1/capabilities).
    address public immutable attester;
    /// @notice The policy hash a verdict must be signed for; zero accepts a verdict under any policy or none.
    bytes32 public policyHash;
    /// @notice Verdict ids already acted on.
    mapping(bytes32 id => bool) public used;

    /// @notice One attested call was made.
    event Executed(bytes32 indexed id, address indexed to, uint256 value, bytes32 actionHash);
    /// @notice The owner pinned the account to a policy hash (zero: any).
    event PolicyPinned(bytes32 policyHash);

    error ZeroAddress();
    error NotOwner(address caller);
    error InvalidSignature();
    error WrongSigner(address recovered);
    error NotProceed(uint8 verdict);
    error VerdictExpired(uint64 expiresAt, uint256 timestamp);
    error ActionMismatch(bytes32 expected, bytes32 signed);
    error PolicyMismatch(bytes32 expected, bytes32 signed);
    error VerdictAlreadyUsed(bytes32 id);

    constructor(address owner_, address attester_, bytes32 policyHash_) {
        if (owner_ == address(0) || attester_ == address(0)) revert ZeroAddress();
        owner = owner_;
        attester = attester_;
        policyHash = policyHash_;
        emit PolicyPinned(policyHash_);
    }

    receive() external payable {}

    /// @notice Pins the account to the policy whose hash is `policyHash_` (zero: any), owner only.
    /// Loosening the policy an agent acts under thus takes a transaction from this account's owner.
    function setPolicy(bytes32 policyHash_) external {
        if (msg.sender != owner) revert NotOwner(msg.sender);
        policyHash = policyHash_;
        emit PolicyPinned(policyHash_);
    }

    /// @notice The EIP-712 domain separator on this chain.
    function domainSeparator() public view returns (bytes32) {
        return keccak256(abi.encode(DOMAIN_TYPEHASH, NAME_HASH, VERSION_HASH, block.chainid));
    }

    /// @notice The digest the attester signs for `v` on this chain.
    function verdictDigest(Verdict calldata v) public view returns (bytes32) {
        bytes32 structHash = keccak256(
            abi.encode(
                VERDICT_TYPEHASH,
                v.id,
                v.verdict,
                v.risk,
                v.confidenceBps,
                v.requestHash,
                v.actionHash,
                v.policyHash,
                v.issuedAt,
                v.expiresAt
            )
        );
        return keccak256(abi.encodePacked("\x19\x01", domainSeparator(), structHash));
    }

    /// @notice The action hash a verdict must carry for this account to make this call.
    function actionHashOf(address to, uint256 value, bytes calldata data) public view returns (bytes32) {
        return keccak256(abi.encode(block.chainid, address(this), to, value, keccak256(data)));
    }

    /// @notice Calls `to` with `value` and `data` when `v` is a fresh `proceed` for exactly this call,
    /// signed by the attester under the pinned policy (if any) and never used before. A revert of the
    /// call is passed on as it is.
    function execute(address to, uint256 value, bytes calldata data, Verdict calldata v, bytes calldata signature)
        external
        returns (bytes memory)
    {
        if (msg.sender != owner) revert NotOwner(msg.sender);
        address signer = _recover(verdictDigest(v), signature);
        if (signer != attester) revert WrongSigner(signer);
        if (v.verdict != PROCEED) revert NotProceed(v.verdict);
        if (block.timestamp > v.expiresAt) revert VerdictExpired(v.expiresAt, block.timestamp);
        bytes32 action = actionHashOf(to, value, data);
        if (v.actionHash != action) revert ActionMismatch(action, v.actionHash);
        bytes32 pinned = policyHash;
        if (pinned != bytes32(0) && v.policyHash != pinned) revert PolicyMismatch(pinned, v.policyHash);
        if (used[v.id]) revert VerdictAlreadyUsed(v.id);
        used[v.id] = true;
        emit Executed(v.id, to, value, action);
        (bool ok, bytes memory result) = to.call{value: value}(data);
        if (!ok) {
            assembly ("memory-safe") {
                revert(add(result, 32), mload(result))
            }
        }
        return result;
    }

    /// @dev ecrecover of a 65-byte r ‖ s ‖ v signature, refusing high s, a bad v and no signer.
    function _recover(bytes32 digest, bytes calldata signature) private pure returns (address) {
        if (signature.length != 65) revert InvalidSignature();
        bytes32 r = bytes32(signature[0:32]);
        bytes32 s = bytes32(signature[32:64]);
        uint8 v = uint8(signature[64]);
        if (uint256(s) > HALF_ORDER || (v != 27 && v != 28)) revert InvalidSignature();
        address signer = ecrecover(digest, v, r, s);
        if (signer == address(0)) revert InvalidSignature();
        return signer;
    }
}
