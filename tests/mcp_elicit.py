"""Drives `iota-host serve` with the MCP Python SDK's high-level `Client` as a
client that answers elicitation forms, in the protocol era MODE names:
"auto" (probes server/discover and speaks 2026-07-28: questions arrive as
multi round-trip input requests) or "legacy" (the initialize handshake:
questions arrive as elicitation requests). Prints each question and result
as JSON lines.

Usage: python mcp_elicit.py IOTA_HOST CONFIG ROOT MODE
"""

import asyncio
import json
import sys

import mcp.types as types
from mcp.client.client import Client
from mcp_server import serve

# One answer per question, in order.
ANSWERS = [
    {"decision": "allow once"},
    {"q0": ["Tests", "Docs"], "q1": "Go", "q1_other": "zig"},
    {"answer": "Ship it"},
    None,  # decline the next approval
    {"decision": "deny"},
    {"decision": "allow for this session"},
    # the second write of the session is not asked about
]


async def on_elicit(context, params):
    schema = params.requested_schema
    schema = schema.model_dump() if hasattr(schema, "model_dump") else schema
    print(json.dumps({"step": "elicited", "message": params.message.split("\n")[0], "fields": sorted(schema["properties"].keys())}), flush=True)
    answer = ANSWERS.pop(0)
    if answer is None:
        return types.ElicitResult(action="decline")
    return types.ElicitResult(action="accept", content=answer)


async def main(binary, config, root, mode):
    params = serve(binary, config, root)
    async with Client(params, mode=mode, elicitation_callback=on_elicit) as client:
        print(json.dumps({"step": "protocol", "version": client.session.protocol_version}), flush=True)
        tools = await client.list_tools()
        print(json.dumps({"step": "list", "tools": [t.name for t in tools.tools]}), flush=True)
        steps = [
            ("write", "write_file", {"path": "new.txt", "content": "hi\n"}),
            ("choose", "choose", {"questions": [
                {"header": "Extras", "question": "Which extras?", "multiple": True, "options": [{"label": "Tests"}, {"label": "Docs"}, {"label": "Bench"}]},
                {"header": "Language", "question": "Which language?", "options": [{"label": "Rust"}, {"label": "Go"}]},
            ]}),
            ("confirm", "confirm", {"question": "Deploy?", "yes_label": "Ship it", "no_label": "Wait"}),
            ("declined", "write_file", {"path": "other.txt", "content": "x"}),
            ("denied", "write_file", {"path": "other.txt", "content": "y"}),
            ("session", "write_file", {"path": "s1.txt", "content": "1"}),
            ("session-again", "write_file", {"path": "s2.txt", "content": "2"}),
        ]
        for step, tool, args in steps:
            result = await client.call_tool(tool, args)
            text = "".join(c.text for c in result.content if c.type == "text")
            print(json.dumps({"step": step, "text": text, "is_error": bool(result.is_error)}), flush=True)
        print(json.dumps({"step": "unanswered", "left": len(ANSWERS)}), flush=True)


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:5]))
