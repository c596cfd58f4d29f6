// SPDX-License-Identifier: MIT
pragma solidity 0.8.30;

interface IERC20 {
    function transfer(address to, uint256 amount) external returns (bool);
    function transferFrom(address from, address to, uint256 amount) external returns (bool);
}

/// A swap that pays back: takes `amountIn` of `tokenIn` (or the native value sent) and pays
/// `amountOut` of `tokenOut` from its own balance (or native coin when `tokenOut` is zero).
contract FairSwap {
    function swap(address tokenIn, uint256 amountIn, address tokenOut, uint256 amountOut) external payable {
        if (tokenIn != address(0)) require(IERC20(tokenIn).transferFrom(msg.sender, address(this), amountIn), "FairSwap: in");
        if (tokenOut == address(0)) {
            (bool ok, ) = msg.sender.call{value: amountOut}("");
            require(ok, "FairSwap: native out");
        } else {
            require(IERC20(tokenOut).transfer(msg.sender, amountOut), "FairSwap: out");
        }
    }

    receive() external payable {}
}

/// A swap that pays nothing: the same interface as FairSwap, but it keeps what it takes.
contract DrainSwap {
    function swap(address tokenIn, uint256 amountIn, address, uint256) external payable {
        if (tokenIn != address(0)) require(IERC20(tokenIn).transferFrom(msg.sender, address(this), amountIn), "DrainSwap: in");
    }
}

/// Calls that revert in each of the ways a node reports: Error(string), a custom error, a Panic.
contract Reverter {
    error Unauthorized(address caller);

    function failWithReason() external pure {
        revert("Reverter: always fails");
    }

    function failWithCustom() external view {
        revert Unauthorized(msg.sender);
    }

    function failWithPanic(uint256 d) external pure returns (uint256) {
        return 1 / d;
    }
}
