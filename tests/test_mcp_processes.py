"""Two server processes' apps on one PostgreSQL (each on its own loopback port, in this process):
a page's stream held by one, the agent's MCP requests and the page's answers reaching the other.
The directory of pages is the database; calls, answers and "the page went" cross by LISTEN/NOTIFY
(reactor/server/page_bus.py)."""

from __future__ import annotations

import asyncio
import json
import threading
import time

import httpx
import httpx2
import pytest
from conftest import bearer, start_server, stop_server
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from reactor.server.agent_tokens import RATE_LIMIT

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
    """A page held on `home` by its event stream, answering each call on `answers_to` (another
    process), as a browser behind a load balancer may: `answer(call) -> envelope`."""

    def __init__(self, home: str, answers_to: str, session: dict[str, str], answer) -> None:
        self.home, self.answers_to, self.session, self.answer = home, answers_to, session, answer
        self.page_id: str | None = None
        self.named = threading.Event()
        self.calls: list[dict] = []
        self.client = httpx.Client(headers=session, timeout=30)
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()
        assert self.named.wait(10), "the page got no hello"

    def run(self) -> None:
        try:
            with self.client.stream("GET", f"{self.home}/api/agent-pages/stream") as events:
                name = None
                for line in events.iter_lines():
                    if line.startswith("event: "):
                        name = line[7:]
                    elif line.startswith("data: "):
                        self.heard(name, json.loads(line[6:]))
        except httpx.HTTPError:
            pass  # closed by the test

    def heard(self, name, data) -> None:
        if name == "hello":
            self.page_id = data["page"]
            self.post({"type": "tools", "tools": [TOOL]})
            self.named.set()
        elif name == "call":
            self.calls.append(data)
            envelope = self.answer(data)
            if envelope is not None:
                self.post({"type": "answer", "call": data["call"], "envelope": envelope})

    def post(self, message) -> None:
        answer = self.client.post(f"{self.answers_to}/api/agent-pages/{self.page_id}", json=message)
        assert answer.status_code == 200, answer.text

    def close(self) -> None:
        self.client.close()


def agent_token(server, username="ada") -> str:
    answer = httpx.post(f"{server.url}/api/agent-tokens", json={"name": "agent"}, headers=bearer(server, username))
    return answer.json()["token"]


async def with_session(url: str, token: str, work):
    async with httpx2.AsyncClient(headers={"authorization": f"Bearer {token}"}, timeout=30) as http:
        async with streamable_http_client(f"{url}/mcp", http_client=http) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                return await work(session)


def test_an_agent_on_one_process_calls_a_page_held_by_another_and_the_answer_crosses_back(two_apps):
    first, second = two_apps
    # The page answers its own process, as a browser does: the answer crosses back to the first.
    page = ScriptedPage(second.url, second.url, bearer(second, "ada"), lambda call: {"ok": True, "result": {"notes": 3}})
    try:

        async def work(session):
            listed = await session.list_tools()
            return listed, await session.call_tool("notes_count", {}), await session.call_tool("reactor_pages", {})

        listed, called, pages = asyncio.run(with_session(first.url, agent_token(first), work))
    finally:
        page.close()
    assert [t.name for t in listed.tools] == ["notes_count", "reactor_pages", "reactor_call"]
    assert called.is_error is False and called.structured_content == {"notes": 3}
    assert [p["page"] for p in pages.structured_content["pages"]] == [page.page_id]
    assert page.calls[0]["tool"] == "notes_count" and page.calls[0]["call"].startswith(
        first.app.state.agents.relay.process + "."
    ), "the call is named by the process that waits for it"


def test_a_page_that_goes_on_its_process_fails_the_call_waiting_on_the_other_at_once(two_apps):
    first, second = two_apps
    called = threading.Event()
    page = ScriptedPage(second.url, first.url, bearer(second, "ada"), lambda call: called.set())  # never answers

    async def work(session):
        waiting = asyncio.ensure_future(session.call_tool("notes_count", {}))
        await asyncio.get_running_loop().run_in_executor(None, called.wait, 10)
        went = time.monotonic()
        next(iter(second.app.state.agents.relay.pages.values())).end()  # the page's stream ends on its process
        result = await waiting
        return result, time.monotonic() - went

    try:
        result, took = asyncio.run(with_session(first.url, agent_token(first), work))
    finally:
        page.close()
    assert result.is_error and "page closed" in result.content[0].text
    assert took < 1.0


def test_a_large_call_crosses_by_the_message_table(two_apps):
    first, second = two_apps
    page = ScriptedPage(second.url, second.url, bearer(second, "ada"), lambda call: {"ok": True, "result": call["arguments"]})
    text = "x" * 20_000  # over NOTIFY's 8,000 bytes, both ways
    try:
        result = asyncio.run(
            with_session(first.url, agent_token(first), lambda session: session.call_tool("notes_count", {"text": text}))
        )
    finally:
        page.close()
    assert result.structured_content == {"text": text}


def test_an_answer_posted_to_the_waiting_process_itself_is_taken_there(two_apps):
    first, second = two_apps  # a load balancer may send the page's POST to any process
    page = ScriptedPage(second.url, first.url, bearer(second, "ada"), lambda call: {"ok": True, "result": "here"})
    try:
        result = asyncio.run(with_session(first.url, agent_token(first), lambda session: session.call_tool("notes_count", {})))
    finally:
        page.close()
    assert result.structured_content == {"result": "here"}


def test_bobs_agent_on_either_process_never_sees_adas_page(two_apps):
    first, second = two_apps
    page = ScriptedPage(second.url, second.url, bearer(second, "ada"), lambda call: {"ok": True, "result": 1})
    try:
        for server in (first, second):
            listed = asyncio.run(with_session(server.url, agent_token(server, "bob"), lambda session: session.list_tools()))
            assert [t.name for t in listed.tools] == ["reactor_pages", "reactor_call"]
    finally:
        page.close()
    assert page.calls == []


def test_a_tokens_rate_holds_across_processes_and_revoking_it_stops_it_on_both(two_apps):
    first, second = two_apps
    token = agent_token(first)
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    headers = {"authorization": f"Bearer {token}", "accept": "application/json, text/event-stream"}
    with httpx.Client(headers=headers, timeout=30) as client:
        # Half the token's rate on each process: the whole rate used, though neither saw it all.
        statuses = [client.post(f"{(first, second)[n % 2].url}/mcp", json=ping).status_code for n in range(RATE_LIMIT)]
        assert 429 not in statuses
        for server in (first, second):
            refused = client.post(f"{server.url}/mcp", json=ping)
            assert refused.status_code == 429, refused.text
            assert 1 <= int(refused.headers["retry-after"]) <= 60
            assert "try again in" in refused.json()["error"]
        other = agent_token(second)
        assert client.post(f"{second.url}/mcp", json=ping, headers={"authorization": f"Bearer {other}"}).status_code != 429
        session = bearer(first, "ada")
        for listed in httpx.get(f"{first.url}/api/agent-tokens", headers=session).json():
            httpx.delete(f"{first.url}/api/agent-tokens/{listed['id']}", headers=session)
        for server in (first, second):
            answer = client.post(f"{server.url}/mcp", json=ping)
            assert answer.status_code == 401 and "revoked" in answer.json()["error"]
