"""A 2025-11-25 MCP session behind a balancer with no affinity (nginx's round robin over two
`reactor serve` processes on one PostgreSQL): any process answers any of its requests
(reactor/server/agents/sessions.py). Two apps on one database, each on its own loopback port, and
a round-robin forwarder in front of them, as tests/test_mcp_processes.py has them."""

from __future__ import annotations

import asyncio
import itertools
import json
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from conftest import bearer
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.server.streamable_http import GET_STREAM_KEY
from starlette.types import Receive, Scope, Send

from reactor.server.loopback import LoopbackServer
from test_mcp_processes import TOOL, ScriptedPage, agent_token, two_apps  # noqa: F401

ROOT = Path(__file__).resolve().parent.parent
MCP1_PYTHON = ROOT / ".venv-mcp1" / "bin" / "python"  # the SDK's 1.x line, made by ./dev test
HEADERS = {"accept": "application/json, text/event-stream", "mcp-protocol-version": "2025-11-25"}
HELLO = {
    "protocolVersion": "2025-11-25",
    "capabilities": {},
    "clientInfo": {"name": "sessions-test", "version": "1"},
}


@dataclass
class Passed:
    """One request the balancer forwarded: to which process, what it was, how it was answered."""

    process: int
    method: str
    rpc: str | None
    session: str | None
    status: int


class RoundRobin:
    """A balancer with no affinity, as nginx's default: each request goes to the next process in
    turn (its Host kept, as `proxy_set_header Host $http_host` does), its answer streamed back as
    it comes (an event stream included). `passed` lists what went where; `progressed` counts the
    progress notices that went through."""

    def __init__(self, upstreams: list[str]) -> None:
        self.upstreams = upstreams
        self.turn = itertools.count()
        self.passed: list[Passed] = []
        self.progressed = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while (message := await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        process = next(self.turn) % len(self.upstreams)
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        query = scope["query_string"].decode()
        url = self.upstreams[process] + scope["path"] + (f"?{query}" if query else "")
        headers = [
            (k, v) for k, v in scope["headers"] if k not in (b"connection", b"content-length")
        ]
        async with httpx.AsyncClient(timeout=None) as client:
            request = client.build_request(scope["method"], url, headers=headers, content=body)
            answer = await client.send(request, stream=True)
            try:
                session = dict(scope["headers"]).get(b"mcp-session-id", b"").decode() or None
                self.passed.append(
                    Passed(
                        process,
                        scope["method"],
                        _rpc_method(body),
                        session or answer.headers.get("mcp-session-id"),
                        answer.status_code,
                    )
                )
                kept = [
                    (k, v)
                    for k, v in answer.headers.raw
                    if k.lower() not in (b"connection", b"transfer-encoding")
                ]
                await send(
                    {"type": "http.response.start", "status": answer.status_code, "headers": kept}
                )
                async with anyio.create_task_group() as streaming:

                    async def client_gone() -> None:
                        while (await receive())["type"] != "http.disconnect":
                            pass
                        streaming.cancel_scope.cancel()

                    streaming.start_soon(client_gone)
                    async for chunk in answer.aiter_raw():
                        self.progressed += chunk.count(b"notifications/progress")
                        await send({"type": "http.response.body", "body": chunk, "more_body": True})
                    await send({"type": "http.response.body", "body": b""})
                    streaming.cancel_scope.cancel()
            finally:
                await answer.aclose()

    def of_session(self, session: str) -> list[Passed]:
        return [p for p in self.passed if p.session == session]


def _rpc_method(body: bytes) -> str | None:
    try:
        message = json.loads(body)
    except ValueError:
        return None
    return message.get("method") if isinstance(message, dict) else None


@pytest.fixture
def balancer(two_apps):  # noqa: F811
    first, second = two_apps
    for app in (first, second):
        app.app.state.agents.relay.progress_seconds = 0.05
    forwarder = RoundRobin([first.url, second.url])
    server = LoopbackServer(forwarder, start_timeout=10)
    yield forwarder, server.url
    server.stop()


def manager(server):
    return server.app.state.agents.endpoint.manager


def wait_until(condition, seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "the condition did not hold in time"
        time.sleep(0.01)


def initialize(client: httpx.Client, url: str) -> str:
    """Open a 2025-11-25 session on the process at `url`; its Mcp-Session-Id."""
    opened = client.post(
        f"{url}/mcp", json={"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": HELLO}
    )
    assert opened.status_code == 200, opened.text
    session = opened.headers["mcp-session-id"]
    done = client.post(
        f"{url}/mcp",
        json={"jsonrpc": "2.0", "method": "notifications/initialized"},
        headers={"mcp-session-id": session},
    )
    assert done.status_code == 202, done.text
    return session


def list_tools(client: httpx.Client, url: str, session: str, token: str | None = None):
    extra = {"mcp-session-id": session}
    if token is not None:
        extra["authorization"] = f"Bearer {token}"
    return client.post(
        f"{url}/mcp", json={"jsonrpc": "2.0", "id": 7, "method": "tools/list"}, headers=extra
    )


def assert_spread_then_ended(forwarder: RoundRobin, session: str, token: str, servers) -> None:
    """The session's calls, none refused, were served by both processes; its DELETE ended it, and
    neither process knows it any more."""
    served = forwarder.of_session(session)
    assert all(p.status < 300 for p in served), served
    assert {p.process for p in served if p.rpc == "tools/call"} == {0, 1}, (
        "the session's calls were served by both processes"
    )
    assert [p.status for p in served if p.method == "DELETE"] == [200]
    wait_until(lambda: all(session not in manager(s)._server_instances for s in servers))
    with httpx.Client(headers={**HEADERS, "authorization": f"Bearer {token}"}) as client:
        for server in servers:
            answer = list_tools(client, server.url, session)
            assert answer.status_code == 404, answer.text
            assert answer.json()["error"]["message"] == "Session not found"


def test_a_2025_11_25_agent_behind_a_balancer_without_affinity_calls_the_page_on_either_process(
    two_apps,  # noqa: F811
    balancer,
):
    """Initialize on one process, the rest on either in turn: tools/list, calls that wait with
    progress, the GET stream, and the DELETE that ends the session on both. A 2026-07-28 agent
    goes through the same balancer (it has no session)."""
    first, second = two_apps
    forwarder, url = balancer
    page = ScriptedPage(first.url, bearer(first, "ada"), lambda call: None)
    heard: list[str | None] = []
    answered: set[str] = set()

    async def work(session):
        async def progress(value: float, total: float | None, message: str | None) -> None:
            heard.append(message)
            for call in [c for c in page.calls if c["call"] not in answered]:
                answered.add(call["call"])  # the person decides now: the page answers
                envelope = {"ok": True, "result": {"notes": len(answered)}}
                page.send({"type": "answer", "call": call["call"], "envelope": envelope})

        listed = await session.list_tools()
        called = [
            await session.call_tool("notes_count", {}, progress_callback=progress) for _ in range(2)
        ]
        return listed, called

    async def modern(session):
        discovered = await session.discover()
        return discovered, await session.call_tool("notes_count", {})

    async def run(token: str, work, *, opening: str):
        async with httpx2.AsyncClient(
            headers={"authorization": f"Bearer {token}"}, timeout=30
        ) as h:
            async with streamable_http_client(f"{url}/mcp", http_client=h) as (read, write):
                async with ClientSession(read, write) as session:
                    if opening == "initialize":
                        await session.initialize()
                    return await work(session)

    token = agent_token(first)
    try:
        listed, called = asyncio.run(run(token, work, opening="initialize"))
        page.answer = lambda call: {"ok": True, "result": {"notes": 9}}
        discovered, modern_call = asyncio.run(run(token, modern, opening="discover"))
    finally:
        page.close()
    assert [t.name for t in listed.tools] == ["notes_count", "reactor_pages", "reactor_call"]
    assert [(c.is_error, c.structured_content) for c in called] == [
        (False, {"notes": 1}),
        (False, {"notes": 2}),
    ]
    assert len(heard) >= 2 and "Waiting for the page to answer notes_count" in str(heard[0])
    assert "2026-07-28" in discovered.supported_versions
    assert modern_call.is_error is False and modern_call.structured_content == {"notes": 9}

    session = next(p.session for p in forwarder.passed if p.rpc == "initialize")
    assert session
    assert_spread_then_ended(forwarder, session, token, (first, second))


def test_the_sdks_1x_client_behind_a_balancer_without_affinity_calls_the_page_with_progress(
    two_apps,  # noqa: F811
    balancer,
):
    """Not our SDK 2.x: the 1.x line most desktop agents' clients use, in its own environment."""
    first, second = two_apps
    forwarder, url = balancer
    assert MCP1_PYTHON.exists(), "run ./dev test once: it makes .venv-mcp1 with the SDK's 1.x line"

    def answer(call):
        before = forwarder.progressed
        wait_until(lambda: forwarder.progressed > before, 30)  # the agent heard progress first
        return {"ok": True, "result": {"notes": 5}}

    page = ScriptedPage(second.url, bearer(second, "ada"), answer)
    token = agent_token(second)
    try:
        run = subprocess.run(
            [
                str(MCP1_PYTHON),
                str(ROOT / "tests" / "mcp1_client.py"),
                url,
                token,
                "notes_count",
                "{}",
                "2",
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        page.close()
    assert run.returncode == 0, run.stderr
    seen = json.loads(run.stdout)
    assert seen["sdk"].startswith("1.") and seen["protocolVersion"] == "2025-11-25"
    assert seen["call"] == {"isError": False, "structuredContent": {"notes": 5}}
    assert seen["progress"] >= 2
    assert {"notes_count", "reactor_pages", "reactor_call"} == set(seen["tools"])
    assert_spread_then_ended(forwarder, seen["sessionId"], token, (first, second))


def test_a_get_stream_on_the_other_process_hears_the_tools_change_and_a_delete_ends_it(
    two_apps,  # noqa: F811
):
    first, second = two_apps
    page = ScriptedPage(first.url, bearer(first, "ada"), lambda call: None)
    token = agent_token(first)
    heard: list[dict[str, Any]] = []
    try:
        with httpx.Client(
            headers={**HEADERS, "authorization": f"Bearer {token}"}, timeout=10
        ) as client:
            session = initialize(client, first.url)
            with client.stream(
                "GET",
                f"{second.url}/mcp",
                headers={"mcp-session-id": session, "accept": "text/event-stream"},
            ) as stream:
                assert stream.status_code == 200
                wait_until(
                    lambda: (
                        GET_STREAM_KEY
                        in manager(second)._server_instances[session]._request_streams
                    )
                )
                page.send({"type": "tools", "tools": [TOOL, {**TOOL, "name": "notes_add"}]})
                lines = stream.iter_lines()
                for line in lines:
                    if line.startswith("data: "):
                        heard.append(json.loads(line[6:]))
                        break
                ended = client.delete(f"{first.url}/mcp", headers={"mcp-session-id": session})
                assert ended.status_code == 200, ended.text
                assert [line for line in lines if line] == [], (
                    "the stream on the other process ended"
                )
            for server in (first, second):
                assert list_tools(client, server.url, session).status_code == 404
    finally:
        page.close()
    assert heard == [{"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}]


def test_a_session_answers_its_own_token_on_either_process_and_no_other_token_on_any(two_apps):  # noqa: F811
    first, second = two_apps
    ada, adas_other, bob = agent_token(first), agent_token(second), agent_token(first, "bob")
    with httpx.Client(headers={**HEADERS, "authorization": f"Bearer {ada}"}, timeout=10) as client:
        session = initialize(client, first.url)
        for intruder in (adas_other, bob):
            for server in (second, first):
                refused = list_tools(client, server.url, session, intruder)
                assert refused.status_code == 404, refused.text
                assert refused.json()["error"]["message"] == "Session not found"
                ended = client.delete(
                    f"{server.url}/mcp",
                    headers={"mcp-session-id": session, "authorization": f"Bearer {intruder}"},
                )
                assert ended.status_code == 404
        for server in (second, first):
            listed = list_tools(client, server.url, session)
            assert listed.status_code == 200, listed.text
            assert listed.headers["content-type"] == "application/json", "one JSON body"
            assert [t["name"] for t in listed.json()["result"]["tools"]] == [
                "reactor_pages",
                "reactor_call",
            ]


def test_a_cancel_sent_to_the_other_process_withdraws_the_call_from_the_page(two_apps):  # noqa: F811
    first, second = two_apps
    page = ScriptedPage(second.url, bearer(second, "ada"), lambda call: None)  # never answers
    token = agent_token(first)
    try:
        with (
            httpx.Client(
                headers={**HEADERS, "authorization": f"Bearer {token}"}, timeout=30
            ) as client,
            ThreadPoolExecutor(1) as waiting,
        ):
            session = initialize(client, first.url)
            call = {
                "jsonrpc": "2.0",
                "id": 3,
                "method": "tools/call",
                "params": {"name": "notes_count", "arguments": {}},
            }
            answer = waiting.submit(
                client.post, f"{first.url}/mcp", json=call, headers={"mcp-session-id": session}
            )
            wait_until(lambda: bool(page.calls))
            cancel = {
                "jsonrpc": "2.0",
                "method": "notifications/cancelled",
                "params": {"requestId": 3, "reason": "The person stopped the agent."},
            }
            told = client.post(
                f"{second.url}/mcp", json=cancel, headers={"mcp-session-id": session}
            )
            assert told.status_code == 202, told.text
            withdrawn = page.said.get(timeout=10)
            cancelled = answer.result(10)
    finally:
        page.close()
    assert withdrawn == {"type": "cancel", "call": page.calls[0]["call"]}
    assert cancelled.json()["error"]["message"] == "Request cancelled"


def test_a_copy_that_idled_out_is_adopted_again_and_a_session_unused_for_its_idle_time_is_gone(
    two_apps,  # noqa: F811
):
    first, second = two_apps
    manager(second).session_idle_timeout = 0.2  # its copies idle out at once
    token = agent_token(first)
    with httpx.Client(
        headers={**HEADERS, "authorization": f"Bearer {token}"}, timeout=10
    ) as client:
        session = initialize(client, first.url)
        assert list_tools(client, second.url, session).status_code == 200
        wait_until(lambda: session not in manager(second)._server_instances)
        assert list_tools(client, second.url, session).status_code == 200, "adopted again"
        wait_until(lambda: session not in manager(second)._server_instances)
        rows = first.app.state.agents.sessions
        with rows.database.transaction() as db:  # nobody used it for the idle time
            db.execute(
                "UPDATE mcp_sessions SET used_at = used_at - ? WHERE id = ?",
                (rows.lifetime + 1, session),
            )
        refused = list_tools(client, second.url, session)
        assert refused.status_code == 404 and refused.json()["error"]["message"] == (
            "Session not found"
        )


def test_a_plain_call_is_answered_as_the_sdk_answers_it_and_a_malformed_one_is_refused_so(
    two_apps,  # noqa: F811
):
    """A tools/call of plain params takes a shorter way than the SDK's validation (transport.py
    DirectToolCalls); what it answers, and what a malformed call is told, are the SDK's own, on
    the process that opened the session and on the other."""
    first, second = two_apps
    page = ScriptedPage(
        first.url, bearer(first, "ada"), lambda call: {"ok": True, "result": call["arguments"]}
    )
    token = agent_token(first)

    def call(client: httpx.Client, url: str, session: str, params: Any, number: int = 1):
        return client.post(
            f"{url}/mcp",
            json={"jsonrpc": "2.0", "id": number, "method": "tools/call", "params": params},
            headers={"mcp-session-id": session},
        )

    with httpx.Client(
        headers={**HEADERS, "authorization": f"Bearer {token}"}, timeout=10
    ) as client:
        session = initialize(client, first.url)
        for number, server in enumerate((first, second, first), start=1):
            plain = {"name": TOOL["name"], "arguments": {"n": number}}
            if number == 3:
                plain["_meta"] = {"progressToken": "p"}
            answer = call(client, server.url, session, plain, number)
            assert answer.status_code == 200, answer.text
            assert answer.json() == {
                "jsonrpc": "2.0",
                "id": number,
                "result": {
                    "content": [{"type": "text", "text": json.dumps({"n": number})}],
                    "isError": False,
                    "structuredContent": {"n": number},
                },
            }
        for server in (first, second):
            for params in (
                {"name": TOOL["name"], "arguments": "every note"},
                {"name": 7},
                {"arguments": {}},
            ):
                refused = call(client, server.url, session, params)
                assert refused.status_code == 200, refused.text
                assert refused.json()["error"]["code"] == -32602, refused.text
    assert [c["arguments"] for c in page.calls] == [{"n": 1}, {"n": 2}, {"n": 3}], (
        "only the plain calls reached the page"
    )
