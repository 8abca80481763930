"""UI Plugin records on CPython: which records get a panel, what a Python `run` draws, and that
each panel's dispose runs when its record goes, changes or moves to the agent's tools."""

from __future__ import annotations

import asyncio
import copy
from typing import Any

import pytest

from reactor.errors import ToolError
from reactor.page import MemoryPage
from reactor_plugins.ai_tools.panels import UiPanels

PYTHON_PANEL = """
DRAWN = []

def run(params):
    container = params["container"]
    container.html(f"<b>{params['config']['greeting']}</b> in {params['view_id']}")

    def clicked(event):
        container.text(f"clicked {event['target']['id']}")

    container.on("click", clicked, "button")
    return lambda: DRAWN.append("disposed")
"""


def record(id: str = "hello", **changes: Any) -> dict[str, Any]:
    base = {
        "id": id,
        "name": id.replace("-", "_"),
        "location": "ui",
        "language": "python",
        "code": PYTHON_PANEL,
        "settings": {"config": {"greeting": "Hello"}},
        "visibility": {"users": [], "groups": ["staff"]},
        "enabled": True,
    }
    return {**base, **changes}


class Server:
    """The records the signed-in user can see, as GET /plugins/{id} answers them."""

    def __init__(self, *records: dict[str, Any]) -> None:
        self.records = {r["id"]: copy.deepcopy(r) for r in records}
        self.reads: list[str] = []

    async def read(self, record_id: str) -> dict[str, Any]:
        self.reads.append(record_id)
        if record_id not in self.records:
            raise ToolError("not_permitted", f"You may not use the plugin {record_id!r} now.")
        return copy.deepcopy(self.records[record_id])

    def listing(self) -> list[dict[str, Any]]:
        return [{k: v for k, v in r.items() if k != "code"} for r in self.records.values()]


def panels_for(server: Server) -> tuple[UiPanels, MemoryPage]:
    page = MemoryPage()
    page.active_view = "decks"  # type: ignore[attr-defined]
    return UiPanels(page, server.read), page


def disposed(panels: UiPanels, record_id: str) -> list[str]:
    return panels.mounted[record_id].dispose.__globals__["DRAWN"]  # type: ignore[union-attr]


def test_a_python_ui_record_draws_its_panel_with_its_config_and_the_active_view() -> None:
    server = Server(record())
    panels, page = panels_for(server)
    assert asyncio.run(panels.refresh(server.listing())) == ["hello"]
    shown = page.panels["hello"]
    assert shown["panel"] == {
        "id": "hello",
        "name": "hello",
        "language": "python",
        "config": {"greeting": "Hello"},
        "viewId": "decks",
    }
    assert shown["html"] == "<b>Hello</b> in decks" and shown["error"] is None


def test_a_click_in_the_panel_reaches_the_python_listener() -> None:
    server = Server(record())
    panels, page = panels_for(server)

    async def scenario() -> None:
        await panels.refresh(server.listing())
        assert await page.fire("hello", "click", {"id": "more"}) == 1

    asyncio.run(scenario())
    assert page.panels["hello"]["text"] == "clicked more"


@pytest.mark.parametrize("change", ["disabled", "deleted", "hidden", "moved", "signed out"])
def test_a_record_that_goes_away_has_its_dispose_run_and_its_panel_removed(change: str) -> None:
    server = Server(record())
    panels, page = panels_for(server)

    async def scenario() -> list[str]:
        await panels.refresh(server.listing())
        log = disposed(panels, "hello")
        listing = server.listing()
        if change == "disabled":
            server.records["hello"]["enabled"] = False
            listing = server.listing()
        elif change == "deleted":
            del server.records["hello"]
            listing = server.listing()
        # listed a moment ago, refused when re-read with the user's session
        elif change == "hidden":
            del server.records["hello"]
        elif change == "moved":
            server.records["hello"]["location"] = "ai-tool"
            listing = server.listing()
        else:
            listing = []
        assert await panels.refresh(listing) == []
        return log

    assert asyncio.run(scenario()) == ["disposed"]
    assert "hello" not in page.panels and page.closed_panels == ["hello"]
    assert asyncio.run(page.fire("hello", "click")) == 0  # its listeners went with it


def test_a_changed_record_is_disposed_and_drawn_again_and_an_unchanged_one_is_left_alone() -> None:
    server = Server(record(), record("other"))
    panels, page = panels_for(server)

    async def scenario() -> None:
        await panels.refresh(server.listing())
        first, other = panels.mounted["hello"], panels.mounted["other"]
        log = disposed(panels, "hello")
        server.records["hello"]["settings"]["config"]["greeting"] = "Bonjour"
        await panels.refresh(server.listing())
        assert log == ["disposed"] and panels.mounted["hello"] is not first
        assert panels.mounted["other"] is other

    asyncio.run(scenario())
    assert page.panels["hello"]["html"].startswith("<b>Bonjour</b>")
    assert page.closed_panels == ["hello"]


def test_a_javascript_record_is_handed_to_the_page_with_its_code() -> None:
    code = "function Run(params) { params.container.textContent = 'hi'; return () => {}; }"
    server = Server(record("chart", language="javascript", code=code))
    panels, page = panels_for(server)
    asyncio.run(panels.refresh(server.listing()))
    assert page.panels["chart"]["panel"]["code"] == code
    asyncio.run(panels.refresh([]))
    assert page.closed_panels == ["chart"]


@pytest.mark.parametrize(
    ("code", "shown"),
    [
        (
            "def run(params):\n    raise ValueError('no data today')",
            "hello failed to start: ValueError: no data today",
        ),
        (
            "def run(params):\n    params['container'].text('drawn')",
            "run(params) returned NoneType, not a function",
        ),
        ("async def run(params):\n    return 42", "run(params) returned int, not a function"),
        # In the worker `js` is its global scope, which has no `document` (the browser test meets
        # the real one).
        (
            "def run(params):\n    import types\n    return types.SimpleNamespace().document",
            "needs the page's DOM directly",
        ),
        (
            "def run(params):\n    from pyscript import document",
            "cross-origin-isolated page (COOP/COEP headers)",
        ),
        (
            "def run(params):\n    params['container'].on('click()', print)",
            "'click()' is not an event name",
        ),
        (
            "def run(params):\n    params['container'].on('click', print, '')",
            "the selector must be CSS text",
        ),
        (
            "def run(params):\n    params['container'].on('click', 'alert(1)')",
            "the handler must be a function, not str",
        ),
    ],
)
def test_a_failing_run_shows_its_error_in_its_own_panel_and_hurts_no_other(
    code: str, shown: str
) -> None:
    server = Server(record(code=code), record("other"))
    panels, page = panels_for(server)
    assert asyncio.run(panels.refresh(server.listing())) == ["hello", "other"]
    assert shown in page.panels["hello"]["error"]
    assert (
        page.panels["other"]["html"] == "<b>Hello</b> in decks"
        and page.panels["other"]["error"] is None
    )
    asyncio.run(panels.refresh([]))  # a failed panel still goes cleanly
    assert page.panels == {}


def test_a_failing_dispose_is_reported_and_the_panel_still_goes(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = (
        "async def run(params):\n    async def stop():\n        raise "
        "RuntimeError('stuck')\n    return stop"
    )
    server = Server(record(code=code))
    panels, page = panels_for(server)
    asyncio.run(panels.refresh(server.listing()))
    asyncio.run(panels.refresh([]))
    assert page.panels == {} and "failed to dispose: RuntimeError: stuck" in capsys.readouterr().out


def test_an_unreachable_server_keeps_the_panels_shown() -> None:
    server = Server(record())
    panels, page = panels_for(server)

    async def away(record_id: str) -> dict[str, Any]:
        raise ToolError("unavailable", "The server could not be reached.")

    asyncio.run(panels.refresh(server.listing()))
    panels.read_record = away
    assert asyncio.run(panels.refresh(server.listing())) == ["hello"]
    assert page.closed_panels == []


def test_unloading_runs_every_dispose_at_once() -> None:
    server = Server(record(), record("other"))
    panels, page = panels_for(server)

    async def scenario() -> list[str]:
        await panels.refresh(server.listing())
        log = disposed(panels, "hello")
        panels.unload()
        await asyncio.sleep(0)  # the page's close requests were started, not awaited
        return log

    assert asyncio.run(scenario()) == ["disposed"]
    assert panels.mounted == {} and page.panels == {}
