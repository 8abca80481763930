"""The page's calls into Python, as JSON in and out: JS holds no Python object but the worker's
one `receive` function (reactor.browser).

Pure Python: `reactor.browser` wires these functions to `window.reactor`; tests call them here.
A sync handler answers synchronously (in Pyodide an await through the browser's event loop
costs about ten times a sync call); an async one answers with an awaitable of the same JSON.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

from .agent_tools import AgentTools, BundleFeed
from .answer import NOTHING, failure_text, success_text
from .arguments import json_kind
from .awaiting import is_awaitable
from .cancellation import CancelToken
from .commands import Settled
from .disposable import Disposable, DisposableSet
from .errors import InvalidArgumentsError, ProtocolError
from .json_text import dumps, loads
from .page_plugins import Run, define_script_plugin
from .plugins import Reactor


def execute_json(reactor: Reactor, command_id: str, args: str | dict[str, Any] | None) -> Any:
    """Run a command with its arguments (an object, or its JSON text); the answer is
    `{"ok": true, "value": ...}` or `{"ok": false, "error": {...}}` (reactor.answer)."""
    try:
        if isinstance(args, str):
            args = loads(args) if args else {}
    except Exception as error:  # not JSON, or nested past Python's recursion limit
        return _failure(command_id, error)
    outcome = reactor.commands.execute(command_id, args)
    if type(outcome) is not Settled:
        return _settle(command_id, outcome)
    if outcome.error is not None:
        return _failure(command_id, outcome.error)
    return NOTHING if outcome.value is None else _success(command_id, outcome.value)


class PageTools:
    """What the page's tool calls and bundle lists keep between calls, for one reactor: its own
    Toolbox (every plugin admitted; its index of tools by name lives as long as the page,
    updated as bundles come and go) and the bundles' JSON text."""

    def __init__(self, reactor: Reactor) -> None:
        self.reactor = reactor
        self._toolbox: Any = None
        self._texts = _BundleTexts()

    @property
    def toolbox(self) -> Any:
        if self._toolbox is None:
            from .host import EVERY_PLUGIN, AgentSpec, Toolbox

            self._toolbox = Toolbox(self.reactor, AgentSpec("page", plugins=(EVERY_PLUGIN,)))
        return self._toolbox

    def call_json(self, name: str, args_json: str, signal: CancelToken | None) -> Any:
        """Call a tool by its model name as an agent would (every bundle's toolset admitted, no
        approval step: the caller is the page's own code); the answer is the tool envelope as
        JSON, at once for a synchronous command, else as an awaitable."""
        answer = self.toolbox.call(name, args_json, signal=signal)
        if is_awaitable(answer):
            return _dumped(answer)
        return dumps(answer)

    def bundles_json(self) -> str:
        """Every bundle as JSON. 10,000 tools are 4 MB, and the page lists them far more often
        than plugins come and go: the text is kept until the bundles change, and then only the
        bundles that changed are serialised again. No copy: dumps reads only."""
        cache = self._texts
        revision = self.reactor.contributions.revision(AgentTools)
        if cache.revision != revision:
            texts: dict[str, tuple[Any, str]] = {}
            for item in self.reactor.contributions.contributions(AgentTools):
                known = cache.texts.get(item.id)
                # Identity, not equality: the cache holds the value, so its id cannot be reused.
                if known is None or known[0] is not item.value:
                    known = (item.value, json.dumps(item.value))
                texts[item.id] = known
            cache.texts, cache.revision = texts, revision
            cache.joined = "[" + ",".join(text for _, text in texts.values()) + "]"
        return cache.joined


def warm_call_path(page_tools: PageTools) -> str:
    """Run a tool call's whole path once, in a reactor of its own (a command with a schema, its
    tool, the arguments checked, the envelope as JSON; a command run, the palette's listing), and
    make `page_tools`' index of tools: the
    page's first call then runs code its engine has run. WebKit compiles each WebAssembly function
    of Python the first time it runs, slowly: with this, its median first call after ready went
    from 818 to 559 ms in one A/B (6 rounds each, a busy host). It costs 1-6 ms before ready in
    Chromium, Firefox and WebKit alike (measured)."""
    from .agent_tools import define_agent_tools
    from .plugins import define_plugin

    slide = {"type": "integer", "minimum": 1}
    schema = {
        "type": "object",
        "properties": {"id": {"type": "string", "minLength": 1}, "slide": slide},
        "required": ["id"],
        "additionalProperties": False,
    }
    tools = define_agent_tools(
        id="warm-up",
        name="Warm-up",
        plugin="warm-up",
        commands=[
            {
                "name": "warm_up",
                "command": "warmUp.run",
                "description": "Warm up.",
                "parameters": schema,
            }
        ],
    )
    plugin = define_plugin(
        name="warm-up",
        register=lambda context: context.register_bundle(tools, {"warmUp.run": dict}),
    )
    warm = Reactor()
    warm.load_plugins([plugin])
    page_tools.toolbox  # noqa: B018 - made now, not at the first call
    # what a page asks at ready too: a command run (executeCommand), the palette's commands
    execute_json(warm, "warmUp.run", '{"id": "warm"}')
    find_commands_json(warm, "", 100)
    return str(PageTools(warm).call_json("warm_up", '{"id": "warm", "slide": 1}', None))


async def _dumped(answer: Any) -> str:
    return dumps(await answer)


def define_plugin_json(
    reactor: Reactor, declaration_json: str, run: Run, is_enabled: Callable[[str], bool]
) -> str:
    """Declare and load a plugin the page wrote in JavaScript (`reactor.page_plugins`); the answer
    is `{"ok": true, "value": {name, commands, tools}}`, or the refusal, with nothing registered."""
    try:
        declaration = json.loads(declaration_json)
        plugin = define_script_plugin(declaration, run, is_enabled)
        reactor.load_plugin(plugin)
    except Exception as error:
        return failure_text(error)
    # From the declaration, not by listing every command and bundle: defining plugin 1,000 must
    # cost what defining plugin 10 did.
    commands = [command["id"] for command in declaration.get("commands", [])]
    tools = [tool["name"] for tool in (declaration.get("agentTools") or {}).get("commands", [])]
    return success_text({"name": plugin.name, "commands": commands, "tools": tools})


def unload_plugin_json(reactor: Reactor, name: str) -> str:
    """Unload a plugin (and those that require it); the answer lists who went, in order."""
    try:
        return success_text(reactor.unload_plugin(name))
    except Exception as error:
        return failure_text(error)


class _BundleTexts:
    def __init__(self) -> None:
        self.revision = -1
        self.texts: dict[str, tuple[Any, str]] = {}
        self.joined = "[]"


class ChangeNotices(DisposableSet):
    """What `watch_changes` hands back: dispose it to stop watching; `covering()` is the number
    of the notice that carries every change made so far."""

    def __init__(self) -> None:
        super().__init__()
        self.posted = 0  # notices are numbered 1, 2, ...
        self.due: set[str] = set()

    def covering(self) -> int:
        return self.posted + 1 if self.due else self.posted


def watch_changes(
    reactor: Reactor, *, bundles: Callable[[str, int], object], commands: Callable[[int], object]
) -> ChangeNotices:
    """Tell the page once per burst of changes, after it: `bundles(delta_json, number)` with what
    changed in the AgentTools bundles (BundleFeed), `commands(number)` when commands came or went;
    both of one burst carry the same number. Defining a thousand plugins in a loop is then one
    notification, not a thousand lists of every tool; a definition's answer names the notice
    that covers it (`covering()`), so the page can wait for it instead of seeing a stale list."""
    feed = BundleFeed(reactor)
    feed.changes()  # the page has the list as it is now (bundles_json)
    notices = ChangeNotices()
    notices.add(Disposable(feed.close))

    def flush() -> None:
        kinds = set(notices.due)
        notices.due.clear()
        number = notices.posted + 1
        delta = None
        try:
            delta = feed.changes() if "bundles" in kinds else None
            if delta is not None:
                bundles(json.dumps(delta), number)
        finally:  # the number always goes out: a definition waiting for it must not wait forever
            notices.posted = number
            if "commands" in kinds or delta is None:
                commands(number)

    def mark(kind: str) -> None:
        if not notices.due:
            asyncio.get_event_loop().call_soon(flush)
        notices.due.add(kind)

    notices.add(
        reactor.contributions.changed.connect(lambda point: point is AgentTools and mark("bundles"))
    )
    notices.add(reactor.commands.changed.connect(lambda _: mark("commands")))
    return notices


def commands_json(reactor: Reactor) -> str:
    return json.dumps([command.describe() for command in reactor.commands.list_commands()])


def find_commands_json(reactor: Reactor, words: Any, limit: Any, include: Any = ()) -> str:
    """The first `limit` commands whose id or label holds `words` (any case), and those of
    `include` that match too, described; and how many match in all: `{"commands", "matching"}`.
    A palette draws what it shows, at 10 commands or 10,000: only those are described."""
    if not isinstance(words, str):
        raise ProtocolError(f"The words to find must be text, not {json_kind(words)}.")
    if type(limit) is not int or limit < 0:
        raise ProtocolError(f"The limit must be a whole number of commands, not {limit!r}.")
    if not isinstance(include, (list, tuple)) or not all(isinstance(id, str) for id in include):
        kind = json_kind(include)
        raise ProtocolError(f"The commands to include must be a list of command ids, not {kind}.")
    words = words.strip().lower()
    registry = reactor.commands

    def matches(command: Any) -> bool:
        return not words or words in f"{command.id} {command.options.label or command.id}".lower()

    commands = registry.list_commands()
    if words:
        commands = [c for c in commands if matches(c)]
    found = commands[:limit]
    shown = {c.id for c in found}
    wanted = [id for id in dict.fromkeys(include) if id not in shown and registry.has_command(id)]
    found += [registry.get_command(id) for id in wanted]
    described = [c.describe() for c in found if matches(c)]
    return json.dumps({"commands": described, "matching": len(commands)})


async def _settle(command_id: str, awaitable: Any) -> str:
    try:
        result = await awaitable
    except Exception as error:
        return _failure(command_id, error)
    return _success(command_id, result)


def _success(command_id: str, value: Any) -> str:
    try:
        return success_text(value)
    except (TypeError, ValueError) as error:
        return _failure(
            command_id,
            TypeError(
                f"The command {command_id!r} answered with a value that is not JSON data: {error}."
            ),
        )


def _failure(command_id: str, error: Exception) -> str:
    if isinstance(error, json.JSONDecodeError):
        problems = [{"path": "$", "message": f"not valid JSON: {error}"}]
        sentence = f"The arguments are not valid JSON: {error}."
        error = InvalidArgumentsError(sentence, command_id=command_id, problems=problems)
    return failure_text(error, command=command_id)
