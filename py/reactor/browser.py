"""The one module that knows it runs in a browser: it imports `js` and `pyodide`.

It gives plugins the page services (`reactor.page.Page`), gives `window.reactor` its Python
half, runs AI Tool code in a Web Worker (`WorkerRunner`) and, inside that worker, runs it
(`run_ai_tool`). Everything else in reactor is plain Python and runs on CPython too.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import json
import traceback
from typing import Any

import js  # type: ignore[import-not-found]
from pyodide.ffi import JsException, create_once_callable, create_proxy, jsnull, to_js  # type: ignore[import-not-found]

from .cancellation import CancelToken
from .disposable import Disposable
from .errors import AbortedError, ToolError
from .page import HttpError


class BrowserPage:
    """`reactor.page.Page` on the real page: views, tabs, full screen and fetch."""

    def __init__(self) -> None:
        self.active_view: str | None = None

    def show(self, view: str, state: dict[str, Any]) -> None:
        self.active_view = state.get("viewId") or view
        js.window.reactor._show(view, json.dumps(state))

    def open_tab(self, url: str) -> bool:
        # Not "noopener": with it window.open always returns null, and we could not tell a block.
        opened = js.window.open(server_url(url), "_blank")
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
        return await _fetch_json(url, method=method, body=body, headers=headers or {})


# The reactor server's root URL ("http://127.0.0.1:8000/"): root-relative URLs of plugins mean
# that server, also when the page that embeds reactor is on another origin (set by `use_server`).
_server = ""


def use_server(root: str) -> None:
    """Resolve the plugins' URLs against the reactor server at `root` (the page and the tool worker)."""
    global _server
    _server = root


def server_url(url: str) -> str:
    """`url` resolved against the reactor server (unchanged before `use_server`)."""
    return str(js.URL.new(url, _server).href) if _server else url


async def _fetch_json(url: str, *, method: str = "GET", body: Any = None, headers: dict[str, str],
                      signal: Any = None) -> Any:
    url = server_url(url)
    # The reactor session cookie goes to the reactor server, wherever the page is; to no one else.
    own = bool(_server) and str(js.URL.new(url).origin) == str(js.URL.new(_server).origin)
    options: dict[str, Any] = {"method": method, "credentials": "include" if own else "same-origin",
                               "headers": {"content-type": "application/json", **headers}}
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
    if response.status >= 400:
        try:
            detail = json.loads(text).get("error", text)
        except (ValueError, AttributeError):
            detail = text[:200]
        raise HttpError(response.status, str(detail))
    return json.loads(text) if text else None


class JsSignal:
    """A JS AbortSignal as tool code reads it; hand `signal.js` to `fetch` to stop a request."""

    def __init__(self, signal: Any) -> None:
        self.js = signal

    @property
    def aborted(self) -> bool:
        return bool(self.js.aborted)

    @property
    def reason(self) -> Any:
        if not self.js.aborted:
            return None
        return _reason(self.js)

    def add_listener(self, listener: Any) -> Disposable:
        callback = create_once_callable(lambda event: listener(self.reason))
        self.js.addEventListener("abort", callback)
        return Disposable(lambda: self.js.removeEventListener("abort", callback))

    def throw_if_aborted(self) -> None:
        if self.aborted:
            raise AbortedError(self.reason)


class WorkerRunner:
    """Runs AI Tool code in the page's tool worker; the signal's abort reaches the worker."""

    async def run(self, record: dict[str, Any], args: dict[str, Any], context: dict[str, Any],
                  signal: CancelToken) -> Any:
        controller = js.AbortController.new()
        # Abort with an Error: fetch rejects with the reason, and Python cannot raise a bare string.
        listening = signal.add_listener(lambda reason: controller.abort(js.DOMException.new(str(reason), "AbortError")))
        job = {"id": record["id"], "language": record["language"], "code": record["code"], "args": args,
               "config": context["config"], "viewId": context["view_id"]}
        try:
            answer = json.loads(await js.window.reactor._runAiTool(json.dumps(job), controller.signal))
        except asyncio.CancelledError:
            # The caller stopped waiting (the person pressed Stop): tell the worker, as a timeout does.
            controller.abort(js.DOMException.new("The tool call was stopped.", "AbortError"))
            raise
        finally:
            listening.dispose()
        if answer["ok"]:
            return answer["value"]
        error = answer["error"]
        raise ToolError("failed", f"{record['name']} failed: {error['message']}", type=error["type"])


def run_ai_tool(job_json: str, signal: Any) -> Any:
    """Inside the tool worker: run a job's Python `invoke`; the answer is JSON text."""
    return asyncio.ensure_future(_run_ai_tool(json.loads(job_json), JsSignal(signal)))


async def _run_ai_tool(job: dict[str, Any], signal: JsSignal) -> str:
    from .ai_tools.context import ToolContext

    try:
        namespace: dict[str, Any] = {"__name__": f"ai_tool_{job['id'].replace('-', '_')}"}
        exec(compile(job["code"], f"<plugin {job['id']}>", "exec"), namespace)
        context = ToolContext(job["config"], job["viewId"], signal, _fetch_json)
        result = namespace["invoke"](job["args"], context)
        if inspect.isawaitable(result):
            result = await result
        return json.dumps({"ok": True, "value": result}, allow_nan=False)
    except Exception as error:
        return json.dumps({"ok": False, "error": {"type": type(error).__name__, "message": str(error)}})


async def browser_send(method: str, url: str, headers: dict[str, str], body: str | None) -> tuple[int, dict[str, str], str]:
    """The chat host's HTTP: fetch to the provider; cancelling the task aborts the request."""
    controller = js.AbortController.new()
    options = {"method": method, "headers": headers, "signal": controller.signal, "credentials": "omit"}
    if body is not None:
        options["body"] = body
    try:
        response = await js.fetch(url, to_js(options, dict_converter=js.Object.fromEntries))
        text = await response.text()
    except asyncio.CancelledError:
        controller.abort(js.DOMException.new("The person pressed stop.", "AbortError"))
        raise
    except JsException as error:
        raise OSError(str(error)) from None
    answer_headers = js.Object.fromEntries(response.headers.entries()).to_py()
    return response.status, {k.lower(): v for k, v in answer_headers.items()}, text


def _chat_api(reactor: Any, agent: dict[str, Any], facade: Any) -> dict[str, Any]:
    """The widget's Python half: a ChatSession whose events and approvals cross as JSON.

    The host is imported and the session made on first use, not at boot: tools are ready sooner."""
    sessions: list[Any] = []

    def session() -> Any:
        if not sessions:
            from .host import AgentSpec, ChatSession, HostEvent

            async def approve(request: Any) -> str:
                return str(await facade._chatApprove(json.dumps({
                    "callId": request.call_id, "tool": request.tool, "description": request.description,
                    "arguments": request.arguments, "sideEffect": request.side_effect,
                })))

            def on_event(event: HostEvent) -> None:
                facade._chatEvent(json.dumps({"type": event.type, **event.data}))

            sessions.append(ChatSession(reactor, AgentSpec.from_dict(agent), send=browser_send, approve=approve,
                                        on_event=on_event))
        return sessions[0]

    def configure(settings_json: str) -> str:
        try:
            return json.dumps({"ok": True, "label": session().configure(json.loads(settings_json))})
        except ValueError as error:
            return json.dumps({"ok": False, "error": str(error)})

    async def send(text: str) -> str:
        return json.dumps(await session().send(text))

    async def call_tool(name: str, args_json: str, signal: Any) -> str:
        return json.dumps(await session().call_tool(name, args_json, _cancel_token(signal) or CancelToken()))

    def tools() -> str:
        from .host import tool_annotations

        return json.dumps([{"name": t.name, "title": t.title, "description": t.description,
                            "inputSchema": t.parameters, "annotations": tool_annotations(t.side_effect)}
                           for t in session().toolbox.tools()])

    def stop() -> None:
        if sessions:
            sessions[0].stop()

    return {
        "label": create_proxy(lambda: session().label),
        "configure": create_proxy(configure),
        "send": create_proxy(lambda text: asyncio.ensure_future(send(text))),
        "stop": create_proxy(stop),
        "callTool": create_proxy(lambda name, args, signal: asyncio.ensure_future(call_tool(name, args, signal))),
        "tools": create_proxy(tools),
    }


def _import_plugin(spec: str) -> Any:
    module, _, attribute = spec.partition(":")
    return getattr(importlib.import_module(module), attribute)


def _cancel_token(signal: Any) -> CancelToken | None:
    """A CancelToken that follows a JS AbortSignal (or None when JS gave none)."""
    if signal is None or signal is jsnull:
        return None
    token = CancelToken()
    if signal.aborted:
        token.abort(_reason(signal))
    else:
        signal.addEventListener("abort", create_once_callable(lambda event: token.abort(_reason(signal))))
    return token


def _reason(signal: Any) -> str:
    return getattr(signal.reason, "message", None) or str(signal.reason)


async def start() -> Any:
    """Load the plugins the server listed and the page's own Python plugins, and hand
    `window.reactor` its Python half (plugins the page writes in JS arrive through it later)."""
    from .facade import (
        bundles_json,
        call_tool_json,
        commands_json,
        define_plugin_json,
        execute_json,
        unload_plugin_json,
        watch_changes,
    )
    from .page_plugins import PageScriptError, python_page_plugin
    from .plugins import Reactor

    facade = js.window.reactor
    try:
        config = json.loads(facade._bootJson())
        use_server(config.get("server", ""))
        await facade._viewsLoaded()  # the plugins' renderers, loading while Pyodide booted
        facade._progress("Loading plugins…")
        page = BrowserPage()
        reactor = Reactor(services={"page": page, "ai_tool_runner": WorkerRunner(), **config.get("services", {})})
        plugins, failures = [], []
        for entry in config.get("plugins", []):
            try:
                plugins.append(_import_plugin(entry["plugin"]))
            except Exception as error:
                failures.append(f"Plugin {entry.get('name')!r} could not be imported: {error}")
        for script in config.get("pagePython", []):
            try:
                plugins.append(python_page_plugin(script["code"], script["source"]))
            except Exception as error:
                failures.append(str(error))
        report = reactor.load_plugins(plugins)
        facade._progress("Starting plugins…")
        activation = await reactor.activate_plugins()
        failures += [str(error) for error in [*report.failed.values(), *activation.values()]]
        watch_changes(reactor, bundles=facade._bundlesChanged, commands=facade._commandsChanged)

        def execute(command_id: str, args_json: str) -> Any:
            answer = execute_json(reactor, command_id, args_json)
            # A Future reaches JS as a thenable; a bare coroutine would not run.
            return asyncio.ensure_future(answer) if inspect.isawaitable(answer) else answer

        def call_tool(name: str, args_json: str, signal: Any) -> Any:
            answer = call_tool_json(reactor, name, args_json, _cancel_token(signal))
            return asyncio.ensure_future(answer) if inspect.isawaitable(answer) else answer

        def define_plugin(declaration_json: str, key: str) -> str:
            async def run(command_id: str, args: dict[str, Any]) -> Any:
                answer = json.loads(await facade._runPageCommand(key, command_id, json.dumps(args)))
                if answer["ok"]:
                    return answer["value"]
                raise PageScriptError(answer["error"]["type"], answer["error"]["message"])

            return define_plugin_json(reactor, declaration_json, run,
                                      lambda command_id: bool(facade._pageCommandEnabled(key, command_id)))

        api = {
            "execute": create_proxy(execute),
            "definePlugin": create_proxy(define_plugin),
            "unloadPlugin": create_proxy(lambda name: unload_plugin_json(reactor, name)),
            "bundles": create_proxy(lambda: bundles_json(reactor)),
            "commands": create_proxy(lambda: commands_json(reactor)),
            "callTool": create_proxy(call_tool),
            "chat": to_js(_chat_api(reactor, config["agent"], facade), dict_converter=js.Object.fromEntries),
        }
        facade._attach(to_js(api, dict_converter=js.Object.fromEntries),
                       json.dumps({"loaded": reactor.plugins, "failures": failures}))
        return reactor
    except Exception as error:
        facade._fail(f"Python failed to start: {error}", traceback.format_exc())
        raise
