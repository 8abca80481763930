"""The page's services as the reactor worker's plugins use them (`reactor.page.Page`): views, tabs,
full screen, panels and the page's localStorage are the page's, asked by message."""

from __future__ import annotations

import asyncio
import inspect
import traceback
from typing import Any

from ..cancellation import CancelToken
from ..disposable import Disposable
from ..errors import PageError
from ..events import Emitter
from ..protocol import WorkerEndpoint
from .server_link import ServerLink


class WorkerPage:
    """`reactor.page.Page` from the worker: views, tabs and full screen are the page's, asked by
    message."""

    def __init__(self, endpoint: WorkerEndpoint, server: ServerLink) -> None:
        self._endpoint = endpoint
        self._server = server
        self.active_view: str | None = None
        self._panel_listeners: dict[int, Any] = {}
        self._next_listener = 0
        self.left: Emitter[None] = Emitter()

    def show(self, view: str, state: dict[str, Any]) -> None:
        self.active_view = state.get("viewId") or view
        self._endpoint.notify("page.show", view=view, state=state)

    async def open_tab(self, url: str) -> bool:
        return bool(await self._endpoint.ask("page.openTab", url=self._server.url(url)))

    async def request_fullscreen(self, view: str | None = None) -> str:
        return str(await self._endpoint.ask("page.fullscreen", view=view))

    async def fetch_json(
        self, method: str, url: str, body: Any = None, headers: dict[str, str] | None = None
    ) -> Any:
        return await self._server.fetch_json(url, method=method, body=body, headers=headers or {})

    async def open_panel(self, panel: dict[str, Any]) -> bool:
        return bool(await self._endpoint.ask("panel.open", panel=panel))

    async def close_panel(self, panel_id: str) -> dict[str, Any]:
        return dict(await self._endpoint.ask("panel.close", panel=panel_id) or {})

    def draw_panel(
        self,
        panel_id: str,
        *,
        html: str | None = None,
        text: str | None = None,
        error: str | None = None,
    ) -> None:
        self._endpoint.notify("panel.draw", panel=panel_id, html=html, text=text, error=error)

    def listen_panel(
        self, panel_id: str, event: str, selector: str | None, handler: Any
    ) -> Disposable:
        self._next_listener += 1
        key = self._next_listener
        self._panel_listeners[key] = handler
        self._endpoint.notify(
            "panel.listen", panel=panel_id, listener=key, event=event, selector=selector
        )

        def stop() -> None:
            if self._panel_listeners.pop(key, None) is not None:
                self._endpoint.notify("panel.unlisten", panel=panel_id, listener=key)

        return Disposable(stop)

    def panel_event(self, message: dict[str, Any], signal: CancelToken) -> None:
        """The page's `panel.event` notice: a person's event for one of the listeners above."""
        handler = self._panel_listeners.get(message.get("listener"))  # type: ignore[arg-type]
        if handler is None:
            return  # the panel closed while the event was on its way
        try:
            outcome = handler(message.get("event") or {})
            if inspect.isawaitable(outcome):
                asyncio.ensure_future(outcome)
        except Exception:
            traceback.print_exc()


class PageStorage:
    """The page's localStorage (its origin's), asked of the page: a worker has none."""

    def __init__(self, endpoint: WorkerEndpoint) -> None:
        self._endpoint = endpoint

    async def get(self, key: str) -> str | None:
        value = await self._endpoint.ask("page.storage", op="get", key=key)
        return None if value is None else str(value)

    async def set(self, key: str, value: str) -> None:
        try:
            await self._endpoint.ask("page.storage", op="set", key=key, value=value)
        except PageError as error:  # QuotaExceededError: the origin's storage is full
            from ..host.threads import ThreadRefused

            raise ThreadRefused(
                "This browser has no room left to keep this conversation: delete old "
                f"conversations, or sign in to keep them on this site ({error}).",
                status=507,
            ) from None

    async def remove(self, key: str) -> None:
        await self._endpoint.ask("page.storage", op="remove", key=key)
