"""A reply of the site's model kept while it streams (server/gateway/kept.py, shared.py), on
`reactor serve` processes sharing one PostgreSQL with no affinity (docs/DEPLOY.md): a page reloaded
mid-answer whose request reaches another process than the one relaying it gets the rest there,
Stop there closes the provider's request, and a holder that dies leaves an answer that ends and a
conversation that reads as interrupted, never a request that hangs."""

from __future__ import annotations

import json
import os
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from reactor.testing.standins import StandIn, text
from test_many_processes import serve

KEY = "sk-shared-kept-5c1e"
ROUTE = "/api/assistant/v1/chat/completions"
ASK = {"messages": [{"role": "user", "content": "hello"}], "stream": True}
TURN = {
    "messages": [{"role": "user", "content": "hello"}],
    "items": [{"type": "message", "role": "user", "text": "hello"}],
    "answering": True,
    "tab": "tab-a",
}


def end(process):
    if process.poll() is None:
        process.terminate()
    process.wait(timeout=30)
    process.stdout.close()


@pytest.fixture(scope="module")
def stand_in():
    provider = StandIn("openai", KEY)
    yield provider
    provider.stop()


@pytest.fixture(scope="module")
def site(tmp_path_factory, postgres_cluster, stand_in):
    """Two processes, A and B, on one database, and what starts a third on it."""
    folder = tmp_path_factory.mktemp("kept")
    database = postgres_cluster.database()
    extra = []

    def start(name):
        started = serve(
            folder, database, name,
            "--model-provider", "openai", "--model", "site-model", "--model-base-url", stand_in.url,
            env={**os.environ, "REACTOR_MODEL_API_KEY": KEY},
        )  # fmt: skip
        extra.append(started[0])
        return started

    with ThreadPoolExecutor(2) as pool:
        (a, url_a), (b, url_b) = pool.map(start, ["a", "b"])
    yield url_a, url_b, lambda name: start(name)
    for process in extra:
        end(process)


@pytest.fixture
def reply(stand_in):
    """The next answer: four words, held after the first until the test lets it go on."""
    stand_in.answers = [text("One two three four")]
    stand_in.hold.clear()
    stand_in.hung_up.clear()
    stand_in.first_text_sent.clear()
    yield
    stand_in.hold.set()


def sign_in(url, username="ada"):
    answer = httpx.post(
        f"{url}/auth/sign-in", json={"username": username, "password": f"{username}-demo"}
    )
    return {"authorization": f"Bearer {answer.json()['token']}"}


def new_thread(url, person):
    made = httpx.post(f"{url}/api/threads", json=TURN, headers=person)
    assert made.status_code == 201, made.text
    return made.json()["id"]


def words(lines) -> str:
    """The text of an OpenAI event stream's deltas."""
    said = []
    for line in lines:
        if line.startswith("data: {"):
            event = json.loads(line[6:])
            said += [c["delta"].get("content") or "" for c in event.get("choices", [])]
    return "".join(said)


def ask_and_leave_after_first_words(url, person, thread):
    """The page asks through `url` naming its thread, reads the first words, and is reloaded."""
    headers = {**person, "x-reactor-thread": thread}
    with httpx.stream("POST", f"{url}{ROUTE}", json=ASK, headers=headers, timeout=10) as answer:
        assert answer.status_code == 200
        for line in answer.iter_lines():
            if '"content": "One "' in line:
                return
    raise AssertionError("the first words never came")


def streaming(url, person, thread) -> bool:
    return httpx.get(f"{url}/api/threads/{thread}", headers=person).json()["streaming"]


def test_a_reply_started_on_one_process_is_read_on_the_other_whole_in_order_and_once(
    site, stand_in, reply
):
    a, b, _ = site
    ada = sign_in(a)
    thread = new_thread(a, ada)
    asked = len(stand_in.requests)
    ask_and_leave_after_first_words(a, ada, thread)
    assert streaming(b, ada, thread), "the reloaded page, served by B, re-attaches"
    lines = []
    with httpx.stream(
        "GET", f"{b}/api/assistant/streams/{thread}", headers=ada, timeout=10
    ) as rest:
        assert rest.status_code == 200
        assert rest.headers["content-type"].startswith("text/event-stream")
        read = rest.iter_lines()
        for line in read:
            lines.append(line)
            if '"content": "One "' in line:
                break  # what A sent before the reload came through B while the model waits
        assert not stand_in.hold.is_set()
        stand_in.hold.set()
        lines += list(read)
    assert words(lines) == "One two three four "
    ids = [int(line[4:]) for line in lines if line.startswith("id: ")]
    assert ids == list(range(1, len(ids) + 1)) and len(ids) >= 3
    assert len(stand_in.requests) == asked + 1, "the model was asked once"
    # From B again, after the event a page last read (Last-Event-ID): only what came after it.
    after = httpx.get(
        f"{b}/api/assistant/streams/{thread}", headers={**ada, "last-event-id": str(ids[1])}
    )
    assert after.status_code == 200
    said, rest = (
        [line for line in lines if line],
        [line for line in after.text.splitlines() if line],
    )
    assert (
        said[len(said) - len(rest) :] == rest and rest[0] == said[said.index(f"id: {ids[1]}") + 1]
    )
    # Another person gets nothing of it from either process.
    bob = sign_in(b, "bob")
    for url in (a, b):
        assert httpx.get(f"{url}/api/assistant/streams/{thread}", headers=bob).status_code == 404


def test_stop_through_the_other_process_closes_the_providers_request(site, stand_in, reply):
    a, b, _ = site
    ada = sign_in(a)
    thread = new_thread(a, ada)
    headers = {**ada, "x-reactor-thread": thread}
    with httpx.stream("POST", f"{a}{ROUTE}", json=ASK, headers=headers, timeout=10) as answer:
        assert stand_in.first_text_sent.wait(5)
        stopped = httpx.delete(f"{b}/api/assistant/streams/{thread}", headers=ada)
        assert stopped.json() == {"stopped": thread}
        assert stand_in.hung_up.wait(5), "the provider saw its request closed"
        said = words(answer.iter_lines())  # and the answer on A ended where it was
    assert said == "One "
    # The page asks again, through B: a reload reaching A gets that newer reply, not its own.
    stand_in.answers = [text("Five six")]
    stand_in.hold.set()
    again = httpx.post(f"{b}{ROUTE}", json=ASK, headers=headers, timeout=10)
    assert words(again.text.splitlines()) == "Five six "
    reread = httpx.get(f"{a}/api/assistant/streams/{thread}", headers=ada, timeout=10)
    assert words(reread.text.splitlines()) == "Five six "


def test_a_holder_that_dies_ends_the_reply_read_elsewhere_and_the_page_reads_interrupted(
    site, stand_in, reply
):
    a, b, start = site
    holder, c = start("c")
    ada = sign_in(c)
    thread = new_thread(c, ada)
    ask_and_leave_after_first_words(c, ada, thread)
    with httpx.stream(
        "GET", f"{b}/api/assistant/streams/{thread}", headers=ada, timeout=20
    ) as rest:
        lines = rest.iter_lines()
        assert next(line for line in lines if '"content": "One "' in line)
        holder.kill()
        holder.wait(timeout=10)
        cut = list(lines)  # ends once B's bus sees C gone (seconds), never hangs
    assert words(cut) == "" and "the server process giving it stopped" in "\n".join(cut)
    assert not streaming(b, ada, thread), "a reload now offers to continue"
    gone = httpx.get(f"{a}/api/assistant/streams/{thread}", headers=ada)
    assert gone.status_code == 404 and "no answer coming" in gone.json()["error"]


def test_events_larger_than_a_notify_payload_cross_whole(site, stand_in, reply):
    a, b, _ = site
    ada = sign_in(a)
    thread = new_thread(a, ada)
    long_word = "é" * 6000  # 12,000 bytes in one event: past NOTIFY's 8,000
    stand_in.answers = [text(f"One {long_word} end")]
    ask_and_leave_after_first_words(a, ada, thread)
    stand_in.hold.set()
    rest = httpx.get(f"{b}/api/assistant/streams/{thread}", headers=ada, timeout=10)
    assert rest.status_code == 200 and words(rest.text.splitlines()) == f"One {long_word} end "
