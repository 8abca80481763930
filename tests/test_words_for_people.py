"""Two readers: every sentence the demo page can show a person about its tools — a card's line,
an approval's question, a failure's words, a disabled command's reason — is written for the
person, never the model's sentence (which names tools and speaks of "the person")."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import pytest

from reactor import MemoryPage, Reactor
from reactor.errors import FAILURE_CODES, HttpError, ToolError
from reactor.host import AgentSpec
from reactor.host.approval import needs_approval
from reactor.host.tools import FAILURE_LINES, Toolbox, outcome_line
from reactor.http import tool_refusal
from reactor_plugins.cms import CMS_PLUGIN
from reactor_plugins.decks import DECKS_PLUGIN

# Words a model's sentence has and a person's must not.
FOR_THE_MODEL = re.compile(
    r"\bthe person\b|\bdo not call\b|\bthe model\b|\bcall it\b|\b[a-z]+_[a-z0-9_]+\b", re.IGNORECASE
)


def sample(schema: dict[str, Any]) -> Any:
    """A value the schema accepts, enough to fill a sentence."""
    kind = schema.get("type")
    kind = next((k for k in kind if k != "null"), None) if isinstance(kind, list) else kind
    if "enum" in schema:
        return schema["enum"][0]
    if kind == "integer" or kind == "number":
        return max(1, schema.get("minimum", 1))
    if kind == "boolean":
        return True
    if kind == "array":
        return []
    if kind == "object":
        return {name: sample(sub) for name, sub in schema.get("properties", {}).items()}
    return "https://example.org/blog" if schema.get("format") == "uri" else "welcome"


@pytest.fixture
def demo():
    reactor = Reactor(services={"page": MemoryPage()})
    assert reactor.load_plugins([DECKS_PLUGIN, CMS_PLUGIN]).loaded == ["decks", "cms"]
    return reactor, Toolbox(reactor, AgentSpec("demo", plugins=("*",)))


def sentences_for_people(reactor: Reactor, toolbox: Toolbox) -> list[str]:
    shown: list[str] = []
    for tool in toolbox.tools():
        args = sample(tool.parameters)
        if needs_approval(tool.side_effect):
            shown.append(asyncio.run(tool.question(args)))
        if tool.summary:
            shown.append(tool.summary)
        model_sentence = f"{tool.name} failed; tell the person, and do not call {tool.name} again."
        for code in sorted(FAILURE_CODES):
            shown.append(
                outcome_line(
                    tool, args, {"ok": False, "error": {"code": code, "message": model_sentence}}
                )
            )
    shown += [
        c.options.disabled_display
        for c in reactor.commands.list_commands()
        if c.options.disabled_display
    ]
    try:
        reactor.exports("cms").require_site()
    except ToolError as refused:
        shown.append(refused.details["display"])
    return shown


def test_every_sentence_the_demo_shows_a_person_about_its_tools_is_for_the_person(demo):
    reactor, toolbox = demo
    shown = sentences_for_people(reactor, toolbox)
    assert len(shown) > 100, "the tools, their questions and their failures were all read"
    for_the_model = [line for line in shown if FOR_THE_MODEL.search(line)]
    assert for_the_model == []
    assert set(FAILURE_LINES) == set(FAILURE_CODES)


def test_an_approval_says_what_will_happen_in_words_from_the_call(demo):
    reactor, toolbox = demo
    state = reactor.exports("cms")
    state.username, state.sites, state.site = (
        "ada",
        [{"id": "acme", "title": "Acme Corp", "role": "publisher"}],
        "acme",
    )
    assert (
        asyncio.run(toolbox.tool("cms_publish_site_page").question({"slug": "hello"}))
        == "Publish ‘hello’ on Acme Corp?"
    )
    crawl = asyncio.run(
        toolbox.tool("cms_crawl_blog").question({"url": "https://example.org/blog", "limit": 1})
    )
    assert (
        crawl == "Import 1 post from the blog at https://example.org/blog into Acme Corp as drafts?"
    )
    assert asyncio.run(
        toolbox.tool("decks_delete_slide").question({"id": "nowhere", "slide": 2})
    ) == ("Delete slide 2 of ‘nowhere’? This cannot be undone.")


def test_every_demo_tool_has_a_line_for_its_card_and_a_list_says_how_many_and_which(demo):
    _, toolbox = demo
    assert [tool.name for tool in toolbox.tools() if not tool.summary] == []
    listed = {
        "decks": [
            {"id": i, "title": t}
            for i, t in [("a", "Alpha"), ("b", "Beta"), ("c", "Gamma"), ("d", "Delta")]
        ]
    }
    line = outcome_line(toolbox.tool("decks_list_decks"), {}, {"ok": True, "result": listed})
    assert line == "Decks (4): ‘Alpha’, ‘Beta’, ‘Gamma’ and 1 more."
    shown = {
        "site": "acme",
        "slug": "welcome",
        "url": "/sites/acme/welcome",
        "opened": True,
        "shown": "Welcome",
    }
    assert (
        outcome_line(toolbox.tool("cms_show_site_page"), {}, {"ok": True, "result": shown})
        == "Opened ‘Welcome’ in a new tab."
    )
    blocked = {
        **shown,
        "opened": False,
        "message": "The browser blocked the new tab; the page is at /sites/acme/welcome",
    }
    del blocked["shown"]
    line = outcome_line(toolbox.tool("cms_show_site_page"), {}, {"ok": True, "result": blocked})
    assert (
        line == "CMS: Show site page: The browser blocked the new tab; the page is at "
        "/sites/acme/welcome"
    )


def test_a_refused_command_tells_a_page_the_persons_words_beside_the_callers():
    import json

    from reactor.errors import CommandFailedError
    from reactor.facade import _failure

    refusal = tool_refusal(HttpError(401, "Sign in first."))
    failed = json.loads(
        _failure(
            "decks.updateSlide",
            CommandFailedError("x", command_id="decks.updateSlide", cause=refusal),
        )
    )
    assert failed["error"]["message"] == "x"  # the caller's sentence, as the command said it
    assert failed["error"]["display"] == "Sign in at the top of the page first."


def test_an_ai_tools_label_is_words_not_its_tool_name():
    from reactor_plugins.ai_tools.bundle import person_label

    assert person_label("maintenance_backlog") == "AI Tool: Maintenance backlog"
    assert not FOR_THE_MODEL.search(person_label("slow_lookup"))
