"""The relay between /mcp and the person's pages (reactor/server/mcp_relay.py), on CPython: calls
answered, a page that goes, a person who does not answer, a cancel, whose pages are whose, and
how an envelope becomes MCP's result. With a real page: tests/test_mcp_page.py."""

from __future__ import annotations

import asyncio

from reactor.server.mcp_relay import tool_result
from reactor.server.page_relay import PageRelay


async def quiet(waited: float, message: str) -> None:
    pass


def test_a_call_goes_down_the_pages_stream_and_its_answer_comes_back():
    async def run():
        relay = PageRelay()
        page = relay.connect("ada", "reactor", "http://127.0.0.1:8000/")
        call = asyncio.ensure_future(relay.call(page, "decks_list_decks", {}, quiet))
        sent = await page.outbox.get()
        assert sent == {"type": "call", "call": sent["call"], "tool": "decks_list_decks", "arguments": {}}
        assert relay.answer(page, sent["call"], {"ok": True, "result": {"decks": []}})
        assert not relay.answer(page, sent["call"], {"ok": True, "result": 1}), "one answer per call"
        return await call, relay.waiting, page.sent

    envelope, open_calls, sent = asyncio.run(run())
    assert envelope == {"ok": True, "result": {"decks": []}} and open_calls == {} and sent == set()


def test_a_page_that_goes_fails_its_calls_at_once():
    async def run():
        relay = PageRelay()
        page = relay.connect("ada", "reactor", "")
        call = asyncio.ensure_future(relay.call(page, "decks_create_deck", {"title": "x"}, quiet))
        await page.outbox.get()
        relay.disconnect(page)
        return await asyncio.wait_for(call, 1), relay.pages_of("ada")

    envelope, pages = asyncio.run(run())
    assert envelope["ok"] is False and envelope["error"]["code"] == "unavailable"
    assert "page closed" in envelope["error"]["message"] and pages == []


def test_a_person_who_does_not_answer_ends_the_call_after_the_limit_with_progress_meanwhile():
    heard: list[str] = []

    async def progress(waited: float, message: str) -> None:
        heard.append(message)

    async def run():
        relay = PageRelay()
        relay.answer_limit, relay.progress_seconds = 0.3, 0.05
        page = relay.connect("ada", "reactor", "")
        envelope = await relay.call(page, "decks_create_deck", {}, progress)
        await page.outbox.get()  # the call
        return envelope, await page.outbox.get()

    envelope, cancel = asyncio.run(run())
    assert envelope["error"]["code"] == "timeout" and "did not answer in the page within 0.3 s" in envelope["error"]["message"]
    assert cancel["type"] == "cancel", "the page stops asking"
    assert len(heard) >= 3


def test_an_agent_that_gives_up_cancels_the_call_in_the_page():
    async def run():
        relay = PageRelay()
        page = relay.connect("ada", "reactor", "")
        call = asyncio.ensure_future(relay.call(page, "decks_create_deck", {}, quiet))
        sent = await page.outbox.get()
        call.cancel()
        await asyncio.gather(call, return_exceptions=True)
        return sent, await page.outbox.get()

    sent, cancel = asyncio.run(run())
    assert cancel == {"type": "cancel", "call": sent["call"]}


def test_pages_are_found_by_their_person_only_the_most_recently_active_first():
    async def run():
        relay = PageRelay()
        first, second = relay.connect("ada", "one", ""), relay.connect("ada", "two", "")
        bobs = relay.connect("bob", "bob's", "")
        second.active_at = first.active_at - 10
        assert relay.pages_of("ada") == [first, second]
        told: list[str] = []
        relay.changed = told.append  # type: ignore[method-assign]
        relay.touch(second)
        assert relay.pages_of("ada") == [second, first] and told == ["ada"], "another page is the first now"
        relay.touch(second)
        assert told == ["ada"], "still the same first page: nothing to tell"
        assert relay.page_of("bob", first.id) is None and relay.page_of("bob", bobs.id) is bobs

    asyncio.run(run())


def test_an_envelope_becomes_structured_content_and_text_and_a_failure_a_tool_error():
    ok = tool_result({"ok": True, "result": {"decks": [1]}})
    assert ok.is_error is not True and ok.structured_content == {"decks": [1]} and ok.content[0].text == '{"decks": [1]}'
    listed = tool_result({"ok": True, "result": [1, 2]})
    assert listed.structured_content == {"result": [1, 2]} and listed.content[0].text == "[1, 2]"
    failed = tool_result({"ok": False, "error": {"code": "denied", "message": "The person declined."}})
    assert failed.is_error is True and failed.content[0].text == "The person declined. (code: denied)"
    assert failed.structured_content == {"error": {"code": "denied", "message": "The person declined."}}


def test_a_connected_pages_messages_are_checked_and_only_its_person_may_send_them(tmp_path):
    import httpx
    from conftest import bearer, start_server, stop_server

    from test_mcp_processes import ScriptedPage

    live = start_server(tmp_path / "data", seed_demo=True)
    ada = bearer(live, "ada")
    page = ScriptedPage(live.url, live.url, ada, lambda call: None)
    try:
        at = f"{live.url}/api/agent-pages/{page.page_id}"
        for body, field in [
            ({"type": "answer", "call": "x"}, "envelope"),
            ({"type": "answer", "call": "x", "envelope": {"ok": "yes"}}, "envelope.ok"),
            ({"type": "tools", "tools": "all"}, "tools"),
            ({"type": "tools", "tools": [1]}, "tools[0]"),
            ({"type": "shout"}, "type"),
        ]:
            answer = httpx.post(at, json=body, headers=ada)
            assert answer.status_code == 422 and answer.json()["field"] == field, body
        huge = httpx.post(
            at,
            content=b'{"type": "tools", "tools": [' + b"{}," * 700_000 + b"{}]}",
            headers={**ada, "content-type": "application/json"},
        )
        assert huge.status_code == 413
        assert httpx.post(at, json={"type": "active"}, headers=bearer(live, "bob")).status_code == 404, (
            "never another person's page"
        )
        assert httpx.post(at, json={"type": "active"}).status_code in (401, 403)
        stale = httpx.post(at, json={"type": "answer", "call": "nobody.0", "envelope": {"ok": True}}, headers=ada)
        assert stale.json() == {"ok": False}, "an answer nobody waits for is dropped"
    finally:
        page.close()
        stop_server(live)
