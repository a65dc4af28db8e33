"""Serves one config over MCP with the official Python SDK, lists the tools
and makes one call; prints one JSON line per step ("list", "call").

Usage: python mcp_call.py IOTA_HOST CONFIG ROOT TOOL ARGUMENTS_JSON
"""

import asyncio
import json
import sys

from mcp import ClientSession
from mcp.client.stdio import stdio_client
from mcp_server import serve


async def main(binary, config, root, tool, arguments):
    params = serve(binary, config, root)
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            tools = await session.list_tools()
            listed = [{"name": t.name, "schema": t.input_schema} for t in tools.tools]
            print(json.dumps({"step": "list", "tools": listed}), flush=True)
            result = await session.call_tool(tool, json.loads(arguments))
            text = "".join(c.text for c in result.content if c.type == "text")
            print(json.dumps({"step": "call", "text": text, "is_error": bool(result.is_error)}), flush=True)


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:6]))
