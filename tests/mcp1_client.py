"""A 2025-11-25 MCP client from the official SDK's 1.x line, run in its own environment
(.venv-mcp1, which `./dev test` makes: the 1.x and 2.x SDKs cannot share one).

    .venv-mcp1/bin/python tests/mcp1_client.py URL TOKEN TOOL [ARGUMENTS_JSON [TIMES]]

initializes, lists the tools and calls TOOL (TIMES times, once by default; counting the progress
notices it hears), then prints one JSON object of what it saw (of the last call).
"""

from __future__ import annotations

import asyncio
import json
import sys
from importlib.metadata import version

import httpx
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client


async def main(url: str, token: str, tool: str, arguments: dict, times: int = 1) -> dict:
    async with httpx.AsyncClient(headers={"authorization": f"Bearer {token}"}, timeout=30) as http:
        async with streamable_http_client(f"{url}/mcp", http_client=http) as (
            read,
            write,
            session_id,
        ):
            async with ClientSession(read, write) as session:
                initialized = await session.initialize()
                listed = await session.list_tools()
                progress: list[float] = []

                async def heard(value: float, total: float | None, message: str | None) -> None:
                    progress.append(value)

                for _ in range(times):
                    called = await session.call_tool(tool, arguments, progress_callback=heard)
                return {
                    "sdk": version("mcp"),
                    "protocolVersion": initialized.protocolVersion,
                    "sessionId": session_id(),
                    "listChanged": bool(
                        initialized.capabilities.tools
                        and initialized.capabilities.tools.listChanged
                    ),
                    "tools": {
                        t.name: (
                            t.annotations.model_dump(exclude_none=True) if t.annotations else {}
                        )
                        for t in listed.tools
                    },
                    "progress": len(progress),
                    "call": {
                        "isError": called.isError,
                        "structuredContent": called.structuredContent,
                    },
                }


if __name__ == "__main__":
    url, token, tool = sys.argv[1:4]
    print(
        json.dumps(
            asyncio.run(
                main(
                    url,
                    token,
                    tool,
                    json.loads(sys.argv[4]) if len(sys.argv) > 4 else {},
                    int(sys.argv[5]) if len(sys.argv) > 5 else 1,
                )
            )
        )
    )
