"""Two server processes' apps on one PostgreSQL (each on its own loopback port, in this process):
a page's link held by one, the agent's MCP requests reaching the other.
The directory of pages is the database; calls, answers and "the page went" cross by LISTEN/NOTIFY
(reactor/server/agents/bus.py)."""

from __future__ import annotations

import asyncio
import json
import queue
import socket
import threading
import time

import httpx
import httpx2
import pytest
from conftest import bearer, start_server, stop_server
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from reactor.server.agents import direct, leases
from reactor.server.agents.tokens import CHECK_AND_COUNT, RATE_LIMIT, _digest

TOOL = {
    "name": "notes_count",
    "title": "Count the notes",
    "description": "Count the notes on this page.",
    "inputSchema": {"type": "object", "properties": {}},
    "annotations": {"readOnlyHint": True},
}


@pytest.fixture
def two_apps(tmp_path, postgres_cluster):
    database = postgres_cluster.database()
    first = start_server(tmp_path / "a", seed_demo=True, database=database)
    second = start_server(tmp_path / "b", seed_demo=True, database=database)
    yield first, second
    stop_server(first)
    stop_server(second)


class ScriptedPage:
    """A page linked to `home` by its WebSocket, as a browser's is, answering each call with
    `answer(call) -> envelope` (None: it never answers). What else the server says (`listed`,
    `problem`) waits in `said`."""

    def __init__(self, home: str, session: dict[str, str], answer, tools=(TOOL,)) -> None:
        self.answer, self.tools = answer, list(tools)
        self.page_id: str | None = None
        self.calls: list[dict] = []
        self.said: queue.Queue[dict] = queue.Queue()
        self.link = f"ws{home.removeprefix('http')}/api/agent-pages/link"
        self.thread = threading.Thread(target=self.run, args=(session,), daemon=True)
        self.thread.start()
        assert self.said.get(timeout=10)["type"] == "listed", "the server took the page's tools"

    def run(self, session: dict[str, str]) -> None:
        with connect(self.link, additional_headers=session) as self.socket:
            try:
                for text in self.socket:
                    self.heard(json.loads(text))
            except ConnectionClosed:
                pass  # closed by the test or the server

    def heard(self, message) -> None:
        if message["type"] == "hello":
            self.page_id = message["page"]
            self.send({"type": "tools", "tools": self.tools})
        elif message["type"] == "call":
            self.calls.append(message)
            envelope = self.answer(message)
            if envelope is not None:
                self.send({"type": "answer", "call": message["call"], "envelope": envelope})
        else:
            self.said.put(message)

    def send(self, message) -> None:
        self.socket.send(message if isinstance(message, str) else json.dumps(message))

    def close(self) -> None:
        self.socket.close()
        self.thread.join(10)


def agent_token(server, username="ada") -> str:
    answer = httpx.post(
        f"{server.url}/api/agent-tokens", json={"name": "agent"}, headers=bearer(server, username)
    )
    return answer.json()["token"]


async def with_session(url: str, token: str, work):
    async with httpx2.AsyncClient(headers={"authorization": f"Bearer {token}"}, timeout=30) as http:
        async with streamable_http_client(f"{url}/mcp", http_client=http) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                return await work(session)


@pytest.fixture(params=["one host", "several hosts"])
def hosts(request, monkeypatch):
    """Processes on one host link directly (server/agents/direct.py); on several, each message to
    one process goes by NOTIFY. Asked before `two_apps`, which it shapes."""
    if request.param == "several hosts":
        monkeypatch.setattr(direct, "ENABLED", False)
    return request.param


class Crossing:
    """What crossed between the servers' processes, as it went: `by_notify`, the process each
    message sent by NOTIFY to one process went to; `direct`, the type of each message a process
    read from another's direct link (server/agents/direct.py)."""

    def __init__(self, *servers) -> None:
        self.by_notify: list[str] = []
        self.direct: list[str] = []
        for server in servers:
            bus = server.app.state.agents.bus
            notify = bus._notify

            def noted(process, message, notify=notify):
                if process != "*":
                    self.by_notify.append(process)
                notify(process, message)

            bus._notify = noted
            if bus.peers is not None:
                heard = bus.peers.heard

                def read(message, heard=heard):
                    self.direct.append(message.get("type"))
                    heard(message)

                bus.peers.heard = read


def test_an_agent_on_one_process_calls_a_page_held_by_another_and_the_answer_crosses_back(
    hosts, two_apps
):
    first, second = two_apps
    crossed = Crossing(first, second)
    # The page answers its own process: the answer crosses back to the first.
    page = ScriptedPage(
        second.url, bearer(second, "ada"), lambda call: {"ok": True, "result": {"notes": 3}}
    )
    try:

        async def work(session):
            listed = await session.list_tools()
            return (
                listed,
                await session.call_tool("notes_count", {}),
                await session.call_tool("reactor_pages", {}),
            )

        listed, called, pages = asyncio.run(with_session(first.url, agent_token(first), work))
    finally:
        page.close()
    assert [t.name for t in listed.tools] == ["notes_count", "reactor_pages", "reactor_call"]
    assert called.is_error is False and called.structured_content == {"notes": 3}
    assert [p["page"] for p in pages.structured_content["pages"]] == [page.page_id]
    assert page.calls[0]["tool"] == "notes_count" and page.calls[0]["call"].startswith(
        first.app.state.agents.relay.process + "."
    ), "the call is named by the process that waits for it"
    processes = {first.app.state.agents.relay.process, second.app.state.agents.relay.process}
    if hosts == "one host":
        assert crossed.by_notify == [] and {"call", "answer"} <= set(crossed.direct), (
            "the call and its answer crossed by the processes' direct link"
        )
    else:
        assert set(crossed.by_notify) == processes and crossed.direct == [], (
            "the call and its answer crossed by NOTIFY"
        )


def test_a_page_that_goes_on_its_process_fails_the_call_waiting_on_the_other_at_once(two_apps):
    first, second = two_apps
    called = threading.Event()
    # never answers
    page = ScriptedPage(second.url, bearer(second, "ada"), lambda call: called.set())

    async def work(session):
        waiting = asyncio.ensure_future(session.call_tool("notes_count", {}))
        await asyncio.get_running_loop().run_in_executor(None, called.wait, 10)
        went = time.monotonic()
        next(
            iter(second.app.state.agents.relay.pages.values())
        ).end()  # the page's link ends on its process
        result = await waiting
        return result, time.monotonic() - went

    try:
        result, took = asyncio.run(with_session(first.url, agent_token(first), work))
    finally:
        page.close()
    assert result.is_error and "page closed" in result.content[0].text
    assert took < 1.0


def test_a_large_call_crosses_whole_by_the_direct_link_or_the_message_table(hosts, two_apps):
    first, second = two_apps
    crossed = Crossing(first, second)
    page = ScriptedPage(
        second.url, bearer(second, "ada"), lambda call: {"ok": True, "result": call["arguments"]}
    )
    text = "x" * 20_000  # over NOTIFY's 8,000 bytes, both ways
    try:
        result = asyncio.run(
            with_session(
                first.url,
                agent_token(first),
                lambda session: session.call_tool("notes_count", {"text": text}),
            )
        )
    finally:
        page.close()
    assert result.structured_content == {"text": text}
    assert bool(crossed.direct) == (hosts == "one host") != bool(crossed.by_notify)


def test_a_process_whose_socket_refuses_is_reached_by_notify_and_its_calls_still_answered(
    two_apps,
):
    """A link that cannot be made (a killed process's socket left behind, here in a live one's
    place): the messages that waited for it go by NOTIFY, and the call is answered."""
    first, second = two_apps
    peers = second.app.state.agents.bus.peers
    loop_call(second, peers.stop)
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(peers.path(peers.name)))  # bound, never listening: a connection is refused
    stale.close()
    crossed = Crossing(first, second)
    page = ScriptedPage(
        second.url, bearer(second, "ada"), lambda call: {"ok": True, "result": {"notes": 4}}
    )
    try:
        called = asyncio.run(
            with_session(
                first.url,
                agent_token(first),
                lambda session: session.call_tool("notes_count", {}),
            )
        )
    finally:
        page.close()
    assert called.structured_content == {"notes": 4}
    # the call by NOTIFY, its link refused; the answer too: the second no longer links directly
    assert crossed.by_notify == [
        second.app.state.agents.relay.process,
        first.app.state.agents.relay.process,
    ]


def loop_call(server, step) -> None:
    """Run `step()` on the server's event loop (where its bus's links live), and wait for it."""
    done = threading.Event()
    server.app.state.agents.bus.loop.call_soon_threadsafe(lambda: (step(), done.set()))
    assert done.wait(10)


def test_bobs_agent_on_either_process_never_sees_adas_page(two_apps):
    first, second = two_apps
    page = ScriptedPage(second.url, bearer(second, "ada"), lambda call: {"ok": True, "result": 1})
    try:
        for server in (first, second):
            listed = asyncio.run(
                with_session(
                    server.url, agent_token(server, "bob"), lambda session: session.list_tools()
                )
            )
            assert [t.name for t in listed.tools] == ["reactor_pages", "reactor_call"]
    finally:
        page.close()
    assert page.calls == []


PING = {"jsonrpc": "2.0", "id": 1, "method": "ping"}


def pinging(token: str) -> httpx.Client:
    """A client of /mcp with the agent token `token`."""
    accept = "application/json, text/event-stream"
    return httpx.Client(headers={"authorization": f"Bearer {token}", "accept": accept}, timeout=30)


def spend_the_rate(client: httpx.Client, servers, which) -> None:
    """The token's whole rate in pings, the nth to `servers[which(n)]`: none refused."""
    statuses = [
        client.post(f"{servers[which(n)].url}/mcp", json=PING).status_code
        for n in range(RATE_LIMIT)
    ]
    assert 429 not in statuses


def test_a_tokens_rate_holds_across_processes_and_revoking_it_stops_it_on_both(two_apps):
    first, second = two_apps
    with pinging(agent_token(first)) as client:
        # Half the token's rate on each process: the whole rate used, though neither saw it all.
        spend_the_rate(client, two_apps, lambda n: n % 2)
        for server in (first, second):
            refused = client.post(f"{server.url}/mcp", json=PING)
            assert refused.status_code == 429, refused.text
            assert 1 <= int(refused.headers["retry-after"]) <= 60
            assert "try again in" in refused.json()["error"]
        other = agent_token(second)
        assert (
            client.post(
                f"{second.url}/mcp", json=PING, headers={"authorization": f"Bearer {other}"}
            ).status_code
            != 429
        )
        session = bearer(first, "ada")
        for listed in httpx.get(f"{first.url}/api/agent-tokens", headers=session).json():
            httpx.delete(f"{first.url}/api/agent-tokens/{listed['id']}", headers=session)
        for server in (first, second):
            answer = client.post(f"{server.url}/mcp", json=PING)
            assert answer.status_code == 401 and "revoked" in answer.json()["error"]["message"]


def test_a_lease_ended_unused_goes_back_so_the_whole_rate_is_usable_and_no_more(
    two_apps, monkeypatch
):
    """Every lease ends at once (as a slow agent's do, a second apart): what it did not serve goes
    back to the window with the next statement (server/agents/leases.py), so the token still has
    its whole rate across the processes, and not one request more."""
    first, second = two_apps
    monkeypatch.setattr(leases, "LEASE_SECONDS", 0.0)
    with pinging(agent_token(first)) as client:
        spend_the_rate(client, two_apps, lambda n: n // 3 % 2)
        for server in (first, second):
            assert client.post(f"{server.url}/mcp", json=PING).status_code == 429


def test_a_busy_token_is_counted_a_lease_at_a_time_and_the_window_holds_what_it_used(two_apps):
    """A token's requests on one process reach the database a lease at a time (one write for
    many requests); its window counts what they used, with at most one lease ahead."""
    first, _ = two_apps
    tokens = first.app.state.agents.tokens
    written = []
    statement = tokens.database.statement

    def counting(sql, params=()):
        if sql is CHECK_AND_COUNT:
            written.append(params["take"])
        return statement(sql, params)

    tokens.database.statement = counting
    secret = agent_token(first)
    with pinging(secret) as client:
        for _ in range(100):  # a ping outside a session is refused (400), after it is counted
            assert client.post(f"{first.url}/mcp", json=PING).status_code not in (401, 429)
    assert len(written) <= 12, written
    [row] = statement(
        "SELECT window_count FROM agent_tokens WHERE token_hash = ?", (_digest(secret),)
    )
    assert 100 <= row["window_count"] <= 100 + leases.MAX_LEASE
