"""Admitting tools: from the plugins an agent works with, exactly the tools their bundles grant.

An AgentSpec names plugins, never tools — what a plugin can do arrives from its AgentTools
bundle and follows it wherever it is mounted. The Toolbox keeps its admitted tools indexed by
name, each with its compiled validator: a call finds its tool in one lookup, whether the page
has 30 tools or 10,000. The index follows the bundles (a plugin loaded mid-session brings its
tools, one unloaded takes them away, seen by the very next call) and is rebuilt only when they
change, reusing the tools of every bundle that did not. Every call is answered with an envelope,
so a model naming a tool it was not given gets an error it can read, and nothing runs.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from ..agent_tools import AgentTools, fill_summary
from ..arguments import decoded_arguments, invalid_arguments, parse_tool_arguments
from ..awaiting import is_awaitable
from ..cancellation import CancelToken
from ..commands import Settled, did_you_mean
from ..envelope import tool_failure, tool_success
from ..errors import (
    AbortedError,
    CommandFailedError,
    CommandNotFoundError,
    CommandUnavailableError,
    DeclarationError,
    InvalidArgumentsError,
    ToolError,
)
from ..json_text import copied
from ..schema import NO_ARGUMENTS, compiled_validator
from .approval import side_effect_level

HostHandler = Callable[[dict[str, Any], CancelToken], Any]
_TIMEOUT = object()
# In an AgentSpec's plugins: every plugin's bundles (the page's own callTool admits them all).
EVERY_PLUGIN = "*"


# An unknown tool's answer names every callable tool up to this many; beyond, their count.
MAX_LISTED = 100


@dataclass(frozen=True)
class AgentSpec:
    """Who the agent is and which plugins it works with. Deliberately no tools."""

    name: str
    instructions: str = ""
    plugins: tuple[str, ...] = ()

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AgentSpec:
        """Read a spec as plain data; a `tools` field is refused, since tools come from plugins."""
        name = data.get("name")
        if "tools" in data:
            raise DeclarationError(
                f"Agent spec {name!r} lists tools; a spec names plugins, and their AgentTools "
                "bundles bring the tools. Remove `tools` and add the plugins to `plugins`.",
                owner=str(name),
                field="tools",
                value=data["tools"],
            )
        unknown = sorted(set(data) - {"name", "instructions", "plugins"})
        if unknown:
            raise DeclarationError(
                f"Agent spec {name!r}: {unknown[0]} is not a spec field.",
                owner=str(name),
                field=unknown[0],
                value=data[unknown[0]],
            )
        plugins = data.get("plugins", [])
        if not isinstance(name, str) or not name.strip():
            raise DeclarationError(
                f"An agent spec needs a name, not {name!r}.", owner="?", field="name", value=name
            )
        if isinstance(plugins, str) or not all(isinstance(p, str) for p in plugins):
            raise DeclarationError(
                f"Agent spec {name!r}: plugins must be a list of plugin names.",
                owner=name,
                field="plugins",
                value=plugins,
            )
        return cls(name, data.get("instructions", ""), tuple(plugins))


@dataclass(frozen=True)
class HostTool:
    """One admitted tool: the bundle's contract, plus the host's side-effect level and handler."""

    name: str
    description: str
    parameters: dict[str, Any]
    command: str
    plugin: str
    side_effect: str = "write"
    title: str = ""
    summary: str = ""  # the bundle's line for a finished call, with {args.x} / {result.x} fields
    handler: HostHandler | None = field(default=None, compare=False)
    validator: Any = field(default=None, compare=False, repr=False)  # the parameters, compiled once
    # Its command checks the arguments as it runs (with this validator): a call that runs at
    # once leaves the check to it, and the arguments are checked once.
    checked_by_command: bool = field(default=False, compare=False, repr=False)
    # The command's question for a call (CommandOptions.confirmation): a str, or an awaitable one.
    confirmation: Callable[[dict[str, Any]], str | Awaitable[str]] | None = field(
        default=None, compare=False, repr=False
    )

    async def question(self, args: dict[str, Any]) -> str:
        """What the person is asked before a call that changes things: the command's own words
        for these arguments (awaited when its confirmation is async, as one that reads what the
        page has not loaded yet), else its label and the short arguments ("Allow Decks: Update
        Slide (id: onboarding, slide: 1)?"); never the tool's name, which is the model's word."""
        said: Any = ""
        if self.confirmation is not None:
            try:
                said = self.confirmation(args)
                if is_awaitable(said):
                    said = await said
            except Exception:  # words for a card must never fail the call
                said = ""
            if isinstance(said, str) and said.strip():
                return said.strip()
        shown = ", ".join(
            f"{key}: {value}"
            for key, value in args.items()
            if isinstance(value, (str, int, float))
            and not isinstance(value, bool)
            and len(str(value)) <= 60
        )
        what = self.title or "this change"
        return f"Allow {what}{f' ({shown})' if shown else ''}?"


class Toolbox:
    """The admitted tools of one agent, and the one way they are called."""

    def __init__(
        self,
        reactor: Any,
        spec: AgentSpec,
        *,
        bundles: Iterable[dict[str, Any]] | None = None,
        handlers: dict[str, HostHandler] | None = None,
        side_effects: dict[str, str] | None = None,
    ) -> None:
        self.reactor = reactor
        self.spec = spec
        self._bundles = None if bundles is None else list(bundles)
        self._handlers = dict(handlers or {})
        self._side_effects = dict(side_effects or {})
        self._index: dict[str, HostTool] = {}
        self._indexed_at: Any = None  # the AgentTools revision the index was built from
        self._by_bundle: dict[
            str, tuple[Any, list[HostTool]]
        ] = {}  # bundle id -> (its value, its tools)

    def tools(self) -> list[HostTool]:
        """The admitted tools, in bundle order; the first bundle to declare a name keeps it."""
        return list(self._admitted().values())

    def tool(self, name: Any) -> HostTool | None:
        """The admitted tool of that name, or None."""
        return self._admitted().get(name) if isinstance(name, str) else None

    def prepare(
        self, name: Any, raw_arguments: Any
    ) -> tuple[HostTool, dict[str, Any]] | dict[str, Any]:
        """The tool and its checked arguments, or the failure envelope that answers the call."""
        tool = self.tool(name)
        if tool is None:
            return self._unknown(name)
        try:
            return tool, parse_tool_arguments(tool.name, raw_arguments, tool.validator)
        except ToolError as error:
            return tool_failure(error.code, str(error), **error.details)

    def call(
        self, name: Any, raw_arguments: Any, *, signal: CancelToken | None = None
    ) -> dict[str, Any] | Awaitable[dict[str, Any]]:
        """Run a call as the page's own code does (no approval step): the envelope at once when
        the command's handler is synchronous (an await through the browser's event loop costs
        ten times a sync call), else an awaitable of it. Without a signal nothing can stop the
        call, and it is awaited directly: no race, no extra turns of the event loop."""
        tool = self.tool(name)
        if tool is None:
            return self._unknown(name)
        try:
            if tool.checked_by_command and tool.handler is None:
                args = decoded_arguments(tool.name, raw_arguments)
            else:
                args = parse_tool_arguments(tool.name, raw_arguments, tool.validator)
        except ToolError as error:
            return tool_failure(error.code, str(error), **error.details)
        if tool.handler is not None:
            return self.run(tool, args, signal=signal or CancelToken())
        if signal is not None and signal.aborted:
            return _failure(tool, AbortedError(signal.reason), signal)
        outcome = self.reactor.commands.execute(tool.command, args)
        if type(outcome) is Settled:
            return (
                tool_success(outcome.value)
                if outcome.error is None
                else _failure(tool, outcome.error, signal)
            )
        return self._settle(tool, outcome, signal)

    def _unknown(self, name: Any) -> dict[str, Any]:
        """The answer to a call of a tool not admitted: what the model can call instead."""
        admitted = self._admitted()
        if len(admitted) <= MAX_LISTED:
            callable_now = f"Tools you can call: {', '.join(admitted) or 'none'}."
        else:  # the model has the full list in its request already
            callable_now = (
                f"You can call {len(admitted)} tools; they are listed in this request's tools."
            )
        if any(name == e["name"] for b in self._read_bundles() for e in b["commands"]):
            return tool_failure(
                "not_admitted",
                f"The tool {name} is not granted to this agent, so it did not run. {callable_now}",
            )
        return tool_failure(
            "unknown_tool",
            f"There is no tool named {name!r}; nothing ran.{did_you_mean(name, admitted)} "
            f"{callable_now}",
        )

    async def run(
        self,
        tool: HostTool,
        args: dict[str, Any],
        *,
        signal: CancelToken,
        timeout: float | None = None,
    ) -> dict[str, Any]:
        """Run a prepared call; every outcome, stop and timeout included, is an envelope."""
        token = signal.child()
        timer = (
            asyncio.get_running_loop().call_later(timeout, token.abort, _TIMEOUT)
            if timeout
            else None
        )
        try:
            token.throw_if_aborted()
            if tool.handler is not None:
                outcome = tool.handler(args, token)
            else:
                outcome = self.reactor.commands.execute(tool.command, args)
            if type(outcome) is Settled:
                result = outcome.result()
            else:
                result = await token.race(outcome) if is_awaitable(outcome) else outcome
            token.throw_if_aborted()  # a sync handler that returned after the stop is dropped too
            return tool_success(result)
        except Exception as error:
            return _failure(tool, error, token)
        finally:
            if timer is not None:
                timer.cancel()

    async def _settle(
        self, tool: HostTool, outcome: Awaitable[Any], signal: CancelToken | None
    ) -> dict[str, Any]:
        try:
            if signal is None:
                return tool_success(await outcome)
            result = await signal.race(outcome)
            signal.throw_if_aborted()
            return tool_success(result)
        except Exception as error:
            return _failure(tool, error, signal)

    def _read_bundles(self) -> list[dict[str, Any]]:
        if self._bundles is not None:
            return self._bundles
        return [c.value for c in self.reactor.contributions.contributions(AgentTools)]

    def _admitted(self) -> dict[str, HostTool]:
        """The index by name, rebuilt when the bundles changed; an unchanged bundle keeps its
        tools."""
        revision = (
            id(self._bundles)
            if self._bundles is not None
            else self.reactor.contributions.revision(AgentTools)
        )
        if revision == self._indexed_at:
            return self._index
        every = EVERY_PLUGIN in self.spec.plugins
        index: dict[str, HostTool] = {}
        by_bundle: dict[str, tuple[Any, list[HostTool]]] = {}
        for bundle in self._read_bundles():
            if not every and bundle["plugin"] not in self.spec.plugins:
                continue
            known = self._by_bundle.get(bundle["id"])
            tools = known[1] if known and known[0] is bundle else self._bundle_tools(bundle)
            by_bundle[bundle["id"]] = (bundle, tools)
            for tool in tools:
                index.setdefault(tool.name, tool)
        self._index, self._by_bundle, self._indexed_at = index, by_bundle, revision
        return index

    def _bundle_tools(self, bundle: dict[str, Any]) -> list[HostTool]:
        granted = set(bundle["toolset"])
        return [
            self._host_tool(bundle, entry)
            for entry in bundle["commands"]
            if entry["name"] in granted
        ]

    def _host_tool(self, bundle: dict[str, Any], entry: dict[str, Any]) -> HostTool:
        """The tool of a bundle entry. Its schema is its command's: one schema, compiled once, the
        same for the tool the model sees and the command that runs."""
        commands = self.reactor.commands
        command = (
            commands.get_command(entry["command"])
            if commands.has_command(entry["command"])
            else None
        )
        own = command is not None and command.validator is not None
        declared = command.options.parameters if own else entry.get("parameters")  # type: ignore[union-attr]
        parameters = copied(declared) if declared is not None else dict(NO_ARGUMENTS)
        return HostTool(
            name=entry["name"],
            description=entry["description"],
            parameters=parameters,
            command=entry["command"],
            plugin=bundle["plugin"],
            side_effect=side_effect_level(
                self._side_effects.get(entry["name"], entry.get("sideEffect"))
            ),
            title=command.options.label if command is not None else "",
            summary=entry.get("summary", ""),
            handler=self._handlers.get(entry["name"]),
            validator=command.validator if own else compiled_validator(parameters),  # type: ignore[union-attr]
            checked_by_command=own,
            confirmation=command.options.confirmation if command is not None else None,
        )


def _failure(tool: HostTool, error: Exception, token: CancelToken | None) -> dict[str, Any]:
    cause = error.cause if isinstance(error, CommandFailedError) else error
    if token is not None and (isinstance(cause, AbortedError) or token.aborted):
        if token.reason is _TIMEOUT:
            return tool_failure(
                "timeout",
                f"{tool.name} took too long and was stopped; its result, if any, is dropped.",
            )
        return tool_failure(
            "aborted", f"{tool.name} was stopped before it finished: {_said(token.reason)}"
        )
    if isinstance(cause, ToolError):
        return tool_failure(cause.code, str(cause), **cause.details)
    if isinstance(error, InvalidArgumentsError):
        refused = invalid_arguments(tool.name, error.problems)
        return tool_failure(refused.code, str(refused), **refused.details)
    if isinstance(error, CommandNotFoundError):
        return tool_failure(
            "unavailable",
            f"{tool.name} cannot run: its command {tool.command!r} is not registered now.",
        )
    if isinstance(error, CommandUnavailableError):
        display = {"display": error.display} if error.display else {}
        return tool_failure(
            "unavailable", f"{tool.name} cannot run right now: {error.reason or error}", **display
        )
    message = str(error).strip() or f"{tool.name} failed with {type(error).__name__}."
    return tool_failure("failed", message)


def _said(reason: Any) -> str:
    return reason if isinstance(reason, str) else "the person stopped it."


# A failed call's card, for the person: the envelope's `message` is written for the model (it
# names tools, says "the person"), so the card shows the error's `display`, else one of these.
FAILURE_LINES = {
    "invalid_arguments": "The assistant's request did not fit this tool; it was told what to fix.",
    "unknown_tool": "The assistant asked for something this page does not offer.",
    "not_admitted": "The assistant asked for something it may not use here.",
    "not_permitted": "Not allowed for who is signed in.",
    "not_found": "Not found.",
    "conflict": "Someone else changed this meanwhile; nothing was overwritten.",
    "denied": "Not run: you did not allow it.",
    "unavailable": "It cannot run right now.",
    "failed": "It failed.",
    "aborted": "Stopped before it finished.",
    "timeout": "It took too long and was stopped.",
    "too_large": "Its answer was too large to pass on.",
}


def outcome_line(tool: HostTool | None, raw_arguments: Any, envelope: dict[str, Any]) -> str:
    """What a person reads on a finished call's card: the tool's own summary line, else its
    command's label and what the result says; a failure is its `display`, else FAILURE_LINES."""
    if not envelope.get("ok"):
        error = envelope.get("error", {})
        return str(
            error.get("display") or FAILURE_LINES.get(error.get("code"), FAILURE_LINES["failed"])
        )
    value = envelope.get("result")
    if tool is not None and tool.summary:
        args = raw_arguments
        if isinstance(args, str):
            try:
                args = json.loads(args)
            except ValueError:
                args = {}
        line = fill_summary(tool.summary, args, value)
        if line:
            return line
    title = (tool.title or tool.name) if tool is not None else "The tool"
    said = next(
        (
            value[key]
            for key in ("reason", "message", "note", "warning")
            if isinstance(value, dict) and isinstance(value.get(key), str) and value[key]
        ),
        "",
    )
    return f"{title}: {said}" if said else f"{title}: done."
