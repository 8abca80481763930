"""The page's chat keeping its conversation, on CPython: turns kept as they go, in this browser's
storage or on the server (both databases); a restored thread runs nothing; a turn a reload cut
is asked again where it waited for the person, else shown as interrupted; a second tab is
refused, not interleaved."""

from __future__ import annotations

import asyncio
import json

import pytest
from conftest import IN_PROCESS_URL, app_server_over, bearer, new_database

from reactor import Reactor, define_agent_tools, define_plugin
from reactor.cancellation import CancelToken
from reactor.host import AgentSpec, ChatSession, ModelTurn, ToolCall
from reactor.host.conversations import Conversations
from reactor.host.threads import (
    LocalThreads,
    MemoryStorage,
    ServerThreads,
    ThreadKeeper,
    ThreadRefused,
)
from reactor.host.transcript import markdown
from reactor.http import fetch_json

NOTES = define_agent_tools(
    id="notes",
    name="Notes",
    plugin="notes",
    commands=[
        {
            "name": "notes_read",
            "command": "notes.read",
            "description": "Read the note.",
            "sideEffect": "read",
        },
        {
            "name": "notes_write",
            "command": "notes.write",
            "label": "Write the note",
            "description": "Write the note.",
            "sideEffect": "write",
            "parameters": {
                "type": "object",
                "properties": {"text": {"type": "string"}},
                "required": ["text"],
            },
        },
    ],
)


class Page:
    """The note the tools read and write, and how often each ran."""

    def __init__(self) -> None:
        self.note, self.writes, self.reads = "", 0, 0


def reactor_of(page: Page) -> Reactor:
    def register(context):
        def read(args):
            page.reads += 1
            return {"note": page.note}

        def write(args):
            page.writes += 1
            page.note = args["text"]
            return {"note": page.note}

        context.register_bundle(NOTES, {"notes.read": read, "notes.write": write})

    reactor = Reactor()
    reactor.load_plugin(define_plugin(name="notes", register=register))
    return reactor


class Script:
    label = "script"

    def __init__(self, *turns: ModelTurn) -> None:
        self.turns, self.requests = list(turns), []

    async def complete(self, request, signal):
        self.requests.append([dict(m) for m in request.messages])
        return self.turns.pop(0) if self.turns else ModelTurn("All done.")


def write_call(text: str, call_id: str = "w1") -> ModelTurn:
    return ModelTurn(
        "", (ToolCall(call_id, "notes_write", json.dumps({"text": text})),), "tool_use"
    )


class Approver:
    """The person: answers each approval with `decision`, or never (None) until `answer`."""

    def __init__(self, decision: str | None = "allow") -> None:
        self.decision, self.asked = decision, []
        self.waiting: asyncio.Future[str] | None = None

    async def __call__(self, request) -> str:
        self.asked.append(request.tool)
        if self.decision is not None:
            return self.decision
        self.waiting = asyncio.get_running_loop().create_future()
        return await self.waiting


def chat(page: Page, store, *, tab="tab-a", approve=None, events=None, model=None):
    """A page's chat (ChatSession and its Conversations) keeping in `store`."""
    session = ChatSession(
        reactor_of(page),
        AgentSpec("notes", "", ("notes",)),
        send=None,  # type: ignore[arg-type]  # the scripted models send nothing
        approve=approve or Approver(),
        on_event=(events.append if events is not None else lambda event: None),
        keeper=ThreadKeeper(tab),
    )
    session.loop.model = model or Script()
    conversations = Conversations(session, server=store, local=store)
    return session, conversations


@pytest.fixture(params=["local", "sqlite", "postgresql"])
def store(request, tmp_path):
    """Where the conversations are kept: this browser's storage, or the server on each
    database (as the signed-in ada)."""
    if request.param == "local":
        return LocalThreads(MemoryStorage())
    database = new_database(request, request.param, tmp_path / "data")
    server = app_server_over(tmp_path / "data", seed_demo=True, database=database)
    headers = bearer(server, "ada")

    async def fetch(method, url, body=None):
        return await fetch_json(server.send, method, IN_PROCESS_URL + url, body, headers)

    return ServerThreads(fetch)


def where(store) -> str:
    return store.where


async def restored(conversations, store, thread_id, tab="tab-a"):
    """A page loaded anew: it draws the thread and hands it over, as the widget does."""
    return await conversations.restore(await store.read(thread_id), where(store), tab)


def test_a_turn_is_kept_as_it_goes_what_the_model_saw_and_what_the_person_saw(store):
    page, events = Page(), []
    session, conversations = chat(
        page, store, events=events, model=Script(write_call("hello"), ModelTurn("Written."))
    )

    async def run():
        await conversations.restore(None, where(store), "tab-a")
        await conversations.send("write hello in the note")
        return await store.read(session.keeper.thread["id"])

    thread = asyncio.run(run())
    assert thread["messages"] == session.loop.history and len(thread["messages"]) == 4
    kinds = [item["type"] for item in thread["items"]]
    # The card as it was when the person was asked, then as it ended: drawn again in that order.
    assert kinds == ["message", "tool_call.started", "approval", "tool_call.finished", "message"]
    card = {**thread["items"][1], **thread["items"][3]}
    approval = thread["items"][2]
    assert card["title"] == "Write the note" and card["result"]["ok"] is True
    assert card["summary"]
    assert approval["decision"] == "allow" and approval["at"] > 0 and approval["question"]
    assert thread["answering"] is None and thread["title"] == "write hello in the note"
    assert [e.data for e in events if e.type == "thread"][0]["id"] == thread["id"]


def test_a_restored_thread_is_drawn_again_and_runs_no_tool(store):
    page = Page()
    session, conversations = chat(page, store, model=Script(write_call("hi"), ModelTurn("Done.")))

    async def run():
        await conversations.restore(None, where(store), "tab-a")
        await conversations.send("write hi")
        again, reloaded = chat(page, store)
        answer = await restored(reloaded, store, session.keeper.thread["id"])
        return again, answer

    again, answer = asyncio.run(run())
    assert answer["resume"] is None
    assert again.loop.history == session.loop.history
    assert page.writes == 1, "restoring ran nothing"


def test_a_reload_while_an_approval_waits_asks_again_and_the_tool_runs_only_once_allowed(store):
    page, waiting = Page(), Approver(None)
    session, conversations = chat(page, store, approve=waiting, model=Script(write_call("later")))

    async def run():
        await conversations.restore(None, where(store), "tab-a")
        sending = asyncio.ensure_future(conversations.send("write later"))
        while not waiting.asked:
            await asyncio.sleep(0)
        sending.cancel()  # the page is reloaded while the person is asked
        await asyncio.gather(sending, return_exceptions=True)
        assert page.writes == 0
        person = Approver("allow")
        again, reloaded = chat(page, store, approve=person, model=Script(ModelTurn("Written.")))
        answer = await restored(reloaded, store, session.keeper.thread["id"])
        assert answer["resume"] == "approval" and page.writes == 0
        outcome = await reloaded.resume()
        return person, outcome, await store.read(session.keeper.thread["id"])

    person, outcome, thread = asyncio.run(run())
    assert person.asked == ["notes_write"] and page.writes == 1 and outcome["status"] == "done"
    assert thread["messages"][-1] == {"role": "assistant", "content": "Written."}
    assert thread["answering"] is None


def test_a_reload_while_a_tool_ran_shows_it_interrupted_and_continue_asks_the_model(store):
    page = Page()
    session, conversations = chat(page, store, model=Script(write_call("x")))

    async def run():
        await conversations.restore(None, where(store), "tab-a")
        # The page went while the tool ran: its answer never came back to be kept.
        keep = session.keeper.keep

        async def gone(stage, history):
            if stage == "tool":
                raise asyncio.CancelledError
            await keep(stage, history)

        session.loop._keep = gone
        await asyncio.gather(conversations.send("write x"), return_exceptions=True)
        model = Script(ModelTurn("I will check the note first."))
        again, reloaded = chat(page, store, model=model)
        answer = await restored(reloaded, store, session.keeper.thread["id"])
        assert answer["resume"] == "interrupted"
        outcome = await reloaded.resume()
        return again, model, outcome

    again, model, outcome = asyncio.run(run())
    assert page.writes == 1, "it ran once, before the reload, and not again"
    answered = [m for m in again.loop.history if m["role"] == "tool"][-1]
    assert answered["result"]["error"]["code"] == "aborted"
    assert "may or may not have taken effect" in answered["result"]["error"]["message"]
    assert outcome["text"] == "I will check the note first." and len(model.requests) == 1


def test_a_second_tab_sending_while_the_first_answers_is_refused_and_then_sees_the_thread(store):
    page, waiting = Page(), Approver(None)
    first, first_chat = chat(page, store, approve=waiting, model=Script(write_call("a")))

    async def run():
        await first_chat.restore(None, where(store), "tab-a")
        sending = asyncio.ensure_future(first_chat.send("write a"))
        while not waiting.asked:
            await asyncio.sleep(0)
        thread_id = first.keeper.thread["id"]
        second, second_chat = chat(page, store, tab="tab-b")
        answer = await restored(second_chat, store, thread_id, tab="tab-b")
        assert answer["resume"] == "elsewhere"
        with pytest.raises(ThreadRefused) as refused:
            await second_chat.send("and write b")
        waiting.waiting.set_result("deny")
        await sending
        await second_chat.refresh()
        return refused.value, second, first

    refused, second, first = asyncio.run(run())
    assert str(refused).startswith("The assistant is still answering in another tab or window")
    assert second.loop.history == first.loop.history, "it sees what the other tab added"
    assert not any(m.get("content") == "and write b" for m in second.loop.history)


def test_a_tab_that_missed_a_change_is_refused_and_shown_the_thread_as_it_is(store):
    page = Page()
    first, first_chat = chat(page, store, model=Script(ModelTurn("One.")))
    events: list = []

    async def run():
        await first_chat.restore(None, where(store), "tab-a")
        await first_chat.send("one")
        thread_id = first.keeper.thread["id"]
        second, second_chat = chat(page, store, tab="tab-b", events=events)
        await restored(second_chat, store, thread_id, tab="tab-b")
        first.loop.model = Script(ModelTurn("Two."))
        await first_chat.send("two")
        with pytest.raises(ThreadRefused) as refused:
            await second_chat.send("three")
        return refused.value, second

    refused, second = asyncio.run(run())
    assert refused.stale
    assert [m["content"] for m in second.loop.history] == ["one", "One.", "two", "Two."]
    redrawn = [e.data for e in events if e.type == "thread" and "items" in e.data][-1]
    assert [i.get("text") for i in redrawn["items"]] == ["one", "One.", "two", "Two."]


def test_an_agents_call_through_the_chat_keeps_nothing_in_the_thread(store):
    page = Page()
    session, conversations = chat(page, store, model=Script(ModelTurn("Hello.")))

    async def run():
        await conversations.restore(None, where(store), "tab-a")
        await conversations.send("hello")
        before = await store.read(session.keeper.thread["id"])
        result = await session.call_tool("notes_write", {"text": "by an agent"}, CancelToken())
        return before, result, await store.read(session.keeper.thread["id"])

    before, result, after = asyncio.run(run())
    assert result["ok"] is True and page.writes == 1
    assert after["version"] == before["version"] and after["items"] == before["items"]


def test_a_thread_exports_as_markdown_a_person_reads():
    thread = {
        "title": "Notes",
        "items": [
            {"type": "message", "role": "user", "text": "write hi"},
            {
                "type": "tool_call.finished",
                "call_id": "w1",
                "name": "notes_write",
                "title": "Notes: Write the note",
                "summary": "Wrote ‘hi’.",
                "result": {"ok": True, "result": {"note": "hi"}},
            },
            {"type": "approval", "call_id": "w1", "question": "Write ‘hi’?", "decision": "allow"},
            {"type": "message", "role": "assistant", "text": "Done.", "cut": True},
        ],
    }
    text = markdown(thread)
    assert text.startswith("# Notes\n\n**You:**\n\nwrite hi\n")
    assert "> **Notes: Write the note** (notes_write): done. Wrote ‘hi’." in text
    assert "> Asked: Write ‘hi’? **Allowed.**" in text
    assert "**Assistant:** *(cut short)*\n\nDone." in text


def test_signing_in_offers_this_browsers_conversation_and_keep_moves_it_into_the_account():
    page = Page()
    local, account = LocalThreads(MemoryStorage()), LocalThreads(MemoryStorage())
    session, _ = chat(page, local, model=Script(ModelTurn("Hi.")))
    conversations = Conversations(session, server=account, local=local)

    async def run():
        await conversations.restore(None, "local", "tab-a")
        await conversations.send("hello there")
        kept_here = session.keeper.thread["id"]
        offered = (await conversations.sign(True))["offer"]
        assert session.loop.history == [], "a new conversation, in the account"
        await conversations.handle({"op": "keep", "thread": offered["id"]})
        return kept_here, offered

    kept_here, offered = asyncio.run(run())
    assert offered["id"] == kept_here and offered["title"] == "hello there"
    assert [m["content"] for m in session.loop.history] == ["hello there", "Hi."]
    assert asyncio.run(local.listed())["threads"] == [], "gone from this browser"
    moved = asyncio.run(account.listed())["threads"]
    assert [t["title"] for t in moved] == ["hello there"]
    assert session.keeper.thread["id"] == moved[0]["id"]


def test_what_cannot_be_done_to_a_conversation_is_refused_with_a_sentence():
    store = LocalThreads(MemoryStorage())
    session, conversations = chat(Page(), store)

    async def refused(message):
        with pytest.raises(Exception) as error:
            await conversations.handle(message)
        return str(error.value)

    async def run():
        await conversations.restore(None, "local", "tab-a")
        return [
            await refused({"op": "export", "format": "markdown"}),
            await refused({"op": "rename", "thread": "x", "title": "  "}),
            await refused({"op": "fly"}),
        ], await asyncio.gather(conversations.resume(), return_exceptions=True)

    sentences, (resumed,) = asyncio.run(run())
    assert sentences == [
        "There is nothing to export yet: this conversation is empty.",
        "Give the conversation a name: it cannot be blank.",
        "There is no conversation operation 'fly'.",
    ]
    assert str(resumed) == "There is no interrupted answer to continue here."
