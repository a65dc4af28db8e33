"""Reads the skills of `iota-host serve` through MCP's Skills extension
(`skills/list`, `skills/get`, `resources/read` of `skill://` URIs) with the
MCP Python SDK's `Client`, in the protocol era MODE names, checks every
file against the digest and size the manifest promises, and prints one JSON
line per step.

Usage: python mcp_skills.py IOTA_HOST CONFIG ROOT MODE
"""

import asyncio
import base64
import hashlib
import json
import sys
from typing import Any, Literal

import mcp_types
from mcp.client.client import Client
from mcp.shared.exceptions import MCPError
from pydantic import TypeAdapter
from mcp_server import serve

ANY = TypeAdapter(dict[str, Any])


class ListSkills(mcp_types.Request[mcp_types.PaginatedRequestParams | None, Literal["skills/list"]]):
    method: Literal["skills/list"] = "skills/list"
    params: mcp_types.PaginatedRequestParams | None = None


class UriParams(mcp_types.RequestParams):
    uri: str


class GetSkill(mcp_types.Request[UriParams, Literal["skills/get"]]):
    method: Literal["skills/get"] = "skills/get"


def say(step, **fields):
    print(json.dumps({"step": step, **fields}), flush=True)


async def read(client, uri):
    result = await client.read_resource(uri)
    content = result.contents[0]
    if hasattr(content, "text"):
        return content.text.encode()
    return base64.b64decode(content.blob)


async def main(binary, config, root, mode):
    params = serve(binary, config, root)
    async with Client(params, mode=mode, read_timeout_seconds=30) as client:
        session = client.session
        extensions = (session.server_capabilities.extensions or {}) if hasattr(session.server_capabilities, "extensions") else {}
        say("capabilities", extensions=sorted(extensions.keys()))
        listed = await session.send_request(ListSkills(), ANY)
        say("list", skills=[
            {
                "uri": s["uri"],
                "name": s["frontmatter"]["name"],
                "description": s["frontmatter"]["description"],
                "extra": {k: v for k, v in s["frontmatter"].items() if k not in ("name", "description")},
                "files": [r["uri"] for r in s["resources"]],
            }
            for s in listed["skills"]
        ])
        for skill in listed["skills"]:
            for resource in skill["resources"]:
                data = await read(client, resource["uri"])
                ok = len(data) == resource["size"] and "sha256:" + hashlib.sha256(data).hexdigest() == resource["digest"]
                say("verified", uri=resource["uri"], ok=ok, head=data[:40].decode("utf-8", "replace"))
        got = await session.send_request(GetSkill(params=UriParams(uri="skill://pdf-tools/SKILL.md")), ANY)
        say("get", uri=got["skill"]["uri"], files=len(got["skill"]["resources"]))
        for step, call in [
            ("get-unknown", session.send_request(GetSkill(params=UriParams(uri="skill://nope/SKILL.md")), ANY)),
            ("read-escape", client.read_resource("skill://pdf-tools/..%2F..%2F..%2Fsecret.txt")),
            ("read-missing", client.read_resource("skill://pdf-tools/missing.md")),
            ("read-fifo", client.read_resource("skill://pdf-tools/pipe")),
        ]:
            try:
                await call
                say(step, error=None)
            except MCPError as e:
                say(step, error=e.error.message, code=e.error.code)
        result = await client.call_tool("load_skill", {"skill": "pdf-tools", "file": "pipe"})
        say("load-fifo", text="".join(c.text for c in result.content if c.type == "text"))


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:5]))
