"""Plugins written in the embedding page itself: in JavaScript, or in inline Python.

A JavaScript plugin (`window.reactor.definePlugin({...})`) arrives here as plain data: its
commands' `execute` functions stay in JS, and each becomes a Python handler that awaits
`run(command_id, args)` (the bridge carries args and result across as JSON). Its commands and
tools become one AgentTools bundle, registered as a Python plugin registers its own. An inline
Python plugin (`<script type="reactor/python">`) is code that defines `PLUGIN = define_plugin(...)`.
Both land in the one registry and obey the same rules as any plugin: `define_plugin` and
`define_agent_tools` check them, and a refusal comes before anything is registered.

Pure Python, so CPython tests declare page plugins exactly as the page does.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Awaitable, Callable
from typing import Any

from .agent_tools import AgentToolBundle, check_agent_tools
from .arguments import json_kind
from .commands import CommandOptions
from .errors import DeclarationError, PluginError, refusal
from .json_text import copied
from .plugins import Plugin, define_plugin
from .schema import schema_problem

PLUGIN_FIELDS = ("name", "description", "requires", "commands", "agentTools")
COMMAND_FIELDS = ("id", "label", "description", "parameters", "execute", "isEnabled")
# How the page describes a JS function it keeps: `typeof` of the value (web/reactor.js).
FUNCTION = "function"

Run = Callable[[str, dict[str, Any]], Awaitable[Any]]


def define_script_plugin(declaration: Any, run: Run, is_enabled: Callable[[str], bool]) -> Plugin:
    """Declare a plugin the page wrote in JavaScript; nothing runs until a Reactor loads it.

    `declaration` is {name, description?, requires?, commands: [{id, label?, description?,
    parameters?, execute: "function", isEnabled?: "function"}], agentTools?: bundle}. It becomes
    one AgentTools bundle, registered as any plugin's: a command with a tool is declared by its
    tool (its description and parameters are the tool's), the others as commands that are no tool.
    """
    if not isinstance(declaration, dict):
        raise DeclarationError(
            f"A plugin must be an object, not {json_kind(declaration)}.", owner="?", field=""
        )
    name = declaration.get("name")
    if not isinstance(name, str) or not name.strip():
        raise PluginError(f"A plugin needs a non-empty name, not {name!r}.", plugin=str(name))

    def refuse(field: str, value: Any, rule: str) -> DeclarationError:
        return refusal("Plugin", name, field, value, rule)

    unknown = sorted(set(declaration) - set(PLUGIN_FIELDS))
    if unknown:
        raise refuse(
            unknown[0],
            declaration[unknown[0]],
            f"is not a plugin field; use {list(PLUGIN_FIELDS)}.",
        )
    description = declaration.get("description", "")
    if not isinstance(description, str):
        raise refuse("description", description, "must be a string.")
    requires = declaration.get("requires", [])
    if not isinstance(requires, list) or not all(isinstance(r, str) and r for r in requires):
        raise refuse("requires", requires, "must be an array of plugin names.")
    commands = _checked_commands(declaration.get("commands", []), refuse)
    bundle = _bundle(name, declaration.get("agentTools"), commands, refuse)
    handlers = {
        command["id"]: CommandOptions(
            _handler(run, command["id"]),
            is_enabled=_asking(is_enabled, command["id"]) if command["isEnabled"] else None,
        )
        for command in commands
    }

    def register(context: Any) -> None:
        context.register_bundle(bundle, handlers)

    return define_plugin(name=name, description=description, requires=requires, register=register)


def _bundle(
    plugin: str,
    tools: Any,
    commands: list[dict[str, Any]],
    refuse: Callable[[str, Any, str], DeclarationError],
) -> dict[str, Any]:
    """The page plugin's one declaration: its AgentTools bundle, each tool labelled as its command
    is, and the commands without a tool as the bundle's other commands."""
    if tools is None:
        tools = {"id": plugin, "name": plugin, "commands": []}
    bundle = check_agent_tools({"plugin": plugin, **tools} if isinstance(tools, dict) else tools)
    by_id = {command["id"]: command for command in commands}
    entries = []
    for index, tool in enumerate(bundle["commands"]):
        command = by_id.get(tool["command"])
        if command is None:
            rule = (
                f"calls the command {tool['command']!r}, which the plugin's commands do not "
                "define; define it there."
            )
            raise refuse(f"agentTools.commands[{index}].command", tool["command"], rule)
        for field in ("label", "description", "parameters"):
            if command[field] and field in tool:
                rule = (
                    f"of command {command['id']!r} is its tool's {tool['name']!r}: declare it "
                    "once, in agentTools."
                )
                raise refuse(f"commands[{command['index']}].{field}", command[field], rule)
        entries.append({**tool, "label": command["label"]} if command["label"] else tool)
    with_tools = {tool["command"] for tool in entries}
    others = [
        {
            "command": c["id"],
            "description": c["description"] or "",
            **({"label": c["label"]} if c["label"] else {}),
            **({"parameters": copied(c["parameters"])} if c["parameters"] else {}),
        }
        for c in commands
        if c["id"] not in with_tools
    ]
    # Every part was checked already (the tools above, the commands by _checked_commands): the
    # bundle is put together, not checked a second time.
    return AgentToolBundle({**bundle, "commands": entries, "otherCommands": others})


def _checked_commands(
    commands: Any, refuse: Callable[[str, Any, str], DeclarationError]
) -> list[dict[str, Any]]:
    if not isinstance(commands, list):
        raise refuse(
            "commands", commands, f"must be an array of commands, not {json_kind(commands)}."
        )
    checked: list[dict[str, Any]] = []
    for index, command in enumerate(commands):
        where = f"commands[{index}]"
        if not isinstance(command, dict):
            raise refuse(where, command, f"must be an object, not {json_kind(command)}.")
        unknown = sorted(set(command) - set(COMMAND_FIELDS))
        if unknown:
            raise refuse(
                f"{where}.{unknown[0]}",
                command[unknown[0]],
                f"is not a command field; use {list(COMMAND_FIELDS)}.",
            )
        command_id = command.get("id")
        if not isinstance(command_id, str) or not command_id.strip():
            raise refuse(
                f"{where}.id", command_id, f"must be a non-empty string, not {command_id!r}."
            )
        if any(c["id"] == command_id for c in checked):
            raise refuse(
                f"{where}.id",
                command_id,
                f"{command_id!r} is declared twice; command ids must be unique.",
            )
        if command.get("execute") != FUNCTION:
            raise refuse(
                f"{where}.execute",
                command.get("execute"),
                f"of command {command_id!r} must be a function, not "
                f"{command.get('execute') or 'missing'}.",
            )
        if command.get("isEnabled", FUNCTION) != FUNCTION:
            raise refuse(
                f"{where}.isEnabled",
                command["isEnabled"],
                f"of command {command_id!r} must be a function.",
            )
        for field in ("label", "description"):
            if not isinstance(command.get(field, ""), str):
                raise refuse(
                    f"{where}.{field}",
                    command[field],
                    f"of command {command_id!r} must be a string.",
                )
        if command.get("label") and not command["label"].strip():
            rule = f"of command {command_id!r} must be the words a palette shows for it."
            raise refuse(f"{where}.label", command["label"], rule)
        parameters = command.get("parameters")
        if parameters is not None and (problem := schema_problem(parameters)):
            raise refuse(
                f"{where}.parameters",
                parameters,
                f"of command {command_id!r} are refused: {problem}.",
            )
        checked.append(
            {
                "id": command_id,
                "index": index,
                "label": command.get("label", ""),
                "description": command.get("description") or None,
                "parameters": parameters,
                "isEnabled": "isEnabled" in command,
            }
        )
    return checked


def _asking(is_enabled: Callable[[str], bool], command_id: str) -> Callable[[dict[str, Any]], bool]:
    return lambda args: bool(is_enabled(command_id))


def _handler(run: Run, command_id: str) -> Callable[[dict[str, Any]], Awaitable[Any]]:
    async def handler(args: dict[str, Any]) -> Any:
        return await run(command_id, args)

    return handler


def python_page_plugin(code: str, source: str) -> Plugin:
    """Run the code of a `<script type="reactor/python">`: it must define
    `PLUGIN = define_plugin(...)`.

    The code is dedented first (it sits indented in the page's HTML); any failure is a
    PluginError naming `source` (the script's id, or its place in the page).
    """
    namespace: dict[str, Any] = {"__name__": "reactor_page_plugin_" + re.sub(r"\W", "_", source)}
    try:
        exec(compile(textwrap.dedent(code), f"<{source}>", "exec"), namespace)
    except Exception as error:
        raise PluginError(
            f"The page's Python plugin {source} failed to run: {type(error).__name__}: {error}",
            plugin=source,
        ) from error
    plugin = namespace.get("PLUGIN")
    if not isinstance(plugin, Plugin):
        raise PluginError(
            f"The page's Python plugin {source} must define PLUGIN = define_plugin(...), "
            f"not {'nothing' if plugin is None else type(plugin).__name__}.",
            plugin=source,
        )
    return plugin
