"""Conversations that last, in real Chromium against a real server: a reload draws the
conversation again (text, tool cards, approvals) and runs nothing; a signed-out conversation
stays in the browser; another page of the site, or another browser of the same person, goes on
with it."""

from __future__ import annotations

import json
from contextlib import contextmanager

import pytest
from conftest import start_server, stop_server

from reactor.server.gateway.config import AssistantConfig
from reactor.testing.standins import StandIn, call, text
from test_embed_page import embedding

pytestmark = pytest.mark.browser

KEY = "sk-threads-5e1a"
SNAPSHOT = """() => [...document.querySelectorAll("reactor-chat ol.chat-log > li")].map((li) => [
  li.className, li.dataset.status ?? li.dataset.decision ?? li.dataset.streaming ?? "",
  li.innerText.split("\\nDetails")[0].trim(),
])"""


@contextmanager
def serve(tmp_path, stand_in=None, **options):
    """A reactor server (with the site's model `stand_in`, when given) for the `with` block."""
    if stand_in is not None:
        options["assistant"] = AssistantConfig(
            provider=stand_in.provider, model="site-model", api_key=KEY, base_url=stand_in.url
        )
    server = start_server(tmp_path / "data", seed_demo=True, **options)
    try:
        yield server
    finally:
        stop_server(server)


@pytest.fixture
def stand_in():
    provider = StandIn("openai", KEY)
    yield provider
    provider.stop()


def drawn(reactor):
    """The page's chat once its conversation is drawn and Python has taken it over."""
    reactor.page.locator("reactor-chat[data-thread=drawn]").wait_for()
    reactor.page.get_by_test_id("chat-model").wait_for()
    return reactor.page


def open_chat(reactor, username=None, path="/"):
    reactor.open(path)
    if username:
        reactor.sign_in(username)
    return drawn(reactor)


def reload(reactor):
    reactor.page.reload()
    reactor.ready = reactor.page.evaluate("window.reactor.ready")
    return drawn(reactor)


def say(page, words):
    chat = page.locator("reactor-chat")
    chat.locator("textarea").fill(words)
    chat.get_by_role("button", name="Send").click()


def idle(page):
    page.locator("reactor-chat[data-running=false]").wait_for()


def reply(page, words):
    page.locator("reactor-chat .chat-assistant").get_by_text(words).wait_for()


def snapshot(page):
    return page.evaluate(SNAPSHOT)


def writes_to_decks(page):
    """Every write the page makes to the decks' API from now on (what a write tool does)."""
    made = []
    page.context.on(
        "request",
        lambda request: (
            request.method != "GET" and "/api/decks" in request.url and made.append(request.url)
        ),
    )
    return made


def test_two_turns_with_a_card_and_an_approval_are_drawn_again_after_a_reload_and_run_nothing(
    new_reactor_page, tmp_path, stand_in
):
    with serve(tmp_path, stand_in) as server:
        reactor = new_reactor_page(server)
        page = open_chat(reactor, "ada")
        writes = writes_to_decks(page)
        stand_in.answers = [
            call("decks_list_decks", {}, "c1", words="Let me look."),
            text("There are three decks."),
            call("decks_update_slide", {"id": "onboarding", "slide": 1, "title": "Hello"}, "c2"),
            text("Renamed it."),
        ]
        say(page, "list the decks")
        reply(page, "There are three decks.")
        idle(page)
        say(page, "rename the first slide")
        page.get_by_test_id("approval").get_by_role("button", name="Allow", exact=True).click()
        reply(page, "Renamed it.")
        idle(page)
        before, written = snapshot(page), len(writes)
        assert written == 1 and [row[1] for row in before if "chat-tool" in row[0]] == [
            "finished",
            "finished",
        ]
        page = reload(reactor)
        after = snapshot(page)
        assert after == before, "the same text, cards and decisions"
        assert len(writes) == written and len(stand_in.requests) == 4, "nothing ran again"
        assert page.get_by_test_id("approval-choice").inner_text() == "Allowed."
        # The conversation goes on from where it was: the model sees all of it.
        stand_in.answers = [text("You are welcome.")]
        say(page, "thanks")
        reply(page, "You are welcome.")
        sent = stand_in.requests[-1]["messages"]
        assert [m["role"] for m in sent] == [
            "system", "user", "assistant", "tool", "assistant",
            "user", "assistant", "tool", "assistant", "user",
        ]  # fmt: skip


def test_signed_out_a_reload_keeps_the_conversation_and_the_server_receives_none_of_it(
    new_reactor_page, tmp_path
):
    with serve(tmp_path) as server:
        reactor = new_reactor_page(server)
        page = open_chat(reactor)
        bodies = []
        page.context.on("request", lambda request: bodies.append(request.post_data or ""))
        say(page, "list decks")
        idle(page)
        page.locator("reactor-chat .chat-tool[data-status=finished]").wait_for()
        before = snapshot(page)
        page = reload(reactor)
        assert snapshot(page) == before
        assert not any("list decks" in body for body in bodies), "nothing of it went to the server"
        kept = json.loads(page.evaluate("localStorage.getItem('reactor.threads')"))
        assert [t["title"] for t in kept] == ["list decks"]


def test_a_conversation_started_on_the_demo_page_goes_on_in_the_embedded_example(
    new_reactor_page, tmp_path
):
    with embedding(tmp_path) as (live, site):
        reactor = new_reactor_page(live).allow_origin(site)
        page = open_chat(reactor, "ada")
        say(page, "list decks")
        page.locator(
            "reactor-chat .chat-tool[data-tool=decks_list_decks][data-status=finished]"
        ).wait_for()
        idle(page)
        on_demo = snapshot(page)
        # The person follows a link to another page of the site, which embeds reactor.
        page = open_chat(reactor, path=site)
        assert snapshot(page) == on_demo
        say(page, "list todos")
        page.locator(
            "reactor-chat .chat-tool[data-tool=todo_list][data-status=finished]"
        ).wait_for()
        idle(page)
        on_example = snapshot(page)
        assert on_example[: len(on_demo)] == on_demo and len(on_example) > len(on_demo)
        page = open_chat(reactor)  # and back
        assert snapshot(page) == on_example
        listed = page.request.get(f"{live.url}/api/threads").json()
        assert listed["count"] == 1 and listed["threads"][0]["title"] == "list decks"
