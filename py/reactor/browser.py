"""The one module that knows it runs in a browser: it imports `js` and `pyodide`.

It gives plugins the page services (`reactor.page.Page`) and gives `window.reactor` its
Python half. Everything else in reactor is plain Python and runs on CPython too.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import json
import traceback
from typing import Any

import js  # type: ignore[import-not-found]
from pyodide.ffi import JsException, create_proxy, jsnull  # type: ignore[import-not-found]
from pyodide.http import pyfetch  # type: ignore[import-not-found]

from .agent_tools import watch_agent_tool_bundles
from .facade import bundles_json, commands_json, execute_json
from .page import HttpError
from .plugins import Plugin, Reactor


class BrowserPage:
    """`reactor.page.Page` on the real page: views, tabs, full screen and fetch."""

    def show(self, view: str, state: dict[str, Any]) -> None:
        js.window.reactor._show(view, json.dumps(state))

    def open_tab(self, url: str) -> bool:
        # Not "noopener": with it window.open always returns null, and we could not tell a block.
        opened = js.window.open(url, "_blank")
        if opened is None or opened is jsnull:  # a blocked popup is JS null, which is not None
            return False
        opened.opener = None
        return True

    async def request_fullscreen(self) -> str:
        try:
            await js.document.documentElement.requestFullscreen()
        except JsException as error:
            return str(error) or "the browser refused full screen"
        return ""

    async def fetch_json(self, method: str, url: str, body: Any = None, headers: dict[str, str] | None = None) -> Any:
        options: dict[str, Any] = {"method": method, "headers": {"content-type": "application/json", **(headers or {})}}
        if body is not None:
            options["body"] = json.dumps(body)
        try:
            response = await pyfetch(url, **options)
            text = await response.string()
        except (JsException, OSError) as error:
            raise ConnectionError(f"The server at {url} could not be reached: {error}") from error
        if response.status >= 400:
            try:
                detail = json.loads(text).get("error", text)
            except (ValueError, AttributeError):
                detail = text[:200]
            raise HttpError(response.status, str(detail))
        return json.loads(text) if text else None


def _import_plugin(spec: str) -> Plugin:
    module, _, attribute = spec.partition(":")
    return getattr(importlib.import_module(module), attribute)


async def start() -> Reactor:
    """Load the plugins the server listed and hand `window.reactor` its Python half."""
    facade = js.window.reactor
    try:
        config = json.loads(facade._bootJson())
        facade._progress("Loading plugins…")
        reactor = Reactor(services={"page": BrowserPage(), **config.get("services", {})})
        plugins, failures = [], []
        for entry in config.get("plugins", []):
            try:
                plugins.append(_import_plugin(entry["plugin"]))
            except Exception as error:
                failures.append(f"Plugin {entry.get('name')!r} could not be imported: {error}")
        report = reactor.load_plugins(plugins)
        failures += [str(error) for error in report.failed.values()]
        watch_agent_tool_bundles(reactor, lambda _: facade._bundlesChanged(bundles_json(reactor)))
        reactor.commands.changed.connect(lambda _: facade._commandsChanged())
        def execute(command_id: str, args_json: str) -> Any:
            answer = execute_json(reactor, command_id, args_json)
            # A Future reaches JS as a thenable; a bare coroutine would not run.
            return asyncio.ensure_future(answer) if inspect.isawaitable(answer) else answer

        facade._attach(
            create_proxy(execute),
            create_proxy(lambda: bundles_json(reactor)),
            create_proxy(lambda: commands_json(reactor)),
            json.dumps({"loaded": report.loaded, "failures": failures}),
        )
        return reactor
    except Exception as error:
        facade._fail(f"Python failed to start: {error}", traceback.format_exc())
        raise
