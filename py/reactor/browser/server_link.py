"""The reactor server as the worker's plugins and chat reach it: its URL, its session cookie."""

from __future__ import annotations

import json
from typing import Any

import js  # type: ignore[import-not-found]
from pyodide.ffi import JsException, to_js  # type: ignore[import-not-found]

from ..errors import AbortedError
from ..http import Preloaded, answer_json
from .sending import browser_send


class ServerLink:
    """The reactor server as the plugins reach it. `root` is its URL ("http://127.0.0.1:8000/",
    "" for the page's own origin): root-relative URLs mean that server, also when the page
    that embeds reactor is on another origin, and its session cookie goes there, to no one else."""

    def __init__(self, root: str, preloaded: Preloaded | None = None) -> None:
        self.root = root
        self.preloaded = preloaded or Preloaded([])

    def url(self, url: str) -> str:
        """`url` resolved against the reactor server."""
        return str(js.URL.new(url, self.root).href) if self.root else url

    def owns(self, url: str) -> bool:
        """Whether `url` (resolved) is on the reactor server's origin."""
        return str(js.URL.new(url).origin) == str(js.URL.new(self.root).origin)

    async def fetch_json(
        self,
        url: str,
        *,
        method: str = "GET",
        body: Any = None,
        headers: dict[str, str],
        signal: Any = None,
    ) -> Any:
        early = self.preloaded.take(method, url, body, headers, signal)
        if early is not None:
            return answer_json(*early)
        url = self.url(url)
        own = bool(self.root) and self.owns(url)
        options: dict[str, Any] = {
            "method": method,
            "credentials": "include" if own else "same-origin",
            "headers": {"content-type": "application/json", **headers},
        }
        if body is not None:
            options["body"] = json.dumps(body)
        if signal is not None:
            options["signal"] = signal.js
        try:
            response = await js.fetch(url, to_js(options, dict_converter=js.Object.fromEntries))
            text = await response.text()
        except JsException as error:
            if signal is not None and signal.aborted:
                raise AbortedError(signal.reason) from None
            raise ConnectionError(f"The server at {url} could not be reached: {error}") from None
        return answer_json(response.status, text)

    async def send(
        self, method: str, url: str, headers: dict[str, str], body: str | None, on_chunk: Any = None
    ) -> tuple[int, dict[str, str], str]:
        """browser_send to the reactor server (the site's model behind it), with its session
        cookie, as with the plugins' requests."""
        url = self.url(url)
        own = not self.root or self.owns(url)
        credentials = "include" if own else "omit"
        return await browser_send(method, url, headers, body, on_chunk, credentials=credentials)
