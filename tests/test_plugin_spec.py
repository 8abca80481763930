"""PluginSpec: a plugin declared once, refused when made if a part is wrong, found by entry
points."""

from __future__ import annotations

from pathlib import Path

import pytest

from reactor import DeclarationError, PluginPlatform
from reactor.plugin_spec import PluginSpec, discover_plugins

CORE = Path(__file__).resolve().parents[1] / "py" / "reactor"


class Half:
    def __init__(self) -> None:
        self.seeded: list[bool] = []

    def setup(self, context, *, seed):
        self.seeded.append(seed)

    def routes(self, context):
        return []


@pytest.mark.parametrize(
    ("fields", "field", "sentence"),
    [
        ({"name": ""}, "name", "must be 1 to 64 letters"),
        ({"name": "two words"}, "name", "must be 1 to 64 letters"),
        ({"name": 7}, "name", "must be 1 to 64 letters"),
        ({"description": ["x"]}, "description", "must be text"),
        ({"requires": ["ok", "no way"]}, "requires", "must list plugin names"),
        (
            {"page": "reactor_plugins.decks"},
            "page",
            'must name the page half as "module:ATTRIBUTE"',
        ),
        ({"page": "x:y; import os"}, "page", 'must name the page half as "module:ATTRIBUTE"'),
        ({"server": Half()}, "server", "must be a function (or class) that makes the server half"),
        ({"assets": ["view.js"]}, "assets", "is not a file in the plugin's folder (None)"),
        (
            {"folder": "FOLDER", "assets": ["../secret.txt"]},
            "assets",
            "must be file names inside the plugin's folder",
        ),
        (
            {"folder": "FOLDER", "assets": ["/etc/passwd"]},
            "assets",
            "must be file names inside the plugin's folder",
        ),
        (
            {"folder": "FOLDER", "assets": ["missing.js"]},
            "assets",
            "is not a file in the plugin's folder",
        ),
        ({"page_services": {"api": 5}}, "page_services", "must map service names to text"),
        (
            {"folder": "FOLDER", "agent_tools": "none.json"},
            "agent_tools",
            "is not a file in the plugin's folder",
        ),
        *(
            ({"preload": [path]}, "preload", "must list paths on this server that the page half")
            for path in [
                "plugins",  # not a path
                "//evil.example/x",  # another host
                "https://evil.example/x",
                "/a b",
                "/x\n",
                "/" + "a" * 200,
                5,
            ]
        ),
    ],
)
def test_a_wrong_part_is_refused_when_the_spec_is_made_naming_its_field(
    tmp_path, fields, field, sentence
):
    fields = {k: (tmp_path if v == "FOLDER" else v) for k, v in fields.items()}
    with pytest.raises(DeclarationError) as refused:
        PluginSpec(**{"name": "notes", **fields})
    assert refused.value.field == field and sentence in str(refused.value)


def test_an_agent_tools_file_that_is_not_json_is_refused_with_its_line(tmp_path):
    (tmp_path / "agent-tools.json").write_text('{"id": "notes",\n  oops}')
    with pytest.raises(
        DeclarationError, match="agent_tools is refused: agent-tools.json is not valid JSON.*line 2"
    ):
        PluginSpec(name="notes", folder=tmp_path, agent_tools="agent-tools.json")


def test_each_platform_makes_its_own_server_half_and_checks_its_shape():
    spec = PluginSpec(name="notes", server=Half)
    first, second = PluginPlatform([spec]), PluginPlatform([spec])
    assert isinstance(first.server_half("notes"), Half)
    assert first.server_half("notes") is not second.server_half("notes")  # two apps never share one
    with pytest.raises(DeclarationError, match="made an object without setup") as refused:
        PluginPlatform([PluginSpec(name="broken", server=lambda: object())])
    assert refused.value.field == "server"


def test_the_installed_plugins_are_found_through_the_entry_point_group():
    specs = {spec.name: spec for spec in discover_plugins()}
    assert set(specs) == {"ai-tools", "cms", "decks", "maintenance"}
    assert specs["decks"].page == "reactor_plugins.decks:DECKS_PLUGIN" and specs["decks"].bundles
    assert specs["maintenance"].page is None and specs["maintenance"].server is not None
    assert discover_plugins("reactor.no-such-group") == []


def test_the_core_names_no_plugin():
    named = [
        path.relative_to(CORE)
        for path in CORE.rglob("*.py")
        if "reactor_plugins" in path.read_text()
    ]
    assert named == []


def test_a_plugin_declares_the_gets_its_page_half_makes_as_it_starts():
    spec = PluginSpec(name="notes", preload=["/api/notes", "/api/notes?mine=1"])
    assert spec.preload == ("/api/notes", "/api/notes?mine=1")
    assert PluginSpec(name="notes", preload="/api/notes").preload == ("/api/notes",)


def test_each_installed_plugin_is_described_once_by_its_spec():
    # The page half says nothing of its own that GET /plugins (the spec's words) would contradict.
    from importlib import import_module

    specs = [spec for spec in discover_plugins() if spec.page]
    assert {"decks", "cms", "ai-tools"} <= {spec.name for spec in specs}
    for spec in specs:
        module, attribute = spec.page.split(":")
        page_half = getattr(import_module(module), attribute)
        assert spec.description and page_half.description in ("", spec.description), spec.name
