import copy

import pytest

from reactor import DeclarationError
from reactor.records import RESULT_CAP_DEFAULT, check_ai_tool_record

CODE = "def invoke(args, context):\n    return {'answer': 42}\n"
RECORD = {
    "id": "answer",
    "name": "the_answer",
    "location": "ai-tool",
    "language": "python",
    "code": CODE,
    "settings": {
        "tool": {
            "description": "Returns the answer. Use when asked for it.",
            "inputSchema": {
                "type": "object",
                "properties": {"q": {"type": "string"}},
                "additionalProperties": False,
            },
            "annotations": {"sideEffect": "none", "timeoutMs": 2000},
        },
        "config": {"endpoint": "/x"},
    },
    "visibility": {"users": ["bob"], "groups": []},
}


def changed(path, value):
    record = copy.deepcopy(RECORD)
    *parents, last = path.split(".")
    target = record
    for key in parents:
        target = target[key]
    if value is DELETE:
        del target[last]
    else:
        target[last] = value
    return record


DELETE = object()


def test_a_good_record_is_accepted_with_its_defaults_filled():
    record = check_ai_tool_record(RECORD)
    assert record["enabled"] is True
    assert record["settings"]["tool"]["maxResultBytes"] == RESULT_CAP_DEFAULT
    assert record["settings"]["config"] == {"endpoint": "/x"}


@pytest.mark.parametrize(
    "path, value, field, words",
    [
        ("settings.tool", DELETE, "settings.tool", "is required for an AI Tool"),
        ("settings.tool.description", "  ", "settings.tool.description", "must not be empty"),
        ("settings.tool.description", None, "settings.tool.description", "must not be empty"),
        (
            "settings.tool.inputSchema",
            {"type": "array"},
            "settings.tool.inputSchema",
            'top-level "type" must be "object"',
        ),
        (
            "settings.tool.inputSchema",
            {"type": "object", "properties": {"q": {"type": "text"}}},
            "settings.tool.inputSchema",
            "not a valid JSON Schema",
        ),
        (
            "settings.tool.inputSchema",
            DELETE,
            "settings.tool.inputSchema",
            "must be a JSON Schema object",
        ),
        ("name", "the.answer", "name", "is not a name a model can call"),
        ("name", "x" * 65, "name", "is not a name a model can call"),
        (
            "settings.tool.annotations.sideEffect",
            "harmless",
            "settings.tool.annotations.sideEffect",
            "use one of none, read, write, destructive",
        ),
        (
            "settings.tool.annotations.timeoutMs",
            50,
            "settings.tool.annotations.timeoutMs",
            "from 100 to 120000",
        ),
        (
            "settings.tool.annotations.timeoutMs",
            999_999,
            "settings.tool.annotations.timeoutMs",
            "from 100 to 120000",
        ),
        (
            "settings.tool.annotations.timeoutMs",
            "20s",
            "settings.tool.annotations.timeoutMs",
            "whole number",
        ),
        (
            "settings.tool.annotations.timeoutMs",
            True,
            "settings.tool.annotations.timeoutMs",
            "whole number",
        ),
        ("code", "def run(params):\n    pass\n", "code", "defines no `invoke`"),
        ("code", "invoke = 3\n", "code", "defines no `invoke`"),
        ("code", "def invoke(args, context)\n", "code", "syntax error at line 1"),
        ("code", "", "code", "must be the plugin's source code"),
        ("code", "x" * 200_000, "code", "larger than"),
        ("location", "sidebar", "location", "must be one of ai-tool, ui"),
        ("language", "ruby", "language", "must be one of python, javascript"),
        ("id", "Answer!", "id", "lowercase letters"),
        ("id", "agent-tools", "id", "not 'agent-tools'"),
        ("settings.config", [1], "settings.config", "must be an object"),
        ("settings.tool.maxResultBytes", 10, "settings.tool.maxResultBytes", "from 256 to 1000000"),
        ("visibility", {"users": "bob"}, "visibility.users", "must be a list of names"),
        ("enabled", "yes", "enabled", "true or false"),
        ("tools", [], "tools", "is not a record field"),
    ],
)
def test_a_wrong_declaration_is_refused_naming_the_field_and_the_rule(path, value, field, words):
    with pytest.raises(DeclarationError) as refused:
        check_ai_tool_record(changed(path, value))
    assert refused.value.field == field
    assert words in str(refused.value)
    assert str(refused.value).startswith("Plugin ")


def test_javascript_invoke_is_accepted_in_its_forms():
    for code in (
        "async function Invoke(args, context) { return 1; }",
        "const Invoke = async (args) => 1;",
    ):
        assert (
            check_ai_tool_record({**RECORD, "language": "javascript", "code": code})["language"]
            == "javascript"
        )
    with pytest.raises(DeclarationError, match="defines no `Invoke`"):
        check_ai_tool_record({**RECORD, "language": "javascript", "code": "function invoke() {}"})


def test_a_ui_plugin_needs_run_not_a_tool_and_may_carry_both_forms():
    both = "def run(params):\n    return None\n\ndef invoke(args, context):\n    return 1\n"
    ui = check_ai_tool_record({**changed("settings.tool", DELETE), "location": "ui", "code": both})
    assert "tool" not in ui["settings"]
    assert check_ai_tool_record({**RECORD, "code": both})["location"] == "ai-tool"
    with pytest.raises(DeclarationError, match="defines no `run`"):
        check_ai_tool_record({**RECORD, "location": "ui"})


@pytest.mark.parametrize("hostile", [None, [], "record", 3])
def test_a_record_that_is_not_an_object_is_refused(hostile):
    with pytest.raises(DeclarationError, match="must be a JSON object"):
        check_ai_tool_record(hostile)
