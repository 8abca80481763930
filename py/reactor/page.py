"""What plugins may ask of the page they run in, and an in-memory stand-in for CPython.

Plugins never import `js`: they call these services through `reactor.services["page"]`.
`reactor.browser` implements them in the browser; `MemoryPage` implements them here, so
every plugin runs its tests on CPython. Both speak real HTTP.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import Callable
from typing import Any, Protocol

from .disposable import Disposable
from .errors import HttpError
from .events import Emitter
from .http import Send, fetch_json, urllib_send

__all__ = ["HttpError", "MemoryPage", "Page"]


class Page(Protocol):
    """The services a plugin may use. Each is safe to call from a command handler."""

    # Emitted when the person leaves the page (pagehide): what a plugin drew there goes now.
    left: Emitter[None]

    def show(self, view: str, state: dict[str, Any]) -> None:
        """Render `state` in the page's `view` (the JS renderer of that view draws it)."""

    async def open_tab(self, url: str) -> bool:
        """Open `url` in a new tab; False when the browser blocked it."""

    async def request_fullscreen(self, view: str | None = None) -> str:
        """Put `view`'s element (the whole page when None) in full screen; "" on success, else
        the browser's reason for refusing."""

    async def fetch_json(
        self, method: str, url: str, body: Any = None, headers: dict[str, str] | None = None
    ) -> Any:
        """Send JSON, return the decoded answer; HttpError on a 4xx/5xx, OSError when
        unreachable."""

    async def open_panel(self, panel: dict[str, Any]) -> bool:
        """Add a UI plugin's panel {id, name, language, config, viewId} headed by its name; with
        `code` (JavaScript) the page runs its `Run(params)` itself. False when the page has no
        panel area (an element marked `data-reactor-panels`)."""

    async def close_panel(self, panel_id: str) -> dict[str, Any]:
        """Remove a panel, running a JavaScript panel's dispose first: {"disposed": bool,
        "error"?}."""

    def draw_panel(
        self,
        panel_id: str,
        *,
        html: str | None = None,
        text: str | None = None,
        error: str | None = None,
    ) -> None:
        """Replace a panel's content with `html` (scripts and event attributes removed) or `text`,
        or show `error` in it."""

    def listen_panel(
        self,
        panel_id: str,
        event: str,
        selector: str | None,
        handler: Callable[[dict[str, Any]], Any],
    ) -> Disposable:
        """Call `handler({type, target: {id, tag, value, dataset, text}})` on each `event` in the
        panel (on an element matching `selector`, when given)."""


class MemoryPage:
    """A page without a browser: records what was shown and opened; speaks real HTTP (through
    `send`: urllib by default, or one that calls the server's app in process)."""

    def __init__(
        self,
        *,
        allow_fullscreen: bool = False,
        allow_tabs: bool = True,
        base_url: str = "",
        headers: dict[str, str] | None = None,
        send: Send = urllib_send,
    ) -> None:
        self.allow_fullscreen = allow_fullscreen
        self.allow_tabs = allow_tabs
        self.base_url = base_url
        self.headers = dict(headers or {})  # what a browser's cookies would carry: the session
        self.send = send
        self.views: dict[str, dict[str, Any]] = {}
        self.opened: list[str] = []
        self.fullscreen = False
        self.fullscreen_view: str | None = None  # whose element went full screen (None: the page)
        self.panels: dict[str, dict[str, Any]] = {}  # id -> {panel, html, text, error}
        self.closed_panels: list[str] = []
        self._listeners: dict[
            int, tuple[str, str, str | None, Callable[[dict[str, Any]], Any]]
        ] = {}
        self._listener_ids = itertools.count(1)
        self.left: Emitter[None] = Emitter()

    def show(self, view: str, state: dict[str, Any]) -> None:
        self.views[view] = json.loads(json.dumps(state))

    async def open_tab(self, url: str) -> bool:
        if self.allow_tabs:
            self.opened.append(url)
        return self.allow_tabs

    async def request_fullscreen(self, view: str | None = None) -> str:
        if not self.allow_fullscreen:
            return "Permissions check failed"
        self.fullscreen, self.fullscreen_view = True, view
        return ""

    async def fetch_json(
        self, method: str, url: str, body: Any = None, headers: dict[str, str] | None = None
    ) -> Any:
        return await fetch_json(
            self.send, method, self.base_url + url, body, {**self.headers, **(headers or {})}
        )

    async def open_panel(self, panel: dict[str, Any]) -> bool:
        self.panels[panel["id"]] = {
            "panel": json.loads(json.dumps(panel)),
            "html": None,
            "text": None,
            "error": None,
        }
        return True

    async def close_panel(self, panel_id: str) -> dict[str, Any]:
        self.panels.pop(panel_id, None)
        self.closed_panels.append(panel_id)
        return {"disposed": False}  # no JavaScript runs here

    def draw_panel(
        self,
        panel_id: str,
        *,
        html: str | None = None,
        text: str | None = None,
        error: str | None = None,
    ) -> None:
        if panel_id in self.panels:
            self.panels[panel_id].update(html=html, text=text, error=error)

    def listen_panel(
        self,
        panel_id: str,
        event: str,
        selector: str | None,
        handler: Callable[[dict[str, Any]], Any],
    ) -> Disposable:
        key = next(self._listener_ids)
        self._listeners[key] = (panel_id, event, selector, handler)
        return Disposable(lambda: self._listeners.pop(key, None))

    async def fire(self, panel_id: str, event: str, target: dict[str, Any] | None = None) -> int:
        """What a person's `event` in a panel would do: call its listeners; how many there were."""
        called = 0
        for panel, kind, _selector, handler in list(self._listeners.values()):
            if panel == panel_id and kind == event:
                called += 1
                outcome = handler({"type": event, "target": target or {}})
                if asyncio.iscoroutine(outcome):
                    await outcome
        return called
