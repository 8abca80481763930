"""A reply of the site's model kept for its thread (server/gateway/kept.py), on a real server on
loopback: the page leaving does not end it, a reader re-attaches from the start or after its
last event, Stop closes the provider's request, and so does nobody coming back in time."""

from __future__ import annotations

import json

import httpx
import pytest
from conftest import bearer, start_server, stop_server

from reactor.server.gateway.config import AssistantConfig
from reactor.testing.standins import StandIn, text

KEY = "sk-kept-2b7d"
ROUTE = "/api/assistant/v1/chat/completions"
ASK = {"messages": [{"role": "user", "content": "hello"}], "stream": True}
THREAD = {"x-reactor-thread": "thread-one"}


@pytest.fixture
def stand_in():
    provider = StandIn("openai", KEY)
    yield provider
    provider.stop()


@pytest.fixture
def server(tmp_path, stand_in):
    config = AssistantConfig(
        provider="openai",
        model="site-model",
        api_key=KEY,
        base_url=stand_in.url,
        reattach_seconds=0.5,
    )
    live = start_server(tmp_path / "data", seed_demo=True, assistant=config)
    yield live
    stop_server(live)


def words(body: str) -> str:
    """The text of an OpenAI event stream's deltas."""
    said = []
    for line in body.splitlines():
        if line.startswith("data: {"):
            event = json.loads(line[6:])
            said += [c["delta"].get("content") or "" for c in event.get("choices", [])]
    return "".join(said)


def leave_after_first_words(client, headers):
    """Ask with the thread named, read until the first words came, and leave."""
    with client.stream("POST", ROUTE, json=ASK, headers={**headers, **THREAD}) as answer:
        assert answer.status_code == 200
        for line in answer.iter_lines():
            if '"content": "One "' in line:
                return


def test_a_kept_answer_goes_on_after_its_page_left_and_is_read_again_whole_or_after_an_event(
    server, stand_in
):
    stand_in.answers = [text("One two three four")]
    stand_in.hold.clear()
    ada = bearer(server, "ada")
    with httpx.Client(base_url=server.url, timeout=10) as client:
        leave_after_first_words(client, ada)
        assert not stand_in.hung_up.is_set(), "the provider's answer goes on"
        stand_in.hold.set()
        whole = client.get("/api/assistant/streams/thread-one", headers=ada)
        assert whole.status_code == 200 and words(whole.text) == "One two three four "
        ids = [int(line[4:]) for line in whole.text.splitlines() if line.startswith("id: ")]
        assert ids == list(range(1, len(ids) + 1)) and len(ids) >= 3
        rest = client.get(
            "/api/assistant/streams/thread-one", headers={**ada, "last-event-id": str(ids[1])}
        )
        assert whole.text.endswith(rest.text) and len(rest.text) < len(whole.text)
        assert "id: 1\n" not in rest.text and "id: 2\n" not in rest.text
        assert len(stand_in.requests) == 1


def test_another_persons_kept_answer_is_404_and_stays_as_it_is(server, stand_in):
    stand_in.answers = [text("For ada only")]
    stand_in.hold.clear()
    ada, bob = bearer(server, "ada"), bearer(server, "bob")
    with httpx.Client(base_url=server.url, timeout=10) as client:
        with client.stream("POST", ROUTE, json=ASK, headers={**ada, **THREAD}) as answer:
            lines = answer.iter_lines()
            came = [next(lines)]
            read = client.get("/api/assistant/streams/thread-one", headers=bob)
            stop = client.delete("/api/assistant/streams/thread-one", headers=bob)
            assert [read.status_code, stop.status_code] == [404, 404]
            assert read.json()["error"].startswith("This site keeps no answer coming")
            assert not stand_in.hung_up.is_set()
            stand_in.hold.set()
            assert words("\n".join([*came, *lines])) == "For ada only "


def test_stop_closes_the_providers_request_at_once(server, stand_in):
    stand_in.answers = [text("Held back here")]
    stand_in.hold.clear()
    ada = bearer(server, "ada")
    with httpx.Client(base_url=server.url, timeout=10) as client:
        with client.stream("POST", ROUTE, json=ASK, headers={**ada, **THREAD}) as answer:
            next(answer.iter_lines())
            stopped = client.delete("/api/assistant/streams/thread-one", headers=ada)
            assert stopped.json() == {"stopped": "thread-one"}
            assert stand_in.hung_up.wait(2.0)


def test_an_answer_nobody_comes_back_for_is_closed_after_the_window(server, stand_in):
    stand_in.answers = [text("One nobody reads")]
    stand_in.hold.clear()
    ada = bearer(server, "ada")
    with httpx.Client(base_url=server.url, timeout=10) as client:
        leave_after_first_words(client, ada)
        assert stand_in.hung_up.wait(2.0), "closed once half a second passed with no reader"
        answer = client.get("/api/assistant/streams/thread-one", headers=ada)
        assert answer.status_code == 404, "and forgotten: a reload now offers to continue"


def test_an_answer_that_names_no_thread_or_a_signed_out_one_is_not_kept(server, stand_in):
    stand_in.answers = [text("Not kept")]
    ada = bearer(server, "ada")
    with httpx.Client(base_url=server.url, timeout=10) as client:
        assert client.post(ROUTE, json=ASK, headers=ada).status_code == 200
        assert client.get("/api/assistant/streams/thread-one", headers=ada).status_code == 404
        bad = client.post(ROUTE, json=ASK, headers={**ada, "x-reactor-thread": "../x"})
        assert bad.status_code == 200
        assert client.get("/api/assistant/streams/thread-one", headers=ada).status_code == 404
