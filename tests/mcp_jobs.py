"""Background jobs, progress and logs of `iota-host serve` through the MCP
Python SDK's `Client`, in the protocol era MODE names ("auto": 2026-07-28,
"legacy": the initialize handshake). The client declares the tasks
extension (`io.modelcontextprotocol/tasks`); on 2026-07-28 a call that
becomes a job answers with a task, which this client polls with
`tasks/get` (or cancels with `tasks/cancel`). Prints one JSON line per step.

Usage: python mcp_jobs.py IOTA_HOST CONFIG ROOT MODE TAG
"""

import asyncio
import json
import os
import sys
from typing import Any, Literal

import mcp_types
from mcp.client.client import Client
from mcp.client.extension import ClientExtension, ResultClaim
from pydantic import TypeAdapter
from mcp_server import serve

TAG = sys.argv[5]
LOGGED = []
CANCEL = {"next": False}


def say(step, **fields):
    print(json.dumps({"step": step, **fields}), flush=True)


class TaskResult(mcp_types.Result):
    """SEP-2663's `CreateTaskResult`: the task's fields inline."""

    result_type: Literal["task"] = "task"
    task_id: str
    status: str
    status_message: str | None = None


class TaskParams(mcp_types.RequestParams):
    task_id: str


class GetTask(mcp_types.Request[TaskParams, Literal["tasks/get"]]):
    method: Literal["tasks/get"] = "tasks/get"
    name_param = "taskId"


class CancelTask(mcp_types.Request[TaskParams, Literal["tasks/cancel"]]):
    method: Literal["tasks/cancel"] = "tasks/cancel"
    name_param = "taskId"


ANY = TypeAdapter(dict[str, Any])


async def resolve(claimed, ctx):
    task = {"taskId": claimed.task_id, "status": claimed.status, "statusMessage": claimed.status_message}
    say("task", id=task["taskId"], status=task["status"], message=task["statusMessage"] or "")
    session = ctx.session
    if CANCEL["next"]:
        await session.send_request(CancelTask(params=TaskParams(task_id=task["taskId"])), ANY)
    while True:
        got = await session.send_request(GetTask(params=TaskParams(task_id=task["taskId"])), ANY)
        if got["status"] != "working":
            break
        await asyncio.sleep(got.get("pollIntervalMs", 500) / 1000)
    result = got.get("result") or {"content": []}
    text = "".join(c.get("text", "") for c in result.get("content", []))
    say("task-done", id=task["taskId"], status=got["status"], text=text)
    return mcp_types.CallToolResult(content=[mcp_types.TextContent(type="text", text=f"task {got['status']}")])


class Tasks(ClientExtension):
    identifier = "io.modelcontextprotocol/tasks"

    def claims(self):
        return [ResultClaim(result_type="task", model=TaskResult, resolve=resolve)]


def running(marker):
    found = []
    for pid in os.listdir("/proc"):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if f.read().replace(b"\0", b" ").startswith(marker.encode()):
                    found.append(pid)
        except OSError:
            pass
    return found


async def appears(marker):
    for _ in range(200):
        if running(marker):
            return True
        await asyncio.sleep(0.05)
    return False


async def gone(marker):
    """The processes still running `marker` after up to 10 s."""
    for _ in range(200):
        if not running(marker):
            return 0
        await asyncio.sleep(0.05)
    return len(running(marker))


async def on_log(params):
    LOGGED.append(params.data)


def text_of(result):
    return "".join(c.text for c in result.content if c.type == "text")


async def main(binary, config, root, mode):
    params = serve(binary, config, root)
    async with Client(params, mode=mode, extensions=[Tasks()], logging_callback=on_log) as client:
        say("protocol", version=client.session.protocol_version)
        result = await client.call_tool("shell", {"command": "sleep 1; echo job-done", "background": True})
        say("background", text=text_of(result))

        progress = []

        async def on_progress(value, total, message):
            progress.append({"progress": value, "message": message})

        result = await client.call_tool("shell", {"command": "sleep 3; echo long-done"}, progress_callback=on_progress)
        say("progress", text=text_of(result), reports=progress)

        if mode != "legacy":
            CANCEL["next"] = True
            result = await client.call_tool("shell", {"command": f"sleep 604.{TAG}", "background": True})
            CANCEL["next"] = False
            say("cancelled", text=text_of(result), left=await gone(f"sleep 604.{TAG}"))

        if mode != "legacy":
            # A request that opts in to logs hears of a job that ends while it runs.
            started = await client.session.call_tool("shell", {"command": "sleep 1; echo opted-in", "background": True}, allow_claimed=True)
            say("unresolved-task", status=started.status)
            await client.session.call_tool("shell", {"command": "sleep 3"}, meta={"io.modelcontextprotocol/logLevel": "info"})

        # A foreground call the client gives up on: its command's tree stops.
        call = asyncio.create_task(client.call_tool("shell", {"command": f"sleep 605.{TAG} & sleep 606.{TAG}; wait"}))
        ran = await appears(f"sleep 606.{TAG}")
        call.cancel()
        try:
            await call
        except asyncio.CancelledError:
            pass
        say("call-cancelled", ran=ran, left=await gone(f"sleep 605.{TAG}") + await gone(f"sleep 606.{TAG}"))
        await asyncio.sleep(1.5)
        result = await client.call_tool("list_dir", {})
        say("after", text=text_of(result), logged=LOGGED)


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:5]))
