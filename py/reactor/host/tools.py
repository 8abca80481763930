"""Admitting tools: from the plugins an agent works with, exactly the tools their bundles grant.

An AgentSpec names plugins, never tools — what a plugin can do arrives from its AgentTools
bundle and follows it wherever it is mounted. The Toolbox reads the bundles live (a plugin
loaded mid-session brings its tools; one unloaded takes them away) and answers every call
with an envelope, so a model naming a tool it was not given gets an error it can read, and
nothing runs.
"""

from __future__ import annotations

import asyncio
import inspect
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from ..agent_tools import agent_tool_bundles
from ..cancellation import CancelToken
from ..errors import AbortedError
from ..errors import (
    CommandFailedError,
    CommandNotFoundError,
    CommandUnavailableError,
    DeclarationError,
    InvalidArgumentsError,
)
from .approval import side_effect_level
from ..arguments import NO_PARAMETERS, parse_tool_arguments
from ..envelope import tool_failure, tool_success
from ..errors import ToolError

HostHandler = Callable[[dict[str, Any], CancelToken], Any]
_TIMEOUT = object()


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
                f"Agent spec {name!r} lists tools; a spec names plugins, and their AgentTools bundles "
                "bring the tools. Remove `tools` and add the plugins to `plugins`.",
                owner=str(name), field="tools", value=data["tools"],
            )
        unknown = sorted(set(data) - {"name", "instructions", "plugins"})
        if unknown:
            raise DeclarationError(f"Agent spec {name!r}: {unknown[0]} is not a spec field.",
                                   owner=str(name), field=unknown[0], value=data[unknown[0]])
        plugins = data.get("plugins", [])
        if not isinstance(name, str) or not name.strip():
            raise DeclarationError(f"An agent spec needs a name, not {name!r}.", owner="?", field="name", value=name)
        if isinstance(plugins, str) or not all(isinstance(p, str) for p in plugins):
            raise DeclarationError(f"Agent spec {name!r}: plugins must be a list of plugin names.",
                                   owner=name, field="plugins", value=plugins)
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
    handler: HostHandler | None = field(default=None, compare=False)


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

    def tools(self) -> list[HostTool]:
        """The admitted tools, in bundle order; the first bundle to declare a name keeps it."""
        admitted: dict[str, HostTool] = {}
        for bundle in self._read_bundles():
            if bundle["plugin"] not in self.spec.plugins:
                continue
            for entry in bundle["commands"]:
                if entry["name"] in bundle["toolset"] and entry["name"] not in admitted:
                    admitted[entry["name"]] = self._host_tool(bundle, entry)
        return list(admitted.values())

    def prepare(self, name: Any, raw_arguments: Any) -> tuple[HostTool, dict[str, Any]] | dict[str, Any]:
        """The tool and its checked arguments, or the failure envelope that answers the call."""
        tools = {tool.name: tool for tool in self.tools()}
        tool = tools.get(name) if isinstance(name, str) else None
        if tool is None:
            callable_now = ", ".join(list(tools)[:30]) or "none"
            if any(name == e["name"] for b in self._read_bundles() for e in b["commands"]):
                return tool_failure(
                    "not_admitted",
                    f"The tool {name} is not granted to this agent, so it did not run. Tools you can call: {callable_now}.",
                )
            return tool_failure("unknown_tool", f"There is no tool named {name!r}; nothing ran. Tools you can call: {callable_now}.")
        try:
            return tool, parse_tool_arguments(tool.name, raw_arguments, tool.parameters)
        except ToolError as error:
            return tool_failure(error.code, str(error), **error.details)

    async def run(self, tool: HostTool, args: dict[str, Any], *, signal: CancelToken, timeout: float | None = None) -> dict[str, Any]:
        """Run a prepared call; every outcome, stop and timeout included, is an envelope."""
        token = signal.child()
        timer = asyncio.get_running_loop().call_later(timeout, token.abort, _TIMEOUT) if timeout else None
        try:
            token.throw_if_aborted()
            if tool.handler is not None:
                outcome = tool.handler(args, token)
            else:
                outcome = self.reactor.commands.call_command(tool.command, args)
            result = await token.race(outcome) if inspect.isawaitable(outcome) else outcome
            token.throw_if_aborted()  # a sync handler that returned after the stop is dropped too
            return tool_success(result)
        except Exception as error:
            return _failure(tool, error, token)
        finally:
            if timer is not None:
                timer.cancel()

    def _read_bundles(self) -> list[dict[str, Any]]:
        return self._bundles if self._bundles is not None else agent_tool_bundles(self.reactor)

    def _host_tool(self, bundle: dict[str, Any], entry: dict[str, Any]) -> HostTool:
        commands = self.reactor.commands
        label = commands.get_command(entry["command"]).label if commands.has_command(entry["command"]) else ""
        return HostTool(
            name=entry["name"],
            description=entry["description"],
            parameters=entry.get("parameters") or dict(NO_PARAMETERS),
            command=entry["command"],
            plugin=bundle["plugin"],
            side_effect=side_effect_level(self._side_effects.get(entry["name"], entry.get("sideEffect"))),
            title=label,
            handler=self._handlers.get(entry["name"]),
        )


def _failure(tool: HostTool, error: Exception, token: CancelToken) -> dict[str, Any]:
    cause = error.cause if isinstance(error, CommandFailedError) else error
    if isinstance(cause, AbortedError) or token.aborted:
        if token.reason is _TIMEOUT:
            return tool_failure("timeout", f"{tool.name} took too long and was stopped; its result, if any, is dropped.")
        return tool_failure("aborted", f"{tool.name} was stopped before it finished: {_said(token.reason)}")
    if isinstance(cause, ToolError):
        return tool_failure(cause.code, str(cause), **cause.details)
    if isinstance(error, InvalidArgumentsError):
        return tool_failure("invalid_arguments", str(error), problems=error.problems)
    if isinstance(error, CommandNotFoundError):
        return tool_failure("unavailable", f"{tool.name} cannot run: its command {tool.command!r} is not registered now.")
    if isinstance(error, CommandUnavailableError):
        return tool_failure("unavailable", f"{tool.name} cannot run right now: {error.reason or error}")
    message = str(error).strip() or f"{tool.name} failed with {type(error).__name__}."
    return tool_failure("failed", message)


def _said(reason: Any) -> str:
    return reason if isinstance(reason, str) else "the person stopped it."
