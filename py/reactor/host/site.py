"""The site's own model, behind the reactor server (reactor.server.gateway).

The page talks to it through its own origin in the provider's wire format, with the provider's
adapter and no key: the server adds the key and relays the answer as it streams. The gateway
writes every refusal as a sentence for the person (signed out, an allowance used, the provider's
failures), so those are shown as they come; what only the page can see (this site unreachable,
the connection dropping mid-answer) is worded here.

A request names the conversation it answers (`thread()`, the signed-in person's kept thread):
the server then keeps the reply while it streams, so a page reloaded mid-answer re-attaches to
it (`reattaching`: the next request reads the kept reply instead of asking anew), and Stop tells
the server to close the provider's request (the page leaving does not).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from ..cancellation import CancelToken
from ..errors import AbortedError
from .anthropic import AnthropicModel
from .errors import ProviderError
from .model import ModelRequest, ModelTurn
from .openai import OpenAIChatModel
from .transport import Send

PROVIDER = "this site's assistant"


class SiteModel:
    """The model the server configured, reached at `site["url"]` (what boot.json says of it)."""

    def __init__(
        self, site: dict[str, Any], send: Send, thread: Callable[[], str] = lambda: ""
    ) -> None:
        self.model = str(site["model"])
        self.label = str(site.get("label") or f"{self.model} · via this site")
        self.url = url = str(site["url"]).rstrip("/")
        self._send, self.thread = send, thread
        self.reattaching = False
        self.inner: OpenAIChatModel | AnthropicModel
        if site["provider"] == "anthropic":
            self.inner = AnthropicModel(
                base_url=url,
                model=self.model,
                send=self._kept_send,
                api_key="",
                max_tokens=int(site["maxTokens"]),
                stream=True,
            )
        else:
            self.inner = OpenAIChatModel(
                base_url=f"{url}/v1", model=self.model, send=self._kept_send, stream=True
            )
        self.inner.provider = PROVIDER

    def __repr__(self) -> str:
        return f"SiteModel(model={self.model!r})"

    async def _kept_send(
        self, method: str, url: str, headers: dict[str, str], body: str | None, **options: Any
    ) -> tuple[int, dict[str, str], str]:
        """The adapter's request, naming its thread; re-attaching, a read of the kept reply."""
        thread = self.thread()
        if thread:
            headers = {**headers, "x-reactor-thread": thread}
            if self.reattaching:
                self.reattaching = False
                headers.pop("content-type", None)
                method, url, body = "GET", f"{self.url}/streams/{thread}", None
        return await self._send(method, url, headers, body, **options)

    async def complete(self, request: ModelRequest, signal: CancelToken) -> ModelTurn:
        thread = self.thread()
        try:
            return await self.inner.complete(request, signal)
        except (AbortedError, asyncio.CancelledError):
            if thread:  # Stop: the server closes the provider's request it keeps
                asyncio.ensure_future(self._stop(thread))
            raise
        except ProviderError as error:
            raise ProviderError(
                _sentence(error),
                provider=PROVIDER,
                status=error.status,
                kind=error.kind,
                retry_after=error.retry_after,
                detail=error.detail,
            ) from None

    async def _stop(self, thread: str) -> None:
        try:
            await self._send("DELETE", f"{self.url}/streams/{thread}", {}, None)
        except Exception:  # the page goes on; the server closes it after a while
            pass


def _sentence(error: ProviderError) -> str:
    if error.kind == "cut_off":
        return (
            "The answer was cut off: the connection to this site dropped before it finished. "
            "Send your message again to retry."
        )
    if error.kind == "unreachable":
        return (
            "This site could not be reached, so its assistant cannot answer; check your "
            "connection and try again."
        )
    if error.status >= 400 or error.kind in ("server", "overloaded"):
        return error.detail or "This site's assistant could not answer; try again in a moment."
    return (
        "This site's assistant answered in a way this page cannot read; try again, or tell the "
        "site's operator."
    )
