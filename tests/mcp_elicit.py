"""Drives `iota-host serve` with the MCP Python SDK as a client that answers
elicitation requests, and prints each request and result as JSON lines.

Usage: python mcp_elicit.py IOTA_HOST CONFIG ROOT
"""

import asyncio
import json
import sys

import mcp.types as types
import os

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

# One answer per elicitation request, in order.
ANSWERS = [
    {"decision": "allow once"},
    {"q0": ["Tests", "Docs"], "q1": "Go", "q1_other": "zig"},
    {"answer": "Ship it"},
    None,  # decline the next approval
]


async def on_elicit(context, params):
    schema = params.requested_schema
    schema = schema.model_dump() if hasattr(schema, "model_dump") else schema
    print(json.dumps({"step": "elicited", "message": params.message.split("\n")[0], "fields": sorted(schema["properties"].keys())}), flush=True)
    answer = ANSWERS.pop(0)
    if answer is None:
        return types.ElicitResult(action="decline")
    return types.ElicitResult(action="accept", content=answer)


async def main(binary, config, root):
    params = StdioServerParameters(
        command=binary,
        args=["--config", config, "--root", root, "serve"],
        cwd=root,
        # The SDK passes only HOME, PATH and a few more by default: the test's
        # own world (private home, cache) must reach the server whole.
        env=dict(os.environ),
    )
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, elicitation_callback=on_elicit) as session:
            await session.initialize()
            tools = await session.list_tools()
            print(json.dumps({"step": "list", "tools": [t.name for t in tools.tools]}), flush=True)
            steps = [
                ("write", "write_file", {"path": "new.txt", "content": "hi\n"}),
                ("choose", "choose", {"questions": [
                    {"header": "Extras", "question": "Which extras?", "multiple": True, "options": [{"label": "Tests"}, {"label": "Docs"}, {"label": "Bench"}]},
                    {"header": "Language", "question": "Which language?", "options": [{"label": "Rust"}, {"label": "Go"}]},
                ]}),
                ("confirm", "confirm", {"question": "Deploy?", "yes_label": "Ship it", "no_label": "Wait"}),
                ("denied", "write_file", {"path": "other.txt", "content": "x"}),
            ]
            for step, tool, args in steps:
                result = await session.call_tool(tool, args)
                text = "".join(c.text for c in result.content if c.type == "text")
                print(json.dumps({"step": step, "text": text, "is_error": bool(result.is_error)}), flush=True)


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:4]))
