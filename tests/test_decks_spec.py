"""The deck spec and its schema; the Markdown the print page draws."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

import reactor_plugins.decks as decks_package
from reactor import NotFoundError, ToolError, load_agent_tools
from reactor.schema import argument_problems
from reactor_plugins.decks import DECKS_AGENT_TOOLS
from reactor_plugins.decks.deck import (
    DECK_SCHEMA,
    MAX_DECK_BYTES,
    check_deck,
    deck_outline,
    deck_problems,
    slide_index,
    slugify,
)

HERE = Path(decks_package.__file__).parent


def deck(**changes):
    spec = {
        "id": "demo",
        "title": "Demo",
        "slides": [{"title": "One", "body": "Hello"}, {"title": "Two", "body": ""}],
    }
    spec.update(changes)
    return spec


def without_descriptions(schema):
    if isinstance(schema, dict):
        return {k: without_descriptions(v) for k, v in schema.items() if k != "description"}
    return schema


def test_a_well_formed_deck_has_no_problems():
    assert deck_problems(deck()) == []
    assert (
        deck_problems(deck(theme="dark", slides=[{"title": "A", "body": "b", "notes": "say hi"}]))
        == []
    )


def test_every_seed_deck_is_valid_and_has_four_to_six_slides():
    seeds = json.loads((HERE / "seed.json").read_text(encoding="utf-8"))["decks"]
    assert len(seeds) == 3
    for spec in seeds:
        assert deck_problems(spec) == [], spec["id"]
        assert 4 <= len(spec["slides"]) <= 6


def test_a_malformed_deck_is_refused_with_a_sentence_naming_each_problem():
    bad = {"id": "Not A Slug", "title": 7, "slides": [{"title": "ok"}], "colour": "red"}
    with pytest.raises(ToolError) as refused:
        check_deck(bad)
    assert refused.value.code == "invalid_arguments"
    sentence = str(refused.value)
    assert sentence.startswith("The deck is not valid: ")
    for words in (
        "$.id",
        "does not match",
        "$.title",
        "not of type 'string'",
        "$.slides[0]",
        "'body' is a required",
        "'colour' was unexpected",
    ):
        assert words in sentence


@pytest.mark.parametrize("bad", [None, [], "deck", 3, {"id": "demo"}])
def test_things_that_are_not_decks_are_refused(bad):
    assert deck_problems(bad)


@pytest.mark.parametrize(
    "id", ["../etc", "a b", "UPPER", "-lead", "trail-", "double--hyphen", "x" * 65, ""]
)
def test_an_id_must_be_a_short_slug(id):
    assert [p["path"] for p in deck_problems(deck(id=id))] == ["$.id"]


def test_a_deck_needs_at_least_one_slide_and_at_most_two_hundred():
    assert [p["path"] for p in deck_problems(deck(slides=[]))] == ["$.slides"]
    many = [{"title": str(n), "body": ""} for n in range(201)]
    assert [p["path"] for p in deck_problems(deck(slides=many))] == ["$.slides"]


def test_a_problem_never_quotes_a_huge_value_back_whole():
    problems = deck_problems(deck(title="x" * 50_000))
    assert problems[0]["path"] == "$.title"
    assert len(problems[0]["message"]) <= 200


def test_a_deck_larger_than_the_limit_is_refused_even_when_each_field_fits():
    slides = [{"title": "t", "body": "é" * 19_000, "notes": "é" * 19_000} for _ in range(10)]
    problems = deck_problems(deck(slides=slides))
    assert problems and problems[0]["path"] == "$" and str(MAX_DECK_BYTES) in problems[0]["message"]


def test_the_tools_describe_a_slide_exactly_as_the_deck_schema_does():
    slide = without_descriptions(DECK_SCHEMA["properties"]["slides"]["items"])
    tools = {t["command"]: t for t in DECKS_AGENT_TOOLS["commands"]}
    for command in ("decks.createDeck", "decks.updateDeck"):
        assert (
            without_descriptions(tools[command]["parameters"]["properties"]["slides"]["items"])
            == slide
        )
    for command in ("decks.addSlide", "decks.insertSlide", "decks.updateSlide"):
        for field in ("title", "body", "notes"):
            assert (
                without_descriptions(tools[command]["parameters"]["properties"][field])
                == slide["properties"][field]
            )


def test_the_tools_read_a_slide_from_the_deck_schema_so_a_changed_limit_reaches_them(tmp_path):
    # agent-tools.json writes no slide of its own: it refers to deck.schema.json's.
    for name in ("agent-tools.json", "deck.schema.json"):
        (tmp_path / name).write_text((HERE / name).read_text(encoding="utf-8"), encoding="utf-8")
    schema = json.loads((tmp_path / "deck.schema.json").read_text(encoding="utf-8"))
    schema["properties"]["slides"]["items"]["properties"]["body"]["maxLength"] = 10
    (tmp_path / "deck.schema.json").write_text(json.dumps(schema), encoding="utf-8")
    tools = {
        t["name"]: t["parameters"]
        for t in load_agent_tools(tmp_path / "agent-tools.json")["commands"]
        if "parameters" in t
    }
    eleven = "x" * 11
    for name, args in [
        ("decks_update_slide", {"id": "d", "slide": 1, "body": eleven}),
        ("decks_add_slide", {"id": "d", "title": "t", "body": eleven}),
        ("decks_insert_slide", {"id": "d", "slide": 1, "title": "t", "body": eleven}),
        ("decks_create_deck", {"title": "T", "slides": [{"title": "t", "body": eleven}]}),
        ("decks_update_deck", {"id": "d", "slides": [{"title": "t", "body": eleven}]}),
    ]:
        [problem] = argument_problems(tools[name], args)
        assert problem["message"] == "'xxxxxxxxxxx' is too long", name


def test_the_outline_numbers_slides_from_one():
    assert deck_outline(deck()) == [{"slide": 1, "title": "One"}, {"slide": 2, "title": "Two"}]


def test_a_slide_out_of_range_is_not_found_with_the_range_there_is():
    spec = deck(slides=[{"title": str(n), "body": ""} for n in range(5)])
    assert slide_index(spec, 5) == 4
    with pytest.raises(NotFoundError, match=r"^The deck has slides 1 to 5; there is no slide 7\.$"):
        slide_index(spec, 7)
    with pytest.raises(NotFoundError, match=r"^The deck has only slide 1; there is no slide 2\.$"):
        slide_index(deck(slides=[{"title": "", "body": ""}]), 2)
    assert slide_index(spec, 6, insert=True) == 5
    with pytest.raises(ToolError, match="1 to 6") as refused:
        slide_index(spec, 7, insert=True)
    assert refused.value.code == "invalid_arguments"


@pytest.mark.parametrize(
    "title, slug",
    [
        ("Quarterly review — Q3", "quarterly-review-q3"),
        ("  Hello, World!  ", "hello-world"),
        ("!!!", "deck"),
        ("Ünïcode only", "unicode-only"),
        ("日本語", "deck"),
        ("a" * 100, "a" * 48),
    ],
)
def test_a_title_becomes_a_valid_id(title, slug):
    assert slugify(title) == slug
    assert deck_problems(deck(id=slugify(title))) == []


def test_a_slide_body_is_commonmark_under_the_slide_title():
    from reactor_plugins.decks.printable import blocks_html

    body = "# Plan\n\nRun `make dev` *now*.\n\n- one\n- two\n\n1. first"
    assert blocks_html(body) == (
        "<h3>Plan</h3>\n<p>Run <code>make dev</code> <em>now</em>.</p>\n"
        "<ul>\n<li>one</li>\n<li>two</li>\n</ul>\n<ol>\n<li>first</li>\n</ol>\n"
    )


@pytest.mark.parametrize(
    "hostile",
    [
        "<script>alert(1)</script>",
        "<img src=x onerror=alert(1)>",
        "[click](javascript:alert(1))",
        "<a href='x'>y</a>",
    ],
)
def test_html_in_a_slide_body_stays_text(hostile):
    from reactor_plugins.decks.printable import blocks_html

    html = blocks_html(hostile)
    assert (
        "<script" not in html
        and "<img" not in html
        and 'href="javascript' not in html
        and "<a href='x'" not in html
    )


def test_checking_a_deck_never_changes_it():
    spec = deck()
    before = copy.deepcopy(spec)
    check_deck(spec)
    assert spec == before
