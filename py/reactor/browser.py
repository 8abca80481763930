"""The one module that knows it runs in a browser: it imports `js` and `pyodide`.

It runs in Web Workers, never on the page's main thread. In the reactor worker, `start` answers
the page's messages (reactor.protocol) and gives plugins the page services (`WorkerPage`: views,
tabs and full screen are asked of the page); AI Tool code runs in the page's tool workers
(`WorkerRunner`), and inside one of those, `run_ai_tool` runs it. Everything else in reactor is
plain Python and runs on CPython too.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import json
import traceback
from typing import Any

import js  # type: ignore[import-not-found]
from pyodide.ffi import JsException, create_once_callable, create_proxy, to_js  # type: ignore[import-not-found]

from .answer import failure_text, success_text
from .awaiting import is_awaitable, started
from .cancellation import CancelToken
from .disposable import Disposable
from .errors import (
    AbortedError,
    CommandUnavailableError,
    PageError,
    PageScriptError,
    ProtocolError,
    ToolError,
)
from .events import Emitter
from .http import Preloaded, answer_json
from .json_text import dumps
from .messages import CALLS, VERSION
from .protocol import Raw, WorkerEndpoint


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
            from .host.threads import ThreadRefused

            raise ThreadRefused(
                "This browser has no room left to keep this conversation: delete old "
                f"conversations, or sign in to keep them on this site ({error}).",
                status=507,
            ) from None

    async def remove(self, key: str) -> None:
        await self._endpoint.ask("page.storage", op="remove", key=key)


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
    """Runs AI Tool code in the page's tool worker (the page starts and terminates those); the
    signal's abort reaches it."""

    def __init__(self, endpoint: WorkerEndpoint) -> None:
        self._endpoint = endpoint

    def warm(self) -> None:
        """Have the page start a tool worker now, so the first call does not wait for its boot."""
        self._endpoint.notify("aiTool.warm")

    async def run(
        self,
        record: dict[str, Any],
        args: dict[str, Any],
        context: dict[str, Any],
        signal: CancelToken,
    ) -> Any:
        job = {
            "id": record["id"],
            "language": record["language"],
            "code": record["code"],
            "args": args,
            "config": context["config"],
            "viewId": context["view_id"],
        }
        answer = json.loads(
            await self._endpoint.ask("aiTool.run", signal=signal, job=json.dumps(job))
        )
        if answer["ok"]:
            return answer["value"]
        error = answer["error"]
        raise ToolError(
            "failed", f"{record['name']} failed: {error['message']}", type=error["type"]
        )


def run_ai_tool(job_json: str, signal: Any, server: str) -> Any:
    """Inside the tool worker: run a job's Python `invoke`, its root-relative URLs meaning the
    reactor server at `server`; the answer is JSON text."""
    return asyncio.ensure_future(
        _run_ai_tool(json.loads(job_json), JsSignal(signal), ServerLink(server))
    )


async def _run_ai_tool(job: dict[str, Any], signal: JsSignal, server: ServerLink) -> str:
    from .records.context import ToolContext
    from .records.runner import load_code

    try:
        context = ToolContext(job["config"], job["viewId"], signal, server.fetch_json)
        result = load_code(job["id"], job["code"])["invoke"](job["args"], context)
        if inspect.isawaitable(result):
            result = await result
        return success_text(result)
    except Exception as error:
        return failure_text(error)


async def browser_send(
    method: str,
    url: str,
    headers: dict[str, str],
    body: str | None,
    on_chunk: Any = None,
    *,
    credentials: str = "omit",
) -> tuple[int, dict[str, str], str]:
    """The chat host's HTTP: fetch to the provider; cancelling the task aborts the request. With
    `on_chunk`, an event stream's text goes there as it arrives (reactor.host.transport)."""
    controller = js.AbortController.new()
    options = {
        "method": method,
        "headers": headers,
        "signal": controller.signal,
        "credentials": credentials,
    }
    if body is not None:
        options["body"] = body
    try:
        response = await js.fetch(url, to_js(options, dict_converter=js.Object.fromEntries))
        answer_headers = js.Object.fromEntries(response.headers.entries()).to_py()
        answer_headers = {k.lower(): v for k, v in answer_headers.items()}
        streamed = (
            on_chunk is not None
            and response.ok
            and "text/event-stream" in answer_headers.get("content-type", "")
        )
        if not streamed:
            return response.status, answer_headers, await response.text()
        reader, decoder = response.body.getReader(), js.TextDecoder.new()
        keep = to_js({"stream": True}, dict_converter=js.Object.fromEntries)
        finished = False
        try:
            while True:
                piece = await reader.read()
                if piece.done:
                    finished = True
                    break
                on_chunk(decoder.decode(piece.value, keep))
        finally:
            if not finished:  # stopped, or a piece the host could not read: the provider stops too
                controller.abort(js.DOMException.new("The host stopped reading.", "AbortError"))
        return response.status, answer_headers, ""
    except asyncio.CancelledError:
        controller.abort(js.DOMException.new("The person pressed stop.", "AbortError"))
        raise
    except JsException as error:
        raise OSError(str(error)) from None


class AgentCalls:
    """The calls of the person's desktop agents, which come down the page's link held in this
    worker (web/agent-socket.js): run as the chat's callTool runs them (admission, validation,
    the person's approval in the page), without a hop to the page's main thread and back."""

    def __init__(self) -> None:
        self.session: Any = None  # the chat's ChatSession, made on first use (_serve_chat)
        self.running: dict[str, CancelToken] = {}

    def call(self, call_id: str, name: str, args: str) -> Any:
        """The envelope's JSON text, or (a call that waits, e.g. for the person) an awaitable of
        it; what it raises (stopped while the person was asked) is the call's failure. A tool
        the person need not approve runs as the page's own callTool runs it: at once when its
        command is synchronous (the chat's path, a coroutine with its approval step, cost twice
        the time in Pyodide)."""
        if self.session is None:
            raise ProtocolError("The page's chat is not ready yet; its agents call after it is.")
        from .host import needs_approval

        session, signal = self.session(), CancelToken()
        tool = session.toolbox.tool(name)
        if tool is not None and not needs_approval(tool.side_effect):
            outcome = session.toolbox.call(name, args, signal=signal)
            if not is_awaitable(outcome):
                return dumps(outcome)
            task = started(outcome)
        else:
            task = started(session.call_tool(name, args, signal))
        if task.done():
            return dumps(task.result())
        self.running[call_id] = signal

        async def answer() -> str:
            try:
                return dumps(await task)
            finally:
                self.running.pop(call_id, None)

        return started(answer())

    def cancel(self, call_id: str, reason: str) -> None:
        """The agent stopped the call, or the link went: it stops (its question is withdrawn)."""
        signal = self.running.pop(call_id, None)
        if signal is not None:
            signal.abort(reason)


def _serve_chat(
    endpoint: WorkerEndpoint,
    reactor: Any,
    agent: dict[str, Any],
    assistant: dict[str, Any],
    server: ServerLink,
    agent_calls: AgentCalls,
) -> None:
    """The chat widget's requests: a ChatSession whose events and approvals cross as messages.

    The host is imported and the session made on first use, not at boot: tools are ready sooner."""
    sessions: list[Any] = []
    conversations: list[Any] = []

    def session() -> Any:
        if not sessions:
            from .host import AgentSpec, ChatSession, HostEvent
            from .host.conversations import Conversations
            from .host.threads import LocalThreads, ServerThreads

            async def approve(request: Any) -> str:
                return str(
                    await endpoint.ask(
                        "chat.approve",
                        request={
                            "callId": request.call_id,
                            "tool": request.tool,
                            "description": request.description,
                            "arguments": request.arguments,
                            "sideEffect": request.side_effect,
                            "question": request.question or question(request),
                        },
                    )
                )

            def question(request: Any) -> str:
                """WebMCP's calls are asked without the loop: the same words, from the tool."""
                tool = sessions[0].toolbox.tool(request.tool) if sessions else None
                return str(tool.question(request.arguments)) if tool is not None else ""

            def on_event(event: HostEvent) -> None:
                endpoint.notify("chat.event", event={"type": event.type, **event.data})

            sessions.append(
                ChatSession(
                    reactor,
                    AgentSpec.from_dict(agent),
                    send=browser_send,
                    approve=approve,
                    on_event=on_event,
                    site=assistant.get("site"),
                    site_send=server.send,
                    keys=assistant.get("browserKeys", True),
                )
            )

            async def fetch(method: str, url: str, body: Any = None) -> Any:
                return await server.fetch_json(url, method=method, body=body, headers={})

            conversations.append(
                Conversations(
                    sessions[0],
                    server=ServerThreads(fetch),
                    local=LocalThreads(PageStorage(endpoint)),
                )
            )
        return sessions[0]

    def chats() -> Any:
        session()
        return conversations[0]

    chosen = False  # whether a model was chosen in this page (by the person or the page's code)

    def configure(message: dict[str, Any], signal: CancelToken) -> dict[str, Any]:
        """Choose the chat's model; with `unlessChosen` (the widget's first choice), a model chosen
        already stays, and is described. `chosen` in the answer: this call chose. Settings that
        cannot be used raise SettingsError: the page's call rejects with its sentence."""
        nonlocal chosen
        chat = session()
        keep = bool(message.get("unlessChosen")) and chosen
        label = chat.label if keep else chat.configure(message["settings"])
        chosen = chosen or not message.get("unlessChosen")
        return {
            "chosen": not keep,
            "label": label,
            "examples": chat.examples,
            "provider": chat.provider,
            "providers": chat.providers,
        }

    def tools(message: dict[str, Any], signal: CancelToken) -> list[dict[str, Any]]:
        from .host import tool_annotations

        return [
            {
                "name": t.name,
                "title": t.title,
                "description": t.description,
                "inputSchema": t.parameters,
                "annotations": tool_annotations(t.side_effect),
            }
            for t in session().toolbox.tools()
        ]

    def stop(message: dict[str, Any], signal: CancelToken) -> None:
        if sessions:
            sessions[0].stop()

    endpoint.handle("chat.configure", configure)
    endpoint.handle("chat.label", lambda message, signal: session().label)
    endpoint.handle("chat.send", lambda message, signal: chats().send(message["text"]))
    endpoint.handle("chat.thread", lambda message, signal: chats().handle(message))
    endpoint.handle("chat.resume", lambda message, signal: chats().resume())
    endpoint.handle("chat.tools", tools)
    endpoint.handle(
        "chat.callTool",
        lambda message, signal: session().call_tool(message["name"], message["args"], signal),
    )
    endpoint.handle("chat.stop", stop)
    agent_calls.session = session


def _import_plugin(spec: str) -> Any:
    module, _, attribute = spec.partition(":")
    return getattr(importlib.import_module(module), attribute)


def _reason(signal: Any) -> str:
    return getattr(signal.reason, "message", None) or str(signal.reason)


def restored() -> None:
    """After Pyodide came from the server's memory snapshot (web/pyodide-boot.js): what Python
    drew or read at its start was drawn where the snapshot was made. `random` is reseeded, so
    pages do not share its numbers, and `time`'s zone names are this browser's."""
    import random
    import time

    random.seed()
    year = time.localtime().tm_year
    january, july = (
        time.localtime(time.mktime((year, month, 1, 12, 0, 0, 0, 0, -1))) for month in (1, 7)
    )
    standard, summer = (january, july) if january.tm_gmtoff <= july.tm_gmtoff else (july, january)
    time.timezone, time.altzone = -standard.tm_gmtoff, -summer.tm_gmtoff  # type: ignore[misc]
    time.daylight = int(standard.tm_gmtoff != summer.tm_gmtoff)  # type: ignore[misc]
    time.tzname = (standard.tm_zone, summer.tm_zone)  # type: ignore[misc]


def start(
    config_json: str, modules_at_boot: str, from_snapshot: bool = False, when_ready: Any = None
) -> Any:
    """Inside the reactor worker: answer the page's messages (the returned `take` and `takeCall`
    take them), load the plugins the server listed and the page's own Python plugins, then tell the
    page it is ready, and call `when_ready`. Plugins the page writes in JS arrive later, by
    message."""
    if from_snapshot:
        restored()
    endpoint = WorkerEndpoint(js.postMessage)
    agent_calls = AgentCalls()
    # Run now as far as it goes (to the first request it waits for), not on a later turn.
    started(
        _boot(
            endpoint,
            json.loads(config_json),
            modules_at_boot.split(","),
            from_snapshot,
            when_ready,
            agent_calls,
        )
    )
    # The worker's JavaScript takes every message with `take`, a CALLS request with `takeCall`;
    # the page's link for desktop agents, held there, runs their calls by `agentCall`. It speaks
    # the protocol's `version` from now on.
    taking = {
        "version": VERSION,
        "take": create_proxy(endpoint.take),
        "takeCall": create_proxy(endpoint.take_call),
        "calls": CALLS,
        "agentCall": create_proxy(agent_calls.call),
        "agentCancel": create_proxy(agent_calls.cancel),
    }
    return to_js(taking, dict_converter=js.Object.fromEntries)


async def _boot(
    endpoint: WorkerEndpoint,
    config: dict[str, Any],
    modules_at_boot: list[str],
    from_snapshot: bool,
    when_ready: Any,
    agent_calls: AgentCalls,
) -> None:
    from .facade import (
        PageTools,
        commands_json,
        define_plugin_json,
        execute_json,
        find_commands_json,
        unload_plugin_json,
        warm_call_path,
        watch_changes,
    )
    from .page_plugins import python_page_plugin
    from .plugins import Reactor

    try:
        server = ServerLink(config.get("server", ""), Preloaded(config.get("preloaded")))
        endpoint.notify(
            "progress",
            text="Loading plugins…",
            phase="plugins",
            at=js.performance.timeOrigin + js.performance.now(),
        )
        page = WorkerPage(endpoint, server)
        reactor = Reactor(
            services={
                "page": page,
                "ai_tool_runner": WorkerRunner(endpoint),
                **config.get("services", {}),
            }
        )
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
        endpoint.notify("progress", text="Starting plugins…")
        activation = await reactor.activate_plugins()
        failures += [str(error) for error in [*report.failed.values(), *activation.values()]]
        page_tools = PageTools(reactor)
        warm_call_path(page_tools)
        notices = watch_changes(
            reactor,
            bundles=lambda delta, number: endpoint.notify(
                "bundles.changed", delta=Raw(delta), notice=number
            ),
            commands=lambda number: endpoint.notify("commands.changed", notice=number),
        )

        def covered(answer_text: str) -> str:
            # A success's value goes with the notice that carries its changes: the page resolves
            # the call once it has that notice. A failure changed nothing.
            answer = json.loads(answer_text)
            if not answer["ok"]:
                return answer_text
            value = {"answer": answer["value"], "notice": notices.covering()}
            return json.dumps({"ok": True, "value": value})

        def define_plugin(message: dict[str, Any], signal: CancelToken) -> str:
            key = message["key"]

            async def run(command_id: str, args: dict[str, Any]) -> Any:
                # The page checks the command's isEnabled as it runs it: that reads the page's live
                # state.
                try:
                    return await endpoint.ask(
                        "pageCommand.run", key=key, command=command_id, args=args
                    )
                except PageError as error:
                    if error.name == "CommandUnavailableError":
                        raise CommandUnavailableError(
                            str(error), command_id=command_id, reason=str(error)
                        ) from None
                    raise PageScriptError(error.name, str(error)) from None

            return covered(
                define_plugin_json(reactor, message["declaration"], run, lambda command_id: True)
            )

        # These answer in JSON text, which is sent as it is: the answer's (execute, definePlugin,
        # unloadPlugin), or the value's (a tool's envelope, which a failed tool call resolves with).
        def execute(command: str, args: Any, signal: CancelToken | None) -> Any:
            return execute_json(reactor, command, args)

        def unload_plugin(message: dict[str, Any], signal: CancelToken) -> str:
            return covered(unload_plugin_json(reactor, message["name"]))

        endpoint.handle_call("execute", execute, answers=True)
        endpoint.handle_call(
            "callTool", lambda name, args, signal: page_tools.call_json(name, args, signal)
        )
        endpoint.handle("definePlugin", define_plugin, answers=True)
        endpoint.handle("unloadPlugin", unload_plugin, answers=True)
        endpoint.handle(
            "bundles", lambda message, signal: page_tools.bundles_json(), json_text=True
        )
        endpoint.handle("commands", lambda message, signal: commands_json(reactor), json_text=True)

        def find_commands(message: dict[str, Any], signal: CancelToken) -> str:
            words, include = message.get("words", ""), message.get("include", [])
            return find_commands_json(reactor, words, message.get("limit"), include)

        endpoint.handle("commands.find", find_commands, json_text=True)
        endpoint.handle(
            "diagnostics", lambda message, signal: _module_report(modules_at_boot, from_snapshot)
        )
        endpoint.handle("panel.event", page.panel_event)
        endpoint.handle("panels.unload", lambda message, signal: page.left.emit(None))
        _serve_chat(
            endpoint, reactor, config["agent"], config.get("assistant") or {}, server, agent_calls
        )
        endpoint.notify(
            "ready",
            loaded=reactor.plugins,
            failures=failures,
            bundles=Raw(page_tools.bundles_json()),
        )
        if when_ready is not None:
            when_ready()
    except Exception as error:
        endpoint.notify(
            "fail", message=f"Python failed to start: {error}", detail=traceback.format_exc()
        )
        raise


def _module_report(modules_at_boot: list[str], from_snapshot: bool) -> dict[str, Any]:
    """Whether Pyodide came from the memory snapshot, which modules this worker imported after
    Pyodide's boot, and which of them Python had to compile here (the server ships them
    compiled, server/runtime/stdlib.py): the page's start-up check."""
    import importlib.util
    import sys

    after_boot = [name for name in sys.modules if name not in set(modules_at_boot)]
    from_zip, checked, stale = [], [], []
    for name in after_boot:
        module = sys.modules[name]
        source, cached = (
            getattr(module, "__file__", None) or "",
            getattr(module, "__cached__", None),
        )
        if ".zip" in source:
            from_zip.append(name)
        elif source.endswith(".py"):
            checked.append(name)
            try:
                with open(cached, "rb") as pyc, open(source, "rb") as text:  # type: ignore[arg-type]
                    if pyc.read()[8:16] != importlib.util.source_hash(text.read()):
                        stale.append(name)
            except (OSError, TypeError):
                stale.append(name)
    return {
        "snapshot": from_snapshot,
        "stdlibFromZip": from_zip,
        "checked": checked,
        "stale": stale,
    }
