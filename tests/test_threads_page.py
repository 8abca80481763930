"""Conversations that last, in real Chromium against a real server on SQLite and on
PostgreSQL: a reload draws the conversation again (text, tool cards, approvals) and runs
nothing; a signed-out conversation stays in the browser; another page of the site, another tab
or another browser of the same person goes on with it; a reply in flight is re-attached."""

from __future__ import annotations

import json
from contextlib import contextmanager

import pytest
from conftest import start_server, stop_server

from reactor.server.gateway.config import AssistantConfig
from reactor.server.threads.store import ThreadLimits
from reactor.testing.standins import StandIn, call, text
from test_chat_page import idle, say
from test_embed_page import embedding

pytestmark = pytest.mark.browser

KEY = "sk-threads-5e1a"
SNAPSHOT = """() => [...document.querySelectorAll("reactor-chat ol.chat-log > li")].map((li) => [
  li.className, li.dataset.status ?? li.dataset.decision ?? li.dataset.streaming ?? "",
  li.innerText.split("\\nDetails")[0].trim(),
])"""


@pytest.fixture
def serve(tmp_path, database_target):
    """`serve(stand_in=None, **options)`: a reactor server (with the site's model `stand_in`, when
    given) on the test's database, for a `with` block."""

    @contextmanager
    def serving(stand_in=None, **options):
        if stand_in is not None:
            options["assistant"] = AssistantConfig(
                provider=stand_in.provider, model="site-model", api_key=KEY, base_url=stand_in.url
            )
        server = start_server(
            tmp_path / "data", seed_demo=True, database=database_target, **options
        )
        try:
            yield server
        finally:
            stop_server(server)

    return serving


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
    new_reactor_page, serve, stand_in
):
    with serve(stand_in) as server:
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
    new_reactor_page, serve
):
    with serve() as server:
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
    new_reactor_page, tmp_path, database_target
):
    with embedding(tmp_path, database=database_target) as (live, site):
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


def test_a_reload_while_an_approval_waits_asks_it_again_and_the_tool_runs_only_once_allowed(
    new_reactor_page, serve, stand_in
):
    with serve(stand_in) as server:
        reactor = new_reactor_page(server)
        page = open_chat(reactor, "ada")
        writes = writes_to_decks(page)
        rename = {"id": "onboarding", "slide": 1, "title": "Hello"}
        stand_in.answers = [call("decks_update_slide", rename, "c1"), text("Renamed it.")]
        say(page, "rename the first slide")
        page.get_by_test_id("approval").wait_for()
        page = reload(reactor)
        asked = page.locator("[data-testid=approval]:not([data-decision])")
        asked.wait_for()
        # the deck's title, though the reloaded page had not listed the decks when it asked
        assert (
            asked.get_by_test_id("approval-question").inner_text()
            == "Change slide 1 of ‘Onboarding: your first week’?"
        )
        assert writes == [] and len(stand_in.requests) == 1, "nothing ran, the model waits"
        asked.get_by_role("button", name="Allow", exact=True).click()
        reply(page, "Renamed it.")
        idle(page)
        assert len(writes) == 1 and len(stand_in.requests) == 2
        title = page.request.get(f"{server.url}/api/decks/onboarding").json()["slides"][0]["title"]
        assert title == "Hello"
        assert [row[0] for row in snapshot(page)] == [  # the question, the decision, the result
            "chat-message chat-user",
            "chat-approval",
            "chat-tool",
            "chat-message chat-assistant",
        ]


def conversations(page):
    """The chat's conversations panel, opened anew: its rows, newest first."""
    chat = page.locator("reactor-chat")
    toggle = chat.get_by_role("button", name="Conversations")
    if toggle.get_attribute("aria-expanded") == "true":
        toggle.click()
    toggle.click()
    chat.locator("[data-testid=thread-list][data-state=listed]").wait_for()
    return chat.get_by_test_id("thread")


def test_another_browser_of_the_same_person_lists_and_opens_the_thread_and_bob_gets_404(
    new_reactor_page, serve
):
    with serve() as server:
        first = new_reactor_page(server)
        page = open_chat(first, "ada")
        say(page, "list decks")
        page.locator("reactor-chat .chat-tool[data-status=finished]").wait_for()
        idle(page)
        seen = snapshot(page)
        thread = page.request.get(f"{server.url}/api/threads").json()["threads"][0]
        other = new_reactor_page(server)  # a browser context of its own: another computer
        elsewhere = open_chat(other, "ada")
        rows = conversations(elsewhere)
        assert rows.all_inner_texts()[0].startswith("list decks")
        rows.first.get_by_role("button", name="list decks").click()
        elsewhere.locator("reactor-chat .chat-tool[data-status=finished]").wait_for()
        assert snapshot(elsewhere) == seen
        assert elsewhere.get_by_test_id("thread-title").inner_text() == "list decks"
        # bob, signed in in a third browser, cannot read, rename or delete it
        bob = new_reactor_page(server).page
        bob.goto(server.url + "/auth/session")
        signed = bob.request.post(
            f"{server.url}/auth/sign-in", data={"username": "bob", "password": "bob-demo"}
        )
        assert signed.ok
        at = f"{server.url}/api/threads/{thread['id']}"
        answers = [
            bob.request.get(at),
            bob.request.patch(at, data={"title": "bob's now"}),
            bob.request.delete(at),
        ]
        assert [a.status for a in answers] == [404, 404, 404]
        assert page.request.get(at).json()["title"] == "list decks", "unchanged"
        assert page.request.get(f"{server.url}/api/threads").json()["count"] == 1


def test_the_list_starts_switches_renames_deletes_and_exports_conversations(
    new_reactor_page, serve
):
    with serve() as server:
        reactor = new_reactor_page(server)
        page = open_chat(reactor, "ada")
        chat = page.locator("reactor-chat")
        say(page, "list decks")
        page.locator("reactor-chat .chat-tool[data-status=finished]").wait_for()
        idle(page)
        conversations(page)
        chat.get_by_test_id("new-thread").click()
        chat.locator("ol.chat-log > li").first.wait_for(state="detached")
        say(page, "open deck onboarding at slide 2")
        page.get_by_test_id("slide-number").get_by_text("Slide 2 of 5").wait_for()
        idle(page)
        rows = conversations(page)
        assert [r.split("\n")[0] for r in rows.all_inner_texts()] == [
            "open deck onboarding at slide 2",
            "list decks",
        ]
        # back to the first conversation: drawn as it was, nothing run
        rows.nth(1).get_by_role("button", name="list decks").click()
        chat.locator("ol.chat-log > li.chat-user").get_by_text("list decks", exact=True).wait_for()
        assert page.get_by_test_id("thread-title").inner_text() == "list decks"
        rows = conversations(page)
        rows.nth(1).get_by_role("button", name="Rename").click()
        rows.nth(1).get_by_label("New name").fill("The decks we have")
        rows.nth(1).get_by_role("button", name="Save").click()
        chat.get_by_role("button", name="The decks we have").wait_for()
        assert page.get_by_test_id("thread-title").inner_text() == "The decks we have"
        with page.expect_download() as markdown:
            rows.nth(1).get_by_role("button", name="Markdown").click()
        text = markdown.value.path().read_text(encoding="utf-8")
        assert markdown.value.suggested_filename == "The-decks-we-have.md"
        assert text.startswith("# The decks we have\n\n**You:**\n\nlist decks\n")
        assert "> **" in text and "(decks_list_decks): done." in text
        with page.expect_download() as exported:
            rows.nth(1).get_by_role("button", name="JSON").click()
        kept = json.loads(exported.value.path().read_text(encoding="utf-8"))
        assert kept["title"] == "The decks we have" and kept["messages"][0] == {
            "role": "user",
            "content": "list decks",
        }
        delete = rows.first.get_by_role("button", name="Delete")
        delete.click()
        rows.first.get_by_role("button", name="Delete for good?").click()
        chat.get_by_role("button", name="open deck onboarding at slide 2").wait_for(
            state="detached"
        )
        assert [r.split("\n")[0] for r in conversations(page).all_inner_texts()] == [
            "The decks we have"
        ]


def test_two_tabs_on_one_conversation_see_each_other_and_a_second_send_is_refused_not_mixed(
    new_reactor_page, serve, stand_in
):
    with serve(stand_in) as server:
        first = new_reactor_page(server)
        one = open_chat(first, "ada")
        stand_in.answers = [text("Hello from the first tab.")]
        say(one, "hello")
        reply(one, "Hello from the first tab.")
        idle(one)
        second = new_reactor_page(server, one.context.new_page())  # a second tab, same person
        two = open_chat(second)
        assert snapshot(two) == snapshot(one)
        # The first tab asks again; its answer is held after its first words.
        stand_in.answers = [text("Still answering, and the rest")]
        stand_in.hold.clear()
        say(one, "tell me more")
        one.locator("reactor-chat [data-streaming=true]").get_by_text("Still").wait_for()
        say(two, "and me too")
        refused = two.locator("reactor-chat li.chat-error").last
        refused.wait_for()
        assert refused.inner_text() == (
            "The assistant is still answering in another tab or window; wait for it to finish, "
            "or stop it there, then send your message again."
        )
        assert two.locator("reactor-chat textarea").input_value() == "and me too"
        stand_in.hold.set()
        reply(one, "Still answering, and the rest")
        idle(one)
        # The person comes back to the second tab and into its chat: it shows what was added.
        two.locator("reactor-chat textarea").click()
        two.locator("reactor-chat .chat-assistant").get_by_text("Still answering").wait_for()
        # The second tab sends again: it goes after the first tab's turn, not into it.
        stand_in.answers = [text("Answered the second tab.")]
        two.locator("reactor-chat").get_by_role("button", name="Send").click()
        reply(two, "Answered the second tab.")
        idle(two)
        # Back in the first tab: the second tab's turn shows, and the next message follows it.
        stand_in.answers = [text("Noted.")]
        say(one, "one more thing")
        one.locator("reactor-chat .chat-assistant").get_by_text(
            "Answered the second tab."
        ).wait_for()
        reply(one, "Noted.")
        idle(one)
        thread = one.request.get(f"{server.url}/api/threads").json()["threads"][0]
        kept = one.request.get(f"{server.url}/api/threads/{thread['id']}").json()
        assert [m["content"] for m in kept["messages"] if m["role"] == "user"] == [
            "hello",
            "tell me more",
            "and me too",
            "one more thing",
        ]
        assert snapshot(one) == snapshot(two)[: len(snapshot(one)) - 2] + snapshot(one)[-2:]
        assert len(stand_in.requests) == 4, "the refused send asked no model"
        assert (
            stand_in.requests[-1]["messages"][-2]["content"].strip() == "Answered the second tab."
        )


def ask_and_hold(page, stand_in):
    """Ask for an answer the provider holds after its first word, seen on screen."""
    stand_in.answers = [text("Partially answered, and the rest held back")]
    stand_in.hold.clear()
    say(page, "tell me everything")
    page.locator("reactor-chat [data-streaming=true]").get_by_text("Partially").wait_for()


def test_a_page_reloaded_while_the_sites_model_answers_shows_the_rest_as_it_comes(
    new_reactor_page, serve, stand_in
):
    with serve(stand_in) as server:
        reactor = new_reactor_page(server)
        page = open_chat(reactor, "ada")
        ask_and_hold(page, stand_in)
        page = reload(reactor)
        # re-attached: what came before the reload, then the rest
        page.locator("reactor-chat [data-streaming=true]").get_by_text("Partially").wait_for()
        assert not stand_in.hung_up.is_set(), "the provider's answer went on through the reload"
        stand_in.hold.set()
        reply(page, "Partially answered, and the rest held back")
        idle(page)
        assert len(stand_in.requests) == 1, "the model was not asked again"
        before = snapshot(page)
        assert [row[2] for row in before] == [
            "tell me everything",
            "Partially answered, and the rest held back",
        ]
        assert snapshot(reload(reactor)) == before, "and it was kept"


def test_stop_on_a_reloaded_page_closes_the_providers_request(new_reactor_page, serve, stand_in):
    with serve(stand_in) as server:
        reactor = new_reactor_page(server)
        page = open_chat(reactor, "ada")
        ask_and_hold(page, stand_in)
        page = reload(reactor)
        page.locator("reactor-chat [data-streaming=true]").get_by_text("Partially").wait_for()
        page.locator("reactor-chat").get_by_role("button", name="Stop").click()
        assert stand_in.hung_up.wait(2.0), "the provider saw its connection close"
        idle(page)
        assert page.locator("reactor-chat .chat-note").last.inner_text() == (
            "You stopped the assistant."
        )


def test_a_reply_from_a_typed_key_model_cut_by_a_reload_is_marked_interrupted_with_continue(
    new_reactor_page, serve
):
    provider = StandIn("openai", KEY, cors=True)  # the browser talks to it itself
    try:
        with serve() as server:
            reactor = new_reactor_page(server).allow_origin(provider.url)
            page = open_chat(reactor, "ada")
            chat = page.locator("reactor-chat")
            chat.locator("summary").click()
            chat.locator("select[name=provider]").select_option("openai")
            chat.locator("input[name=baseUrl]").fill(provider.url)
            chat.locator("input[name=model]").fill("typed-model")
            chat.locator("input[name=apiKey]").fill(KEY)
            chat.get_by_role("button", name="Use this model").click()
            page.get_by_test_id("chat-model").get_by_text("typed-model").wait_for()
            ask_and_hold(page, provider)
            page = reload(reactor)
            note = page.get_by_test_id("interrupted")
            assert note.inner_text().startswith(
                "The answer was interrupted when the page was reloaded."
            )
            assert provider.hung_up.wait(2.0), "the browser's request went with the page"
            assert page.get_by_test_id("chat-model").inner_text().startswith("typed-model")
            provider.hold.set()
            provider.answers = [text("Here is all of it.")]
            note.get_by_role("button", name="Continue").click()
            reply(page, "Here is all of it.")
            idle(page)
            assert [row[2] for row in snapshot(page)] == [
                "tell me everything",
                "Here is all of it.",
            ]
            assert [m["role"] for m in provider.requests[-1]["messages"]] == ["system", "user"]
    finally:
        provider.stop()


def test_past_the_limits_the_person_reads_what_to_do_and_keeps_their_words(new_reactor_page, serve):
    limits = ThreadLimits(threads=1, thread_bytes=6000)
    with serve(threads=limits) as server:
        reactor = new_reactor_page(server)
        page = open_chat(reactor, "ada")
        chat = page.locator("reactor-chat")
        say(page, "list decks")
        page.locator("reactor-chat .chat-tool[data-status=finished]").wait_for()
        idle(page)
        conversations(page)
        assert chat.get_by_test_id("thread-limits").inner_text() == (
            "1 of 1 conversations kept, each up to 0.006 MB."
        )
        chat.get_by_test_id("new-thread").click()
        chat.locator("ol.chat-log > li").first.wait_for(state="detached")
        say(page, "list decks again")
        refused = chat.locator("li.chat-error")
        refused.wait_for()
        assert refused.inner_text() == (
            "You have 1 conversation, the most this site keeps for one person: delete old ones "
            "(under Conversations) to start a new one."
        )
        assert chat.locator("textarea").input_value() == "list decks again"
        rows = conversations(page)
        rows.first.get_by_role("button", name="list decks").click()
        chat.locator("ol.chat-log > li.chat-user").get_by_text("list decks").wait_for()
        for _ in range(5):  # the conversation grows to its limit
            before = chat.locator("li.chat-error").count()
            say(page, "list decks")
            idle(page)
            if chat.locator("li.chat-error").count() > before:
                break
        assert chat.locator("li.chat-error").last.inner_text() == (
            "This conversation has reached this site's limit of 0.006 MB, so nothing more can be "
            "added to it: start a new conversation (this one stays as it is)."
        )
        thread = page.request.get(f"{server.url}/api/threads").json()["threads"][0]
        assert thread["size"] <= 6000
        kept = page.request.get(f"{server.url}/api/threads/{thread['id']}").json()
        assert kept["answering"] is None, "nothing half-written: no turn left open"


def test_signing_in_offers_to_keep_this_browsers_conversation_in_the_account(
    new_reactor_page, serve
):
    with serve() as server:
        reactor = new_reactor_page(server)
        page = open_chat(reactor)
        say(page, "list decks")
        page.locator("reactor-chat .chat-tool[data-status=finished]").wait_for()
        idle(page)
        before = snapshot(page)
        reactor.sign_in("ada")
        offer = page.get_by_test_id("keep-offer")
        offer.wait_for()
        assert offer.inner_text().startswith(
            "This browser kept a conversation from before you signed in: “list decks”."
        )
        assert page.locator("reactor-chat ol.chat-log > li.chat-user").count() == 0
        offer.get_by_role("button", name="Keep it in my account").click()
        page.locator("reactor-chat ol.chat-log > li.chat-user").get_by_text("list decks").wait_for()
        assert snapshot(page) == before
        listed = page.request.get(f"{server.url}/api/threads").json()
        assert [t["title"] for t in listed["threads"]] == ["list decks"]
        assert page.evaluate("localStorage.getItem('reactor.threads')") == "[]"
        # Signing out leaves the account's conversation off the screen and on the server.
        page.locator("#session").get_by_role("button", name="Sign out").click()
        page.locator("reactor-chat ol.chat-log > li").first.wait_for(state="detached")
        assert page.request.get(f"{server.url}/api/threads").status == 401
