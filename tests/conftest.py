"""Shared fixtures: the reactor app over a temp SQLite file, called in process where no browser
is involved (`app_server`) or served on loopback (`live_server`) for Chromium, which may only
talk to it."""

from __future__ import annotations

import asyncio
import copy
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from postgres import SKIP_REASON, Cluster, postgres_bin
from reactor.server.app import create_app
from reactor.server.loopback import LoopbackServer


def run_reactor(*args: str, **options: Any) -> subprocess.CompletedProcess[str]:
    """The `reactor` command line as a person runs it: its exit code, output and errors as text."""
    return subprocess.run(
        [sys.executable, "-m", "reactor", *args],
        capture_output=True,
        text=True,
        timeout=60,
        **options,
    )


IN_PROCESS_URL = "http://127.0.0.1"  # a host the app serves: its Host check holds in process too


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Browser tests last: Playwright's sync API leaves an event loop running in this thread,
    and `asyncio.run` in a CPython test after it would refuse to start."""
    for item in items:
        if "page" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.browser)
    items.sort(key=lambda item: item.get_closest_marker("browser") is not None)


@dataclass
class LiveServer:
    url: str
    app: Any
    data: Path
    loopback: LoopbackServer


def start_server(data: Path, **options: Any) -> LiveServer:
    """Start the reactor app over `data` on loopback; stop it with `stop_server`."""
    app = create_app(data, **options)
    loopback = LoopbackServer(app, start_timeout=10)
    return LiveServer(loopback.url, app, data, loopback)


def stop_server(live: LiveServer) -> None:
    live.loopback.stop()


class AppClient:
    """Requests to an ASGI app in this process, as httpx.Client makes them to a server: one event
    loop per request (Starlette's TestClient would share one, but warns on this httpx), a cookie
    jar kept from answer to answer as a browser's is, and the app's own exceptions raised here."""

    def __init__(
        self, app: Any, base_url: str = IN_PROCESS_URL, headers: dict[str, str] | None = None
    ) -> None:
        self.app, self.base_url, self.headers = app, base_url, dict(headers or {})
        self.cookies = httpx.Cookies()

    def request(self, method: str, url: str, **options: Any) -> httpx.Response:
        async def send() -> httpx.Response:
            async with httpx.AsyncClient(
                transport=httpx.ASGITransport(app=self.app),
                base_url=self.base_url,
                headers=self.headers,
                cookies=self.cookies,
            ) as client:
                answer = await client.request(method, url, **options)
                self.cookies = client.cookies
                return answer

        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(send())
        # Called from async code, as a blocking httpx.Client would be: the request runs beside it.
        with ThreadPoolExecutor(1) as pool:
            return pool.submit(asyncio.run, send()).result()

    def get(self, url: str, **options: Any) -> httpx.Response:
        return self.request("GET", url, **options)

    def post(self, url: str, **options: Any) -> httpx.Response:
        return self.request("POST", url, **options)

    def put(self, url: str, **options: Any) -> httpx.Response:
        return self.request("PUT", url, **options)

    def patch(self, url: str, **options: Any) -> httpx.Response:
        return self.request("PATCH", url, **options)

    def delete(self, url: str, **options: Any) -> httpx.Response:
        return self.request("DELETE", url, **options)

    def options(self, url: str, **options: Any) -> httpx.Response:
        return self.request("OPTIONS", url, **options)

    def __enter__(self) -> AppClient:
        return self

    def __exit__(self, *exc: object) -> None:
        pass


@dataclass
class AppServer:
    """The reactor app called in this process, no socket and no thread of its own: `client()` for
    the requests a test makes, `send` (reactor.http) for MemoryPage and the AI Tool runner."""

    url: str
    app: Any
    data: Path

    def client(self, headers: dict[str, str] | None = None) -> AppClient:
        return AppClient(self.app, self.url, headers)

    async def send(
        self, method: str, url: str, headers: dict[str, str], body: str | None, on_chunk: Any = None
    ) -> tuple[int, dict[str, str], str]:
        # A client per request, as urllib is: no cookie carries over from one call to the next.
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=self.app)) as client:
            answer = await client.request(method, url, headers=headers, content=body)
        return answer.status_code, dict(answer.headers), answer.text


def app_server_over(data: Path, **options: Any) -> AppServer:
    return AppServer(IN_PROCESS_URL, create_app(data, **options), data)


BACKENDS = ["sqlite", "postgresql"]


@pytest.fixture(scope="session")
def postgres_cluster() -> Iterator[Cluster]:
    """One throwaway PostgreSQL server for the whole run (tests/postgres.py)."""
    bin_dir = postgres_bin()
    if bin_dir is None:
        pytest.skip(SKIP_REASON)
    cluster = Cluster(bin_dir)
    cluster.start()
    yield cluster
    cluster.stop()


@pytest.fixture(scope="module", params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    """The database a store or server test runs on: each such test runs on both."""
    return str(request.param)


def new_database(request: pytest.FixtureRequest, backend: str, folder: Path) -> str:
    """A fresh database: a SQLite file in `folder`, or a new database on the throwaway cluster."""
    if backend == "sqlite":
        return str(folder / "reactor.sqlite3")
    return str(request.getfixturevalue("postgres_cluster").database())


@pytest.fixture
def database_target(request: pytest.FixtureRequest, backend: str, tmp_path: Path) -> str:
    return new_database(request, backend, tmp_path / "data")


@pytest.fixture
def app_server(tmp_path: Path, database_target: str) -> AppServer:
    """The demo's app (plugins, seeded data) over a fresh database of each backend, in process."""
    return app_server_over(tmp_path / "data", seed_demo=True, database=database_target)


def bearer(server: LiveServer | AppServer, username: str) -> dict[str, str]:
    """The headers of a client signed in as a demo user (password `<name>-demo`) with a bearer
    token."""
    client = server.client() if isinstance(server, AppServer) else httpx.Client()
    with client:
        answer = client.post(
            f"{server.url}/auth/sign-in",
            json={"username": username, "password": f"{username}-demo"},
        )
    answer.raise_for_status()
    return {"authorization": f"Bearer {answer.json()['token']}"}


# what a client without the SDK sends to open a 2025-11-25 session on /mcp
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"},
    },
}
MCP_HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


def open_2025_session(url: str, token: str) -> dict[str, str]:
    """A 2025-11-25 session opened by hand (initialize, then notifications/initialized), as a
    client without the SDK opens it: the headers of its next requests."""
    headers = {"authorization": f"Bearer {token}", **MCP_HEADERS}
    opened = httpx.post(f"{url}/mcp", json=INITIALIZE, headers=headers)
    headers |= {"mcp-session-id": opened.headers["mcp-session-id"]}
    headers |= {"mcp-protocol-version": "2025-11-25"}
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert httpx.post(f"{url}/mcp", json=initialized, headers=headers).status_code == 202
    return headers


@pytest.fixture
def reactor_server(tmp_path: Path) -> Iterator[LiveServer]:
    """The demo's app (its plugins, users and data), fresh for each test and served in this process
    on loopback; reactor.testing's reactor_page and reactor_demo drive it (in place of the kit's
    own `reactor serve`, one per session over empty data)."""
    live = start_server(tmp_path / "data", seed_demo=True)
    yield live
    stop_server(live)


@pytest.fixture
def live_server(reactor_server: LiveServer) -> LiveServer:
    return reactor_server


@pytest.fixture
def blocking_popups(browser_type: Any, browser_type_launch_args: dict[str, Any]) -> Iterator[Any]:
    """A page in a Chromium that blocks popups as a person's browser does (Playwright turns that
    off)."""
    browser = browser_type.launch(
        **browser_type_launch_args, ignore_default_args=["--disable-popup-blocking"]
    )
    yield browser.new_page()
    browser.close()


# The decks bundle of the chat host's tests (test_host_*.py): one declaration, each test file
# taking the tools it needs.
DECK_OPEN = {
    "type": "object",
    "properties": {"id": {"type": "string"}, "slide": {"type": "integer", "minimum": 1}},
    "required": ["id"],
    "additionalProperties": False,
}
# A schema OpenAI and Anthropic would refuse at the top level, though it is valid JSON Schema.
DECK_RENAME = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "properties": {
        "id": {"type": "string"},
        "slug": {"type": "string"},
        "title": {"type": "string"},
    },
    "required": ["title"],
    "anyOf": [{"required": ["id"]}, {"required": ["slug"]}],
}
DECK_ID = {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}
DECK_TOOLS = {
    entry["name"]: entry
    for entry in [
        {
            "name": "decks_list_decks",
            "command": "decks.listDecks",
            "label": "List decks",
            "description": "List every deck.",
        },
        {
            "name": "decks_open",
            "command": "decks.open",
            "description": "Open a deck at a slide.",
            "parameters": DECK_OPEN,
        },
        {
            "name": "decks_rename",
            "command": "decks.rename",
            "description": "Rename a deck.",
            "parameters": DECK_RENAME,
        },
        {
            "name": "decks_next_slide",
            "command": "decks.nextSlide",
            "description": "Advance one slide.",
        },
        {
            "name": "decks_present",
            "command": "decks.present",
            "description": "Present the open deck.",
        },
        {
            "name": "decks_delete",
            "command": "decks.delete",
            "description": "Delete a deck.",
            "parameters": DECK_ID,
        },
        {"name": "decks_wait", "command": "decks.wait", "description": "Wait for the projector."},
        {"name": "decks_fail", "command": "decks.fail", "description": "Always fails."},
        {"name": "decks_refuse", "command": "decks.refuse", "description": "Refuses with a code."},
        {"name": "decks_disabled", "command": "decks.disabled", "description": "Never enabled."},
        {
            "name": "decks_missing",
            "command": "decks.notRegistered",
            "description": "Its command is gone.",
        },
        {"name": "decks_hidden", "command": "decks.hidden", "description": "Not in the toolset."},
    ]
}


def decks_bundle(*names: str, toolset: list[str] | None = None) -> dict[str, Any]:
    """The decks bundle with the tools named, in that order (`toolset`: those granted, else all)."""
    from reactor import define_agent_tools

    commands = [copy.deepcopy(DECK_TOOLS[name]) for name in names]
    return define_agent_tools(
        id="decks", name="Decks", plugin="decks", commands=commands, toolset=toolset
    )
