"""What every MCP test driver shares: how to start `iota-host serve` as the
Rust test prepared it."""

import os

from mcp import StdioServerParameters


def serve(binary, config, root):
    """`iota-host serve` for the project at `root` with `config`."""
    return StdioServerParameters(
        command=binary,
        args=["--config", config, "--root", root, "serve"],
        cwd=root,
        # The SDK passes only HOME, PATH and a few more by default: the test's
        # own world (private home, cache) must reach the server whole.
        env=dict(os.environ),
    )
