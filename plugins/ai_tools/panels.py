"""UI Plugin records: each enabled `ui` record the user can see gets a panel on the page.

The same record file may define `Invoke`/`invoke` (its AI Tool) and `Run`/`run` (its panel);
the record's location says which one is used, so switching it moves the record between the
agent's tools and the panel area on the next refresh.

A JavaScript `Run(params)` needs the DOM, so the page runs it on its main thread. A Python
`run(params)` runs here, in reactor's worker, which keeps the host page free: synchronous
`document` access from a worker needs a cross-origin-isolated page (COOP/COEP headers, what
PyScript's worker DOM needs), and reactor asks no host page for those. So Python draws through
`params["container"]` (`html`, `text`, `on`), whose calls cross to the page as messages.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import re
from collections.abc import Awaitable, Callable
from typing import Any

from reactor.disposable import Disposable, DisposableSet
from reactor.errors import ToolError
from reactor.records.runner import load_code

ReadRecord = Callable[[str], Awaitable[dict[str, Any]]]
# What a Python UI plugin reaching for the DOM meets in a worker: no `document`, no `pyscript`.
_DOM_WORDS = ("document", "window", "pyscript")
_EVENT = re.compile(r"[a-z]{1,32}")


class PanelContainer:
    """The panel a Python UI plugin draws into; every call is a message to the page."""

    def __init__(self, page: Any, panel_id: str) -> None:
        self.id = panel_id
        self._page = page
        self.listeners = DisposableSet()

    def html(self, markup: str) -> None:
        """Replace the panel's content with `markup` (the page drops scripts and `on…`
        attributes)."""
        self._page.draw_panel(self.id, html=str(markup))

    def text(self, text: str) -> None:
        """Replace the panel's content with plain text."""
        self._page.draw_panel(self.id, text=str(text))

    def on(
        self, event: str, handler: Callable[[dict[str, Any]], Any], selector: str | None = None
    ) -> Disposable:
        """Call `handler(event)` (sync or async) on each `event` ("click", "change", …) in the
        panel, on an element matching `selector` when given; `event["target"]` holds its id, tag,
        value, dataset and text. Listeners end with the panel."""
        if not isinstance(event, str) or not _EVENT.fullmatch(event):
            raise ValueError(
                f"container.on: {event!r} is not an event name; use one like 'click' or 'change'."
            )
        if selector is not None and (
            not isinstance(selector, str) or not selector.strip() or len(selector) > 200
        ):
            raise ValueError(
                "container.on: the selector must be CSS text of at most 200 characters, not "
                f"{selector!r}."
            )
        if not callable(handler):
            raise TypeError(
                f"container.on: the handler must be a function, not {type(handler).__name__}."
            )
        return self.listeners.add(self._page.listen_panel(self.id, event, selector, handler))


class _Mounted:
    __slots__ = ("record", "dispose", "container")

    def __init__(
        self,
        record: dict[str, Any],
        dispose: Callable[[], Any] | None = None,
        container: PanelContainer | None = None,
    ) -> None:
        self.record = record
        self.dispose = dispose
        self.container = container


class UiPanels:
    """The panels shown now; `refresh(listed)` makes them match the records the server lists."""

    def __init__(self, page: Any, read_record: ReadRecord) -> None:
        self.page = page
        self.read_record = read_record
        self.mounted: dict[str, _Mounted] = {}
        self._lock = asyncio.Lock()  # a sign-in and a refresh may overlap: one diff at a time

    async def refresh(self, listed: list[dict[str, Any]]) -> list[str]:
        """Close the panels whose record went (disabled, deleted, no longer visible, moved to
        ai-tool) or changed, open the new ones; the ids shown afterwards."""
        async with self._lock:
            wanted = [r["id"] for r in listed if r.get("location") == "ui" and r.get("enabled")]
            current: dict[str, dict[str, Any]] = {}
            for record_id in wanted:
                try:
                    # The permission re-check, as before a tool call; it also brings the code.
                    current[record_id] = await self.read_record(record_id)
                except ToolError as error:
                    if error.code == "unavailable" and record_id in self.mounted:
                        current[record_id] = self.mounted[
                            record_id
                        ].record  # the server is away: keep it
            for record_id in list(self.mounted):
                if current.get(record_id) != self.mounted[record_id].record:
                    await self._close(record_id)
            for record_id, record in current.items():
                if (
                    record_id not in self.mounted
                    and record.get("location") == "ui"
                    and record.get("enabled")
                ):
                    await self._open(record)
            return sorted(self.mounted)

    def unload(self) -> None:
        """Close every panel now, without waiting (the page is going away, or the plugin
        unloads): Python disposes run at once (an async one is only started)."""
        for record_id, mounted in list(self.mounted.items()):
            _dispose(mounted)
            asyncio.ensure_future(self.page.close_panel(record_id))
        self.mounted.clear()

    async def _open(self, record: dict[str, Any]) -> None:
        view_id = getattr(self.page, "active_view", None)
        config = record["settings"].get("config", {})
        panel = {
            "id": record["id"],
            "name": record["name"],
            "language": record["language"],
            "config": config,
            "viewId": view_id,
        }
        if record["language"] == "javascript":
            if await self.page.open_panel({**panel, "code": record["code"]}):
                self.mounted[record["id"]] = _Mounted(record)
            return
        if not await self.page.open_panel(panel):
            return  # the page has no panel area: nothing to draw into, so nothing runs
        container = PanelContainer(self.page, record["id"])
        mounted = self.mounted[record["id"]] = _Mounted(record, container=container)
        params = {
            "container": container,
            "config": json.loads(json.dumps(config)),
            "view_id": view_id,
            "fetch_json": self._fetch_json,
        }
        try:
            dispose = load_code(record["id"], record["code"])["run"](params)
            if inspect.isawaitable(dispose):
                dispose = await dispose
        except Exception as error:
            self.page.draw_panel(record["id"], error=_failure(record, error))
            return
        if not callable(dispose):
            self.page.draw_panel(
                record["id"],
                error=(
                    f"{record['name']}: run(params) returned {type(dispose).__name__}, not a "
                    "function; return the "
                    "function that undoes what run drew (it is called when the panel goes away)."
                ),
            )
            return
        mounted.dispose = dispose

    async def _close(self, record_id: str) -> None:
        pending = _dispose(self.mounted.pop(record_id))
        if pending is not None:
            await pending
        await self.page.close_panel(record_id)

    async def _fetch_json(
        self,
        url: str,
        *,
        method: str = "GET",
        body: Any = None,
        headers: dict[str, str] | None = None,
    ) -> Any:
        """JSON from the reactor server with the user's session (root-relative URLs mean it)."""
        return await self.page.fetch_json(method, url, body, headers)


def _dispose(mounted: _Mounted) -> asyncio.Future[None] | None:
    """Run a Python panel's dispose and end its listeners; a failing dispose hurts nothing else.
    An async dispose is started; the future is returned."""
    if mounted.container is not None:
        mounted.container.listeners.dispose()
    dispose, mounted.dispose = mounted.dispose, None
    if dispose is None:
        return None
    name = mounted.record["name"]
    try:
        outcome = dispose()
    except Exception as error:
        _report(name, error)
        return None
    if not inspect.isawaitable(outcome):
        return None

    async def finish() -> None:
        try:
            await outcome
        except Exception as error:
            _report(name, error)

    return asyncio.ensure_future(finish())


def _report(name: str, error: Exception) -> None:
    print(f"The panel {name!r} failed to dispose: {type(error).__name__}: {error}")


def _failure(record: dict[str, Any], error: Exception) -> str:
    text = f"{type(error).__name__}: {error}"
    if any(word in str(error) for word in _DOM_WORDS):
        return (
            f"{record['name']} needs the page's DOM directly ({text}). Python UI plugins "
            "run in reactor's worker, where synchronous `document`/`window` access needs a "
            "cross-origin-isolated page (COOP/COEP headers), which reactor does not ask of a "
            "host page: draw through params['container'] (html, text, on) instead."
        )
    return f"{record['name']} failed to start: {text}"
