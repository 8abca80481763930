"""Every provider format the chat host renders, from a real Reactor's bundles."""

import json

import pytest
from conftest import DECK_OPEN, DECK_RENAME, decks_bundle

from reactor import NO_ARGUMENTS, Reactor, ToolError, define_agent_tools, define_plugin
from reactor.arguments import parse_tool_arguments
from reactor.host import (
    AgentSpec,
    Toolbox,
    anthropic_result,
    anthropic_tools,
    mcp_call_result,
    mcp_list_tools,
    needs_approval,
    openai_chat_result,
    openai_chat_tools,
    responses_result,
    responses_tools,
    tool_annotations,
    tool_failure,
    tool_success,
)

BUNDLE = decks_bundle("decks_list_decks", "decks_open", "decks_rename", "decks_delete")
LEVELS = {
    "decks_list_decks": "read",
    "decks_open": "none",
    "decks_rename": "write",
    "decks_delete": "destructive",
}


def toolbox(side_effects=LEVELS):
    def register(context):
        nothing = {
            command: lambda args: None for command in ("decks.open", "decks.rename", "decks.delete")
        }
        context.register_bundle(BUNDLE, {"decks.listDecks": lambda args: [], **nothing})

    reactor = Reactor()
    reactor.load_plugin(define_plugin(name="decks", register=register))
    return Toolbox(reactor, AgentSpec("presenter", plugins=("decks",)), side_effects=side_effects)


def mcp_models():
    try:
        import mcp_types
    except ImportError:
        mcp_types = pytest.importorskip("mcp.types")
    return mcp_types


def test_openai_chat_completions_tools_are_functions_with_parameters():
    tools = openai_chat_tools(toolbox().tools())
    assert tools[0] == {
        "type": "function",
        "function": {
            "name": "decks_list_decks",
            "description": "List every deck.",
            "parameters": NO_ARGUMENTS,
        },
    }
    assert tools[1]["function"]["parameters"] == DECK_OPEN


def test_responses_api_tools_are_flat_functions():
    tools = responses_tools(toolbox().tools())
    assert tools[1] == {
        "type": "function",
        "name": "decks_open",
        "description": "Open a deck at a slide.",
        "parameters": DECK_OPEN,
    }
    assert tools[0]["parameters"] == NO_ARGUMENTS


def test_anthropic_tools_carry_an_input_schema():
    tools = anthropic_tools(toolbox().tools())
    assert tools[1] == {
        "name": "decks_open",
        "description": "Open a deck at a slide.",
        "input_schema": DECK_OPEN,
    }
    assert tools[0]["input_schema"] == NO_ARGUMENTS


def test_a_schema_providers_refuse_at_the_top_is_simplified_for_them_but_still_enforced():
    rename = toolbox().tools()[2]
    shown = anthropic_tools([rename])[0]["input_schema"]
    assert "anyOf" not in shown and "$schema" not in shown
    assert shown["properties"] == DECK_RENAME["properties"]
    assert openai_chat_tools([rename])[0]["function"]["parameters"] == shown
    assert mcp_list_tools([rename])["tools"][0]["inputSchema"] == DECK_RENAME  # MCP takes it whole
    with pytest.raises(ToolError) as refused:
        parse_tool_arguments("decks_rename", {"title": "New"}, rename.parameters)
    assert refused.value.code == "invalid_arguments"
    assert parse_tool_arguments("decks_rename", {"title": "New", "id": "q"}, rename.parameters) == {
        "title": "New",
        "id": "q",
    }


def test_mcp_tools_list_is_valid_for_the_mcp_package_and_loses_nothing():
    mcp_types = mcp_models()
    listed = mcp_list_tools(toolbox().tools())
    parsed = mcp_types.ListToolsResult.model_validate(listed)
    assert [tool.name for tool in parsed.tools] == [
        "decks_list_decks",
        "decks_open",
        "decks_rename",
        "decks_delete",
    ]
    for ours, theirs in zip(listed["tools"], parsed.tools):
        assert theirs.model_dump(by_alias=True, exclude_none=True, mode="json") == ours
    assert listed["tools"][0]["title"] == "List decks"  # the command's label
    assert "title" not in listed["tools"][1]


@pytest.mark.parametrize(
    "level, hints",
    [
        ("none", (True, False, True)),
        ("read", (True, False, True)),
        ("write", (False, False, False)),
        ("destructive", (False, True, False)),
    ],
)
def test_mcp_annotations_follow_the_side_effect_level(level, hints):
    assert tool_annotations(level) == {
        "readOnlyHint": hints[0],
        "destructiveHint": hints[1],
        "idempotentHint": hints[2],
        "openWorldHint": False,
    }


def test_a_tool_with_no_level_given_counts_as_write_and_needs_approval():
    tools = toolbox(side_effects={}).tools()
    assert {tool.side_effect for tool in tools} == {"write"}
    assert all(needs_approval(tool.side_effect) for tool in tools)
    assert mcp_list_tools(tools)["tools"][0]["annotations"]["readOnlyHint"] is False
    assert toolbox(side_effects={"decks_open": "harmless"}).tools()[1].side_effect == "write"


def test_results_render_per_provider_with_the_same_envelope():
    ok = tool_success([{"id": "q", "title": "Q"}])
    assert openai_chat_result("call_1", ok) == {
        "role": "tool",
        "tool_call_id": "call_1",
        "content": json.dumps(ok),
    }
    assert responses_result("call_1", ok) == {
        "type": "function_call_output",
        "call_id": "call_1",
        "output": json.dumps(ok),
    }
    assert anthropic_result("toolu_1", ok) == {
        "type": "tool_result",
        "tool_use_id": "toolu_1",
        "content": json.dumps(ok),
        "is_error": False,
    }
    failed = tool_failure("denied", "The person declined.")
    assert anthropic_result("toolu_2", failed)["is_error"] is True
    assert json.loads(openai_chat_result("call_2", failed)["content"]) == {
        "ok": False,
        "error": {"code": "denied", "message": "The person declined."},
    }


def test_mcp_call_results_are_valid_and_errors_are_results_not_exceptions():
    mcp_types = mcp_models()
    for envelope, is_error in (
        (tool_success({"slide": 4}), False),
        (tool_failure("unknown_tool", "No such tool."), True),
    ):
        rendered = mcp_call_result(envelope)
        parsed = mcp_types.CallToolResult.model_validate(rendered)
        assert parsed.is_error is is_error
        assert json.loads(parsed.content[0].text) == envelope == parsed.structured_content


def test_a_command_returning_nothing_answers_that_it_ran():
    assert tool_success(None) == {
        "ok": True,
        "result": None,
        "note": "The command ran; it returns no value.",
    }
    assert tool_success(0) == {"ok": True, "result": 0}


def test_a_result_that_is_not_json_data_becomes_a_failed_answer():
    envelope = tool_success({"when": object()})
    assert envelope["ok"] is False and envelope["error"]["code"] == "failed"
    assert "not JSON data" in envelope["error"]["message"]


def test_a_failure_code_outside_the_contract_is_refused():
    with pytest.raises(ValueError, match="'oops' is not a tool failure code"):
        tool_failure("oops", "?")


def test_non_ascii_results_stay_readable_for_the_model():
    content = openai_chat_result("c", tool_success("Présentation — été"))["content"]
    assert "Présentation — été" in content


def test_a_tool_and_its_command_share_one_validator_even_past_the_schema_cache() -> None:
    # A page with more distinct schemas than the compiled-schema cache holds once compiled a
    # tool's validator and its command's apart: one schema, compiled twice.
    from reactor import schema
    from reactor.host import EVERY_PLUGIN, AgentSpec, Toolbox

    parameters = {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}
    bundle = define_agent_tools(
        id="one",
        name="One",
        plugin="one",
        commands=[
            {
                "name": "one_get",
                "command": "one.get",
                "description": "Get.",
                "parameters": parameters,
            }
        ],
    )
    plugin = define_plugin(
        name="one",
        register=lambda context: context.register_bundle(bundle, {"one.get": lambda args: args}),
    )
    reactor = Reactor()
    reactor.load_plugins([plugin])
    schema._validator.cache_clear()  # evicted, as thousands of other schemas would
    toolbox = Toolbox(reactor, AgentSpec("all", plugins=(EVERY_PLUGIN,)))
    tool = toolbox.tool("one_get")
    assert tool is not None and tool.validator is reactor.commands.get_command("one.get").validator
    assert toolbox.call("one_get", '{"id": "a"}') == {"ok": True, "result": {"id": "a"}}
    assert toolbox.call("one_get", '{"id": 3}')["error"]["code"] == "invalid_arguments"


def test_the_decks_tools_rendered_for_each_provider_refuse_a_too_long_body_as_the_page_does():
    # The decks' bundle names its slide once (deck.schema.json); each provider is still handed
    # whole schemas, which refuse what the page refuses, in the same sentence.
    from reactor import MemoryPage
    from reactor.schema import argument_problems
    from reactor_plugins.decks import DECKS_PLUGIN

    reactor = Reactor(services={"page": MemoryPage()})
    assert reactor.load_plugins([DECKS_PLUGIN]).loaded == ["decks"]
    decks = Toolbox(reactor, AgentSpec("presenter", plugins=("decks",)))
    tools = decks.tools()
    rendered = {
        "openai": {
            t["function"]["name"]: t["function"]["parameters"] for t in openai_chat_tools(tools)
        },
        "responses": {t["name"]: t["parameters"] for t in responses_tools(tools)},
        "anthropic": {t["name"]: t["input_schema"] for t in anthropic_tools(tools)},
        "mcp": {t["name"]: t["inputSchema"] for t in mcp_list_tools(tools)["tools"]},
    }
    mcp_models().ListToolsResult.model_validate(mcp_list_tools(tools))
    too_long = "x" * 20_001
    calls = {
        "decks_update_slide": ({"id": "q", "slide": 1, "body": too_long}, "$.body"),
        "decks_add_slide": ({"id": "q", "title": "t", "body": "", "notes": too_long}, "$.notes"),
        "decks_create_deck": (
            {"title": "Q", "slides": [{"title": "a", "body": too_long}]},
            "$.slides[0].body",
        ),
    }
    for name, (args, path) in calls.items():
        refused = decks.prepare(name, args)
        assert isinstance(refused, dict) and refused["error"]["code"] == "invalid_arguments"
        [problem] = refused["error"]["problems"]
        assert problem["path"] == path and problem["message"].endswith("' is too long")
        for provider, schemas in rendered.items():
            assert "$ref" not in json.dumps(schemas[name]), provider
            assert argument_problems(schemas[name], args) == [problem], provider
