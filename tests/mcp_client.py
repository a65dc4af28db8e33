"""Drives `iota-host serve` with the official MCP Python SDK through one real
session and prints one JSON line per step, for tests/mcp.rs to assert on.

Usage: python mcp_client.py IOTA_HOST CONFIG ROOT
"""

import asyncio
import json
import sys

from mcp import ClientSession
from mcp.client.stdio import stdio_client
from mcp_server import serve


def text_of(result):
    return {"text": "".join(c.text for c in result.content if c.type == "text"), "is_error": bool(result.is_error)}


LOGGED = []


async def on_log(params):
    LOGGED.append(params.data)


async def main(binary, config, root):
    params = serve(binary, config, root)
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, logging_callback=on_log) as session:
            await session.initialize()
            tools = await session.list_tools()
            listed = [
                {
                    "name": t.name,
                    "read_only": t.annotations.read_only_hint if t.annotations else None,
                    "destructive": t.annotations.destructive_hint if t.annotations else None,
                    "idempotent": t.annotations.idempotent_hint if t.annotations else None,
                    "open_world": t.annotations.open_world_hint if t.annotations else None,
                    "schema_type": t.input_schema.get("type"),
                }
                for t in tools.tools
            ]
            print(json.dumps({"step": "list", "tools": listed}), flush=True)
            steps = [
                ("read", "read_file", {"path": "a.txt"}),
                ("edit", "edit_file", {"path": "a.txt", "old_string": "old", "new_string": "new"}),
                ("reread", "read_file", {"path": "a.txt"}),
                ("refused", "shell", {"command": f"{binary} --version"}),
                ("jail", "read_file", {"path": "../outside.txt"}),
                ("grep", "grep", {"pattern": "new"}),
                ("shell", "shell", {"command": "echo from-shell"}),
                ("background", "shell", {"command": "sleep 1; echo job-done", "background": True}),
            ]
            for step, tool, args in steps:
                result = await session.call_tool(tool, args)
                print(json.dumps({"step": step, **text_of(result)}), flush=True)
            await asyncio.sleep(2)
            print(json.dumps({"step": "logged", "messages": LOGGED}), flush=True)
            result = await session.call_tool("list_dir", {})
            print(json.dumps({"step": "after-job", **text_of(result)}), flush=True)


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:4]))
