"""Shared fixtures: a real server on loopback over a temp SQLite file, and Chromium that may
only talk to it."""

from __future__ import annotations

import json
import shutil
import socket
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator
from urllib.parse import urlsplit

import pytest
import uvicorn

from reactor.server.app import create_app

SYSTEM_CHROMIUM = ("/usr/bin/chromium", "/usr/bin/chromium-browser")
QUIET_CHROMIUM = ["--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--no-first-run", "--disable-gpu"]


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
    server: uvicorn.Server
    thread: threading.Thread


def run_app(app: Any) -> tuple[str, uvicorn.Server, threading.Thread]:
    """Serve an ASGI app with uvicorn in a thread on a free loopback port; return its URL."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the test server did not start")
        time.sleep(0.02)
    return f"http://127.0.0.1:{port}", server, thread


def start_server(data: Path, **options: Any) -> LiveServer:
    """Start the reactor app over `data` on loopback; stop it with `stop_server`."""
    app = create_app(data, **options)
    url, server, thread = run_app(app)
    return LiveServer(url, app, data, server, thread)


def stop_server(live: LiveServer) -> None:
    live.server.should_exit = True
    live.thread.join(timeout=10)


@pytest.fixture
def live_server(tmp_path: Path) -> Iterator[LiveServer]:
    live = start_server(tmp_path / "data", seed_demo=True)
    yield live
    stop_server(live)


def run_without_gesture(page: Any, url: str, calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    """Run commands as the page's own code would, after load, with no user gesture: Playwright's
    evaluate counts as a click, and browsers grant full screen and popups only after one."""
    page.add_init_script(
        "addEventListener('DOMContentLoaded', async () => {"
        "  await window.reactor.ready; const out = [];"
        f"  for (const [id, args] of {json.dumps(calls)})"
        "    out.push(await window.reactor.executeCommand(id, args).catch((e) => ({error: e.message})));"
        "  console.log('no-gesture: ' + JSON.stringify(out));"
        "});"
    )
    # Wait on the console, not on a locator: a locator's polling runs in the page and counts as a gesture.
    with page.expect_console_message(lambda m: m.text.startswith("no-gesture: "), timeout=60_000) as message:
        page.goto(url)
    return json.loads(message.value.text.removeprefix("no-gesture: "))


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args: dict[str, Any]) -> dict[str, Any]:
    """Playwright's own Chromium where it is installed; otherwise the system one (Debian's)."""
    args = {**browser_type_launch_args, "args": [*browser_type_launch_args.get("args", []), *QUIET_CHROMIUM]}
    try:
        from playwright.sync_api import sync_playwright

        with sync_playwright() as playwright:
            own = Path(playwright.chromium.executable_path)
    except Exception:
        own = Path("/nonexistent")
    if not own.exists():
        system = next((p for p in SYSTEM_CHROMIUM if shutil.which(p)), None)
        if system:
            args.update(executable_path=system, chromium_sandbox=False)
            args["args"].append("--no-sandbox")
    return args


@pytest.fixture
def blocking_popups(browser_type: Any, browser_type_launch_args: dict[str, Any]) -> Iterator[Any]:
    """A page in a Chromium that blocks popups as a person's browser does (Playwright turns that off)."""
    browser = browser_type.launch(**browser_type_launch_args, ignore_default_args=["--disable-popup-blocking"])
    yield browser.new_page()
    browser.close()


@pytest.fixture
def offline_page(page: Any, live_server: LiveServer) -> Iterator[Any]:
    """A page that fails the test on any request outside the server's origin."""
    origin = urlsplit(live_server.url)
    strays: list[str] = []

    def guard(route: Any) -> None:
        parts = urlsplit(route.request.url)
        if parts.scheme in {"http", "https", "ws", "wss"} and (parts.hostname, parts.port) != (origin.hostname, origin.port):
            strays.append(route.request.url)
            route.abort()
        else:
            route.continue_()

    page.context.route("**/*", guard)
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    yield page
    assert strays == [], f"the page asked for something outside its origin: {strays}"
    assert errors == [], f"the page raised: {errors}"
