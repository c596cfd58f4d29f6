// SPDX-License-Identifier: MIT
pragma solidity 0.8.30;

/// The allowance half of Uniswap's Permit2, as far as a simulation sees it: `approve` records an
/// allowance and emits Permit2's own Approval event. Tests place its runtime code at Permit2's
/// canonical address.
contract TestPermit2 {
    struct Allowance {
        uint160 amount;
        uint48 expiration;
        uint48 nonce;
    }

    mapping(address => mapping(address => mapping(address => Allowance))) public allowance;

    event Approval(
        address indexed owner, address indexed token, address indexed spender, uint160 amount, uint48 expiration
    );

    function approve(address token, address spender, uint160 amount, uint48 expiration) external {
        Allowance storage a = allowance[msg.sender][token][spender];
        a.amount = amount;
        a.expiration = expiration;
        emit Approval(msg.sender, token, spender, amount, expiration);
    }
}
