"""The relay between /mcp and the person's pages (reactor/server/agents/mcp.py), on CPython: calls
answered, a page that goes, a person who does not answer, a cancel, whose pages are whose, and
how an envelope becomes MCP's result. With a real page: tests/test_mcp_page.py."""

from __future__ import annotations

import asyncio

import pytest
from mcp_types.methods import serialize_server_result

from reactor.server.agents.mcp import tool_result
from reactor.server.agents.relay import CLAIMED_STOPPING, CLAIMED_TIMEOUT, STOPPING, PageRelay


async def quiet(waited: float, message: str) -> None:
    pass


def test_a_call_goes_down_the_pages_stream_and_its_answer_comes_back():
    async def run():
        relay = PageRelay()
        page = relay.connect("ada", "reactor", "http://127.0.0.1:8000/")
        call = asyncio.ensure_future(relay.call(page, "decks_list_decks", {}, quiet, "Claude Code"))
        sent = await page.outbox.get()
        assert sent == {
            "type": "call",
            "call": sent["call"],
            "tool": "decks_list_decks",
            "arguments": {},
            "agent": "Claude Code",
        }
        assert relay.answer(page, sent["call"], {"ok": True, "result": {"decks": []}})
        assert not relay.answer(page, sent["call"], {"ok": True, "result": 1}), (
            "one answer per call"
        )
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
    assert (
        envelope["error"]["code"] == "timeout"
        and "did not answer in the page within 0.3 s" in envelope["error"]["message"]
    )
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


def test_a_call_claimed_while_its_agent_waits_runs_and_nothing_withdraws_it_after():
    async def run():
        relay = PageRelay()
        relay.answer_limit, relay.progress_seconds = 0.3, 0.05
        page = relay.connect("ada", "reactor", "")
        other = relay.connect("ada", "reactor", "")
        gives_up = asyncio.ensure_future(relay.call(page, "decks_create_deck", {}, quiet))
        waits = asyncio.ensure_future(relay.call(page, "decks_delete_deck", {}, quiet))
        first, second = await page.outbox.get(), await page.outbox.get()
        relay.claim(other, first["call"])  # not sent to that page: refused
        refused_elsewhere = await other.outbox.get()
        for sent in (first, second):
            relay.claim(page, sent["call"])
        claims = [await page.outbox.get(), await page.outbox.get()]
        gives_up.cancel()  # the agent stops waiting once the person allowed it
        await asyncio.gather(gives_up, return_exceptions=True)
        timed_out = await waits  # its result does not come in time
        return first, second, refused_elsewhere, claims, timed_out, page.outbox.qsize()

    first, second, refused_elsewhere, claims, timed_out, left = asyncio.run(run())
    assert refused_elsewhere == {"type": "claimed", "call": first["call"], "ok": False}
    assert claims == [
        {"type": "claimed", "call": first["call"], "ok": True},
        {"type": "claimed", "call": second["call"], "ok": True},
    ]
    assert left == 0, "no cancel went down: the person allowed them, they run"
    assert timed_out["error"]["code"] == "timeout"
    assert timed_out["error"]["message"] == CLAIMED_TIMEOUT.format(
        tool="decks_delete_deck", limit=0.3
    ), "the agent is told it is running, never that it did not run"


def test_a_server_that_stops_tells_the_agent_its_claimed_call_runs_and_withdraws_the_others():
    async def run():
        relay = PageRelay()
        page = relay.connect("ada", "reactor", "")
        allowed = asyncio.ensure_future(relay.call(page, "decks_create_deck", {}, quiet))
        asked = asyncio.ensure_future(relay.call(page, "decks_delete_deck", {}, quiet))
        first, second = await page.outbox.get(), await page.outbox.get()
        relay.claim(page, first["call"])
        await page.outbox.get()  # claimed
        relay.stop()
        sent = [await page.outbox.get(), await page.outbox.get()]
        return first, second, await allowed, await asked, sent

    first, second, allowed, asked, sent = asyncio.run(run())
    assert allowed["error"]["message"] == CLAIMED_STOPPING.format(tool="decks_create_deck")
    assert asked["error"]["message"] == STOPPING.format(tool="decks_delete_deck")
    assert sent == [{"type": "cancel", "call": second["call"]}, None], (
        "only the call nobody allowed is withdrawn; then the link ends"
    )


def test_a_claim_after_the_agent_stopped_waiting_is_refused_and_it_was_told_it_did_not_run():
    async def run():
        relay = PageRelay()
        relay.answer_limit = 0.05
        page = relay.connect("ada", "reactor", "")
        envelope = await relay.call(page, "decks_create_deck", {}, quiet)
        sent = await page.outbox.get()
        await page.outbox.get()  # the withdrawal, which the person clicked before it came
        relay.claim(page, sent["call"])
        return envelope, sent, await page.outbox.get()

    envelope, sent, claimed = asyncio.run(run())
    assert "so decks_create_deck did not run" in envelope["error"]["message"]
    assert claimed == {"type": "claimed", "call": sent["call"], "ok": False}


def test_pages_are_found_by_their_person_only_the_most_recently_active_first():
    async def run():
        relay = PageRelay()
        first, second = relay.connect("ada", "one", ""), relay.connect("ada", "two", "")
        bobs = relay.connect("bob", "bob's", "")
        second.active_at = first.active_at - 10
        assert relay.pages_of("ada") == [first, second]
        told: list[str] = []
        relay._notify = told.append  # type: ignore[method-assign]
        relay.touch(second)
        assert relay.pages_of("ada") == [second, first] and told == ["ada"], (
            "another page is the first now"
        )
        relay.touch(second)
        assert told == ["ada"], "still the same first page: nothing to tell"
        assert relay.page_of("bob", first.id) is None and relay.page_of("bob", bobs.id) is bobs

    asyncio.run(run())


def test_an_envelope_becomes_structured_content_and_text_and_a_failure_a_tool_error():
    ok = tool_result({"ok": True, "result": {"decks": [1]}})
    assert ok == {
        "content": [{"type": "text", "text": '{"decks": [1]}'}],
        "isError": False,
        "structuredContent": {"decks": [1]},
    }
    listed = tool_result({"ok": True, "result": [1, 2]})
    assert listed["structuredContent"] == {"result": [1, 2]}
    assert listed["content"] == [{"type": "text", "text": "[1, 2]"}]
    failed = tool_result(
        {"ok": False, "error": {"code": "denied", "message": "The person declined."}}
    )
    assert failed["isError"] is True
    assert failed["content"] == [{"type": "text", "text": "The person declined. (code: denied)"}]
    assert failed["structuredContent"] == {
        "error": {"code": "denied", "message": "The person declined."}
    }
    # A plain tools/call answers this form as it is (transport.py DirectToolCalls): it must be
    # what the SDK itself answers for a 2025-11-25 session, field for field.
    for result in (ok, listed, failed, tool_result({"ok": False})):
        assert serialize_server_result("tools/call", "2025-11-25", result) == result


def test_a_connected_pages_messages_are_checked_and_only_its_person_may_send_them(tmp_path):
    from conftest import bearer, start_server, stop_server
    from websockets.exceptions import ConnectionClosed, InvalidStatus
    from websockets.sync.client import connect

    from test_mcp_processes import ScriptedPage

    live = start_server(tmp_path / "data", seed_demo=True)
    ada = bearer(live, "ada")
    page = ScriptedPage(live.url, ada, lambda call: None)
    try:
        for message, said in [
            ({"type": "answer", "call": "x"}, "An answer is"),
            ({"type": "answer", "call": "x", "envelope": {"ok": "yes"}}, "An answer is"),
            ({"type": "tools", "tools": "all"}, "A tool list is"),
            ({"type": "tools", "tools": [1]}, "A tool list is"),
            ({"type": "shout"}, "Send {"),
            ("not json", "a JSON object"),
            ([1, 2], "a JSON object"),
            ("[" * 100_000 + "]" * 100_000, "a JSON object"),  # deeper than Python reads
            ({"type": "where", "title": 3, "route": ""}, "Where a page is"),
            ({"type": "claim", "call": 7}, "A claim is"),
            (
                '{"type": "tools", "tools": [' + "{}," * 700_000 + "{}]}",
                "at most 2,000,000 characters",
            ),
        ]:
            page.send(message)
            problem = page.said.get(timeout=10)
            assert problem["type"] == "problem" and said in problem["error"], message
        assert live.app.state.agents.relay.pages[page.page_id].tools != [{}], (
            "nothing of a refused message was kept"
        )
        # nobody waits: dropped
        page.send({"type": "answer", "call": "nobody.0", "envelope": {"ok": True}})
        page.send({"type": "active"})
        page.send({"type": "claim", "call": "nobody.0"})
        assert page.said.get(timeout=10) == {"type": "claimed", "call": "nobody.0", "ok": False}
        page.send({"type": "tools", "tools": []})
        assert page.said.get(timeout=10) == {"type": "listed", "tools": 0}, (
            "the page goes on after a dropped answer"
        )

        link = f"ws{live.url.removeprefix('http')}/api/agent-pages/link"
        for foreign in [
            {"origin": "http://127.0.0.1:5500"},
            {"sec-fetch-site": "same-site"},
            {"sec-fetch-site": "cross-site"},
        ]:
            with pytest.raises(InvalidStatus) as refused:
                connect(link, additional_headers={**ada, **foreign})
            assert refused.value.response.status_code == 403, (
                f"another site's page may not link: {foreign}"
            )
        with connect(link) as anonymous:
            with pytest.raises(ConnectionClosed):
                anonymous.recv(10)
        assert anonymous.close_code == 4401 and "Sign in" in anonymous.close_reason
    finally:
        page.close()
        stop_server(live)


def test_an_answer_counts_only_from_the_page_the_call_went_to():
    async def run():
        relay = PageRelay()
        asked = relay.connect("ada", "Onboarding – reactor", "", "#/decks/onboarding/4")
        other = relay.connect("ada", "reactor", "")
        bobs = relay.connect("bob", "reactor", "")
        call = asyncio.ensure_future(relay.call(asked, "decks_delete_deck", {"id": "x"}, quiet))
        sent = await asked.outbox.get()
        forged = [
            relay.answer(page, sent["call"], {"ok": True, "result": "forged"})
            for page in (other, bobs)
        ]
        settled_by_forgery = call.done()
        assert relay.answer(asked, sent["call"], {"ok": True, "result": "real"})
        return forged, settled_by_forgery, await call

    forged, settled_by_forgery, envelope = asyncio.run(run())
    assert forged == [False, False] and not settled_by_forgery
    assert envelope == {"ok": True, "result": "real"}


def test_reactor_pages_says_what_each_page_shows_when_it_was_used_and_which_takes_calls():
    async def run():
        relay = PageRelay()
        first = relay.connect("ada", "reactor", "http://127.0.0.1:8000/")
        second = relay.connect("ada", "reactor", "http://127.0.0.1:8000/")
        relay.locate(first, "Onboarding – reactor", "#/decks/onboarding/4")
        relay.locate(second, "Reactor in 5 minutes – reactor", "#/decks/reactor-in-5-minutes/1")
        first.active_at, second.active_at = 1_767_225_600.0, 1_767_225_660.0
        return [p.describe() for p in relay.pages_of("ada")]

    newest, older = asyncio.run(run())
    assert newest["title"] == "Reactor in 5 minutes – reactor"
    assert newest["route"] == "#/decks/reactor-in-5-minutes/1"
    assert newest["lastUsed"] == "2026-01-01T00:01:00Z"
    assert (older["title"], older["route"], older["lastUsed"]) == (
        "Onboarding – reactor",
        "#/decks/onboarding/4",
        "2026-01-01T00:00:00Z",
    )


def test_a_call_answered_at_once_is_one_json_body_and_one_that_waits_an_event_stream(tmp_path):
    """Streamable HTTP lets the server choose per request: JSON when the page's answer is the
    first thing to say, an event stream opened by the first progress notice when the person is
    deciding."""
    import json

    import httpx
    from conftest import bearer, open_2025_session, start_server, stop_server

    from test_mcp_processes import ScriptedPage, agent_token

    live = start_server(tmp_path / "data", seed_demo=True)
    live.app.state.agents.relay.progress_seconds = 0.05
    session = bearer(live, "ada")
    page = ScriptedPage(
        live.url,
        session,
        lambda call: None if call["arguments"] else {"ok": True, "result": {"n": 3}},
    )
    try:
        headers = open_2025_session(live.url, agent_token(live))
        with httpx.Client(base_url=live.url, headers=headers, timeout=10) as http:

            def call(number: int, arguments: dict) -> dict:
                params = {
                    "name": "notes_count",
                    "arguments": arguments,
                    "_meta": {"progressToken": number},
                }
                return {"jsonrpc": "2.0", "id": number, "method": "tools/call", "params": params}

            at_once = http.post("/mcp", json=call(1, {}))
            assert at_once.headers["content-type"] == "application/json"
            assert at_once.json()["result"]["structuredContent"] == {"n": 3}

            with http.stream("POST", "/mcp", json=call(2, {"wait": True})) as waiting:
                assert waiting.headers["content-type"].startswith("text/event-stream")
                events = (
                    json.loads(line[6:])
                    for line in waiting.iter_lines()
                    if line.startswith("data: ")
                )
                first = next(events)
                assert (
                    first["method"] == "notifications/progress"
                    and first["params"]["progressToken"] == 2
                )
                asked = page.calls[-1]
                page.send(
                    {
                        "type": "answer",
                        "call": asked["call"],
                        "envelope": {"ok": True, "result": {"n": 4}},
                    }
                )
                answer = next(e for e in events if "id" in e)
                assert answer["id"] == 2 and answer["result"]["structuredContent"] == {"n": 4}
    finally:
        page.close()
        stop_server(live)


def test_a_page_whose_person_signed_out_elsewhere_is_closed_at_its_next_message(tmp_path):
    import httpx
    from conftest import bearer, start_server, stop_server

    from test_mcp_processes import ScriptedPage

    live = start_server(tmp_path / "data", seed_demo=True)
    ada = bearer(live, "ada")
    page = ScriptedPage(live.url, ada, lambda call: None)
    try:
        httpx.post(f"{live.url}/auth/sign-out", headers=ada).raise_for_status()
        page.send({"type": "where", "title": "reactor", "route": "#/decks"})
        page.thread.join(10)  # the server closed the link
        assert not page.thread.is_alive()
        assert page.socket.close_code == 4401 and "signed out" in page.socket.close_reason
    finally:
        page.close()
        stop_server(live)
