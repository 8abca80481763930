"""The rules an AI Tool record must meet before it is saved, so a mistake shows up when the
operator saves, not in a conversation with the agent.

A record: {id, name, location, language, code, settings: {tool: {description, inputSchema,
annotations: {sideEffect, timeoutMs}, maxResultBytes?}, config: {...}}, visibility: {users,
groups}, enabled}. Each refusal is a DeclarationError whose `field` is the dotted path.
"""

from __future__ import annotations

import ast
import copy
import json
import re
from typing import Any

from ..agent_tools import SIDE_EFFECTS, TOOL_NAME
from ..errors import DeclarationError, refusal
from ..schema import schema_problem

LOCATIONS = ("ai-tool", "ui")
LANGUAGES = ("python", "javascript")
TIMEOUT_MS_RANGE = (100, 120_000)
TIMEOUT_MS_DEFAULT = 20_000
RESULT_CAP_DEFAULT = 32_000
RESULT_CAP_RANGE = (256, 1_000_000)
CODE_LIMIT = 100_000
CONFIG_LIMIT = 16_000
DESCRIPTION_LIMIT = 2_000
RECORD_ID = re.compile(r"[a-z][a-z0-9-]{0,63}")
# Ids the management API routes itself; a record may not take them.
RESERVED_IDS = {"agent-tools"}
RECORD_KEYS = {"id", "name", "location", "language", "code", "settings", "visibility", "enabled"}
# Entry points by location and language: only the one the location calls for is used.
ENTRY_POINTS = {
    ("ai-tool", "python"): "invoke",
    ("ai-tool", "javascript"): "Invoke",
    ("ui", "python"): "run",
    ("ui", "javascript"): "Run",
}


def check_ai_tool_record(record: Any) -> dict[str, Any]:
    """Return the record with defaults filled, or raise DeclarationError naming field and rule."""
    if not isinstance(record, dict):
        raise _refuse(
            "?", "", record, f"a plugin record must be a JSON object, not {type(record).__name__}."
        )
    owner: str = record["id"] if isinstance(record.get("id"), str) else "?"
    unknown = sorted(set(record) - RECORD_KEYS)
    if unknown:
        raise _refuse(
            owner,
            unknown[0],
            record[unknown[0]],
            f"is not a record field; use {sorted(RECORD_KEYS)}.",
        )
    if (
        not isinstance(record.get("id"), str)
        or not RECORD_ID.fullmatch(record["id"])
        or record["id"] in RESERVED_IDS
    ):
        raise _refuse(
            owner,
            "id",
            record.get("id"),
            "must be 1 to 64 lowercase letters, digits or '-', starting with a letter (and "
            "not 'agent-tools').",
        )
    location = _one_of(owner, record, "location", LOCATIONS)
    language = _one_of(owner, record, "language", LANGUAGES, default="python")
    name = record.get("name")
    if not isinstance(name, str) or not TOOL_NAME.fullmatch(name):
        raise _refuse(
            owner,
            "name",
            name,
            f"{name!r} is not a name a model can call: use 1 to 64 letters, digits, '_' or "
            "'-', starting with a letter or '_'.",
        )
    code = record.get("code")
    if not isinstance(code, str) or not code.strip():
        raise _refuse(owner, "code", code, "must be the plugin's source code, as text.")
    if len(code.encode()) > CODE_LIMIT:
        raise _refuse(owner, "code", None, f"is larger than {CODE_LIMIT} bytes.")
    entry = ENTRY_POINTS[(location, language)]
    _check_entry_point(owner, code, language, entry)

    settings = record.get("settings", {})
    if not isinstance(settings, dict):
        raise _refuse(owner, "settings", settings, "must be an object with `tool` and `config`.")
    unknown = sorted(set(settings) - {"tool", "config"})
    if unknown:
        raise _refuse(
            owner,
            f"settings.{unknown[0]}",
            settings[unknown[0]],
            "is not a settings field; use tool and config.",
        )
    config = settings.get("config", {})
    if not isinstance(config, dict):
        raise _refuse(owner, "settings.config", config, "must be an object of per-account values.")
    if len(json.dumps(config)) > CONFIG_LIMIT:
        raise _refuse(
            owner, "settings.config", None, f"is larger than {CONFIG_LIMIT} bytes of JSON."
        )
    tool = settings.get("tool")
    if location == "ai-tool":
        if tool is None:
            raise _refuse(
                owner,
                "settings.tool",
                None,
                "is required for an AI Tool: the agent sees only the declaration, never the code.",
            )
        tool = _checked_tool(owner, tool)
    elif tool is not None:
        tool = _checked_tool(owner, tool)

    visibility = record.get("visibility", {"users": [], "groups": []})
    if not isinstance(visibility, dict) or set(visibility) - {"users", "groups"}:
        raise _refuse(owner, "visibility", visibility, 'must be {"users": [...], "groups": [...]}.')
    for key in ("users", "groups"):
        names = visibility.get(key, [])
        if not isinstance(names, list) or not all(isinstance(n, str) and n for n in names):
            raise _refuse(owner, f"visibility.{key}", names, "must be a list of names.")
    enabled = record.get("enabled", True)
    if not isinstance(enabled, bool):
        raise _refuse(owner, "enabled", enabled, "must be true or false.")
    checked_settings: dict[str, Any] = {"config": copy.deepcopy(config)}
    if tool is not None:
        checked_settings["tool"] = tool
    return {
        "id": record["id"],
        "name": name,
        "location": location,
        "language": language,
        "code": code,
        "settings": checked_settings,
        "visibility": {
            "users": list(visibility.get("users", [])),
            "groups": list(visibility.get("groups", [])),
        },
        "enabled": enabled,
    }


def _checked_tool(owner: str, tool: Any) -> dict[str, Any]:
    if not isinstance(tool, dict):
        raise _refuse(
            owner,
            "settings.tool",
            tool,
            "must be an object with description, inputSchema and annotations.",
        )
    unknown = sorted(set(tool) - {"description", "inputSchema", "annotations", "maxResultBytes"})
    if unknown:
        raise _refuse(
            owner, f"settings.tool.{unknown[0]}", tool[unknown[0]], "is not a tool field."
        )
    description = tool.get("description")
    if not isinstance(description, str) or not description.strip():
        raise _refuse(
            owner,
            "settings.tool.description",
            description,
            "must not be empty: say what the tool returns and when to use it.",
        )
    if len(description) > DESCRIPTION_LIMIT:
        raise _refuse(
            owner,
            "settings.tool.description",
            None,
            f"is longer than {DESCRIPTION_LIMIT} characters.",
        )
    schema = tool.get("inputSchema")
    problem = schema_problem(schema)
    if problem:
        raise _refuse(owner, "settings.tool.inputSchema", schema, f"is refused: {problem}.")
    annotations = tool.get("annotations", {})
    if not isinstance(annotations, dict) or set(annotations) - {"sideEffect", "timeoutMs"}:
        raise _refuse(
            owner,
            "settings.tool.annotations",
            annotations,
            "may hold only sideEffect and timeoutMs.",
        )
    side_effect = annotations.get("sideEffect", "write")
    if side_effect not in SIDE_EFFECTS:
        raise _refuse(
            owner,
            "settings.tool.annotations.sideEffect",
            side_effect,
            f"{side_effect!r} is not a side effect; use one of {', '.join(SIDE_EFFECTS)}.",
        )
    timeout = annotations.get("timeoutMs", TIMEOUT_MS_DEFAULT)
    low, high = TIMEOUT_MS_RANGE
    if isinstance(timeout, bool) or not isinstance(timeout, int) or not low <= timeout <= high:
        raise _refuse(
            owner,
            "settings.tool.annotations.timeoutMs",
            timeout,
            f"must be a whole number of milliseconds from {low} to {high}, not {timeout!r}.",
        )
    cap = tool.get("maxResultBytes", RESULT_CAP_DEFAULT)
    low, high = RESULT_CAP_RANGE
    if isinstance(cap, bool) or not isinstance(cap, int) or not low <= cap <= high:
        raise _refuse(
            owner,
            "settings.tool.maxResultBytes",
            cap,
            f"must be a whole number from {low} to {high}.",
        )
    return {
        "description": description,
        "inputSchema": copy.deepcopy(schema),
        "annotations": {"sideEffect": side_effect, "timeoutMs": timeout},
        "maxResultBytes": cap,
    }


def _check_entry_point(owner: str, code: str, language: str, entry: str) -> None:
    if language == "python":
        try:
            tree = ast.parse(code)
        except SyntaxError as error:
            where = f" at line {error.lineno}" if error.lineno else ""
            raise _refuse(
                owner, "code", None, f"has a Python syntax error{where}: {error.msg}."
            ) from None
        except (RecursionError, MemoryError):
            # Deeply nested expressions (`x+x+…`, `-----1`) exhaust the parser before any syntax
            # error.
            raise _refuse(
                owner, "code", None, "nests too deeply for Python to parse; split long expressions."
            ) from None
        defined = any(
            isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == entry
            for node in tree.body
        )
    else:
        defined = (
            re.search(rf"(?:function\s+{entry}\s*\(|\b(?:const|let|var)\s+{entry}\s*=)", code)
            is not None
        )
    if not defined:
        how = (
            f"def {entry}(args, context)"
            if language == "python"
            else f"function {entry}(args, context)"
        )
        raise _refuse(owner, "code", None, f"defines no `{entry}`: add `{how}` at the top level.")


def _one_of(
    owner: str, record: dict[str, Any], field: str, allowed: tuple[str, ...], default: str = ""
) -> str:
    value = record.get(field, default)
    if value not in allowed:
        raise _refuse(owner, field, value, f"must be one of {', '.join(allowed)}, not {value!r}.")
    return value


def _refuse(owner: str, field: str, value: Any, rule: str) -> DeclarationError:
    return refusal("Plugin", owner, field, value, rule)
