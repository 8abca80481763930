"""docs/DEPLOY.md as written: Debian's nginx terminating TLS for `reactor.test` (a self-signed
certificate) in front of two `reactor serve` processes on one PostgreSQL, round-robin with no
affinity, started with the page's own lines (ports, certificate paths and the data folders
replaced). Through it, a real Chromium loads the page, signs in, writes, streams the chat's answer
from the site's model and links the page for agents; the MCP SDK's client calls the page's tools
in both protocol eras."""

from __future__ import annotations

import asyncio
import json
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from playwright.sync_api import expect

from reactor.testing import ReactorPage
from reactor.testing.standins import StandIn, text

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.deployed import NAME, NotDeployable, Site, ToProxyAsync, deployed  # noqa: E402

pytestmark = pytest.mark.browser
PASSWORD = "a-real-password-9"
MODEL_KEY = "sk-site-model-key"


@pytest.fixture(scope="module")
def model() -> Iterator[StandIn]:
    """The site's model: a stand-in speaking OpenAI's API on loopback."""
    model = StandIn("openai", MODEL_KEY)
    yield model
    model.stop()


@pytest.fixture(scope="module")
def site(tmp_path_factory, postgres_cluster, model) -> Iterator[Site]:
    flags = ["--model-provider", "openai", "--model", "stand-in", "--model-base-url", model.url]
    try:
        with deployed(
            tmp_path_factory.mktemp("site"),
            postgres_cluster.database(),
            password=PASSWORD,
            flags=flags,
            env={"REACTOR_MODEL_API_KEY": MODEL_KEY},
        ) as site:
            yield site
    except NotDeployable as missing:
        pytest.skip(str(missing))


@pytest.fixture
def browser_page(browser_type, browser_type_launch_args, site) -> Iterator[Any]:
    """A Chromium that resolves reactor.test to the proxy and takes its self-signed certificate."""
    args = [
        *browser_type_launch_args.get("args", []),
        f"--host-resolver-rules=MAP {NAME} 127.0.0.1",
    ]
    browser = browser_type.launch(**{**browser_type_launch_args, "args": args})
    context = browser.new_context(ignore_https_errors=True)
    yield context.new_page()
    browser.close()


def test_the_page_sign_in_a_write_the_chat_and_the_agents_link_work_through_the_proxy(
    site, model, browser_page
):
    reactor = ReactorPage(browser_page, site).open()
    assert not reactor.ready["failures"]
    page = reactor.sign_in("ada", PASSWORD).page
    (cookie,) = [c for c in page.context.cookies() if c["domain"] == NAME]
    assert cookie["secure"] and cookie["httpOnly"] and cookie["sameSite"] == "Lax"

    made = reactor.execute("decks.createDeck", {"title": "Through the proxy"})
    with site.client() as http:  # the next requests, to either process: the write is there
        listed = [http.get("/api/decks").json() for _ in range(2)]
    assert all(made["id"] in {d["id"] for d in decks} for decks in listed)

    # The answer streams through the proxy: its first words are on screen while the model holds
    # the rest back.
    model.answers.append(text("Streamed through nginx, word by word."))
    model.hold.clear()
    chat = page.locator("reactor-chat")
    chat.locator("textarea").fill("hello")
    chat.get_by_role("button", name="Send").click()
    streaming = chat.locator("[data-streaming=true]")
    expect(streaming).to_contain_text("Streamed")
    assert "word by word" not in streaming.inner_text()
    model.hold.set()
    expect(chat.locator(".chat-assistant").last).to_have_text(
        "Streamed through nginx, word by word."
    )

    page.get_by_test_id("agents-switch").check()
    page.get_by_test_id("agents-status").get_by_text("Your agents can use").wait_for()
    linked = page.get_by_test_id("agents-status").get_attribute("data-page")
    token = reactor.page.evaluate(
        """async () => (await (await fetch("/api/agent-tokens", {method: "POST",
             headers: {"content-type": "application/json"},
             body: JSON.stringify({name: "through the proxy"})})).json()).token"""
    )
    with site.client() as http:
        assert http.get("/readyz").json()["status"] == "ready"
        metrics = http.get("/metrics", headers={"authorization": f"Bearer {token}"})
        assert metrics.status_code == 401, "/metrics is not for the public behind the proxy"
    for modern in (False, True):  # 2025-11-25, then 2026-07-28; round-robin, no affinity
        with ThreadPoolExecutor(1) as aside:  # Playwright's loop holds this thread
            pages, decks = aside.submit(asyncio.run, agent_calls(site, token, modern)).result(60)
        assert [p["page"] for p in pages["pages"]] == [linked]
        assert "Through the proxy" in [d["title"] for d in decks["decks"]]


async def agent_calls(site: Site, token: str, modern: bool) -> tuple[Any, Any]:
    headers = {"authorization": f"Bearer {token}"}
    async with httpx2.AsyncClient(
        headers=headers, transport=ToProxyAsync(site.cert), timeout=30
    ) as http:
        async with streamable_http_client(f"{site.url}/mcp", http_client=http) as (read, write):
            async with ClientSession(read, write) as session:
                await (session.discover() if modern else session.initialize())
                names = [t.name for t in (await session.list_tools()).tools]
                assert "decks_list_decks" in names
                pages = await session.call_tool("reactor_pages", {})
                decks = await session.call_tool("decks_list_decks", {})
                await session.call_tool("decks_list_decks", {})  # a fourth request, either process
    return pages.structured_content, decks.structured_content


def test_the_processes_log_json_lines_with_request_ids_and_no_secret(site, browser_page):
    reactor = ReactorPage(browser_page, site).open()
    reactor.sign_in("ada", PASSWORD)
    with site.client() as http:
        answered = http.get("/api/decks", headers={"x-request-id": "from-nginx-0123456789"})
    ident = answered.headers["x-request-id"]

    def logged() -> bool:  # the access line is written once the answer has gone
        lines = [json.loads(line) for line in site.logs()]  # every line is one JSON object
        return any(line.get("request_id") == ident for line in lines)

    deadline = time.monotonic() + 5
    while not logged():
        assert time.monotonic() < deadline, f"no log line carries the request id {ident}"
        threading.Event().wait(0.05)
    cookie = next(c["value"] for c in browser_page.context.cookies() if c["domain"] == NAME)
    assert not any(PASSWORD in line or cookie in line or MODEL_KEY in line for line in site.logs())
