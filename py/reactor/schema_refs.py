"""Shapes declared once: the `$ref`s a bundle's schemas make, inlined where the bundle is read.

A bundle may name shapes in its `"$defs"` (beside `commands`) and refer to them from any
command's `parameters` as `{"$ref": "#/$defs/slide"}`, or to a JSON file beside the bundle file
as `{"$ref": "deck.schema.json#/$defs/slide"}` (a shape the plugin's other code reads too).
Both are copied in where they are named, so the schema of each command — what a model, an MCP
client, the palette's form and the validator are handed — is whole, as if written out there.
Beside a `$ref` only words may sit (`description`, `title`, …): they replace the shape's own,
which is how one shape is described for each tool. A rule beside a `$ref` would apply together
with it, which a copy cannot keep, so it is refused; so is a shape that refers to itself.
A `$ref` that names nothing of the bundle's (`#/$defs/x` of the command's own `$defs`) is left
to the validator, as before.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any, Protocol

from .json_schema import SchemaError, resolve_pointer

# What may sit beside a `$ref` that is copied in: words about the value, never a rule.
WORDS = ("title", "description", "examples", "default", "$comment", "deprecated")
# What a copied shape drops: they describe its document, which the copy leaves.
DOCUMENT_KEYS = ("$schema", "$id", "$defs", "definitions")
# Keywords whose values are data, not schemas ({"enum": [{"$ref": ...}]} is a value).
_DATA = frozenset({"enum", "const", "default", "examples"})
# Keywords whose values map names to schemas (a property may be called "enum").
_MAPS = frozenset({"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"})
# A file beside the bundle: a plain name, no folder.
SCHEMA_FILE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*\.json")
BUNDLE_DEFS = "#/$defs/"


class Resolve(Protocol):
    """What a `$ref` is, given its text and where it sits: (a key naming its target, for cycles;
    the shape it points to, not yet inlined; how that shape's own `$ref`s resolve), or None to
    leave it as it is."""

    def __call__(
        self, reference: str, path: tuple[Any, ...]
    ) -> tuple[str, Any, Resolve] | None: ...


def inlined(schema: Any, resolve: Resolve, path: tuple[Any, ...] = ()) -> Any:
    """A copy of `schema` with each `$ref` `resolve` knows replaced by what it points to;
    SchemaError (with the path in `schema`) for a reference that cannot be copied in."""
    return _inlined(schema, resolve, path, ())


def _inlined(schema: Any, resolve: Resolve, path: tuple[Any, ...], seen: tuple[str, ...]) -> Any:
    if isinstance(schema, list):
        return [_inlined(item, resolve, (*path, i), seen) for i, item in enumerate(schema)]
    if not isinstance(schema, dict):
        return schema
    reference = schema.get("$ref")
    if isinstance(reference, str):
        found = resolve(reference, path)
        if found is not None:
            key, target, inner = found
            if key in seen:
                raise SchemaError(
                    f"{reference!r} refers back to itself; a shape copied into each tool cannot "
                    "hold itself",
                    path,
                )
            whole = _inlined(target, inner, path, (*seen, key))
            return _beside(whole, {k: v for k, v in schema.items() if k != "$ref"}, reference, path)
    copied: dict[str, Any] = {}
    for key, value in schema.items():
        if key in _DATA:
            copied[key] = copy.deepcopy(value)
        elif key in _MAPS and isinstance(value, dict):
            copied[key] = {
                name: _inlined(sub, resolve, (*path, key, name), seen)
                for name, sub in value.items()
            }
        else:
            copied[key] = _inlined(value, resolve, (*path, key), seen)
    return copied


def _beside(target: Any, words: dict[str, Any], reference: str, path: tuple[Any, ...]) -> Any:
    """The shape a `$ref` points to, with the words written beside it in place of its own."""
    rules = [key for key in words if key not in WORDS]
    if rules:
        raise SchemaError(
            f"{rules[0]!r} sits beside {{'$ref': {reference!r}}}; only words "
            f"({', '.join(WORDS)}) may: write the rule into the shape it refers to, or write "
            "this schema whole",
            path,
        )
    if isinstance(target, dict):
        return {**{k: v for k, v in target.items() if k not in DOCUMENT_KEYS}, **words}
    if words:
        raise SchemaError(
            f"{reference!r} points to the schema {target!r}, which takes no words beside it",
            path,
        )
    return target


def bundle_resolver(defs: dict[str, Any], own: Any) -> Resolve:
    """How a command's schema resolves: `#/$defs/<name>` is the bundle's shape `name`, unless
    the schema (`own`) defines a `$defs` of its own under that name (refused: say it once);
    anything else is the schema's own business, left to the validator."""
    own_defs = own.get("$defs") if isinstance(own, dict) else None
    within = _defs_resolver(defs)

    def resolve(reference: str, path: tuple[Any, ...]) -> tuple[str, Any, Resolve] | None:
        _no_file(reference, path)
        name = _def_name(reference)
        if name is None or name not in defs:
            return None
        if isinstance(own_defs, dict) and name in own_defs:
            raise SchemaError(
                f"{reference!r} names a shape both the bundle's $defs and this schema's own "
                "$defs define; keep one of them",
                path,
            )
        return within(reference, path)

    return resolve


def _defs_resolver(defs: dict[str, Any]) -> Resolve:
    """Inside the bundle's `$defs`, a `$ref` may name only another of its shapes."""
    root = {"$defs": defs}

    def resolve(reference: str, path: tuple[Any, ...]) -> tuple[str, Any, Resolve] | None:
        _no_file(reference, path)
        name = _def_name(reference)
        if name is None or name not in defs:
            raise SchemaError(
                f"{reference!r} names no shape of the bundle's $defs; it has "
                f"{', '.join(sorted(defs)) or 'none'}",
                path,
            )
        try:
            return reference, resolve_pointer(root, reference), resolve
        except LookupError as error:
            raise SchemaError(f"{error} (the bundle's $defs)", path) from None

    return resolve


def _no_file(reference: str, path: tuple[Any, ...]) -> None:
    if not reference.startswith("#"):
        raise SchemaError(
            f"{reference!r} refers to a file; only a bundle read from its file "
            "(load_agent_tools) may, and the file must be beside it",
            path,
        )


def _def_name(reference: str) -> str | None:
    if not reference.startswith(BUNDLE_DEFS):
        return None
    token = reference[len(BUNDLE_DEFS) :].split("/", 1)[0]
    return token.replace("~1", "/").replace("~0", "~")


def file_resolver(folder: Path) -> Resolve:
    """How a bundle file's `$ref`s to files beside it resolve (`entry.schema.json#/properties/
    slug`, or a whole file), each file read once; a file's own `#/...` refs mean that file.
    The bundle's own `#/...` refs are left for its `$defs` (bundle_resolver)."""
    documents: dict[str, Any] = {}

    def document(name: str, path: tuple[Any, ...]) -> Any:
        if name not in documents:
            if not SCHEMA_FILE.fullmatch(name):
                raise SchemaError(
                    f"{name!r} is not a JSON file beside the bundle; refer to one by its plain "
                    "name, like 'entry.schema.json'",
                    path,
                )
            try:
                documents[name] = json.loads((folder / name).read_text(encoding="utf-8"))
            except OSError as error:
                raise SchemaError(
                    f"{name!r} could not be read beside the bundle ({error.strerror or error})",
                    path,
                ) from None
            except json.JSONDecodeError as error:
                raise SchemaError(
                    f"{name} is not valid JSON: {error.msg} at line {error.lineno}, column "
                    f"{error.colno}",
                    path,
                ) from None
        return documents[name]

    def within(name: str) -> Resolve:
        def resolve(reference: str, path: tuple[Any, ...]) -> tuple[str, Any, Resolve]:
            file, _, pointer = reference.partition("#")
            target_file = file or name
            try:
                target = resolve_pointer(document(target_file, path), f"#{pointer}")
            except LookupError as error:
                raise SchemaError(f"{error} (in {target_file})", path) from None
            return f"{target_file}#{pointer}", target, within(target_file)

        return resolve

    def resolve(reference: str, path: tuple[Any, ...]) -> tuple[str, Any, Resolve] | None:
        if reference.startswith("#"):
            return None
        return within("")(reference, path)

    return resolve
