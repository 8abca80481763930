"""The reactor worker's start: the page's messages answered, the plugins loaded, `ready` told."""

from __future__ import annotations

import importlib
import json
import traceback
from typing import Any

import js  # type: ignore[import-not-found]
from pyodide.ffi import create_proxy, to_js  # type: ignore[import-not-found]

from ..awaiting import started
from ..cancellation import CancelToken
from ..errors import CommandUnavailableError, PageError, PageScriptError
from ..http import Preloaded
from ..messages import CALLS, VERSION
from ..protocol import Raw, WorkerEndpoint
from .agent_calls import AgentCalls
from .ai_tools import WorkerRunner
from .chat import serve_chat
from .server_link import ServerLink
from .worker_page import WorkerPage


def _import_plugin(spec: str) -> Any:
    module, _, attribute = spec.partition(":")
    return getattr(importlib.import_module(module), attribute)


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
    from ..facade import (
        PageTools,
        commands_json,
        define_plugin_json,
        execute_json,
        find_commands_json,
        unload_plugin_json,
        warm_call_path,
        watch_changes,
    )
    from ..page_plugins import python_page_plugin
    from ..plugins import Reactor

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
        serve_chat(
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
