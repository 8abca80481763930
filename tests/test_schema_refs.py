"""A shape several tools share, written once: a bundle's `$defs` and the JSON files beside it,
copied into each tool's schema where they are named (reactor.schema_refs)."""

from __future__ import annotations

import json

import pytest

from reactor import DeclarationError, check_agent_tools, load_agent_tools
from reactor.schema import argument_problems

BODY = {"type": "string", "maxLength": 5}
SLIDE = {
    "type": "object",
    "properties": {"title": {"type": "string"}, "body": {"$ref": "#/$defs/body"}},
    "required": ["title"],
    "additionalProperties": False,
}


def declared(parameters, defs=None, **more):
    """A one-tool bundle, checked as a plugin's JSON is."""
    bundle = {
        "id": "t",
        "name": "T",
        "plugin": "t",
        "commands": [
            {"name": "t_write", "command": "t.write", "description": "Write.", **more}
            | {"parameters": parameters}
        ],
    }
    if defs is not None:
        bundle["$defs"] = defs
    return check_agent_tools(bundle)


def test_a_shape_named_in_the_bundle_defs_is_copied_into_each_tool_with_its_own_words():
    checked = declared(
        {
            "type": "object",
            "properties": {
                "slides": {"type": "array", "items": {"$ref": "#/$defs/slide"}},
                "body": {"$ref": "#/$defs/slide/properties/body", "description": "The text."},
            },
        },
        {"slide": SLIDE, "body": BODY},
    )
    parameters = checked["commands"][0]["parameters"]
    assert parameters["properties"] == {
        "slides": {
            "type": "array",
            "items": {**SLIDE, "properties": {"title": {"type": "string"}, "body": BODY}},
        },
        "body": {**BODY, "description": "The text."},
    }
    assert "$defs" not in checked and "$ref" not in json.dumps(checked)
    assert check_agent_tools(json.loads(json.dumps(checked))) == checked  # served, then read again
    problems = argument_problems(parameters, {"slides": [{"title": "a", "body": "too long"}]})
    assert problems == [{"path": "$.slides[0].body", "message": "'too long' is too long"}]


@pytest.mark.parametrize(
    "parameters, defs, says",
    [
        (
            {"type": "object", "properties": {"b": {"$ref": "#/$defs/body", "maxLength": 2}}},
            {"body": BODY},
            "'maxLength' sits beside {'$ref': '#/$defs/body'}; only words",
        ),
        (
            {"type": "object", "properties": {"n": {"$ref": "#/$defs/node"}}},
            {"node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/node"}}}},
            "'#/$defs/node' refers back to itself",
        ),
        (
            {"type": "object", "properties": {"b": {"$ref": "#/$defs/slide"}}},
            {"slide": {"$ref": "#/$defs/nothing"}},
            "'#/$defs/nothing' names no shape of the bundle's $defs; it has slide",
        ),
        (
            {"type": "object", "properties": {"b": {"$ref": "#/$defs/nope"}}},
            {"body": BODY},
            "'#/$defs/nope' points to nothing in this schema",
        ),
        (
            {"type": "object", "properties": {"b": {"$ref": "deck.schema.json#/x"}}},
            {"body": BODY},
            "refers to a file; only a bundle read from its file",
        ),
        (
            {
                "type": "object",
                "$defs": {"body": {"type": "string"}},
                "properties": {"b": {"$ref": "#/$defs/body"}},
            },
            {"body": BODY},
            "names a shape both the bundle's $defs and this schema's own $defs define",
        ),
        ({"type": "object"}, {"body": "text"}, "must map each name to the JSON Schema"),
    ],
)
def test_a_reference_that_cannot_be_copied_in_is_refused_where_it_is_declared(
    parameters, defs, says
):
    with pytest.raises(DeclarationError) as refused:
        declared(parameters, defs)
    assert says in str(refused.value)
    assert refused.value.owner == "t"


def test_a_tool_schema_keeping_its_own_defs_is_handed_on_whole():
    # what MCP's JSON Schema 2020-12 scenario sends: $defs and $ref inside the tool's schema
    own = {
        "type": "object",
        "$defs": {"address": {"type": "object", "properties": {"city": {"type": "string"}}}},
        "properties": {"address": {"$ref": "#/$defs/address"}, "b": {"$ref": "#/$defs/body"}},
    }
    parameters = declared(own, {"body": BODY})["commands"][0]["parameters"]
    assert parameters == {**own, "properties": {**own["properties"], "b": BODY}}
    alone = {**own, "properties": {"address": own["properties"]["address"]}}
    assert declared(alone)["commands"][0]["parameters"] == alone  # a bundle without $defs


def write(folder, name, data):
    (folder / name).write_text(json.dumps(data), encoding="utf-8")
    return folder / name


def test_a_bundle_file_reads_a_shape_from_a_json_file_beside_it(tmp_path):
    write(
        tmp_path,
        "item.schema.json",
        {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "$defs": {"body": BODY},
            "type": "object",
            "properties": {"body": {"$ref": "#/$defs/body"}},
        },
    )
    bundle = {
        "id": "t",
        "name": "T",
        "plugin": "t",
        "$defs": {"item": {"$ref": "item.schema.json"}},
        "commands": [
            {
                "name": "t_write",
                "command": "t.write",
                "description": "Write.",
                "parameters": {
                    "type": "object",
                    "properties": {"body": {"$ref": "#/$defs/item/properties/body"}},
                },
            }
        ],
    }
    loaded = load_agent_tools(write(tmp_path, "agent-tools.json", bundle))
    assert loaded["commands"][0]["parameters"]["properties"] == {"body": BODY}
    longer = {**BODY, "maxLength": 9}  # the file changes; the tool follows it
    write(tmp_path, "item.schema.json", {"type": "object", "properties": {"body": longer}})
    loaded = load_agent_tools(tmp_path / "agent-tools.json")
    assert loaded["commands"][0]["parameters"]["properties"] == {"body": longer}


@pytest.mark.parametrize(
    "reference, says",
    [
        ("missing.json#/x", "'missing.json' could not be read beside the bundle"),
        ("../item.schema.json", "is not a JSON file beside the bundle"),
        ("sub/item.schema.json", "is not a JSON file beside the bundle"),
        (
            "item.schema.json#/properties/nope",
            "points to nothing in this schema (in item.schema.json)",
        ),
        ("broken.json", "broken.json is not valid JSON"),
    ],
)
def test_a_reference_to_a_file_that_is_not_there_is_refused_naming_the_field(
    tmp_path, reference, says
):
    write(tmp_path, "item.schema.json", {"type": "object", "properties": {}})
    (tmp_path / "broken.json").write_text("{", encoding="utf-8")
    bundle = {
        "id": "t",
        "name": "T",
        "plugin": "t",
        "commands": [
            {
                "name": "t_write",
                "command": "t.write",
                "description": "Write.",
                "parameters": {"type": "object", "properties": {"b": {"$ref": reference}}},
            }
        ],
    }
    with pytest.raises(DeclarationError) as refused:
        load_agent_tools(write(tmp_path, "agent-tools.json", bundle))
    assert says in str(refused.value)
    assert refused.value.field == "commands[0].parameters.properties.b"
