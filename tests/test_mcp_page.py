"""A desktop agent's MCP client (the official SDK's) against a real loopback server, relayed to a
real signed-in Chromium page whose person switched on *Let my agents use this page*: the page's
tools listed and called, writes decided by the person in the page, a page closed mid-call, a
revoked token, another person's token."""

from __future__ import annotations

import asyncio
import http.client
import json
import os
import re
import subprocess
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import httpx2
import mcp.types as types
import pytest
from conftest import bearer, open_2025_session, start_server, stop_server
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from playwright.sync_api import expect

from reactor.testing import ReactorPage
from test_mcp_processes import agent_token

pytestmark = pytest.mark.browser
ROOT = Path(__file__).resolve().parent.parent
MCP1_PYTHON = ROOT / ".venv-mcp1" / "bin" / "python"  # the SDK's 1.x line, made by ./dev test
NPM_MCP = ROOT / ".npm-mcp"  # mcp-remote, installed by ./dev test


class Agent:
    """An MCP client session on a loop of its own thread (Playwright's sync API holds this one):
    `do(fn)` runs `fn(session)` there and returns a concurrent Future."""

    def __init__(self, url: str, token: str, *, modern: bool = False) -> None:
        self.modern = modern  # 2026-07-28: server/discover, no session
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.heard_list_change = threading.Event()
        self.session: ClientSession | None = None
        self.stop = asyncio.Event()
        self.opening: Future[Any] = Future()
        self.served = asyncio.run_coroutine_threadsafe(self.serve(url, token), self.loop)
        self.initialized = self.opening.result(30)

    async def serve(self, url: str, token: str) -> None:
        async def heard(message: Any) -> None:
            if isinstance(message, types.ToolListChangedNotification):
                self.heard_list_change.set()

        try:
            async with httpx2.AsyncClient(
                headers={"authorization": f"Bearer {token}"}, timeout=30
            ) as http:
                async with streamable_http_client(f"{url}/mcp", http_client=http) as (read, write):
                    async with ClientSession(read, write, message_handler=heard) as session:
                        initialized = await (
                            session.discover() if self.modern else session.initialize()
                        )
                        self.session = session
                        self.opening.set_result(initialized)
                        await self.stop.wait()
        except BaseException as error:
            if not self.opening.done():
                self.opening.set_exception(error)
            raise

    def do(self, fn: Any) -> Future[Any]:
        assert self.session is not None
        return asyncio.run_coroutine_threadsafe(fn(self.session), self.loop)

    def list_names(self) -> list[str]:
        return [t.name for t in self.do(lambda s: s.list_tools()).result(30).tools]

    def call(
        self, name: str, arguments: dict[str, Any], progress: list[Any] | None = None
    ) -> Future[types.CallToolResult]:
        async def heard(value: float, total: float | None, message: str | None) -> None:
            if progress is not None:
                progress.append((value, message))

        return self.do(lambda s: s.call_tool(name, arguments, progress_callback=heard))

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.stop.set)
        try:
            self.served.result(10)
        except Exception:
            pass  # a revoked token's session ends refused; nothing to close then
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.loop.close()


@pytest.fixture
def agents():
    opened: list[Agent] = []

    def open_agent(url: str, token: str, **options: Any) -> Agent:
        agent = Agent(url, token, **options)
        opened.append(agent)
        return agent

    yield open_agent
    for agent in opened:
        agent.close()


def connect_page(reactor: ReactorPage, username: str = "ada") -> str:
    """Sign in on the open page and switch on the agents switch: the page's id once the server
    has its tools."""
    page = reactor.sign_in(username).page
    page.get_by_test_id("agents-switch").check()
    status = page.get_by_test_id("agents-status")
    status.get_by_text("Your agents can use").wait_for()
    return status.get_attribute("data-page")


def make_token_in_panel(page, name="Claude Code") -> str:
    """Make a token in the Agents panel; check the lines shown for each agent, exactly as each
    one's documentation spells its configuration."""
    page.fill("#agents input[name=token-name]", name)
    page.get_by_role("button", name="Make a token").click()
    secret = page.get_by_test_id("agent-token-secret").inner_text()
    url, bearer = f"{page.url}mcp", f"Bearer {secret}"
    shown = lambda testid: page.get_by_test_id(testid).inner_text()  # noqa: E731
    assert (
        shown("agent-claude-code")
        == f'claude mcp add --transport http reactor {url} --header "Authorization: {bearer}"'
    )
    # Claude Desktop takes no remote `url` in its file: the mcp-remote bridge, the header from env.
    assert json.loads(shown("agent-desktop-json")) == {
        "mcpServers": {
            "reactor": {
                "command": "npx",
                "args": ["-y", "mcp-remote", url, "--header", "Authorization:${AUTH_HEADER}"],
                "env": {"AUTH_HEADER": bearer},
            }
        }
    }
    assert json.loads(shown("agent-cursor-json")) == {
        "mcpServers": {"reactor": {"url": url, "headers": {"Authorization": bearer}}}
    }
    assert json.loads(shown("agent-vscode-json")) == {
        "servers": {"reactor": {"type": "http", "url": url, "headers": {"Authorization": bearer}}}
    }
    for title in [
        "Claude Code: run in a terminal",
        "Claude Desktop: claude_desktop_config.json",
        "Cursor: ~/.cursor/mcp.json",
    ]:
        assert page.locator("#agents").get_by_text(title).is_visible(), title
    return secret


def titles_now(agent: Agent) -> list[str]:
    return [
        deck["title"]
        for deck in agent.call("decks_list_decks", {}).result(30).structured_content["decks"]
    ]


def test_an_agent_lists_and_calls_the_pages_tools_and_the_person_decides_the_writes(
    reactor_page,
    agents,
):
    page, live = reactor_page.page, reactor_page.server
    page_id = connect_page(reactor_page)
    token = make_token_in_panel(page)
    agent = agents(live.url, token)
    assert agent.initialized.capabilities.tools.list_changed is True
    names = agent.list_names()
    assert {"decks_list_decks", "decks_create_deck", "reactor_pages", "reactor_call"} <= set(names)

    listed = agent.call("decks_list_decks", {}).result(30)
    assert listed.is_error is False
    titles = [deck["title"] for deck in listed.structured_content["decks"]]
    assert "reactor-in-5-minutes" in [deck["id"] for deck in listed.structured_content["decks"]]
    assert json.loads(listed.content[0].text) == listed.structured_content, "the same JSON as text"

    # The person sees what an agent called, in the palette's words.
    expect(page.get_by_test_id("agents-last-call")).to_have_text(
        re.compile(r"^Claude Code asked for “Decks: List Decks \(data\)” at ")
    )
    # A burst of calls is told once a second: the line names the last of them.
    for _ in range(5):
        assert agent.call("decks_list_decks", {}).result(30).is_error is False
    read = agent.call("decks_get_deck", {"id": "reactor-in-5-minutes"}).result(30)
    assert read.is_error is False
    expect(page.get_by_test_id("agents-last-call")).to_have_text(
        re.compile(r"^Claude Code asked for “Decks: Get Deck \(data\)” at ")
    )

    pages = agent.call("reactor_pages", {}).result(30).structured_content["pages"]
    assert [p["page"] for p in pages] == [page_id]

    # A write waits for the person: allowed in the page, it runs.
    made = agent.call("decks_create_deck", {"title": "From my agent"})
    approval = page.get_by_test_id("approval")
    approval.wait_for()
    assert not made.done(), "the call waits for the person"
    approval.get_by_role("button", name="Allow", exact=True).click()
    result = made.result(30)
    assert result.is_error is False, result.content
    assert result.structured_content["title"] == "From my agent"
    assert sorted(titles_now(agent)) == sorted([*titles, "From my agent"])

    # Denied in the page (through reactor_call, naming the page): a tool error with its code,
    # nothing made.
    denied = agent.call(
        "reactor_call",
        {"page": page_id, "tool": "decks_create_deck", "arguments": {"title": "Never"}},
    )
    page.locator("[data-testid=approval]:not([data-decision])").get_by_role(
        "button", name="Deny"
    ).click()
    refused = denied.result(30)
    assert refused.is_error is True
    assert refused.structured_content["error"]["code"] == "denied"
    assert "(code: denied)" in refused.content[0].text
    assert "Never" not in titles_now(agent)


# The page's main thread held by its own script for 4 s (a long task), started in a timer so that
# the test goes on meanwhile: it says so on a BroadcastChannel first (the reactor worker hears it
# while the main thread is held), and `held` says from when to when (the wall clock, ms).
HOLD_MAIN_THREAD = """() => {
  setTimeout(() => {
    const from = Date.now();
    new BroadcastChannel("held").postMessage(from);
    while (Date.now() < from + 4000);
    window.held = [from, Date.now()];
  }, 0);
}"""
HEAR_THE_HOLD = """() => {
  self.holdHeard = new Promise((resolve) => {
    new BroadcastChannel("held").onmessage = ({ data }) => resolve(data);
  });
}"""


def test_an_agents_call_is_answered_while_the_pages_main_thread_is_busy(reactor_page, agents):
    page, live = reactor_page.page, reactor_page.server
    connect_page(reactor_page)
    agent = agents(live.url, make_token_in_panel(page))
    assert agent.call("decks_list_decks", {}).result(30).is_error is False
    worker = next(w for w in page.workers if w.evaluate("self.name") == "reactor")
    worker.evaluate(HEAR_THE_HOLD)
    page.evaluate(HOLD_MAIN_THREAD)
    worker.evaluate("self.holdHeard")  # the main thread is held from now on
    listed = agent.call("decks_list_decks", {}).result(30)
    answered = time.time() * 1000
    assert listed.is_error is False and listed.structured_content["decks"]
    held_from, held_to = page.evaluate("window.held")  # once the page is free again
    assert answered < held_to, (
        f"answered {answered - held_from:.0f} ms into a hold of {held_to - held_from:.0f} ms: "
        "the call waited for the page's main thread"
    )


def test_a_page_closed_mid_call_fails_the_call_within_a_second_and_the_list_changes(
    reactor_page,
    agents,
):
    page, live = reactor_page.page, reactor_page.server
    connect_page(reactor_page)
    agent = agents(live.url, make_token_in_panel(page))
    waiting = agent.call("decks_create_deck", {"title": "Left open"})
    page.get_by_test_id("approval").wait_for()
    closed = time.monotonic()
    page.close()
    result = waiting.result(10)
    assert time.monotonic() - closed < 1.0
    assert result.is_error and "page closed" in result.content[0].text
    assert agent.heard_list_change.wait(10), "tools/list_changed when the page went"
    assert agent.list_names() == ["reactor_pages", "reactor_call"]
    after = agent.call("decks_list_decks", {}).result(30)
    assert after.is_error and "switch on *Let my agents use this page*" in after.content[0].text


def test_the_person_not_answering_ends_the_call_with_progress_meanwhile(reactor_page, agents):
    page, live = reactor_page.page, reactor_page.server
    relay = live.app.state.agents.relay
    relay.answer_limit, relay.progress_seconds = 2.5, 0.5
    connect_page(reactor_page)
    agent = agents(live.url, make_token_in_panel(page))
    progress: list[Any] = []
    result = agent.call("decks_create_deck", {"title": "Unanswered"}, progress).result(30)
    assert result.is_error and "did not answer" in result.content[0].text
    assert len(progress) >= 3 and all("Waiting" in (message or "") for _, message in progress)


def test_bobs_token_never_reaches_adas_page_and_a_revoked_token_stops_at_the_next_request(
    reactor_page,
    agents,
):
    page, live = reactor_page.page, reactor_page.server
    ada_page = connect_page(reactor_page, "ada")
    ada = agents(live.url, make_token_in_panel(page, "ada's agent"))
    bob_secret = httpx2.post(
        f"{live.url}/api/agent-tokens", json={"name": "bob's"}, headers=bearer(live, "bob")
    ).json()["token"]
    bob = agents(live.url, bob_secret)
    assert bob.list_names() == ["reactor_pages", "reactor_call"]
    assert bob.call("reactor_pages", {}).result(30).structured_content["pages"] == []
    assert bob.call("decks_list_decks", {}).result(30).is_error
    other = bob.call(
        "reactor_call", {"page": ada_page, "tool": "decks_list_decks", "arguments": {}}
    ).result(30)
    assert other.is_error and other.structured_content["error"]["code"] == "not_found"

    assert ada.call("decks_list_decks", {}).result(30).is_error is False
    listed = page.locator("#agents [data-token-id]")
    listed.get_by_role("button", name="Revoke").click()  # asks first; keeping it changes nothing
    expect(listed.get_by_role("alert")).to_contain_text("Revoke “ada's agent”?")
    listed.get_by_role("button", name="Keep it").click()
    assert ada.call("decks_list_decks", {}).result(30).is_error is False
    listed.get_by_role("button", name="Revoke").click()
    listed.get_by_role("button", name="Yes, revoke it").click()
    listed.wait_for(state="detached")
    # the server answered 401: tests/test_agent_tokens.py reads its sentence
    with pytest.raises(MCPError):
        ada.call("decks_list_decks", {}).result(30)


def test_the_switch_is_remembered_and_a_dropped_connection_is_made_again(reactor_page):
    page, live = reactor_page.page, reactor_page.server
    first = connect_page(reactor_page)
    page.reload()
    status = page.get_by_test_id("agents-status")
    page.locator(f"[data-testid=agents-status][data-page]:not([data-page='{first}'])").wait_for()
    assert page.get_by_test_id("agents-switch").is_checked()
    again = status.get_attribute("data-page")
    relay = live.app.state.agents.relay
    assert [p.id for p in relay.pages_of("ada")] == [again], (
        "the reloaded page's connection replaced the first"
    )
    relay.pages[again].end()  # the server ends the stream, as a lost connection would
    page.locator(f"[data-testid=agents-status][data-page]:not([data-page='{again}'])").wait_for()
    assert [p.id for p in relay.pages_of("ada")] == [status.get_attribute("data-page")]


class Proxied:
    """A server as the page reaches it through a proxy (tests/plain_proxy.py)."""

    def __init__(self, url: str) -> None:
        self.url = url


NO_WEBSOCKET = (
    "This page cannot open its link for your agents (a WebSocket). The server says: "
    "/api/agent-pages/link takes a WebSocket only, and this request came without "
    "`Upgrade: websocket`: a proxy in front of reactor must pass WebSockets on (nginx: "
    "`proxy_http_version 1.1;`, `proxy_set_header Upgrade $http_upgrade;` and "
    '`proxy_set_header Connection "upgrade";`).'
)


def test_behind_a_proxy_that_drops_the_upgrade_the_panel_names_its_settings_and_stops(
    new_reactor_page, reactor_server
):
    from plain_proxy import PlainProxy

    proxy = PlainProxy(reactor_server.url)
    try:
        reactor = new_reactor_page(Proxied(proxy.url))
        reactor.expect_console_error(r"WebSocket connection to .*/api/agent-pages/link.* failed")
        reactor.expect_console_error(r"status of 426")
        page = reactor.open().sign_in("ada").page
        page.get_by_test_id("agents-switch").check()
        status = page.get_by_test_id("agents-status")
        expect(status).to_have_text(NO_WEBSOCKET, timeout=30_000)
        link = [line for line in proxy.requests if " /api/agent-pages/link" in line]
        assert proxy.asked_upgrade == 3 and len(link) == 4, (
            "three sockets that never opened, then one plain request asking why; no more"
        )
        assert status.get_attribute("data-page") is None
        page.locator("#agents").get_by_role("button", name="Try again").click()
        expect(status).not_to_have_text(NO_WEBSOCKET)
        expect(status).to_have_text(NO_WEBSOCKET, timeout=30_000)
        assert proxy.asked_upgrade == 6, "tried again as asked, three times, then stopped"
    finally:
        proxy.close()


def test_an_agent_that_gives_up_stops_the_call_in_the_page(reactor_page, agents):
    page, live = reactor_page.page, reactor_page.server
    with page.expect_websocket() as link:
        connect_page(reactor_page)
    agent = agents(live.url, make_token_in_panel(page))
    answered = lambda payload: '"answer"' in payload  # noqa: E731
    with link.value.expect_event("framesent", answered, timeout=30_000) as answer:
        # The client's own timeout sends notifications/cancelled; the relay passes the cancel down.
        gave_up = agent.do(
            lambda s: s.call_tool(
                "decks_create_deck", {"title": "Abandoned"}, read_timeout_seconds=1.5
            )
        )
        page.get_by_test_id("approval").wait_for()
        with pytest.raises(MCPError):
            gave_up.result(30)
    envelope = json.loads(answer.value)["envelope"]
    assert envelope["ok"] is False and envelope["error"]["code"] == "aborted"
    expect(page.get_by_test_id("approval-choice")).to_have_text("No longer asked; it did not run.")
    assert "Abandoned" not in titles_now(agent)


def test_a_lost_link_withdraws_the_question_it_brought_and_nothing_runs_after(reactor_page, agents):
    page, live = reactor_page.page, reactor_page.server
    linked = connect_page(reactor_page)
    agent = agents(live.url, make_token_in_panel(page))
    asked = agent.call("decks_create_deck", {"title": "Orphaned"})
    page.get_by_test_id("approval").wait_for()
    # a desktop agent's call is asked in the words the chat's own calls are
    expect(page.get_by_test_id("approval-question")).to_have_text("Create the deck ‘Orphaned’?")
    live.app.state.agents.relay.pages[linked].end()  # the link drops, as when its process dies
    assert "closed before decks_create_deck answered" in asked.result(30).content[0].text
    expect(page.get_by_test_id("approval-choice")).to_have_text("No longer asked; it did not run.")
    expect(page.get_by_test_id("approval").get_by_role("button")).to_have_count(0)
    page.locator(f"[data-testid=agents-status][data-page]:not([data-page='{linked}'])").wait_for()
    assert "Orphaned" not in titles_now(agent)


def test_an_allow_clicked_after_the_agent_stopped_waiting_changes_nothing_and_says_so(
    reactor_page, agents
):
    page, live = reactor_page.page, reactor_page.server
    connect_page(reactor_page)
    agent = agents(live.url, make_token_in_panel(page))
    relay = live.app.state.agents.relay
    before = titles_now(agent)
    # The withdrawal is held back on its way to the page: the person's click comes first.
    held: list[tuple[str, dict[str, Any]]] = []
    deliver = relay.deliver

    def holding(page_id: str, message: dict[str, Any]) -> None:
        if message.get("type") == "cancel":
            held.append((page_id, message))
        else:
            deliver(page_id, message)

    relay.deliver, relay.progress_seconds = holding, 0.1
    late = agent.call("decks_create_deck", {"title": "Too late"})
    question = page.get_by_test_id("approval")
    question.wait_for()
    relay.answer_limit = 0  # the person took too long: the server ends the call at its next tick
    told = late.result(30)
    relay.answer_limit = 120
    assert told.is_error and "so decks_create_deck did not run" in told.content[0].text
    assert [message["type"] for _, message in held] == ["cancel"]

    question.get_by_role("button", name="Allow", exact=True).click()
    expect(question.get_by_test_id("approval-choice")).to_have_text(
        "The agent stopped waiting for this; nothing was changed."
    )
    expect(question.get_by_role("button")).to_have_count(0)
    del relay.deliver
    loop = live.app.state.agents.relay.pages[held[0][0]].loop
    loop.call_soon_threadsafe(relay.deliver, *held[0])  # the withdrawal comes, late
    assert titles_now(agent) == before, "nothing ran: the deck list is as it was"
    expect(question.get_by_test_id("approval-choice")).to_have_text(
        "The agent stopped waiting for this; nothing was changed."
    )

    # An agent that waits: its Allow is claimed, and the write runs.
    made = agent.call("decks_create_deck", {"title": "In time"})
    page.locator("[data-testid=approval]:not([data-decision])").get_by_role(
        "button", name="Allow", exact=True
    ).click()
    assert made.result(30).structured_content["title"] == "In time"
    assert sorted(titles_now(agent)) == sorted([*before, "In time"])


def test_reactor_pages_tells_two_pages_apart_by_what_they_show(
    reactor_page, new_reactor_page, agents
):
    live = reactor_page.server
    first = reactor_page.open("/#/decks/onboarding/4")
    first.page.get_by_text("Onboarding: your first week").first.wait_for()
    first_id = connect_page(first)
    second = new_reactor_page().open("/#/decks/reactor-in-5-minutes/2")
    second.page.get_by_text("Reactor in 5 minutes").first.wait_for()
    second_id = connect_page(second)
    agent = agents(live.url, agent_token(live))
    pages = agent.call("reactor_pages", {}).result(30).structured_content["pages"]
    shown = {p["page"]: (p["title"], p["route"], p["default"]) for p in pages}
    assert shown == {
        second_id: ("Reactor in 5 minutes – reactor", "#/decks/reactor-in-5-minutes/2", True),
        first_id: ("Onboarding: your first week – reactor", "#/decks/onboarding/4", False),
    }
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", p["lastUsed"]) for p in pages)
    first.execute("decks.nextSlide")  # the person moves on in the first page
    expect(first.page).to_have_url(re.compile("#/decks/onboarding/5$"))

    def routes() -> dict[str, str]:
        listed = agent.call("reactor_pages", {}).result(30).structured_content["pages"]
        return {p["page"]: p["route"] for p in listed}

    deadline = time.monotonic() + 10
    while routes()[first_id] != "#/decks/onboarding/5":
        assert time.monotonic() < deadline, "the agent reads where the page went"


def test_a_question_whose_agent_closed_its_request_is_withdrawn_within_a_second(reactor_page):
    page, live = reactor_page.page, reactor_page.server
    connect_page(reactor_page)
    headers = open_2025_session(live.url, make_token_in_panel(page))
    call = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "decks_delete_deck", "arguments": {"id": "onboarding"}},
    }
    address = urlsplit(live.url)
    request = http.client.HTTPConnection(address.hostname, address.port)
    request.request("POST", "/mcp", body=json.dumps(call), headers=headers)  # no progress token
    page.get_by_test_id("approval").wait_for()
    request.close()  # the client gives up: its connection closes, with no cancel sent
    expect(page.get_by_test_id("approval-choice")).to_have_text(
        "No longer asked; it did not run.", timeout=1000
    )
    assert httpx.get(f"{live.url}/api/decks/onboarding").status_code == 200


def test_a_question_whose_agent_was_killed_is_withdrawn_within_a_second(reactor_page):
    page, live = reactor_page.page, reactor_page.server
    assert MCP1_PYTHON.exists(), "run ./dev test once: it makes .venv-mcp1 with the SDK's 1.x line"
    connect_page(reactor_page)
    client = subprocess.Popen(
        [
            str(MCP1_PYTHON),
            str(ROOT / "tests" / "mcp1_client.py"),
            live.url,
            make_token_in_panel(page),
            "decks_delete_deck",
            json.dumps({"id": "onboarding"}),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    page.get_by_test_id("approval").wait_for()
    client.kill()
    client.wait(10)
    expect(page.get_by_test_id("approval-choice")).to_have_text(
        "No longer asked; it did not run.", timeout=1000
    )
    assert httpx.get(f"{live.url}/api/decks/onboarding").status_code == 200


def test_an_agent_on_the_2026_07_28_protocol_calls_the_page_too(reactor_page, agents):
    page, live = reactor_page.page, reactor_page.server
    connect_page(reactor_page)
    agent = agents(live.url, make_token_in_panel(page), modern=True)
    assert "2026-07-28" in agent.initialized.supported_versions
    assert "decks_list_decks" in agent.list_names()
    made = agent.call("decks_create_deck", {"title": "Modern"})
    page.get_by_test_id("approval").get_by_role("button", name="Allow", exact=True).click()
    assert made.result(30).structured_content["title"] == "Modern"


def test_connecting_needs_a_signed_in_person_and_signing_out_disconnects(reactor_page, agents):
    page, live = reactor_page.page, reactor_page.server
    refused = page.evaluate(
        "window.reactor.agents.connect().then(() => 'connected', (error) => error.message)"
    )
    assert refused == "Sign in to let your agents use this page."
    connect_page(reactor_page)
    agent = agents(live.url, make_token_in_panel(page))
    assert agent.call("decks_list_decks", {}).result(30).is_error is False
    last_call = page.get_by_test_id("agents-last-call")
    expect(last_call).to_contain_text("asked for")
    agent.heard_list_change.clear()
    page.locator("#session").get_by_role("button", name="Sign out").click()
    page.get_by_test_id("agents-status").get_by_text(
        "Sign in to let your agents use this page."
    ).wait_for()
    assert agent.heard_list_change.wait(10), "the page's tools went with its person"
    assert agent.list_names() == ["reactor_pages", "reactor_call"]
    # nothing of ada's stays on screen, and making a token says why it cannot
    expect(last_call).to_be_hidden()
    expect(page.get_by_test_id("agent-token-secret")).to_have_count(0)
    expect(page.locator("#agents [data-token-id]")).to_have_count(0)
    expect(page.locator("#agents").get_by_role("button", name="Make a token")).to_be_disabled()
    expect(page.get_by_test_id("agent-token-note")).to_have_text(
        "Sign in to make a token for an agent."
    )


# One page plugin of 250 tools with 9,000-character descriptions: a tool list of ~2.3 million
# characters, over what the server takes in one message from the page.
DEFINE_LARGE_TOOLS = """() => {
  const ids = Array.from({ length: 250 }, (_, t) => `large.t${t}`);
  return window.reactor.definePlugin({
    name: "large",
    commands: ids.map((id) => ({ id, execute: () => null })),
    agentTools: { id: "large", name: "Large", commands: ids.map((id, t) => ({
      name: `large_t${t}`, command: id, description: "Long. ".repeat(1500) })) },
  });
}"""


def test_a_page_whose_tools_outgrow_what_the_server_takes_says_so_and_leaves(
    new_reactor_page, agents
):
    reactor = new_reactor_page().open(agent_plugins=["*"])
    page, live = reactor.page, reactor.server
    connect_page(reactor)
    agent = agents(live.url, make_token_in_panel(page))
    assert "decks_list_decks" in agent.list_names()
    agent.heard_list_change.clear()
    page.evaluate(DEFINE_LARGE_TOOLS)
    status = page.get_by_test_id("agents-status")
    expect(status).to_have_text(
        re.compile(
            r"^This page offers 2\d\d tools, more than your agents can be handed at once \(their "
            r"list is 2\.\d million characters; the server takes 2 million\)\. Turn the switch "
            r"off and on again once it offers fewer\.$"
        )
    )
    assert status.get_attribute("data-page") is None
    assert agent.heard_list_change.wait(10), "the page left the server's list"
    assert agent.list_names() == ["reactor_pages", "reactor_call"]


def test_a_2025_11_25_client_of_the_sdks_1x_line_lists_and_calls_the_pages_tools(reactor_page):
    """Not our SDK 2.x: the 1.x line most desktop agents' Python servers and clients still use,
    with initialize and an Mcp-Session-Id, in its own environment."""
    page, live = reactor_page.page, reactor_page.server
    assert MCP1_PYTHON.exists(), "run ./dev test once: it makes .venv-mcp1 with the SDK's 1.x line"
    connect_page(reactor_page)
    token = make_token_in_panel(page)
    run = subprocess.run(
        [
            str(MCP1_PYTHON),
            str(ROOT / "tests" / "mcp1_client.py"),
            live.url,
            token,
            "decks_list_decks",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 0, run.stderr
    seen = json.loads(run.stdout)
    assert seen["sdk"].startswith("1.")
    assert seen["protocolVersion"] == "2025-11-25"
    assert seen["sessionId"], "the server opened a session (Mcp-Session-Id)"
    assert seen["listChanged"] is True
    assert seen["tools"]["decks_list_decks"]["readOnlyHint"] is True
    assert seen["tools"]["decks_create_deck"]["readOnlyHint"] is False
    assert {"reactor_pages", "reactor_call"} <= set(seen["tools"])
    assert seen["call"]["isError"] is False
    assert "reactor-in-5-minutes" in [
        deck["id"] for deck in seen["call"]["structuredContent"]["decks"]
    ]


def test_claude_desktops_lines_from_the_panel_run_the_mcp_remote_bridge_to_the_page(
    reactor_page,
    tmp_path,
):
    """What Claude Desktop does with the copied claude_desktop_config.json entry: start its
    command with its args and env and speak MCP over stdio (here the SDK's stdio client)."""
    page, live = reactor_page.page, reactor_page.server
    assert (NPM_MCP / "node_modules" / ".bin" / "mcp-remote").exists(), (
        "run ./dev test once: it installs mcp-remote"
    )
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live.url)
    connect_page(reactor_page)
    make_token_in_panel(page, "Claude Desktop")
    # What the person pastes into the file: the snippet's Copy button, the clipboard read back.
    snippet = page.locator(".agents-snippet").filter(has=page.get_by_test_id("agent-desktop-json"))
    snippet.get_by_role("button", name="Copy").click()
    snippet.get_by_role("button", name="Copied").wait_for()
    pasted = page.evaluate("navigator.clipboard.readText()")
    assert pasted == page.get_by_test_id("agent-desktop-json").inner_text()
    entry = json.loads(pasted)["mcpServers"]["reactor"]
    environment = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "MCP_REMOTE_CONFIG_DIR": str(tmp_path),
        **entry["env"],
    }
    server = StdioServerParameters(
        command=entry["command"], args=entry["args"], env=environment, cwd=NPM_MCP
    )

    async def run():
        with open(tmp_path / "mcp-remote.log", "w") as log:
            async with stdio_client(server, errlog=log) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    return await session.list_tools(), await session.call_tool(
                        "decks_list_decks", {}
                    )

    with ThreadPoolExecutor(1) as thread:  # Playwright's sync API holds this thread's loop
        listed, called = thread.submit(asyncio.run, run()).result(60)
    assert {"decks_list_decks", "reactor_pages", "reactor_call"} <= {t.name for t in listed.tools}
    assert called.is_error is False, called.content
    assert "reactor-in-5-minutes" in [deck["id"] for deck in called.structured_content["decks"]]


def test_an_agent_on_the_2026_07_28_protocol_that_gives_up_stops_the_call_in_the_page(
    reactor_page,
    agents,
):
    page, live = reactor_page.page, reactor_page.server
    with page.expect_websocket() as link:
        connect_page(reactor_page)
    agent = agents(live.url, make_token_in_panel(page), modern=True)
    answered = lambda payload: '"answer"' in payload  # noqa: E731
    with link.value.expect_event("framesent", answered, timeout=30_000) as answer:
        # The call's task is cancelled: its request's stream closes, which is how this era says it.
        gave_up = agent.do(
            lambda s: asyncio.wait_for(s.call_tool("decks_create_deck", {"title": "Dropped"}), 1.5)
        )
        page.get_by_test_id("approval").wait_for()
        with pytest.raises(TimeoutError):
            gave_up.result(30)
    envelope = json.loads(answer.value)["envelope"]
    assert envelope["ok"] is False and envelope["error"]["code"] == "aborted"
    withdrawn = page.get_by_test_id("approval")
    expect(withdrawn.get_by_test_id("approval-choice")).to_have_text(
        "No longer asked; it did not run."
    )
    expect(withdrawn.get_by_role("button")).to_have_count(0)  # nothing left to allow
    assert "Dropped" not in titles_now(agent)


def test_an_agent_on_one_server_process_reaches_a_page_connected_to_another(
    new_reactor_page,
    tmp_path,
    postgres_cluster,
    agents,
):
    database = postgres_cluster.database()
    first = start_server(tmp_path / "a", seed_demo=True, database=database)
    second = start_server(tmp_path / "b", seed_demo=True, database=database)
    try:
        reactor = new_reactor_page(second).open()
        page = reactor.page
        page_id = connect_page(reactor)  # the page's WebSocket is held by the second process
        agent = agents(first.url, make_token_in_panel(page))  # the agent's requests reach the first
        assert (
            agent.call("reactor_pages", {}).result(30).structured_content["pages"][0]["page"]
            == page_id
        )
        made = agent.call("decks_create_deck", {"title": "Across processes"})
        page.get_by_test_id("approval").get_by_role("button", name="Allow", exact=True).click()
        assert made.result(30).structured_content["title"] == "Across processes"
        assert "Across processes" in titles_now(agent)
    finally:
        stop_server(first)
        stop_server(second)
