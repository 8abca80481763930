"""Two `reactor serve` processes on one PostgreSQL, and what an agent and a page read when one of
them dies (SIGKILL) or is stopped (SIGTERM): the calls waiting on it end within seconds with a
sentence, its pages leave `reactor_pages`, and the questions nobody waits for are withdrawn from
the pages (server/agents/relay.py, bus.py; server/serving.py)."""

from __future__ import annotations

import asyncio
import os
import signal
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import httpx2
import psycopg
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from reactor.server.agents.bus import APPLICATION, SETTLE_SECONDS
from reactor.server.agents.relay import CLAIM_SECONDS, STOPPING
from test_many_processes import serve
from test_mcp_processes import ScriptedPage

NEVER = lambda call: None  # noqa: E731 -- a page whose person never decides


class Served:
    """One `reactor serve` process on the shared database."""

    def __init__(self, tmp_path, database: str, name: str) -> None:
        self.process, self.url = serve(tmp_path, database, name)
        self.started = time.monotonic()

    def settled(self) -> None:
        """Wait until this process's watcher may declare others gone (bus.SETTLE_SECONDS after
        its connection): the seconds are then what a process's death costs in steady state."""
        until(lambda: time.monotonic() - self.started >= SETTLE_SECONDS, SETTLE_SECONDS + 1)

    def session(self, username: str = "ada") -> dict[str, str]:
        answer = httpx.post(
            f"{self.url}/auth/sign-in",
            json={"username": username, "password": f"{username}-demo"},
        )
        return {"authorization": f"Bearer {answer.json()['token']}"}

    def agent_token(self, username: str = "ada") -> str:
        answer = httpx.post(
            f"{self.url}/api/agent-tokens", json={"name": "agent"}, headers=self.session(username)
        )
        return answer.json()["token"]

    def end(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(10)
        self.process.stdout.close()


@pytest.fixture
def two(tmp_path, postgres_cluster) -> Iterator[tuple[Served, Served]]:
    database = postgres_cluster.database()
    first, second = Served(tmp_path, database, "a"), Served(tmp_path, database, "b")
    yield first, second
    first.end()
    second.end()


class AgentCall:
    """One tools/call by an agent's MCP session, made in a thread of its own; `result` and
    `ended` (time.monotonic()) once it is answered."""

    def __init__(self, url: str, token: str, tool: str, arguments: dict[str, Any]) -> None:
        self.result: Any = None
        self.error: BaseException | None = None
        self.ended = 0.0
        self.done = threading.Event()
        self.thread = threading.Thread(
            target=lambda: asyncio.run(self.run(url, token, tool, arguments)), daemon=True
        )
        self.thread.start()

    async def run(self, url: str, token: str, tool: str, arguments: dict[str, Any]) -> None:
        headers = {"authorization": f"Bearer {token}"}
        try:
            async with httpx2.AsyncClient(headers=headers, timeout=60) as http:
                async with streamable_http_client(f"{url}/mcp", http_client=http) as (read, write):
                    async with ClientSession(read, write) as session:
                        await session.initialize()
                        self.result = await session.call_tool(tool, arguments)
        except BaseException as error:  # the test reads it
            self.error = error
        finally:
            self.ended = time.monotonic()
            self.done.set()

    def text(self) -> str:
        assert self.done.wait(30), "the call was answered"
        assert self.error is None, self.error
        return self.result.content[0].text


def pages_listed(url: str, token: str) -> list[str]:
    async def listed() -> list[str]:
        headers = {"authorization": f"Bearer {token}"}
        async with httpx2.AsyncClient(headers=headers, timeout=30) as http:
            async with streamable_http_client(f"{url}/mcp", http_client=http) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    pages = await session.call_tool("reactor_pages", {})
        return [p["page"] for p in pages.structured_content["pages"]]

    return asyncio.run(listed())


def until(condition, seconds: float) -> float:
    """Wait until `condition()` holds (at most `seconds`); how long it took."""
    started = time.monotonic()
    while not condition():
        assert time.monotonic() - started < seconds, f"not within {seconds} s"
        threading.Event().wait(0.1)
    return time.monotonic() - started


def test_a_killed_process_ends_the_calls_waiting_on_its_pages_and_they_leave_the_list(two):
    first, second = two
    token = first.agent_token()
    page = ScriptedPage(second.url, second.session(), NEVER)  # its link held by the second
    call = AgentCall(first.url, token, "notes_count", {})
    until(lambda: page.calls, 10)
    first.settled()
    killed = time.monotonic()
    second.process.send_signal(signal.SIGKILL)
    text = call.text()
    assert call.ended - killed < 5, "the waiting call ended within 5 s"
    assert "link was lost" in text and "notes_count" in text
    assert call.result.is_error
    waited = until(lambda: pages_listed(first.url, token) == [], 5)
    assert waited < 5, "the dead process's page left reactor_pages within 5 s"


def test_a_page_withdraws_the_call_of_an_agent_whose_process_was_killed(two):
    first, second = two
    page = ScriptedPage(second.url, second.session(), NEVER)
    AgentCall(first.url, first.agent_token(), "notes_count", {})
    until(lambda: page.calls, 10)
    second.settled()
    first.process.send_signal(signal.SIGKILL)
    cancel = page.said.get(timeout=5)
    assert cancel == {"type": "cancel", "call": page.calls[0]["call"]}


def test_a_pages_claim_reaches_the_process_whose_agent_waits_and_the_call_then_runs(two):
    first, second = two
    page = ScriptedPage(second.url, second.session(), NEVER)  # its link held by the second
    call = AgentCall(first.url, first.agent_token(), "notes_count", {})  # waited for on the first
    until(lambda: page.calls, 10)
    asked = page.calls[0]["call"]
    page.send({"type": "claim", "call": asked})
    assert page.said.get(timeout=5) == {"type": "claimed", "call": asked, "ok": True}
    page.send({"type": "answer", "call": asked, "envelope": {"ok": True, "result": {"notes": 3}}})
    assert call.text() == '{"notes": 3}'
    page.send({"type": "claim", "call": asked})  # answered: nobody waits for it any more
    assert page.said.get(timeout=5) == {"type": "claimed", "call": asked, "ok": False}


def test_a_claim_for_a_call_whose_process_was_killed_is_refused_at_once(two):
    first, second = two
    page = ScriptedPage(second.url, second.session(), NEVER)
    AgentCall(first.url, first.agent_token(), "notes_count", {})
    until(lambda: page.calls, 10)
    asked = page.calls[0]["call"]
    first.process.send_signal(signal.SIGKILL)
    database = second.process.args[second.process.args.index("--database") + 1]
    listening = APPLICATION + asked.partition(".")[0]  # the first's LISTEN connection

    def ended() -> bool:
        with psycopg.connect(database, autocommit=True) as db:
            found = "SELECT 1 FROM pg_stat_activity WHERE application_name = %s"
            return db.execute(found, (listening,)).fetchone() is None

    until(ended, 5)
    # The person clicks Allow before the second's watcher has withdrawn the call (GONE_SECONDS).
    sent = time.monotonic()
    page.send({"type": "claim", "call": asked})
    assert page.said.get(timeout=5) == {"type": "claimed", "call": asked, "ok": False}
    assert time.monotonic() - sent < 1, "refused in one round trip, not at a deadline"


def test_a_claim_the_agents_process_does_not_answer_is_refused_after_claim_seconds(two):
    first, second = two
    page = ScriptedPage(second.url, second.session(), NEVER)
    AgentCall(first.url, first.agent_token(), "notes_count", {})
    until(lambda: page.calls, 10)
    asked = page.calls[0]["call"]
    first.process.send_signal(signal.SIGSTOP)  # hung: its connections stay open, nothing answers
    try:
        sent = time.monotonic()
        page.send({"type": "claim", "call": asked})
        assert page.said.get(timeout=CLAIM_SECONDS + 2) == {
            "type": "claimed",
            "call": asked,
            "ok": False,
        }
        assert CLAIM_SECONDS <= time.monotonic() - sent < CLAIM_SECONDS + 1
    finally:
        first.process.send_signal(signal.SIGCONT)


def test_a_linked_page_stays_listed_whatever_the_traffic_until_its_link_closes(two):
    first, second = two
    token = first.agent_token()
    page = ScriptedPage(second.url, second.session(), lambda call: {"ok": True, "result": 1})

    database = second.process.args[second.process.args.index("--database") + 1]
    with psycopg.connect(database, autocommit=True) as db:  # as if linked long ago, never quiet
        db.execute("UPDATE agent_pages SET seen_at = 0, active_at = 0")
    assert pages_listed(first.url, token) == [page.page_id]
    page.close()
    until(lambda: pages_listed(first.url, token) == [], 5)


def test_a_stopped_process_tells_its_agents_and_pages_and_exits(two):
    first, second = two
    token = first.agent_token()
    here = ScriptedPage(first.url, first.session(), NEVER)  # linked to the process that stops
    there = ScriptedPage(second.url, second.session(), NEVER)
    calls = [
        AgentCall(first.url, token, "reactor_call", {"page": p.page_id, "tool": "notes_count"})
        for p in (here, there)
    ]
    until(lambda: here.calls and there.calls, 10)
    stopped = time.monotonic()
    os.kill(first.process.pid, signal.SIGTERM)
    for call in calls:
        assert call.text() == STOPPING.format(tool="notes_count") + " (code: unavailable)"
        assert call.ended - stopped < 2, "the agent was told at once"
    assert there.said.get(timeout=5) == {"type": "cancel", "call": there.calls[0]["call"]}
    here.thread.join(5)
    assert here.socket.close_code == 1012, "the page was told to link again"
    # uvicorn re-raises the signal it caught once its shutdown is done: ended by SIGTERM, in time
    assert first.process.wait(10) == -signal.SIGTERM
    assert time.monotonic() - stopped < 5
    assert until(lambda: pages_listed(second.url, second.agent_token()) == [there.page_id], 5) < 5
