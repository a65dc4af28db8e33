"""Attacks the multi round-trip state of `iota-host serve` (MCP 2026-07-28):
drives the rounds by hand with the Python SDK and sends forged, altered,
foreign, replayed and stale `requestState` values. Prints one JSON line per
step (the file's content after it, the result or the error) for
tests/mcp.rs to assert on.

Usage: python mcp_rounds.py IOTA_HOST CONFIG ROOT
"""

import asyncio
import json
import os
import sys

import mcp.types as types
from mcp.client.client import Client
from mcp.shared.exceptions import MCPError
from mcp_server import serve

ROOT = sys.argv[3]


def content(name):
    try:
        with open(os.path.join(ROOT, name)) as f:
            return f.read()
    except FileNotFoundError:
        return None


async def never_called(context, params):
    raise AssertionError("questions travel in results, not as requests")


ALLOW = {"answer": {"action": "accept", "content": {"decision": "allow once"}}}


def params(binary, config):
    return serve(binary, config, ROOT)


async def attempt(session, step, tool, args, state, responses=ALLOW, watch=None):
    """Retries `tool` with `state`; prints the outcome and the watched file."""
    try:
        result = await session.call_tool(tool, args, input_responses=responses, request_state=state, allow_input_required=True)
        if isinstance(result, types.InputRequiredResult):
            outcome = {"input_required": True}
        else:
            outcome = {"text": "".join(c.text for c in result.content if c.type == "text"), "is_error": bool(result.is_error)}
    except MCPError as e:
        outcome = {"error": e.error.message, "code": e.error.code}
    print(json.dumps({"step": step, **outcome, "file": content(watch or args.get("path"))}), flush=True)


async def ask(session, tool, args):
    first = await session.call_tool(tool, args, allow_input_required=True)
    assert isinstance(first, types.InputRequiredResult), first
    return first


async def main(binary, config):
    async with Client(params(binary, config), mode="auto", elicitation_callback=never_called) as other:
        foreign = (await ask(other.session, "write_file", {"path": "w.txt", "content": "A"})).request_state

    async with Client(params(binary, config), mode="auto", elicitation_callback=never_called) as client:
        s = client.session
        write = {"path": "w.txt", "content": "A"}
        first = await ask(s, "write_file", write)
        form = first.input_requests["answer"]
        print(json.dumps({"step": "asked", "method": form.method, "message": form.params.message.split("\n")[0], "file": content("w.txt")}), flush=True)
        state = first.request_state

        await attempt(s, "forged", "write_file", write, "rs2.Zm9yZ2Vk.Zm9yZ2Vk")
        altered = state[:-6] + ("AAAAAA" if not state.endswith("AAAAAA") else "BBBBBB")
        await attempt(s, "altered", "write_file", write, altered)
        await attempt(s, "other-arguments", "write_file", {"path": "w.txt", "content": "EVIL"}, state)
        await attempt(s, "other-tool", "edit_file", {"path": "w.txt", "old_string": "A", "new_string": "B"}, state, watch="w.txt")
        await attempt(s, "foreign", "write_file", write, foreign)
        await attempt(s, "no-state", "write_file", write, None)
        await attempt(s, "no-answer", "write_file", write, state, responses={})
        # The one state the server issued, for this call: runs once.
        second = await ask(s, "write_file", write)
        await attempt(s, "allowed", "write_file", write, second.request_state)
        with open(os.path.join(ROOT, "w.txt"), "w") as f:
            f.write("Z")
        await attempt(s, "replayed", "write_file", write, second.request_state)

        # The file changes between the preview the user answered and the retry.
        await s.call_tool("read_file", {"path": "e.txt"})
        change = {"path": "e.txt", "content": "new\n"}
        preview = await ask(s, "write_file", change)
        print(json.dumps({"step": "previewed", "diff": preview.input_requests["answer"].params.message, "file": content("e.txt")}), flush=True)
        with open(os.path.join(ROOT, "e.txt"), "w") as f:
            f.write("changed meanwhile\n")
        # The model reads it again: only the question's digest still knows
        # the user saw another diff.
        await s.call_tool("read_file", {"path": "e.txt"})
        await attempt(s, "changed", "write_file", change, preview.request_state)

        # A link swapped in between the question and the retry: the write
        # would land in .git/config, which the user was never asked about.
        stat = os.stat(os.path.join(ROOT, ".git/config"))
        with open(os.path.join(ROOT, "a.txt"), "w") as f:
            f.write(content(".git/config"))
        os.utime(os.path.join(ROOT, "a.txt"), ns=(stat.st_atime_ns, stat.st_mtime_ns))
        await s.call_tool("read_file", {"path": "a.txt"})
        evil = {"path": "a.txt", "content": content(".git/config") + "\tfsmonitor = touch PWNED\n"}
        asked = await ask(s, "write_file", evil)
        print(json.dumps({"step": "swap-asked", "message": asked.input_requests["answer"].params.message.split("\n")[0]}), flush=True)
        os.remove(os.path.join(ROOT, "a.txt"))
        os.symlink(".git/config", os.path.join(ROOT, "a.txt"))
        await attempt(s, "swapped", "write_file", evil, asked.request_state, watch=".git/config")

        # A link there before the call: the question says where it lands.
        linked = await ask(s, "write_file", {"path": "l.txt", "content": "x"})
        print(json.dumps({"step": "linked-asked", "message": linked.input_requests["answer"].params.message.split("\n")[0]}), flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
