r"""reactor.json_schema against the reference: the jsonschema package (a test dependency only)
must agree on every verdict and message, over thousands of generated schemas and values.

Except on patterns: JSON Schema's are ECMA-262 regular expressions, and reactor reads them so,
where jsonschema hands them to Python's re. The two part on a string ending in "\n" (`$`), on
"\r" and "\u2028" (`.`), on non-ASCII digits and letters (`\d`, `\w`, `\b`) and on some spaces
(`\s`). So the generated patterns and strings stay where both read alike (checked below);
tests/test_json_schema_patterns.py covers the rest, against Node's RegExp.
"""

from __future__ import annotations

import random
import re

import pytest
from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError as ReferenceSchemaError

from reactor.json_schema import SchemaError, Validator, check_schema, ecma_regex

NAMES = ["a", "b", "c", "d1"]
STRINGS = ["", "a", "ab", "b1", "abc", "12", "é"]
PATTERNS = ["^a", "b$", "[0-9]+", "^.{2}$", "^(a|b)+$", "^[a-z0-9-]+$", "^\\d+$", "\\s|^$"]
TYPES = ["array", "boolean", "integer", "null", "number", "object", "string"]


def scalar(rng: random.Random):
    return rng.choice([None, True, False, 0, 1, -2, 3, 2.0, 0.5, -1.5, 1e300, *STRINGS])


def value(rng: random.Random, depth: int = 0):
    roll = rng.random()
    if depth > 2 or roll < 0.55:
        return scalar(rng)
    if roll < 0.78:
        return [value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    return {rng.choice(NAMES): value(rng, depth + 1) for _ in range(rng.randint(0, 3))}


def schema(rng: random.Random, depth: int = 0):
    if depth > 2 or rng.random() < 0.12:
        return rng.choice([True, False, {}, {"type": rng.choice(TYPES)}])
    out: dict = {}
    for _ in range(rng.randint(1, 3)):
        keyword = rng.choice(GENERATORS_KEYS)
        out[keyword] = GENERATORS[keyword](rng, depth + 1)
    if rng.random() < 0.1:
        out.setdefault("allOf", []).append({"$ref": "#/$defs/leaf"})
    return out


def root_schema(rng: random.Random):
    """A schema whose every `$ref` points to its own `$defs`."""
    declared = schema(rng)
    if isinstance(declared, dict):
        declared["$defs"] = {
            "leaf": rng.choice(
                [
                    {"type": rng.choice(TYPES)},
                    {"minimum": 1},
                    {"enum": STRINGS[:3]},
                    {"required": ["a"]},
                    False,
                ]
            )
        }
    return declared


def subschemas(rng, depth):
    return [schema(rng, depth) for _ in range(rng.randint(1, 3))]


GENERATORS = {
    "type": lambda rng, d: (
        rng.choice(TYPES) if rng.random() < 0.7 else rng.sample(TYPES, rng.randint(1, 3))
    ),
    "enum": lambda rng, d: [scalar(rng) for _ in range(rng.randint(1, 4))],
    "const": lambda rng, d: value(rng),
    "multipleOf": lambda rng, d: rng.choice([1, 2, 3, 0.5, 0.1, 1.5]),
    "maximum": lambda rng, d: rng.choice([0, 1, 2.5, -1]),
    "exclusiveMaximum": lambda rng, d: rng.choice([0, 1, 2.5, -1]),
    "minimum": lambda rng, d: rng.choice([0, 1, 2.5, -1]),
    "exclusiveMinimum": lambda rng, d: rng.choice([0, 1, 2.5, -1]),
    "maxLength": lambda rng, d: rng.randint(0, 3),
    "minLength": lambda rng, d: rng.randint(0, 3),
    "pattern": lambda rng, d: rng.choice(PATTERNS),
    "maxItems": lambda rng, d: rng.randint(0, 3),
    "minItems": lambda rng, d: rng.randint(0, 3),
    "uniqueItems": lambda rng, d: rng.random() < 0.7,
    "maxContains": lambda rng, d: rng.randint(0, 2),
    "minContains": lambda rng, d: rng.randint(0, 2),
    "contains": lambda rng, d: schema(rng, d),
    "maxProperties": lambda rng, d: rng.randint(0, 3),
    "minProperties": lambda rng, d: rng.randint(0, 3),
    "required": lambda rng, d: rng.sample(NAMES, rng.randint(0, 3)),
    "dependentRequired": lambda rng, d: {rng.choice(NAMES): rng.sample(NAMES, rng.randint(0, 2))},
    "dependentSchemas": lambda rng, d: {rng.choice(NAMES): schema(rng, d)},
    "properties": lambda rng, d: {
        name: schema(rng, d) for name in rng.sample(NAMES, rng.randint(1, 3))
    },
    "patternProperties": lambda rng, d: {rng.choice(PATTERNS): schema(rng, d)},
    "additionalProperties": lambda rng, d: schema(rng, d),
    "propertyNames": lambda rng, d: schema(rng, d),
    "prefixItems": subschemas,
    "items": lambda rng, d: schema(rng, d),
    "allOf": subschemas,
    "anyOf": subschemas,
    "oneOf": subschemas,
    "not": lambda rng, d: schema(rng, d),
    "if": lambda rng, d: schema(rng, d),
    "then": lambda rng, d: schema(rng, d),
    "else": lambda rng, d: schema(rng, d),
    "format": lambda rng, d: rng.choice(["email", "date-time", "uri"]),
    "description": lambda rng, d: "words",
}
GENERATORS_KEYS = sorted(GENERATORS)


def reference_problems(validator: Draft202012Validator, instance) -> list[tuple[tuple, str]]:
    return sorted(
        (tuple(error.path), in_order(worded(error))) for error in validator.iter_errors(instance)
    )


# jsonschema 4.21 words a bound of 1 (minimum) or 0 (maximum) apart ("[] should be non-empty");
# reactor says what 4.17 said for every bound, as the `mcp` SDK needs jsonschema >= 4.20.
BOUNDS = {
    "minItems": "is too short",
    "minLength": "is too short",
    "minProperties": "does not have enough properties",
    "maxItems": "is too long",
    "maxLength": "is too long",
    "maxProperties": "has too many properties",
}


def worded(error) -> str:
    for ending in (" should be non-empty", " is expected to be empty"):
        if error.validator in BOUNDS and error.message.endswith(ending):
            return f"{error.message.removesuffix(ending)} {BOUNDS[error.validator]}"
    return error.message


def has_false_schema(schema) -> bool:
    """Whether a `false` subschema is anywhere in `schema`: jsonschema >= 4.20 places its refusals
    at the parent value and words `items: false` anew, so there the verdicts alone are compared."""
    if schema is False:
        return True
    if isinstance(schema, dict):
        return any(
            has_false_schema(v) for k, v in schema.items() if k not in ("enum", "const", "default")
        )
    if isinstance(schema, list):
        return any(has_false_schema(v) for v in schema)
    return False


def in_order(message: str) -> str:
    """jsonschema lists unexpected properties in set order; reactor sorts them."""
    found = re.fullmatch(
        r"Additional properties are not allowed \((.*) (was|were) unexpected\)", message
    )
    if not found:
        return message
    return (
        f"Additional properties are not allowed ({', '.join(sorted(found[1].split(', ')))} "
        f"{found[2]} unexpected)"
    )


def test_the_generated_patterns_and_strings_are_read_alike_by_ecma_262_and_python() -> None:
    """Else the comparison above would hold reactor to Python's reading of a pattern."""
    for pattern in PATTERNS:
        for text in [*STRINGS, *NAMES]:
            assert (ecma_regex(pattern).search(text) is None) == (
                re.search(pattern, text) is None
            ), (pattern, text)
    # where they part
    assert re.search("^[a-z0-9-]+$", "ab\n") and not ecma_regex("^[a-z0-9-]+$").search("ab\n")


@pytest.mark.parametrize("seed", range(8))
def test_every_verdict_and_message_matches_the_reference(seed: int) -> None:
    rng = random.Random(seed)
    assert_like_the_reference(rng, 400, root_schema, lambda rng, declared: value(rng))


def assert_like_the_reference(rng: random.Random, schemas: int, make_schema, make_instance) -> None:
    """Each of `schemas` schemas, 8 instances each: the same problems as jsonschema's."""
    compared = invalid = 0
    for _ in range(schemas):
        declared = make_schema(rng)
        ours, reference = Validator(declared), Draft202012Validator(declared)
        for _ in range(8):
            instance = make_instance(rng, declared)
            expected = reference_problems(reference, instance)
            if has_false_schema(declared):
                assert bool(ours.problems(instance)) == bool(expected), (declared, instance)
            else:
                assert sorted(ours.problems(instance)) == expected, (declared, instance)
            compared += 1
            invalid += bool(expected)
    assert invalid > compared * 0.2 and invalid < compared * 0.9  # the corpus tests both outcomes


def tool_arguments(rng: random.Random, depth: int = 0) -> dict:
    """A schema of the shape most tools' arguments have (Validator checks it in one call when
    valid)."""
    properties = {}
    for name in rng.sample(NAMES, rng.randint(0, 4)):
        roll = rng.random()
        if depth < 2 and roll < 0.15:
            properties[name] = tool_arguments(rng, depth + 1)
        elif roll < 0.6:
            properties[name] = {"type": rng.choice(TYPES), "description": "words"}
        else:
            properties[name] = schema(rng, depth + 1)
    declared = {
        "type": "object",
        "properties": properties,
        "title": "Arguments",
        "$defs": {"leaf": {"minimum": 1}},
    }
    if rng.random() < 0.6:
        declared["required"] = rng.sample(
            sorted(properties) or NAMES, rng.randint(0, len(properties) or 1)
        )
    if rng.random() < 0.6:
        declared["additionalProperties"] = False
    return declared


@pytest.mark.parametrize("seed", range(4))
def test_a_tool_arguments_shape_gets_the_references_verdicts_and_messages(seed: int) -> None:
    def arguments(rng: random.Random, declared: dict):
        instance = (
            value(rng)
            if rng.random() < 0.2
            else {n: value(rng, 1) for n in rng.sample(NAMES, rng.randint(0, 4))}
        )
        if rng.random() < 0.5:  # the values it asks for, as a model mostly sends
            instance = {
                n: rng.choice([None, True, 1, 2.0, "a", [], {}]) for n in declared["properties"]
            }
        return instance

    assert_like_the_reference(random.Random(seed), 300, tool_arguments, arguments)


def broken(rng: random.Random):
    """A schema with one keyword given a value of the wrong shape."""
    declared = root_schema(rng)
    if not isinstance(declared, dict):
        declared = {}
    keyword, wrong = rng.choice(
        [
            ("type", "strin"),
            ("type", []),
            ("type", ["string", "string"]),
            ("type", 3),
            ("required", "id"),
            ("required", [1]),
            ("required", ["a", "a"]),
            ("properties", []),
            ("properties", {"a": 3}),
            ("items", [{}]),
            ("items", "x"),
            ("minLength", -1),
            ("minLength", 1.5),
            ("maxItems", "3"),
            ("multipleOf", 0),
            ("multipleOf", -2),
            ("maximum", "1"),
            ("minimum", True),
            ("anyOf", []),
            ("allOf", {}),
            ("oneOf", [3]),
            ("not", None),
            ("enum", 3),
            ("pattern", 3),
            ("uniqueItems", "yes"),
            ("dependentRequired", {"a": "b"}),
            ("additionalProperties", 1),
            ("description", 5),
            ("$defs", {"x": "y"}),
            ("examples", {}),
            ("deprecated", 1),
        ]
    )
    return {**declared, keyword: wrong}


@pytest.mark.parametrize("seed", range(4))
def test_a_schema_is_refused_exactly_when_the_reference_refuses_it(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(300):
        declared = broken(rng) if rng.random() < 0.5 else root_schema(rng)
        try:
            Draft202012Validator.check_schema(declared)
            expected = True
        except ReferenceSchemaError:
            expected = False
        try:
            check_schema(declared)
            accepted = True
        except SchemaError:
            accepted = False
        assert accepted == expected, declared


def refusal(declared) -> str:
    with pytest.raises(SchemaError) as info:
        check_schema(declared)
    return f"{info.value.message} at {list(info.value.path)}"


@pytest.mark.parametrize(
    "keyword", ["unevaluatedProperties", "unevaluatedItems", "$dynamicRef", "$recursiveRef"]
)
def test_a_keyword_it_does_not_implement_is_refused_not_ignored(keyword: str) -> None:
    assert refusal({"type": "object", "properties": {"a": {keyword: False}}}) == (
        f"{keyword!r} is not supported by reactor's validator at ['properties', 'a', {keyword!r}]"
    )


@pytest.mark.parametrize(
    ("reference", "words"),
    [
        ("https://example.com/schema.json", "is not a local reference"),
        ("#anchor", "anchors are not supported"),
        ("#/$defs/missing", "points to nothing in this schema"),
        ("#/properties/a/type", "which is not a schema"),
    ],
)
def test_a_reference_it_cannot_resolve_is_refused_when_declared(reference: str, words: str) -> None:
    assert words in refusal({"properties": {"a": {"type": "string"}, "b": {"$ref": reference}}})


def test_an_invalid_regular_expression_is_refused_when_declared_not_at_the_first_call() -> None:
    assert "'[a-' is not a valid regular expression" in refusal(
        {"properties": {"a": {"pattern": "[a-"}}}
    )
    assert "'(' is not a valid regular expression" in refusal({"patternProperties": {"(": {}}})


def test_a_hostile_nesting_is_refused_and_a_deep_value_answers_without_crashing() -> None:
    deep: dict = {"type": "object"}
    for _ in range(200):
        deep = {"properties": {"a": deep}}
    assert "nested more than 64 levels deep" in refusal(deep)

    tree = Validator(
        {
            "$defs": {
                "node": {"type": "object", "properties": {"child": {"$ref": "#/$defs/node"}}}
            },
            "$ref": "#/$defs/node",
        }
    )
    value: dict = {}
    for _ in range(5000):
        value = {"child": value}
    assert tree.problems(value) == [((), "the value is nested too deeply to validate")]
    assert tree.problems({"child": {"child": 3}}) == [
        (("child", "child"), "3 is not of type 'object'")
    ]


def test_references_may_recurse_and_escape_pointer_characters() -> None:
    validator = Validator(
        {
            "$defs": {
                "a/b": {"type": "integer"},
                "list": {"type": "array", "items": {"$ref": "#/$defs/list"}},
            },
            "properties": {"n": {"$ref": "#/$defs/a~1b"}, "l": {"$ref": "#/$defs/list"}},
        }
    )
    assert validator.problems({"n": 1, "l": [[], [[]]]}) == []
    assert validator.problems({"n": "1", "l": [[3]]}) == [
        (("n",), "'1' is not of type 'integer'"),
        (("l", 0, 0), "3 is not of type 'array'"),
    ]


def test_unique_items_is_checked_in_one_pass_even_for_a_long_array() -> None:
    validator = Validator({"type": "array", "uniqueItems": True})
    assert validator.problems(list(range(200_000))) == []
    assert validator.problems([{"a": [1, True]}, {"a": [1.0, True]}]) != [], (
        "1 and 1.0 are the same JSON number"
    )
    assert validator.problems([1, True, "1", [1], {"1": 1}]) == [], "but true is not 1"
