"""reactor.json_text answers as json does: the same values, texts and errors, hostile input
included."""

import json
import math

import pytest

from reactor.json_text import copied, dumps, loads

VALUES = [
    None,
    True,
    0,
    -(2**70),
    1.5,
    1e300,
    "plain",
    'é ☃ \U0001f600 \x00 "quoted" \\',
    [],
    {},
    {"ok": True, "value": None},
    {"nested": [{"a": [1, 2.25, {"b": "c"}]}], "n": 3},
]


@pytest.mark.parametrize("value", VALUES)
def test_dumps_and_loads_agree_with_json(value):
    assert dumps(value) == json.dumps(value)
    assert dumps(value, sort_keys=True, allow_nan=False) == json.dumps(
        value, sort_keys=True, allow_nan=False
    )
    assert loads(json.dumps(value)) == json.loads(json.dumps(value))


@pytest.mark.parametrize("text", [" {} ", "\n[1]\t", '{"a": 1}  ', b'{"a": 1}', bytearray(b"[2]")])
def test_loads_takes_what_json_takes_around_the_text(text):
    assert loads(text) == json.loads(text)


@pytest.mark.parametrize(
    "text", ["", "not json", "{", '{"a": 1} x', "[1,]", "{'a': 1}", "\ufeff{}"]
)
def test_loads_refuses_what_json_refuses_with_its_sentence(text):
    with pytest.raises(json.JSONDecodeError) as expected:
        json.loads(text)
    with pytest.raises(json.JSONDecodeError) as got:
        loads(text)
    assert str(got.value) == str(expected.value)


def test_loads_of_something_not_text_is_json_s_type_error():
    with pytest.raises(TypeError, match="must be str, bytes or bytearray"):
        loads(5)  # type: ignore[arg-type]


def test_dumps_refuses_what_json_refuses():
    with pytest.raises(TypeError, match="not JSON serializable"):
        dumps({"a": object()})
    with pytest.raises(ValueError, match="Out of range float"):
        dumps([math.nan], allow_nan=False)
    assert dumps([math.nan]) == json.dumps([math.nan])


def test_a_cycle_gets_json_s_own_sentence():
    cycle: list = []
    cycle.append(cycle)
    with pytest.raises(ValueError, match="Circular reference detected"):
        dumps(cycle)


def test_sorted_keys_refuse_what_json_refuses():
    with pytest.raises(TypeError) as expected:
        json.dumps({"a": 1, 2: 3}, sort_keys=True)
    with pytest.raises(TypeError) as got:
        dumps({"a": 1, 2: 3}, sort_keys=True)
    assert str(got.value) == str(expected.value)


def test_a_copy_shares_nothing_with_its_original():
    original = {"properties": {"id": {"type": "string", "enum": ["a", "b"]}}, "required": ["id"]}
    copy = copied(original)
    assert copy == original and list(copy) == list(original)  # the same keys, in the same order
    copy["properties"]["id"]["enum"].append("c")
    copy["required"].clear()
    assert original == {
        "properties": {"id": {"type": "string", "enum": ["a", "b"]}},
        "required": ["id"],
    }
