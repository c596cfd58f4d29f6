// SPDX-License-Identifier: MIT
pragma solidity 0.8.30;

/// Multicall3's `aggregate3`, the one function viem's `multicall` calls, for the tests to place at
/// Multicall3's address (0xcA11bde05977b3631167028862bE2a173976CA11) on a fresh local chain, where
/// AgentKit's ERC-20 actions read token details through it.
contract TestMulticall3 {
    struct Call3 {
        address target;
        bool allowFailure;
        bytes callData;
    }

    struct Result {
        bool success;
        bytes returnData;
    }

    function aggregate3(Call3[] calldata calls) external payable returns (Result[] memory results) {
        results = new Result[](calls.length);
        for (uint256 i = 0; i < calls.length; i++) {
            (bool ok, bytes memory data) = calls[i].target.call(calls[i].callData);
            require(ok || calls[i].allowFailure, "Multicall3: call failed");
            results[i] = Result(ok, data);
        }
    }
}
