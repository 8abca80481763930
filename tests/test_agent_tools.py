import json

import pytest

import reactor
from reactor import (
    AgentTools,
    DeclarationError,
    PluginPlatform,
    Reactor,
    agent_tool_bundles,
    contribution,
    define_agent_tools,
    define_plugin,
    load_agent_tools,
    watch_agent_tool_bundles,
)
from reactor.plugin_spec import PluginSpec

OPEN = {
    "name": "decks_open",
    "command": "decks.open",
    "description": "Open a deck by id, optionally at a slide.",
    "parameters": {
        "type": "object",
        "properties": {"id": {"type": "string"}, "slide": {"type": "integer"}},
        "required": ["id"],
    },
}
NEXT = {
    "name": "decks_next_slide",
    "command": "decks.nextSlide",
    "description": "Advance the open deck by one slide.",
}


def bundle(**overrides):
    fields = dict(id="decks", name="Decks", plugin="decks", commands=[NEXT, OPEN])
    return define_agent_tools(**{**fields, **overrides})


def test_a_bundle_reads_in_the_seed_shape_with_the_toolset_filled():
    assert bundle() == {
        "id": "decks",
        "name": "Decks",
        "description": "",
        "plugin": "decks",
        "commands": [NEXT, OPEN],
        "toolset": ["decks_next_slide", "decks_open"],
    }


def test_a_toolset_may_grant_less_than_every_tool():
    assert bundle(toolset=["decks_open"])["toolset"] == ["decks_open"]


@pytest.mark.parametrize(
    "name",
    ["decks.open", "decks open", "1decks", "", "x" * 65, "décks", "decks/open", None, 7],
)
def test_a_name_a_model_cannot_call_is_refused_naming_the_bundle_and_the_name(name):
    with pytest.raises(DeclarationError) as info:
        bundle(commands=[{**NEXT, "name": name}])
    assert "'decks'" in str(info.value) and repr(name) in str(info.value)
    assert info.value.field == "commands[0].name" and info.value.value == name


@pytest.mark.parametrize("name", ["a", "_x", "decks_open-2", "A" * 64])
def test_every_name_all_providers_accept_is_allowed(name):
    assert bundle(commands=[{**NEXT, "name": name}])["toolset"] == [name]


def test_a_name_declared_twice_is_refused():
    with pytest.raises(DeclarationError, match="'decks_open' is declared twice"):
        bundle(commands=[OPEN, {**OPEN, "command": "decks.other"}])


@pytest.mark.parametrize(
    "parameters, rule",
    [
        ({"type": "string"}, 'top-level "type" must be "object"'),
        ({"properties": {}}, 'top-level "type" must be "object"'),
        ({"type": "object", "properties": {"id": {"type": "strin"}}}, "not a valid JSON Schema"),
        ({"type": "object", "required": "id"}, "not a valid JSON Schema"),
        ("object", "must be a JSON Schema object"),
    ],
)
def test_parameters_that_are_not_an_object_json_schema_are_refused(parameters, rule):
    with pytest.raises(DeclarationError, match="decks_open") as info:
        bundle(commands=[{**OPEN, "parameters": parameters}])
    assert rule in str(info.value)
    assert info.value.field == "commands[0].parameters"


def test_a_toolset_naming_a_tool_the_bundle_lacks_is_refused():
    with pytest.raises(
        DeclarationError, match="names 'decks_present', which the bundle does not declare"
    ):
        bundle(toolset=["decks_open", "decks_present"])


@pytest.mark.parametrize(
    "tool, field",
    [
        ({**NEXT, "description": ""}, "commands[0].description"),
        ({**NEXT, "command": ""}, "commands[0].command"),
        ({**NEXT, "paramaters": {}}, "commands[0].paramaters"),
        ("decks_open", "commands[0]"),
    ],
)
def test_tools_with_missing_or_misspelt_fields_are_refused(tool, field):
    with pytest.raises(DeclarationError) as info:
        bundle(commands=[tool])
    assert info.value.field == field


def test_the_caller_cannot_change_a_bundle_through_its_input():
    parameters = json.loads(json.dumps(OPEN["parameters"]))
    made = bundle(commands=[{**OPEN, "parameters": parameters}])
    parameters["properties"]["id"]["type"] = "integer"
    assert made["commands"][0]["parameters"]["properties"]["id"]["type"] == "string"


def decks_plugin(tools=None):
    return define_plugin(
        name="decks", contributes=[contribution(AgentTools, tools or bundle(), id="decks")]
    )


def test_bundles_are_listed_from_loaded_plugins_and_follow_unloading():
    page = Reactor()
    seen = []
    watch_agent_tool_bundles(page, seen.append)
    page.load_plugins([decks_plugin()])
    assert agent_tool_bundles(page) == [bundle()]
    page.unload_plugin("decks")
    assert agent_tool_bundles(page) == []
    assert seen == [[bundle()], []]


def test_a_raw_dict_contributed_to_agent_tools_is_checked_too():
    page = Reactor()
    raw = {
        "id": "decks",
        "name": "Decks",
        "plugin": "decks",
        "commands": [{**NEXT, "name": "decks.next"}],
    }
    report = page.load_plugins(
        [define_plugin(name="decks", contributes=[contribution(AgentTools, raw, id="d")])]
    )
    assert "'decks.next' is not a name a model can call" in str(report.failed["decks"])


def test_listed_bundles_are_copies_a_host_cannot_corrupt():
    page = Reactor()
    page.load_plugins([decks_plugin()])
    agent_tool_bundles(page)[0]["commands"].clear()
    assert len(agent_tool_bundles(page)[0]["commands"]) == 2


def test_a_bundle_file_that_is_not_json_is_refused_with_its_line(tmp_path):
    path = tmp_path / "agent-tools.json"
    path.write_text('{"id": "decks",\n  "name": }')
    with pytest.raises(DeclarationError, match="agent-tools.json is not valid JSON: .* line 2"):
        load_agent_tools(path)


def test_a_bundle_file_with_an_unknown_field_is_refused(tmp_path):
    path = tmp_path / "agent-tools.json"
    path.write_text(json.dumps({**bundle(), "tools": []}))
    with pytest.raises(DeclarationError, match="tools is not a bundle field"):
        load_agent_tools(path)


def server_decks(folder):
    (folder / "agent-tools.json").write_text(json.dumps(bundle()))
    return PluginSpec(
        name="decks", description="Slide decks", folder=folder, agent_tools="agent-tools.json"
    )


def test_the_platform_collects_bundles_of_enabled_plugins_only(tmp_path):
    platform = PluginPlatform([server_decks(tmp_path)])
    assert platform.collect_agent_tools() == [bundle()]
    platform.disable("decks")
    assert platform.collect_agent_tools() == []
    assert platform.list_plugins() == [
        {"name": "decks", "description": "Slide decks", "enabled": False}
    ]
    platform.enable("decks")
    assert platform.is_enabled("decks")


def test_a_refused_bundle_file_refuses_the_plugin_when_it_is_declared(tmp_path):
    broken = {
        "id": "broken",
        "name": "B",
        "plugin": "broken",
        "commands": [{**NEXT, "name": "a.b"}],
    }
    (tmp_path / "agent-tools.json").write_text(json.dumps(broken))
    with pytest.raises(
        DeclarationError,
        match="Plugin 'broken': agent_tools is refused: .*'a.b' is not a name a model can call",
    ) as refused:
        PluginSpec(name="broken", folder=tmp_path, agent_tools="agent-tools.json")
    assert refused.value.field == "agent_tools"


def test_the_platform_refuses_unknown_and_duplicate_plugins_and_undeclared_ones(tmp_path):
    platform = PluginPlatform([server_decks(tmp_path)])
    with pytest.raises(
        reactor.PluginNotFoundError, match="There is no plugin 'cms'. Plugins: decks."
    ):
        platform.enable("cms")
    with pytest.raises(reactor.PluginError, match="already on the platform"):
        platform.add_plugin(server_decks(tmp_path))
    with pytest.raises(
        reactor.PluginError, match=r"declared with reactor.PluginSpec\(...\), not object"
    ):
        platform.add_plugin(object())
    with pytest.raises(
        reactor.PluginError, match="'notes' requires 'decks', which is not on the platform"
    ):
        PluginPlatform([PluginSpec(name="notes", requires=["decks"])])


def test_the_public_names_are_exactly_those_exported():
    public = {name for name in vars(reactor) if not name.startswith("_")}
    modules = {name for name in public if type(getattr(reactor, name)).__name__ == "module"}
    assert sorted(reactor.__all__) == reactor.__all__
    assert set(reactor.__all__) == public - modules - {"annotations"}


def test_a_tool_may_declare_its_side_effect_and_an_unknown_one_is_refused():
    assert bundle(commands=[{**NEXT, "sideEffect": "none"}])["commands"][0]["sideEffect"] == "none"
    with pytest.raises(
        DeclarationError, match="must be one of none, read, write, destructive, not 'harmless'"
    ):
        bundle(commands=[{**NEXT, "sideEffect": "harmless"}])


@pytest.mark.parametrize(
    "summary",
    [
        "",
        7,
        "x" * 201,
        "Opened {title}",
        "Opened {result.title",
        "{os.environ}",
        "Opened {result.}",
        "{args.id} }",
    ],
)
def test_a_summary_line_that_is_not_text_with_args_or_result_fields_is_refused(summary):
    with pytest.raises(DeclarationError, match="summary of tool 'decks_open' must be a line"):
        bundle(commands=[{**OPEN, "summary": summary}])


def test_a_summary_line_is_filled_from_the_call_and_left_out_when_a_field_is_missing():
    from reactor.agent_tools import fill_summary

    line = "Opened ‘{result.title}’ ({args.id}) at slide {result.slide}"
    assert bundle(commands=[{**OPEN, "summary": line}])["commands"][0]["summary"] == line
    assert (
        fill_summary(line, {"id": "q3"}, {"title": "Q3 <b>", "slide": 3})
        == "Opened ‘Q3 <b>’ (q3) at slide 3"
    )
    assert fill_summary(line, {"id": "q3"}, {"presenting": False}) is None
    assert fill_summary(line, "not an object", None) is None


def test_a_finished_call_reads_as_its_summary_else_its_label_and_what_the_result_says():
    from reactor.host.tools import HostTool, outcome_line

    tool = HostTool(
        name="decks_present",
        description="",
        parameters={},
        command="decks.present",
        plugin="decks",
        title="Decks: Present",
        summary="Presenting ‘{result.title}’.",
    )
    assert outcome_line(tool, "{}", {"ok": True, "result": {"title": "Q3"}}) == "Presenting ‘Q3’."
    refused = {"ok": True, "result": {"presenting": False, "reason": "Full screen needs a click."}}
    assert outcome_line(tool, "{}", refused) == "Decks: Present: Full screen needs a click."
    assert outcome_line(tool, "{", {"ok": True, "result": None}) == "Decks: Present: done."
    # A failure: the person's sentence (display), never the model's (message).
    failed = {
        "ok": False,
        "error": {"code": "not_found", "message": "There is no deck 'q3'; call decks_list_decks."},
    }
    assert outcome_line(tool, {}, failed) == "Not found."
    failed["error"]["display"] = "There is no deck ‘q3’."
    assert outcome_line(tool, {}, failed) == "There is no deck ‘q3’."


def test_a_bundle_says_what_its_patterns_ask_for_in_words_or_is_refused():
    from reactor.agent_tools import check_agent_tools

    tool = {"name": "t_x", "command": "t.x", "description": "X."}
    words = {"^[a-z]+$": "Lowercase letters only."}
    bundle = check_agent_tools(
        {"id": "t", "name": "T", "plugin": "t", "commands": [tool], "patternMessages": words}
    )
    assert bundle["patternMessages"] == words
    with pytest.raises(DeclarationError, match="patternMessages"):
        check_agent_tools(
            {
                "id": "t",
                "name": "T",
                "plugin": "t",
                "commands": [tool],
                "patternMessages": {"^a$": ""},
            }
        )
