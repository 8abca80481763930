"""The worker's end of the page ↔ worker messages (reactor.protocol), on CPython: requests and
answers, errors with their class and sentence, cancellation both ways, hostile messages."""

import asyncio
import json
import re
import subprocess
from pathlib import Path

import pytest

from reactor import (
    AbortedError,
    CancelToken,
    CommandOptions,
    Reactor,
    ReactorError,
    define_plugin,
    messages,
)
from reactor.errors import PageError, ProtocolError
from reactor.facade import execute_json
from reactor.messages import CALLS, PAGE_REQUESTS, VERSION, WORKER_NOTICES, WORKER_REQUESTS
from reactor.protocol import Raw, WorkerEndpoint

NOTES = CommandOptions(
    execute=lambda args: {args["of"]: 3},
    parameters={"type": "object", "properties": {"of": {"type": "string"}}, "required": ["of"]},
)


class Page:
    """The page's side as the worker sees it: every posted message, decoded."""

    def __init__(self) -> None:
        self.sent: list[dict] = []
        self.endpoint = WorkerEndpoint(lambda text: self.sent.append(json.loads(text)))

    def ask(self, **message) -> None:
        self.endpoint.receive(json.dumps({"v": VERSION, **message}))

    def answer_to(self, id: int) -> dict:
        return next(m for m in self.sent if m.get("re") == id)


def test_a_request_is_answered_with_its_value_and_json_text_is_sent_as_is():
    page = Page()
    page.endpoint.handle("commands", lambda message, signal: '[{"id": "a"}]', json_text=True)
    page.endpoint.handle("execute", lambda message, signal: {"ran": message["command"]})
    page.ask(id=1, type="commands")
    page.ask(id=2, type="execute", command="decks.open")
    assert page.answer_to(1) == {"v": VERSION, "re": 1, "ok": True, "value": [{"id": "a"}]}
    assert page.answer_to(2)["value"] == {"ran": "decks.open"}


def test_take_hands_back_an_answer_ready_at_once_and_posts_one_that_must_wait():
    page = Page()
    page.endpoint.handle("execute", lambda message, signal: {"ran": message["command"]})
    reply = page.endpoint.take(
        json.dumps({"v": VERSION, "id": 4, "type": "execute", "command": "decks.open"})
    )
    assert json.loads(reply) == {"v": VERSION, "re": 4, "ok": True, "value": {"ran": "decks.open"}}
    assert page.sent == []  # the worker's JavaScript posts it

    async def later():
        gate = asyncio.get_running_loop().create_future()
        page.endpoint.handle("commands", lambda message, signal: gate)
        assert page.endpoint.take(json.dumps({"v": VERSION, "id": 5, "type": "commands"})) is None
        gate.set_result(["a"])
        await asyncio.sleep(0)
        await asyncio.sleep(0)

    asyncio.run(later())
    assert page.answer_to(5)["value"] == ["a"]


def test_a_failing_handler_answers_with_the_error_class_and_sentence():
    page = Page()

    def refuse(message, signal):
        raise ValueError("Stopped by the person.")

    page.endpoint.handle("execute", refuse)
    page.ask(id=7, type="execute")
    assert page.answer_to(7) == {
        "v": VERSION,
        "re": 7,
        "ok": False,
        "error": {"type": "ValueError", "message": "Stopped by the person."},
    }


def test_a_call_taken_by_its_fields_is_answered_as_the_whole_message_would_be():
    page = Page()
    seen = []

    def run(name, args, signal):
        seen.append((name, args, signal))
        if name == "boom":
            raise ValueError("No such deck.")
        return '{"ok": true, "value": ' + args + "}"

    page.endpoint.handle_call("execute", run, answers=True)
    whole = page.endpoint.take(
        json.dumps(
            {"v": VERSION, "id": 3, "type": "execute", "command": "decks.open", "args": "[1]"}
        )
    )
    by_fields = page.endpoint.take_call("execute", 3, "decks.open", "[1]")
    assert by_fields == whole
    assert json.loads(by_fields) == {"v": VERSION, "re": 3, "ok": True, "value": [1]}
    # only the whole message may carry a signal
    assert seen[0][2] is not None and seen[1][2] is None
    assert json.loads(page.endpoint.take_call("execute", 4, "boom", "{}"))["error"] == {
        "type": "ValueError",
        "message": "No such deck.",
    }
    unknown = json.loads(page.endpoint.take_call("callTool", 5, "decks_open", "{}"))
    assert unknown["error"]["type"] == "ProtocolError" and unknown["re"] == 5


def test_a_command_answers_in_one_shape_its_failure_rejects_the_call_with_its_detail():
    reactor = Reactor()
    register = lambda context: context.register_command("notes.c", NOTES)  # noqa: E731
    reactor.load_plugin(define_plugin(name="notes", register=register))
    page = Page()

    def execute(command, args, signal):
        return execute_json(reactor, command, args)

    page.endpoint.handle_call("execute", execute, answers=True)
    ran = json.loads(page.endpoint.take_call("execute", 1, "notes.c", '{"of": "todo"}'))
    assert ran == {"v": VERSION, "re": 1, "ok": True, "value": {"todo": 3}}
    refused = json.loads(page.endpoint.take_call("execute", 2, "notes.c", '{"of": 1}'))
    assert refused["re"] == 2 and refused["ok"] is False and "value" not in refused
    error = refused["error"]
    assert error["type"] == "InvalidArgumentsError" and error["command"] == "notes.c"
    assert [problem["path"] for problem in error["problems"]] == ["$.of"]
    broken = json.loads(page.endpoint.take_call("execute", 3, "notes.c", "{not json"))["error"]
    assert broken["type"] == "InvalidArgumentsError" and "not valid JSON" in broken["message"]
    missing = json.loads(page.endpoint.take_call("execute", 4, "notes.gone", "{}"))["error"]
    assert missing["type"] == "CommandNotFoundError" and missing["command"] == "notes.gone"


def test_a_call_that_must_wait_is_posted_when_it_is_done():
    page = Page()

    async def later():
        gate = asyncio.get_running_loop().create_future()
        page.endpoint.handle_call("callTool", lambda name, args, signal: gate)
        assert page.endpoint.take_call("callTool", 6, "decks_open", "{}") is None
        gate.set_result('{"ok": true}')
        for _ in range(3):
            await asyncio.sleep(0)

    asyncio.run(later())
    assert page.answer_to(6) == {"v": VERSION, "re": 6, "ok": True, "value": {"ok": True}}


def test_only_the_declared_calls_can_be_handled_as_calls():
    page = Page()
    with pytest.raises(ProtocolError, match="'commands' is not one of the calls"):
        page.endpoint.handle_call("commands", lambda name, args, signal: "[]")
    assert CALLS.keys() <= PAGE_REQUESTS


def test_json_text_that_is_not_text_is_answered_with_an_error_not_sent_broken():
    page = Page()

    async def later(message, signal):
        await asyncio.sleep(0)
        return '{"late": true}'

    page.endpoint.handle("bundles", lambda message, signal: {"id": "a"}, json_text=True)
    page.ask(id=8, type="bundles")
    assert page.answer_to(8)["error"] == {
        "type": "TypeError",
        "message": "The worker's answer should have been JSON text, not dict.",
    }

    async def ask_later():
        page.endpoint.handle("commands", later, json_text=True)
        page.ask(id=9, type="commands")
        for _ in range(3):
            await asyncio.sleep(0)

    asyncio.run(ask_later())
    assert page.answer_to(9)["value"] == {"late": True}


@pytest.mark.parametrize(
    "message, sentence",
    [
        (
            {"v": 99, "id": 1, "type": "execute"},
            "The page speaks protocol version 99; this worker speaks 1.",
        ),
        ({"v": VERSION, "id": 1, "type": "exec"}, "The worker has no message type 'exec'."),
        ({"v": VERSION, "id": 1}, "The worker has no message type None."),
    ],
)
def test_a_message_of_another_version_or_type_is_answered_with_a_protocol_error(message, sentence):
    page = Page()
    page.endpoint.receive(json.dumps(message))
    error = page.answer_to(1)["error"]
    assert error["type"] == "ProtocolError" and error["message"].startswith(sentence)


@pytest.mark.parametrize("text", ["not json", "[1, 2]", '"a string"', "{" * 5000, "[" * 100_000])
def test_a_message_that_is_not_a_json_object_is_reported_not_raised(text):
    page = Page()
    page.endpoint.receive(text)
    assert page.sent[0]["type"] == "fail" and "not JSON" in page.sent[0]["message"]


def test_only_declared_types_can_be_handled_or_sent():
    page = Page()
    with pytest.raises(ReactorError, match="'page.show' is not a message") as refused:
        page.endpoint.handle("page.show", lambda message, signal: None)
    assert isinstance(refused.value, ProtocolError)
    assert not PAGE_REQUESTS & (WORKER_REQUESTS | WORKER_NOTICES)


def test_a_cancel_from_the_page_aborts_the_running_requests_token_and_its_late_result_is_dropped():
    async def scenario():
        page = Page()
        seen: list[CancelToken] = []

        async def slow(message, signal):
            seen.append(signal)
            try:
                return await signal.race(asyncio.sleep(10, "late"))
            except AbortedError as error:
                return {"aborted": str(error)}

        page.endpoint.handle("callTool", slow)
        page.ask(id=3, type="callTool")
        await asyncio.sleep(0)
        page.endpoint.receive(
            json.dumps(
                {"v": VERSION, "type": "cancel", "re": 3, "reason": "The person pressed Stop."}
            )
        )
        await asyncio.sleep(0.01)
        assert seen[0].aborted
        assert page.answer_to(3)["value"] == {"aborted": "Stopped: The person pressed Stop."}

    asyncio.run(scenario())


def test_a_request_the_page_had_already_aborted_arrives_with_its_token_aborted():
    page = Page()
    page.endpoint.handle(
        "callTool", lambda message, signal: {"aborted": signal.aborted, "reason": signal.reason}
    )
    page.ask(id=4, type="callTool", cancelled="Too late.")
    assert page.answer_to(4)["value"] == {"aborted": True, "reason": "Too late."}


def test_the_worker_asks_the_page_and_gets_its_answer_or_its_error():
    async def scenario():
        page = Page()
        opened = asyncio.ensure_future(page.endpoint.ask("page.openTab", url="/decks/a/print"))
        run = asyncio.ensure_future(
            page.endpoint.ask("pageCommand.run", key="todo#1", command="todo.add", args={})
        )
        await asyncio.sleep(0)
        asked = {m["type"]: m for m in page.sent}
        assert asked["page.openTab"]["url"] == "/decks/a/print"
        page.endpoint.receive(
            json.dumps(
                {"v": VERSION, "re": asked["page.openTab"]["id"], "ok": True, "value": False}
            )
        )
        page.endpoint.receive(
            json.dumps(
                {
                    "v": VERSION,
                    "re": asked["pageCommand.run"]["id"],
                    "ok": False,
                    "error": {"type": "TypeError", "message": "list is not a function"},
                }
            )
        )
        assert await opened is False
        with pytest.raises(PageError, match="list is not a function") as raised:
            await run
        assert raised.value.name == "TypeError"

    asyncio.run(scenario())


def test_an_abort_while_the_worker_waits_tells_the_page_and_drops_the_late_answer():
    async def scenario():
        page = Page()
        token = CancelToken()
        asked = asyncio.ensure_future(page.endpoint.ask("aiTool.run", signal=token, job="{}"))
        await asyncio.sleep(0)
        token.abort("timed out")
        with pytest.raises(AbortedError):
            await asked
        request = next(m for m in page.sent if m.get("type") == "aiTool.run")
        assert {
            "v": VERSION,
            "type": "cancel",
            "re": request["id"],
            "reason": "timed out",
        } in page.sent
        # ignored
        page.endpoint.receive(
            json.dumps({"v": VERSION, "re": request["id"], "ok": True, "value": "late"})
        )

    asyncio.run(scenario())


def test_a_notice_splices_raw_fields_without_encoding_them_again():
    page = Page()
    page.endpoint.notify("ready", loaded=["decks"], failures=[], bundles=Raw('[{"id": "decks"}]'))
    assert page.sent == [
        {
            "v": VERSION,
            "type": "ready",
            "loaded": ["decks"],
            "failures": [],
            "bundles": [{"id": "decks"}],
        }
    ]


def test_a_field_that_would_overwrite_the_envelope_is_refused_before_anything_is_sent():
    page = Page()
    with pytest.raises(ProtocolError, match="cannot carry a field 'id'"):
        page.endpoint.notify("panel.draw", id="chart", text="x")
    with pytest.raises(ProtocolError, match="cannot carry a field 'id'"):
        asyncio.run(page.endpoint.ask("panel.close", id="chart"))
    with pytest.raises(ProtocolError, match="not a message the worker sends"):
        page.endpoint.notify("panel.explode")
    assert page.sent == []


ROOT = Path(__file__).resolve().parents[1]


def declared_in_javascript() -> dict:
    """Every upper-case constant web/protocol.js exports, as JSON (a Set as its sorted items)."""
    script = (
        f"const p = await import({json.dumps((ROOT / 'web' / 'protocol.js').as_uri())});"
        "const plain = (v) => v instanceof Set ? [...v].sort() : v;"
        "console.log(JSON.stringify(Object.fromEntries(Object.entries(p)"
        ".filter(([name]) => /^[A-Z][A-Z_]*$/.test(name)).map(([n, v]) => [n, plain(v)]))));"
    )
    run = subprocess.run(
        ["node", "--input-type=module", "-e", script], capture_output=True, text=True, check=True
    )
    return json.loads(run.stdout)


def declared_in_python() -> dict:
    def plain(value):
        return sorted(value) if isinstance(value, frozenset) else value

    return {
        name: plain(v) for name, v in vars(messages).items() if re.fullmatch("[A-Z][A-Z_]*", name)
    }


def test_the_pages_javascript_declares_every_message_as_reactor_messages_does():
    """web/protocol.js, which the page's scripts import, against reactor/messages.py, the one
    declaration: the same version, message types, close codes and limit, and nothing on one
    side only but CALLS, which the worker's JavaScript is given by Python at start."""
    python, page = declared_in_python(), declared_in_javascript()
    assert python.pop("CALLS") == CALLS
    for name in sorted(python.keys() | page.keys()):
        assert page.get(name) == python.get(name), f"{name}: web/protocol.js vs reactor/messages.py"


def test_no_other_script_writes_the_version_a_close_code_or_the_links_limit():
    """The page's other scripts take these from web/protocol.js (the worker's boot script, which
    imports nothing it need not, speaks the version the page's boot message and Python say), and
    the server's Python from reactor.messages: changing one is a change of the declaration alone."""
    codes = [c for c in messages.LINK_CLOSE.values() if c != 1000]  # 1000 is also a second, in ms
    written = re.compile(
        r"\bVERSION\s*=|\bv:\s*\d|[\"']v[\"']\s*:\s*\d|"
        + "|".join(rf"\b{code}\b" for code in codes)
        + rf"|\b{messages.LINK_MESSAGE_LIMIT:_}\b|\b{messages.LINK_MESSAGE_LIMIT}\b"
    )
    scripts = [p for p in (ROOT / "web").glob("*.js") if p.name != "protocol.js"]
    # the Python that speaks these (other modules' 2,000,000 and 1008 mean something else)
    reactor = ROOT / "py" / "reactor"
    python = [*(reactor / "server" / "agents").rglob("*.py"), reactor / "protocol.py"]
    python += (reactor / "browser").rglob("*.py")
    found = [
        f"{path.relative_to(ROOT)}: {match[0]}"
        for path in [*scripts, *python]
        for match in written.finditer(path.read_text())
    ]
    assert found == []
