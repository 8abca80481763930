"""What an agent token may hold open, and what revoking it ends: its MCP sessions' event streams
and the calls they wait on, at once, on every server process (server/agents/mcp.py, transport.py);
how many sessions one token and one person may open, so that one person's flood of sessions never
refuses another person."""

from __future__ import annotations

import json
import threading
import time

import httpx
from conftest import bearer, open_2025_session, start_server, stop_server

from reactor.server.agents.transport import SESSIONS_PER_PERSON, SESSIONS_PER_TOKEN
from test_mcp_processes import ScriptedPage, agent_token, two_apps  # noqa: F401

NEVER = lambda call: None  # noqa: E731 -- the person never decides


class Ended:
    """A request made in a thread of its own; `at` is when its answer (or its stream) ended,
    `answer` what it answered."""

    def __init__(self, work) -> None:
        self.at = 0.0
        self.answer: httpx.Response | None = None
        self.done = threading.Event()
        self.thread = threading.Thread(target=self.run, args=(work,), daemon=True)
        self.thread.start()

    def run(self, work) -> None:
        try:
            self.answer = work()
        except httpx.HTTPError:
            pass  # a connection the server closed: ended all the same
        finally:
            self.at = time.monotonic()
            self.done.set()


def listening(url: str, headers: dict[str, str]) -> Ended:
    """The session's GET stream, for the server's notices, held open in a thread of its own from
    the moment the server answered it."""
    opened = threading.Event()

    def listen() -> None:
        with httpx.stream("GET", f"{url}/mcp", headers=headers, timeout=60) as stream:
            opened.set()
            for _ in stream.iter_lines():
                pass

    stream = Ended(listen)
    assert opened.wait(10), "the server answered the GET stream"
    return stream


def test_revoking_a_token_ends_its_streams_and_calls_on_every_process(two_apps):  # noqa: F811
    first, second = two_apps
    page = ScriptedPage(second.url, bearer(second, "ada"), NEVER)
    token_id_and_secret = httpx.post(
        f"{first.url}/api/agent-tokens", json={"name": "to revoke"}, headers=bearer(first, "ada")
    ).json()
    headers = open_2025_session(first.url, token_id_and_secret["token"])
    call = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "notes_count", "arguments": {}},
    }
    modern = {
        "authorization": headers["authorization"],
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": "tools/call",
        "mcp-name": "notes_count",
    }
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    modern_call = {**call, "id": 3, "params": {**call["params"], "_meta": meta}}
    stream = listening(first.url, headers)
    waiting = Ended(lambda: httpx.post(f"{first.url}/mcp", json=call, headers=headers, timeout=60))
    sessionless = Ended(
        lambda: httpx.post(f"{first.url}/mcp", json=modern_call, headers=modern, timeout=60)
    )
    deadline = time.monotonic() + 10
    while len(page.calls) < 2:
        assert time.monotonic() < deadline, "both calls reached the page"
        threading.Event().wait(0.05)
    revoked = time.monotonic()
    # revoked through the other process: what the token opened on the first ends too
    answer = httpx.delete(
        f"{second.url}/api/agent-tokens/{token_id_and_secret['id']}", headers=bearer(second, "ada")
    )
    assert answer.status_code == 200
    assert stream.done.wait(5) and waiting.done.wait(5) and sessionless.done.wait(5)
    assert max(e.at for e in (stream, waiting, sessionless)) - revoked < 2, "ended at once"
    # each said so in JSON (never a 500): the token is no more, or the session it opened ended
    for ended in (waiting, sessionless):
        assert ended.answer is not None and ended.answer.status_code in (401, 404)
        said = ended.answer.json()["error"]["message"]  # a JSON-RPC error, as MCP's clients read
        assert "unknown or revoked" in said or "session ended" in said
    cancels = {page.said.get(timeout=5)["call"] for _ in range(2)}
    assert cancels == {c["call"] for c in page.calls}, "both questions withdrawn"
    later = httpx.post(f"{first.url}/mcp", json=call, headers=headers)
    assert later.status_code == 401


def test_one_person_cannot_open_sessions_past_the_limits_and_others_still_can(
    tmp_path, monkeypatch
):
    from reactor.server.agents import tokens

    monkeypatch.setattr(tokens, "RATE_LIMIT", 1_000_000)  # the sessions' limits, not the rate's
    live = start_server(tmp_path / "data", seed_demo=True)
    try:
        eves = [agent_token(live, "eve") for _ in range(SESSIONS_PER_PERSON // SESSIONS_PER_TOKEN)]
        for token in eves:
            for _ in range(SESSIONS_PER_TOKEN):
                open_2025_session(live.url, token)
            refused = initialize(live.url, token)
            assert refused.status_code == 429 and refused.headers["retry-after"]
            assert (
                f"This agent token has {SESSIONS_PER_TOKEN} MCP sessions open"
                in refused.json()["error"]
            )
        person = initialize(live.url, agent_token(live, "eve"))  # a new token of the same person
        assert person.status_code == 429
        assert f"Your agents have {SESSIONS_PER_PERSON} MCP sessions open" in person.json()["error"]
        ada = initialize(live.url, agent_token(live, "ada"))
        assert ada.status_code == 200 and ada.headers["mcp-session-id"]
    finally:
        stop_server(live)


def initialize(url: str, token: str) -> httpx.Response:
    hello = {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "flood", "version": "1"},
    }
    return httpx.post(
        f"{url}/mcp",
        content=json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello}),
        headers={
            "authorization": f"Bearer {token}",
            "accept": "application/json, text/event-stream",
            "content-type": "application/json",
        },
    )
