"""The pytest plugin (the `pytest11` entry point `reactor`): fixtures that run reactor for real.

- `reactor_server`: `reactor serve` of the installed plugins on a free loopback port, over a
  fresh data folder (or `--reactor-database URL`); its users are the test's own
  (`reactor_server.user("bob", groups=["staff"])`). One per session, or per module with
  `--reactor-server-scope module`.
- `reactor_page`: a page of that server at `reactor.ready` (a pytest-playwright `page`, so
  `--video`, `--tracing`, `--headed` and `--browser-channel` apply), failing the test on any
  request off the server's origin, any page error and any console error.
- `new_reactor_page`: `new_reactor_page(server=None, page=None)` makes more such pages, not
  yet opened (routes and init scripts first, then `.open(path)`), of reactor_server or another
  server; each is watched as reactor_page is.
- `reactor_model`: a model provider on loopback (OpenAI's streaming wire format) whose answers
  the test scripts; `reactor_page.use_model(reactor_model)` points the chat at it.
- `reactor_demo`: a recorded session (reactor.testing.recording.Demo) written to
  `--reactor-demo-dir` (default `demo-output/`).

Where Playwright's own Chromium is not installed (its download needs the open internet), the
system's Chromium is launched instead; either way without its background requests (updates,
sync), so a test's browser asks nothing of the network but the pages under test.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from .page import ReactorPage
from .recording import Demo
from .server import ReactorServer
from .standins import StandIn

MakePage = Callable[..., ReactorPage]  # new_reactor_page(server=None, page=None)
SYSTEM_CHROMIUM = ("chromium", "chromium-browser", "google-chrome")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("reactor", "reactor's fixtures (reactor.testing)")
    group.addoption(
        "--reactor-database",
        default="",
        metavar="URL",
        help="run reactor_server on this PostgreSQL database",
    )
    group.addoption(
        "--reactor-server-scope",
        default="session",
        choices=("session", "module"),
        help="how long one reactor_server lives (default: the whole session)",
    )
    group.addoption(
        "--reactor-seed", action="store_true", help="give reactor_server the demo's data and users"
    )
    group.addoption(
        "--reactor-demo-dir",
        default="demo-output",
        metavar="DIR",
        help="where reactor_demo writes (demo-output)",
    )


def _server_scope(fixture_name: str, config: pytest.Config) -> Any:
    return config.getoption("--reactor-server-scope")


@pytest.fixture(scope=_server_scope)  # type: ignore[arg-type]
def reactor_server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ReactorServer]:
    """A real `reactor serve` of the installed plugins, on loopback, over fresh data."""
    config = request.config
    server = ReactorServer(
        tmp_path_factory.mktemp("reactor-data"),
        database=config.getoption("--reactor-database"),
        seed=config.getoption("--reactor-seed"),
    )
    yield server
    server.stop()


@pytest.fixture
def new_reactor_page(page: Any, request: pytest.FixtureRequest) -> Iterator[MakePage]:
    """Make a watched page not yet opened: `new_reactor_page(server=None, page=None)`, of
    reactor_server by default, on the test's `page` first and then in new browser contexts.
    Routes or scripts the test adds before `open()` see the page's first request; strays and
    errors of every page made fail the test."""
    made: list[ReactorPage] = []
    unused = [page]

    def new(server: Any = None, page: Any = None) -> ReactorPage:
        if page is None:
            page = unused.pop() if unused else request.getfixturevalue("new_context")().new_page()
        elif page in unused:
            unused.remove(page)
        server = request.getfixturevalue("reactor_server") if server is None else server
        made.append(ReactorPage(page, server))
        return made[-1]

    yield new
    problems = [problem for reactor in made for problem in reactor.problems()]
    if problems:
        pytest.fail(
            "The page went wrong:\n" + "\n".join(f"  - {p}" for p in problems), pytrace=False
        )


@pytest.fixture
def reactor_page(new_reactor_page: MakePage) -> ReactorPage:
    """A page of reactor_server, open at `/` and ready; strays and errors fail the test."""
    return new_reactor_page().open()


@pytest.fixture
def reactor_model() -> Iterator[StandIn]:
    """A model provider on loopback speaking OpenAI's streaming wire format, scripted by the test
    (`reactor_model.answers = [call("notes_add", {...}), text("Added.")]`);
    `reactor_page.use_model`."""
    stand_in = StandIn("openai", "reactor-testing-key", cors=True)
    yield stand_in
    stand_in.stop()


@pytest.fixture
def reactor_demo(
    browser: Any, reactor_server: ReactorServer, request: pytest.FixtureRequest
) -> Iterator[Demo]:
    """A recorded session: `demo.chapter(...)`, `with demo.step(...):`, driving `demo.reactor`
    (a ReactorPage); the video, screenshots and demo.json go to --reactor-demo-dir."""
    out = Path(request.config.getoption("--reactor-demo-dir"))
    demo = Demo(browser, out)
    demo.reactor = ReactorPage(demo.page, reactor_server)  # type: ignore[attr-defined]
    yield demo
    if not demo.page.is_closed():
        demo.finish()


@pytest.hookimpl(wrapper=True)
def pytest_fixture_setup(fixturedef: Any, request: pytest.FixtureRequest) -> Iterator[Any]:
    """pytest-playwright's launch options, with the system's Chromium where Playwright has none."""
    value = yield
    if fixturedef.argname == "browser_type_launch_args" and isinstance(value, dict):
        args = [*value.get("args", [])]
        # a test's browser asks nothing of the network
        args += [flag for flag in QUIET if flag not in args]
        if not value.get("executable_path") and not value.get("channel"):
            system = _system_chromium()
            if system is not None:
                value.update(executable_path=system, chromium_sandbox=False)
                args.append("--no-sandbox")
        value["args"] = args
    return value


QUIET = [
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-gpu",
]


def _system_chromium() -> str | None:
    """The system's Chromium, when Playwright's own is not installed (its browsers' folder has
    none)."""
    folder = Path(
        os.environ.get("PLAYWRIGHT_BROWSERS_PATH") or Path.home() / ".cache" / "ms-playwright"
    )
    if any(folder.glob("chromium-*")) or any(folder.glob("chromium_headless_shell-*")):
        return None
    return next((found for name in SYSTEM_CHROMIUM if (found := shutil.which(name))), None)
