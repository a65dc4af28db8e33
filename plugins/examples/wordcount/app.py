"""An example toolset in Python, built with componentize-py: `wordcount`
counts the lines, words and bytes of a text file under the project root.

It targets the `reader` world of wit/toolset.wit, so it asks for nothing but
read access to the project. Build it with:

    componentize-py -d wit -w reader componentize -p plugins/examples/wordcount app -o wordcount.wasm
"""

import json
import os

from wit_world import exports
from wit_world.imports.types import Approval, Context, Presentation, ToolResult, ToolSpec

PARAMETERS = json.dumps({
    "type": "object",
    "properties": {"path": {"type": "string", "description": "The file, relative to the project root."}},
    "required": ["path"],
    "additionalProperties": False,
})


def result(text, header, is_error=False):
    return ToolResult(text=text, is_error=is_error, header=header, diff=None)


class Toolset(exports.Toolset):
    def describe(self, ctx: Context) -> list[ToolSpec]:
        return [ToolSpec(
            name="wordcount",
            description="Count the lines, words and bytes of a text file under the project root.",
            parameters=PARAMETERS,
            approval=Approval.NEVER,
            parallel=True,
            presentation=Presentation.GROUP,
            read_only=True,
        )]

    def prompt(self, ctx: Context) -> str | None:
        return None

    def preview(self, ctx: Context, tool: str, args: str) -> str | None:
        return None

    def invoke(self, ctx: Context, tool: str, args: str) -> ToolResult:
        path = (json.loads(args or "{}") or {}).get("path")
        if not isinstance(path, str) or not path:
            return result("missing required argument: path", "wordcount", True)
        header = f"wordcount {path}"
        full = os.path.normpath(os.path.join(ctx.root, path))
        if not (full == ctx.root or full.startswith(ctx.root + os.sep)):
            return result(f"path is outside the project root ({ctx.root}): {path}", header, True)
        try:
            with open(full, "rb") as f:
                data = f.read()
        except OSError as e:
            return result(f"cannot read {path}: {e.strerror}", header, True)
        text = data.decode("utf-8", "replace")
        return result(f"{text.count(chr(10))} lines, {len(text.split())} words, {len(data)} bytes", header)
