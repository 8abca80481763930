"""AgentTools: the contribution point through which a plugin says which commands are model tools.

A bundle is plain JSON data in the seed's shape, so the page and the Python tier can read the
same file: {id, name, description, plugin, commands: [{name, command, label?, description,
parameters?, sideEffect?, summary?}], toolset, otherCommands?: [{command, label?, description?,
parameters?}]}. It is the declaration of its plugin's commands: `declared_commands` pairs each
with the handler the plugin gives, and `PluginContext.register_bundle` registers them. An entry
of `commands` is a command and the tool that calls it; `otherCommands` are commands that are
no tool (a sign-in form a model must never fill). A command declared without `parameters`
takes no arguments. `sideEffect` (none, read, write, destructive) tells a host which tools need
the person's approval; `summary` is the line a chat shows for a finished call ("Opened
‘{result.title}’ at slide {result.slide}"). A shape several commands share is written once, in
the bundle's `$defs` or a JSON file beside it, and referred to (schema_refs.py); a checked
bundle has it copied in, so each command's schema is whole. `define_agent_tools` refuses, at
declaration, anything a model provider would refuse at request time.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from .commands import CommandOptions, Handler, did_you_mean
from .contributions import ContributionPoint
from .disposable import Disposable
from .errors import DeclarationError, refusal
from .json_schema import SchemaError
from .json_text import copied
from .schema import NO_ARGUMENTS, json_path, schema_problem
from .schema_refs import bundle_resolver, file_resolver, inlined

# The tool names OpenAI, Anthropic and Gemini all accept: a letter or _, then up to 63 of
# [A-Za-z0-9_-].
TOOL_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]{0,63}")
BUNDLE_KEYS = {
    "id",
    "name",
    "description",
    "plugin",
    "commands",
    "toolset",
    "patternMessages",
    "otherCommands",
    "$defs",
}
COMMAND_KEYS = {"name", "command", "label", "description", "parameters", "sideEffect", "summary"}
OTHER_COMMAND_KEYS = {"command", "label", "description", "parameters"}
# A summary's placeholders: {args.name} or {result.a.b}, and for a list {result.items:count}
# (how many) or {result.items:names} (the first titles); nothing else may sit in braces.
SUMMARY_FIELD = re.compile(r"\{(args|result)((?:\.[A-Za-z_][A-Za-z0-9_]*)+)(?::(count|names))?\}")
NAMES_SHOWN = 3
MAX_SUMMARY = 200
Refuse = Callable[[str, Any, str], DeclarationError]
# What running a tool does to data; a host asks the person before write and destructive ones.
SIDE_EFFECTS = ("none", "read", "write", "destructive")


class AgentToolBundle(dict):  # type: ignore[type-arg]
    """A bundle `define_agent_tools` checked: plain JSON data, taken as it is by the next check
    (a plugin's bundle is checked where it is declared, not again where it is registered)."""


def define_agent_tools(
    *,
    id: str,
    name: str,
    plugin: str,
    commands: Iterable[dict[str, Any]],
    description: str = "",
    toolset: Iterable[str] | None = None,
    pattern_messages: dict[str, str] | None = None,
    other_commands: Iterable[dict[str, Any]] | None = None,
    defs: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Check a bundle and fill its bookkeeping; the toolset defaults to every tool's name.
    `pattern_messages` says, per `pattern` its schemas use, what it asks for in a person's words
    (a form shows that, never the regular expression). `other_commands` are the plugin's
    commands that are no tool. `defs` are the shapes its schemas refer to as `#/$defs/<name>`:
    copied in where they are named, so the bundle answered has none (schema_refs.py)."""
    owner = id if isinstance(id, str) and id else "?"

    def refuse(field: str, value: Any, rule: str) -> DeclarationError:
        return refusal("AgentTools bundle", owner, field, value, rule)

    for field, value in (("id", id), ("name", name), ("plugin", plugin)):
        if not isinstance(value, str) or not value.strip():
            raise refuse(field, value, f"must be a non-empty string, not {value!r}.")
    if not isinstance(description, str):
        raise refuse("description", description, "must be a string.")
    if isinstance(commands, (str, bytes, dict)) or not isinstance(commands, Iterable):
        raise refuse("commands", commands, "must be a list of tools.")
    if defs is None:
        defs = {}
    elif not isinstance(defs, dict) or not all(
        isinstance(shape, (dict, bool)) for shape in defs.values()
    ):
        raise refuse("$defs", defs, "must map each name to the JSON Schema it stands for.")

    tools: list[dict[str, Any]] = []
    declared: set[str] = set()  # the command ids
    for index, tool in enumerate(commands):
        where = f"commands[{index}]"
        _check_fields(tool, where, COMMAND_KEYS, "a tool field", refuse)
        tool_name = tool.get("name")
        if not isinstance(tool_name, str) or not TOOL_NAME.fullmatch(tool_name):
            raise refuse(
                f"{where}.name",
                tool_name,
                f"{tool_name!r} is not a name a model can call: use 1 to 64 letters, digits, "
                "'_' or '-', starting with a letter or '_' (no dots or spaces).",
            )
        if any(t["name"] == tool_name for t in tools):
            raise refuse(
                f"{where}.name",
                tool_name,
                f"{tool_name!r} is declared twice; tool names must be unique.",
            )
        command = _command_id(tool, where, f"tool {tool_name!r}", declared, refuse)
        tool_description = tool.get("description")
        if not isinstance(tool_description, str) or not tool_description.strip():
            raise refuse(
                f"{where}.description",
                tool_description,
                f"of tool {tool_name!r} must say, in a sentence, what the tool does and when "
                "to use it.",
            )
        entry: dict[str, Any] = {
            "name": tool_name,
            "command": command,
            "description": tool_description,
        }
        entry.update(_command_words(tool, where, f"tool {tool_name!r}", defs, refuse))
        if "sideEffect" in tool:
            if tool["sideEffect"] not in SIDE_EFFECTS:
                raise refuse(
                    f"{where}.sideEffect",
                    tool["sideEffect"],
                    f"of tool {tool_name!r} must be one of {', '.join(SIDE_EFFECTS)}, not "
                    f"{tool['sideEffect']!r}.",
                )
            entry["sideEffect"] = tool["sideEffect"]
        if "summary" in tool:
            summary = tool["summary"]
            if (
                not isinstance(summary, str)
                or not summary.strip()
                or len(summary) > MAX_SUMMARY
                or "{" in SUMMARY_FIELD.sub("", summary)
                or "}" in SUMMARY_FIELD.sub("", summary)
            ):
                raise refuse(
                    f"{where}.summary",
                    summary,
                    f"of tool {tool_name!r} must be a line of at most {MAX_SUMMARY} characters "
                    "whose only braces are fields such as {args.id} or {result.title}.",
                )
            entry["summary"] = summary
        tools.append(entry)

    names = [t["name"] for t in tools]
    if toolset is None:
        granted = list(names)
    elif isinstance(toolset, (str, bytes)) or not isinstance(toolset, Iterable):
        raise refuse("toolset", toolset, "must be a list of tool names.")
    else:
        granted = list(toolset)
        for tool_name in granted:
            if tool_name not in names:
                raise refuse(
                    "toolset",
                    tool_name,
                    f"names {tool_name!r}, which the bundle does not declare; it declares {names}.",
                )
        if len(set(granted)) != len(granted):
            raise refuse("toolset", granted, "names a tool twice.")
    bundle = AgentToolBundle(
        {
            "id": id,
            "name": name,
            "description": description,
            "plugin": plugin,
            "commands": tools,
            "toolset": granted,
        }
    )
    if pattern_messages is not None:
        if not isinstance(pattern_messages, dict) or not all(
            isinstance(k, str) and isinstance(v, str) and v.strip()
            for k, v in pattern_messages.items()
        ):
            raise refuse(
                "patternMessages",
                pattern_messages,
                "must map each pattern to a sentence for a person.",
            )
        bundle["patternMessages"] = dict(pattern_messages)
    if other_commands is not None:
        bundle["otherCommands"] = _other_commands(other_commands, declared, defs, refuse)
    return bundle


def _command_words(
    entry: dict[str, Any],
    where: str,
    what: str,
    defs: dict[str, Any],
    refuse: Callable[[str, Any, str], DeclarationError],
) -> dict[str, Any]:
    """The label and parameters of a command's declaration, checked; the shapes its parameters
    name in the bundle's `defs` copied in."""
    words: dict[str, Any] = {}
    if "label" in entry:
        if not isinstance(entry["label"], str) or not entry["label"].strip():
            raise refuse(
                f"{where}.label",
                entry["label"],
                f"of {what} must be the words a palette shows for it.",
            )
        words["label"] = entry["label"]
    parameters = entry.get("parameters")
    if parameters is not None:
        if defs:
            try:
                parameters = inlined(parameters, bundle_resolver(defs, parameters))
            except SchemaError as error:
                raise refuse(
                    f"{where}.parameters",
                    parameters,
                    f"of {what} are refused: {error.message} (at {json_path(error.path)}).",
                ) from None
        problem = schema_problem(parameters)
        if problem:
            raise refuse(f"{where}.parameters", parameters, f"of {what} are refused: {problem}.")
        words["parameters"] = copied(parameters)
    return words


def _check_fields(entry: Any, where: str, keys: set[str], kind: str, refuse: Refuse) -> None:
    """A tool's or another command's declaration is an object of `keys` only."""
    if not isinstance(entry, dict):
        raise refuse(where, entry, f"must be an object, not {type(entry).__name__}.")
    unknown = sorted(set(entry) - keys)
    if unknown:
        field = unknown[0]
        raise refuse(f"{where}.{field}", entry[field], f"is not {kind}; use {sorted(keys)}.")


def _command_id(
    entry: dict[str, Any],
    where: str,
    what: str,
    taken: set[str],
    refuse: Refuse,
) -> str:
    """The command a declaration names: an id declared nowhere else in the bundle (now taken)."""
    command = entry.get("command")
    if not isinstance(command, str) or not command.strip():
        of = f"of {what} " if what else ""
        raise refuse(f"{where}.command", command, f"{of}must be a command id, not {command!r}.")
    if command in taken:
        rule = f"{command!r} is declared twice; a command has one declaration."
        raise refuse(f"{where}.command", command, rule)
    taken.add(command)
    return command


def _other_commands(
    commands: Any,
    taken: set[str],
    defs: dict[str, Any],
    refuse: Callable[[str, Any, str], DeclarationError],
) -> list[dict[str, Any]]:
    if isinstance(commands, (str, bytes, dict)) or not isinstance(commands, Iterable):
        raise refuse("otherCommands", commands, "must be a list of commands.")
    checked: list[dict[str, Any]] = []
    for index, declared in enumerate(commands):
        where = f"otherCommands[{index}]"
        kind = "a field of a command without a tool"
        _check_fields(declared, where, OTHER_COMMAND_KEYS, kind, refuse)
        command = _command_id(declared, where, "", taken, refuse)
        description = declared.get("description", "")
        if not isinstance(description, str):
            raise refuse(
                f"{where}.description", description, f"of command {command!r} must be a string."
            )
        entry: dict[str, Any] = {"command": command, "description": description}
        entry.update(_command_words(declared, where, f"command {command!r}", defs, refuse))
        checked.append(entry)
    return checked


def declared_commands(
    bundle: dict[str, Any], handlers: Mapping[str, Handler | CommandOptions]
) -> list[tuple[str, CommandOptions]]:
    """Each command a checked bundle declares, with its options: the bundle's words and schema,
    the code `handlers` gives by command id (a handler, or CommandOptions saying also when it is
    enabled and what a person is asked first). A command without a handler, or a handler for no
    declared command, is refused by name, before anything is registered."""
    owner = str(bundle["id"])

    def refuse(field: str, value: Any, sentence: str) -> DeclarationError:
        return DeclarationError(
            f"AgentTools bundle {owner!r} {sentence}", owner=owner, field=field, value=value
        )

    declared = [*bundle["commands"], *bundle.get("otherCommands", ())]
    ids = [entry["command"] for entry in declared]
    if not isinstance(handlers, Mapping):
        raise refuse(
            "handlers", handlers, "needs its handlers as a mapping of command id to handler."
        )
    missing = [id for id in ids if id not in handlers]
    if missing:
        more = f" (nor for {', '.join(map(repr, missing[1:]))})" if missing[1:] else ""
        raise refuse(
            "handlers",
            missing,
            f"declares the command {missing[0]!r}, but no handler was given for it{more}.",
        )
    extra = [id for id in handlers if id not in ids]
    if extra:
        sentence = (
            f"declares no command {extra[0]!r}, yet a handler was given for "
            f"it.{did_you_mean(extra[0], ids)}"
        )
        raise refuse(
            "handlers", extra, f"{sentence} Declare it in the bundle, or drop the handler."
        )
    options = []
    for entry in declared:
        code = handlers[entry["command"]]
        if not isinstance(code, CommandOptions):
            code = CommandOptions(code)
        written = [
            field
            for field in ("label", "description", "parameters")
            if getattr(code, field) not in ("", None)
        ]
        if written:
            sentence = (
                f"declares the {written[0]} of {entry['command']!r}; its handler may not "
                "say it again."
            )
            raise refuse("handlers", entry["command"], sentence)
        parameters = entry.get("parameters", NO_ARGUMENTS)
        options.append(
            (
                entry["command"],
                code.declared(entry.get("label", ""), entry.get("description", ""), parameters),
            )
        )
    return options


def fill_summary(template: str, args: Any, result: Any) -> str | None:
    """A tool's summary line for one call, or None when a field it names is not in the call."""
    sources = {"args": args, "result": result}
    missing = False

    def value(match: re.Match[str]) -> str:
        nonlocal missing
        found = sources[match.group(1)]
        for key in match.group(2)[1:].split("."):
            if not isinstance(found, dict) or key not in found:
                missing = True
                return ""
            found = found[key]
        if match.group(3) is None:
            return found if isinstance(found, str) else json.dumps(found)
        if not isinstance(found, list):
            missing = True
            return ""
        return str(len(found)) if match.group(3) == "count" else _names(found)

    text = SUMMARY_FIELD.sub(value, template)
    return None if missing else text


def _names(items: list[Any]) -> str:
    """‘A’, ‘B’, ‘C’ and 2 more: the first items of a list by title (or name, slug, id)."""
    names = []
    for item in items[:NAMES_SHOWN]:
        if isinstance(item, dict):
            item = next(
                (item[k] for k in ("title", "name", "slug", "id") if isinstance(item.get(k), str)),
                "?",
            )
        names.append(f"‘{item}’")
    if not names:
        return "none"
    more = len(items) - len(names)
    return ", ".join(names) + (f" and {more} more" if more else "")


def check_agent_tools(bundle: Any) -> dict[str, Any]:
    """Check a bundle given as plain data (a JSON file, a contribution, a server plugin's
    return)."""
    if type(bundle) is AgentToolBundle:
        return bundle
    if not isinstance(bundle, dict):
        raise DeclarationError(
            f"An AgentTools bundle must be an object, not {type(bundle).__name__}.",
            owner="?",
            field="",
            value=bundle,
        )
    unknown = sorted(set(bundle) - BUNDLE_KEYS)
    if unknown:
        owner = str(bundle.get("id", "?"))
        raise DeclarationError(
            f"AgentTools bundle {owner!r}: {unknown[0]} is not a bundle field; use "
            f"{sorted(BUNDLE_KEYS)}.",
            owner=owner,
            field=unknown[0],
            value=bundle[unknown[0]],
        )
    return define_agent_tools(
        **{k: bundle.get(k) for k in ("id", "name", "plugin", "commands")},  # type: ignore[arg-type]  # checked inside
        description=bundle.get("description", ""),
        toolset=bundle.get("toolset"),
        pattern_messages=bundle.get("patternMessages"),
        other_commands=bundle.get("otherCommands"),
        defs=bundle.get("$defs"),
    )


def load_agent_tools(path: str | Path) -> dict[str, Any]:
    """Read and check a bundle JSON file; a broken file is refused with its name and line. Its
    `$ref`s to JSON files beside it ("deck.schema.json#/$defs/slide") are read from them."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise DeclarationError(
            f"{path.name} is not valid JSON: {error.msg} at line {error.lineno}, column "
            f"{error.colno}.",
            owner=path.name,
            field="",
            value=None,
        ) from error
    try:
        if isinstance(data, dict):
            files = file_resolver(path.parent)
            data = {key: inlined(value, files, (key,)) for key, value in data.items()}
    except SchemaError as error:
        field = json_path(error.path)[2:]
        raise DeclarationError(
            f"{path.name}: {field} is refused: {error.message}.",
            owner=path.name,
            field=field,
            value=None,
        ) from None
    return check_agent_tools(data)


AgentTools: ContributionPoint[dict[str, Any]] = ContributionPoint(
    "reactor.agentTools",
    "Bundles of commands a model may call as tools.",
    check=check_agent_tools,
)


def agent_tool_bundles(reactor: Any) -> list[dict[str, Any]]:
    """Every contributed bundle, as plain data a host can keep or serialise."""
    return copied(reactor.contributions.values(AgentTools))


def watch_agent_tool_bundles(
    reactor: Any, listener: Callable[[list[dict[str, Any]]], object]
) -> Disposable:
    """Call `listener` with the new list whenever a plugin adds or withdraws a bundle."""
    return reactor.contributions.watch(AgentTools, lambda _: listener(agent_tool_bundles(reactor)))


class BundleFeed:
    """The bundles as changes since the last read: a burst of plugin loads or unloads, read once
    after it, is one delta (the bundles added or replaced, the ids withdrawn), never the whole
    list again. It follows which bundles came or went as they do, so reading it costs what
    changed, not how many tools there are. The first read has every bundle; `close()` stops it."""

    def __init__(self, reactor: Any) -> None:
        self._reactor = reactor
        self._sent: dict[str, Any] = {}
        # Ids of the bundles that came or went since the last read, in order (a dict: no repeats).
        self._touched = dict.fromkeys(c.id for c in reactor.contributions.contributions(AgentTools))
        self._following = reactor.contributions.touched.connect(self._touch)

    def _touch(self, item: Any) -> None:
        if item.point is AgentTools:
            self._touched[item.id] = None

    def changes(self) -> dict[str, Any] | None:
        """{"added": [bundle, ...], "removed": [id, ...]} since the last call, or None for no
        change."""
        touched, self._touched = self._touched, {}
        read = self._reactor.contributions.among(AgentTools, touched)
        current = {c.id: c.value for c in read}
        sent = self._sent
        removed = [id for id in touched if id in sent and current.get(id) is not sent[id]]
        added = {id: value for id, value in current.items() if sent.get(id) is not value}
        for id in removed:
            del sent[id]
        sent.update(added)
        return {"added": list(added.values()), "removed": removed} if added or removed else None

    def close(self) -> None:
        """Stop following the bundles' changes."""
        self._following.dispose()
