"""JSON Schema (draft 2020-12) for tool arguments: a structure check and a validator compiled
to closures.

Why not the `jsonschema` package: importing it in the page (with `urllib.request`, attrs and
pyrsistent) took about a second of the start-up (bench/RESULTS.md), more than everything else
reactor does at boot. This module covers what tool schemas use — types, enums, numbers,
strings, arrays, objects, combinators, `if`/`then`/`else` and local `$ref` — and answers in
jsonschema's words, which models and people already know. A schema using a keyword it does
not implement (`unevaluatedProperties`, `$dynamicRef`, a remote `$ref`, …) is refused by
`check_schema`, never half-checked; unknown keywords are ignored, as the standard says.
`pattern` and `patternProperties` are read as ECMA-262 regular expressions, as the standard
says, not as Python's (`ecma_regex.py`): "^[a-z]+$" refuses "abc\\n" here, where jsonschema,
which hands them to Python's re, accepts it.
Tests compare every verdict with jsonschema on generated schemas and instances, and patterns
with Node's RegExp.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

from .ecma_regex import translate
from .errors import ReactorError

Problem = tuple[tuple[Any, ...], str]  # (path into the instance, message)
Check = Callable[[Any], list[Problem]]

TYPES = ("array", "boolean", "integer", "null", "number", "object", "string")
UNSUPPORTED = (
    "$dynamicRef",
    "$dynamicAnchor",
    "$recursiveRef",
    "$recursiveAnchor",
    "$vocabulary",
    "unevaluatedItems",
    "unevaluatedProperties",
)
MAX_DEPTH = 64  # schemas nested deeper than this are refused: no tool needs it, recursion would


class SchemaError(ReactorError, ValueError):
    """A schema reactor cannot use; `path` locates the offending keyword in the schema."""

    def __init__(self, message: str, path: tuple[Any, ...] = ()) -> None:
        super().__init__(message)
        self.message = message
        self.path = path


def is_type(instance: Any, name: str) -> bool:
    """JSON's types over Python's JSON values: a bool is not a number; 1.0 is an integer."""
    if name == "string":
        return isinstance(instance, str)
    if name == "object":
        return isinstance(instance, dict)
    if name == "array":
        return isinstance(instance, list)
    if name == "null":
        return instance is None
    if name == "boolean":
        return isinstance(instance, bool)
    if isinstance(instance, bool) or not isinstance(instance, (int, float)):
        return False
    return name == "number" or isinstance(instance, int) or instance.is_integer()


def json_equal(one: Any, other: Any) -> bool:
    """Equality as JSON means it: 1 == 1.0, but True != 1, at any depth."""
    if isinstance(one, bool) or isinstance(other, bool):
        return isinstance(one, bool) and isinstance(other, bool) and one == other
    if isinstance(one, dict) and isinstance(other, dict):
        return one.keys() == other.keys() and all(json_equal(one[key], other[key]) for key in one)
    if isinstance(one, list) and isinstance(other, list):
        return len(one) == len(other) and all(json_equal(a, b) for a, b in zip(one, other))
    if isinstance(one, (dict, list)) or isinstance(other, (dict, list)):
        return False
    return (
        type(one) is type(other)
        and one == other
        or _is_number(one)
        and _is_number(other)
        and one == other
    )


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


# --- checking a schema (what the 2020-12 metaschema checks, for the keywords we implement) ---


def check_schema(schema: Any) -> None:
    """Raise SchemaError naming the first thing wrong with `schema`."""
    _check(schema, (), schema, 0)


def _check(schema: Any, path: tuple[Any, ...], root: Any, depth: int) -> None:
    if isinstance(schema, bool):
        return
    if not isinstance(schema, dict):
        raise SchemaError(f"{schema!r} is not of type 'object', 'boolean'", path)
    if depth > MAX_DEPTH:
        raise SchemaError(f"the schema is nested more than {MAX_DEPTH} levels deep", path)
    for keyword, value in schema.items():
        here = (*path, keyword)
        if keyword in UNSUPPORTED:
            raise SchemaError(f"{keyword!r} is not supported by reactor's validator", here)
        shape = _SHAPES.get(keyword)
        if shape is not None:
            shape(value, here, root, depth)


def _schema(value: Any, path: tuple[Any, ...], root: Any, depth: int) -> None:
    _check(value, path, root, depth + 1)


def _expect(value: Any, kind: str, path: tuple[Any, ...]) -> None:
    if not is_type(value, kind):
        raise SchemaError(f"{value!r} is not of type {kind!r}", path)


def _schema_map(value: Any, path: tuple[Any, ...], root: Any, depth: int) -> None:
    _expect(value, "object", path)
    for key, sub in value.items():
        _check(sub, (*path, key), root, depth + 1)


def _pattern_map(value: Any, path: tuple[Any, ...], root: Any, depth: int) -> None:
    _schema_map(value, path, root, depth)
    for key in value:
        _regex(key, (*path, key), root, depth)


def _schema_list(value: Any, path: tuple[Any, ...], root: Any, depth: int) -> None:
    _expect(value, "array", path)
    if not value:
        raise SchemaError("[] should be non-empty", path)
    for index, sub in enumerate(value):
        _check(sub, (*path, index), root, depth + 1)


def _type(value: Any, path: tuple[Any, ...], root: Any, depth: int) -> None:
    names = value if isinstance(value, list) else [value]
    if isinstance(value, list) and not value:
        raise SchemaError("[] should be non-empty", path)
    for name in names:
        if name not in TYPES:
            raise SchemaError(f"{name!r} is not one of {list(TYPES)!r}", path)
    if len(set(names)) != len(names):
        raise SchemaError(f"{value!r} has non-unique elements", path)


def _number(value: Any, path: tuple[Any, ...], root: Any, depth: int) -> None:
    _expect(value, "number", path)


def _positive_number(value: Any, path: tuple[Any, ...], root: Any, depth: int) -> None:
    _number(value, path, root, depth)
    if value <= 0:
        raise SchemaError(f"{value!r} is less than or equal to the minimum of 0", path)


def _count(value: Any, path: tuple[Any, ...], root: Any, depth: int) -> None:
    _expect(value, "integer", path)
    if value < 0:
        raise SchemaError(f"{value!r} is less than the minimum of 0", path)


def _string(value: Any, path: tuple[Any, ...], root: Any, depth: int) -> None:
    _expect(value, "string", path)


def _regex(value: Any, path: tuple[Any, ...], root: Any, depth: int) -> None:
    _string(value, path, root, depth)
    found = translate(value)
    if isinstance(found, str):
        raise SchemaError(found, path)


def _boolean(value: Any, path: tuple[Any, ...], root: Any, depth: int) -> None:
    _expect(value, "boolean", path)


def _array(value: Any, path: tuple[Any, ...], root: Any, depth: int) -> None:
    _expect(value, "array", path)


def _names(value: Any, path: tuple[Any, ...], root: Any, depth: int) -> None:
    _array(value, path, root, depth)
    for index, name in enumerate(value):
        _string(name, (*path, index), root, depth)
    if len(set(value)) != len(value):
        raise SchemaError(f"{value!r} has non-unique elements", path)


def _names_map(value: Any, path: tuple[Any, ...], root: Any, depth: int) -> None:
    _expect(value, "object", path)
    for key, names in value.items():
        _names(names, (*path, key), root, depth)


def _reference(value: Any, path: tuple[Any, ...], root: Any, depth: int) -> None:
    _string(value, path, root, depth)
    try:
        resolve_pointer(root, value)
    except LookupError as error:
        raise SchemaError(str(error), path) from None


_SHAPES: dict[str, Callable[[Any, tuple[Any, ...], Any, int], None]] = {
    "type": _type,
    "enum": _array,
    "multipleOf": _positive_number,
    "maximum": _number,
    "exclusiveMaximum": _number,
    "minimum": _number,
    "exclusiveMinimum": _number,
    "maxLength": _count,
    "minLength": _count,
    "pattern": _regex,
    "maxItems": _count,
    "minItems": _count,
    "uniqueItems": _boolean,
    "maxContains": _count,
    "minContains": _count,
    "maxProperties": _count,
    "minProperties": _count,
    "required": _names,
    "dependentRequired": _names_map,
    "allOf": _schema_list,
    "anyOf": _schema_list,
    "oneOf": _schema_list,
    "not": _schema,
    "if": _schema,
    "then": _schema,
    "else": _schema,
    "dependentSchemas": _schema_map,
    "prefixItems": _schema_list,
    "items": _schema,
    "contains": _schema,
    "properties": _schema_map,
    "patternProperties": _pattern_map,
    "additionalProperties": _schema,
    "propertyNames": _schema,
    "$defs": _schema_map,
    "definitions": _schema_map,
    "$ref": _reference,
    "contentSchema": _schema,
    "examples": _array,
    "deprecated": _boolean,
    "readOnly": _boolean,
    "writeOnly": _boolean,
    **{
        k: _string
        for k in (
            "$schema",
            "$id",
            "$anchor",
            "$comment",
            "title",
            "description",
            "format",
            "contentEncoding",
            "contentMediaType",
        )
    },
}


def resolve_pointer(root: Any, reference: str) -> Any:
    """The subschema a local `$ref` ("#", "#/$defs/name", …) points to; LookupError otherwise."""
    if not reference.startswith("#"):
        raise LookupError(
            f'{reference!r} is not a local reference ("#/..."); reactor resolves no other'
        )
    if reference not in ("#", "#/") and not reference.startswith("#/"):
        raise LookupError(f'{reference!r}: anchors are not supported; point with "#/$defs/..."')
    target = root
    for token in reference[2:].split("/") if len(reference) > 2 else []:
        token = _percent_decoded(token).replace("~1", "/").replace("~0", "~")
        if isinstance(target, dict) and token in target:
            target = target[token]
        elif isinstance(target, list) and token.isdigit() and int(token) < len(target):
            target = target[int(token)]
        else:
            raise LookupError(f"{reference!r} points to nothing in this schema")
    if not isinstance(target, (dict, bool)):
        raise LookupError(f"{reference!r} points to {target!r}, which is not a schema")
    return target


def _percent_decoded(token: str) -> str:
    if "%" not in token:
        return token
    return re.sub(r"%([0-9A-Fa-f]{2})", lambda m: chr(int(m.group(1), 16)), token)


def ecma_regex(pattern: str) -> re.Pattern[str]:
    """The ECMA-262 `pattern` as a compiled Python regex of the same meaning (cached); search()
    it as JSON Schema does. Raises SchemaError, saying why, for a pattern it cannot honour."""
    found = translate(pattern)
    if isinstance(found, str):
        raise SchemaError(found)
    return found


# --- validating an instance ---


class Validator:
    """A checked schema compiled once; `problems(instance)` lists what is wrong, [] when valid."""

    def __init__(self, schema: Any) -> None:
        check_schema(schema)
        self.schema = schema
        self._refs: dict[str, Check] = {}
        self._check = self._compile(schema)

    def problems(self, instance: Any) -> list[Problem]:
        try:
            return self._check(instance)
        except RecursionError:
            return [((), "the value is nested too deeply to validate")]

    def is_valid(self, instance: Any) -> bool:
        return not self.problems(instance)

    def _compile(self, schema: Any) -> Check:
        if schema is True or schema == {}:
            return _no_problems
        if schema is False:
            return lambda instance: [((), f"False schema does not allow {instance!r}")]
        if (
            schema.get("type") == "object"
            and schema.keys() <= _OBJECT_SHAPE
            and schema.get("additionalProperties", False) is False
        ):
            return self._object_shape(schema)
        return self._keywords(schema)

    def _keywords(self, schema: dict[str, Any]) -> Check:
        made = (
            make(self, schema[keyword], schema)
            for keyword, make in ((k, _KEYWORDS.get(k)) for k in schema)
            if make
        )
        checks: list[Check] = [check for check in made if check is not None]
        if len(checks) == 1:
            return checks[0]

        def run(instance: Any) -> list[Problem]:
            found: list[Problem] = []
            for check in checks:
                problems = check(instance)
                if problems:
                    found += problems
            return found

        return run

    def _object_shape(self, schema: dict[str, Any]) -> Check:
        """The shape of nearly every tool's arguments: an object with properties, some required,
        maybe no others. A valid one is checked in one call (the three keywords' checks took
        three, and every tool call makes it); any other is left to those checks, for their words."""
        # A property whose schema is one type alone is checked here, by its value's exact type.
        properties = [
            (name, _exact_type(sub), self._compile(sub))
            for name, sub in schema.get("properties", {}).items()
        ]
        known = (
            frozenset(schema.get("properties", {}))
            if schema.get("additionalProperties") is False
            else None
        )
        required = tuple(schema.get("required", ()))
        keywords: Check | None = None

        def run(instance: Any) -> list[Problem]:
            nonlocal keywords
            if type(instance) is dict and (known is None or instance.keys() <= known):
                for name in required:
                    if name not in instance:
                        break
                else:
                    for name, exact, check in properties:
                        if (
                            name in instance
                            and type(instance[name]) not in exact
                            and check(instance[name])
                        ):
                            break
                    else:
                        return []
            if keywords is None:
                keywords = self._keywords(schema)
            return keywords(instance)

        return run

    def _reference(self, reference: str) -> Check:
        # Compiled on first use, so a schema may refer to itself.
        def run(instance: Any) -> list[Problem]:
            check = self._refs.get(reference)
            if check is None:
                check = self._refs[reference] = self._compile(
                    resolve_pointer(self.schema, reference)
                )
            return check(instance)

        return run


def _no_problems(instance: Any) -> list[Problem]:
    return []


def _under(key: Any, problems: list[Problem]) -> list[Problem]:
    return [((key, *path), message) for path, message in problems]


# The keywords that check nothing, and those Validator._object_shape checks in one call.
_ANNOTATIONS = frozenset({"title", "description", "default", "examples", "$comment"})
_OBJECT_SHAPE = _ANNOTATIONS | {"type", "properties", "required", "additionalProperties", "$defs"}

# A one-type check by the value's exact type first: the test every call of a tool makes.
_EXACT_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "object": (dict,),
    "array": (list,),
    "boolean": (bool,),
    "integer": (int,),
    "number": (int, float),
}


def _exact_type(schema: Any) -> tuple[type, ...]:
    """The Python types that surely pass `schema` when it checks one type and nothing else; () if
    not so simple."""
    if (
        isinstance(schema, dict)
        and schema.keys() <= _ANNOTATIONS | {"type"}
        and isinstance(schema.get("type"), str)
    ):
        return _EXACT_TYPES.get(schema["type"], ())
    return ()


def _type_check(v: Validator, value: Any, schema: dict[str, Any]) -> Check:
    names = value if isinstance(value, list) else [value]
    wanted = ", ".join(repr(name) for name in names)
    exact = _EXACT_TYPES.get(names[0]) if len(names) == 1 else None

    def run(instance: Any) -> list[Problem]:
        if exact is not None and type(instance) in exact:
            return []
        for name in names:
            if is_type(instance, name):
                return []
        return [((), f"{instance!r} is not of type {wanted}")]

    return run


def _enum(v: Validator, value: list[Any], schema: dict[str, Any]) -> Check:
    def run(instance: Any) -> list[Problem]:
        if any(json_equal(instance, each) for each in value):
            return []
        return [((), f"{instance!r} is not one of {value!r}")]

    return run


def _const(v: Validator, value: Any, schema: dict[str, Any]) -> Check:
    return lambda instance: [] if json_equal(instance, value) else [((), f"{value!r} was expected")]


def _numeric(
    test: Callable[[Any, Any], bool], words: str
) -> Callable[[Validator, Any, dict[str, Any]], Check]:
    def make(v: Validator, limit: Any, schema: dict[str, Any]) -> Check:
        def run(instance: Any) -> list[Problem]:
            if not _is_number(instance) or test(instance, limit):
                return []
            return [((), f"{instance!r} {words} {limit!r}")]

        return run

    return make


def _multiple_of(v: Validator, divisor: Any, schema: dict[str, Any]) -> Check:
    def run(instance: Any) -> list[Problem]:
        if not _is_number(instance):
            return []
        if isinstance(divisor, float):  # as jsonschema: 0.3 is a multiple of 0.1, 2.5 is not of 1
            try:
                quotient = instance / divisor
                failed = not math.isfinite(quotient) or int(quotient) != quotient
            except OverflowError:
                failed = True
        else:
            failed = instance % divisor != 0
        return [((), f"{instance!r} is not a multiple of {divisor}")] if failed else []

    return run


def _sized(
    kind: str, size: Callable[[Any], int], test: Callable[[int, int], bool], words: str
) -> Callable[[Validator, Any, dict[str, Any]], Check]:
    def make(v: Validator, limit: Any, schema: dict[str, Any]) -> Check:
        def run(instance: Any) -> list[Problem]:
            if not is_type(instance, kind) or test(size(instance), limit):
                return []
            return [((), f"{instance!r} {words}")]

        return run

    return make


def _pattern(v: Validator, pattern: str, schema: dict[str, Any]) -> Check:
    compiled = ecma_regex(pattern)

    def run(instance: Any) -> list[Problem]:
        if not isinstance(instance, str) or compiled.search(instance):
            return []
        return [((), f"{instance!r} does not match {pattern!r}")]

    return run


def _required(v: Validator, names: list[str], schema: dict[str, Any]) -> Check:
    def run(instance: Any) -> list[Problem]:
        if not isinstance(instance, dict):
            return []
        return [((), f"{name!r} is a required property") for name in names if name not in instance]

    return run


def _dependent_required(v: Validator, value: dict[str, list[str]], schema: dict[str, Any]) -> Check:
    def run(instance: Any) -> list[Problem]:
        if not isinstance(instance, dict):
            return []
        return [
            ((), f"{each!r} is a dependency of {name!r}")
            for name, needed in value.items()
            if name in instance
            for each in needed
            if each not in instance
        ]

    return run


def _dependent_schemas(v: Validator, value: dict[str, Any], schema: dict[str, Any]) -> Check:
    checks = {name: v._compile(sub) for name, sub in value.items()}

    def run(instance: Any) -> list[Problem]:
        if not isinstance(instance, dict):
            return []
        return [
            problem
            for name, check in checks.items()
            if name in instance
            for problem in check(instance)
        ]

    return run


def _properties(v: Validator, value: dict[str, Any], schema: dict[str, Any]) -> Check:
    checks = [(name, v._compile(sub)) for name, sub in value.items()]

    def run(instance: Any) -> list[Problem]:
        if not isinstance(instance, dict):
            return []
        found: list[Problem] = []
        for name, check in checks:
            if name in instance:
                problems = check(instance[name])
                if problems:
                    found += _under(name, problems)
        return found

    return run


def _pattern_properties(v: Validator, value: dict[str, Any], schema: dict[str, Any]) -> Check:
    checks = [(ecma_regex(pattern), v._compile(sub)) for pattern, sub in value.items()]

    def run(instance: Any) -> list[Problem]:
        if not isinstance(instance, dict):
            return []
        return [
            problem
            for pattern, check in checks
            for name, item in instance.items()
            if pattern.search(name)
            for problem in _under(name, check(item))
        ]

    return run


def _additional_properties(v: Validator, value: Any, schema: dict[str, Any]) -> Check:
    known = set(schema.get("properties", {}))
    patterns = [ecma_regex(pattern) for pattern in schema.get("patternProperties", {})]
    check = v._compile(value)

    def run(instance: Any) -> list[Problem]:
        if not isinstance(instance, dict) or instance.keys() <= known:
            return []
        extras = [
            name
            for name in instance
            if name not in known and not any(p.search(name) for p in patterns)
        ]
        if not extras:
            return []
        if value is False:
            listed = ", ".join(repr(name) for name in sorted(extras))
            if patterns:
                verb = "does" if len(extras) == 1 else "do"
                regexes = ", ".join(
                    repr(pattern) for pattern in sorted(schema["patternProperties"])
                )
                return [((), f"{listed} {verb} not match any of the regexes: {regexes}")]
            verb = "was" if len(extras) == 1 else "were"
            return [((), f"Additional properties are not allowed ({listed} {verb} unexpected)")]
        return [problem for name in extras for problem in _under(name, check(instance[name]))]

    return run


def _property_names(v: Validator, value: Any, schema: dict[str, Any]) -> Check:
    check = v._compile(value)

    def run(instance: Any) -> list[Problem]:
        if not isinstance(instance, dict):
            return []
        return [problem for name in instance for problem in check(name)]

    return run


def _prefix_items(v: Validator, value: list[Any], schema: dict[str, Any]) -> Check:
    checks = [v._compile(sub) for sub in value]

    def run(instance: Any) -> list[Problem]:
        if not isinstance(instance, list):
            return []
        return [
            problem
            for index, (check, item) in enumerate(zip(checks, instance))
            for problem in _under(index, check(item))
        ]

    return run


def _items(v: Validator, value: Any, schema: dict[str, Any]) -> Check:
    prefix = len(schema.get("prefixItems", []))
    check = v._compile(value)

    def run(instance: Any) -> list[Problem]:
        if not isinstance(instance, list) or len(instance) <= prefix:
            return []
        if value is False:
            return [((), f"Expected at most {prefix} items, but found {len(instance)}")]
        found: list[Problem] = []
        for index in range(prefix, len(instance)):
            problems = check(instance[index])
            if problems:
                found += _under(index, problems)
        return found

    return run


def _contains(v: Validator, value: Any, schema: dict[str, Any]) -> Check:
    check = v._compile(value)
    least = schema.get("minContains", 1)
    most = schema.get("maxContains")

    def run(instance: Any) -> list[Problem]:
        if not isinstance(instance, list):
            return []
        matches = sum(1 for item in instance if not check(item))
        if most is not None and matches > most:
            return [((), f"Too many items match the given schema (expected at most {most})")]
        if matches >= least:
            return []
        if not matches:
            return [((), f"{instance!r} does not contain items matching the given schema")]
        return [
            (
                (),
                f"Too few items match the given schema (expected at least {least} but only "
                f"{matches} matched)",
            )
        ]

    return run


def _unique_items(v: Validator, value: bool, schema: dict[str, Any]) -> Check | None:
    if not value:
        return None

    def run(instance: Any) -> list[Problem]:
        if not isinstance(instance, list) or len({_identity(item) for item in instance}) == len(
            instance
        ):
            return []
        return [((), f"{instance!r} has non-unique elements")]

    return run


def _identity(value: Any) -> Any:
    """A hashable stand-in equal for JSON-equal values, so uniqueness is one pass, not n²
    comparisons."""
    if isinstance(value, bool):
        return ("boolean", value)
    if isinstance(value, list):
        return ("array", tuple(_identity(item) for item in value))
    if isinstance(value, dict):
        return ("object", frozenset((key, _identity(item)) for key, item in value.items()))
    return ("number", value) if _is_number(value) else value


def _all_of(v: Validator, value: list[Any], schema: dict[str, Any]) -> Check:
    checks = [v._compile(sub) for sub in value]
    return lambda instance: [problem for check in checks for problem in check(instance)]


def _any_of(v: Validator, value: list[Any], schema: dict[str, Any]) -> Check:
    checks = [v._compile(sub) for sub in value]

    def run(instance: Any) -> list[Problem]:
        for check in checks:
            if not check(instance):
                return []
        return [((), f"{instance!r} is not valid under any of the given schemas")]

    return run


def _one_of(v: Validator, value: list[Any], schema: dict[str, Any]) -> Check:
    checks = [v._compile(sub) for sub in value]

    def run(instance: Any) -> list[Problem]:
        matched = [sub for sub, check in zip(value, checks) if not check(instance)]
        if not matched:
            return [((), f"{instance!r} is not valid under any of the given schemas")]
        if len(matched) > 1:
            # jsonschema's order
            listed = ", ".join(repr(sub) for sub in [*matched[1:], matched[0]])
            return [((), f"{instance!r} is valid under each of {listed}")]
        return []

    return run


def _not(v: Validator, value: Any, schema: dict[str, Any]) -> Check:
    check = v._compile(value)
    return lambda instance: (
        [((), f"{instance!r} should not be valid under {value!r}")] if not check(instance) else []
    )


def _if(v: Validator, value: Any, schema: dict[str, Any]) -> Check:
    test = v._compile(value)
    then = v._compile(schema.get("then", True))
    otherwise = v._compile(schema.get("else", True))
    return lambda instance: then(instance) if not test(instance) else otherwise(instance)


def _ref(v: Validator, value: str, schema: dict[str, Any]) -> Check:
    return v._reference(value)


_KEYWORDS: dict[str, Callable[[Validator, Any, dict[str, Any]], Check | None]] = {
    "$ref": _ref,
    "type": _type_check,
    "enum": _enum,
    "const": _const,
    "multipleOf": _multiple_of,
    "maximum": _numeric(lambda value, limit: value <= limit, "is greater than the maximum of"),
    "exclusiveMaximum": _numeric(
        lambda value, limit: value < limit, "is greater than or equal to the maximum of"
    ),
    "minimum": _numeric(lambda value, limit: value >= limit, "is less than the minimum of"),
    "exclusiveMinimum": _numeric(
        lambda value, limit: value > limit, "is less than or equal to the minimum of"
    ),
    "maxLength": _sized("string", len, lambda size, limit: size <= limit, "is too long"),
    "minLength": _sized("string", len, lambda size, limit: size >= limit, "is too short"),
    "maxItems": _sized("array", len, lambda size, limit: size <= limit, "is too long"),
    "minItems": _sized("array", len, lambda size, limit: size >= limit, "is too short"),
    "maxProperties": _sized(
        "object", len, lambda size, limit: size <= limit, "has too many properties"
    ),
    "minProperties": _sized(
        "object", len, lambda size, limit: size >= limit, "does not have enough properties"
    ),
    "pattern": _pattern,
    "required": _required,
    "dependentRequired": _dependent_required,
    "dependentSchemas": _dependent_schemas,
    "properties": _properties,
    "patternProperties": _pattern_properties,
    "additionalProperties": _additional_properties,
    "propertyNames": _property_names,
    "prefixItems": _prefix_items,
    "items": _items,
    "contains": _contains,
    "uniqueItems": _unique_items,
    "allOf": _all_of,
    "anyOf": _any_of,
    "oneOf": _one_of,
    "not": _not,
    "if": _if,
}
