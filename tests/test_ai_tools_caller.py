import asyncio
import copy
import time

import pytest

from reactor import CancelToken, ReactorError, ToolError
from reactor.records import AiToolCaller, InProcessRunner
from reactor.records.context import ToolContext
from test_ai_tools_declaration import RECORD


def record_with(code, **tool):
    record = copy.deepcopy(RECORD)
    record["code"] = code
    record["settings"]["tool"].update(tool)
    return record


class Records:
    """The server's answer for each id, re-read at every call, as the page does."""

    def __init__(self, record):
        self.record = record
        self.reads = 0

    async def read(self, record_id):
        self.reads += 1
        if self.record is None:
            raise ToolError("not_permitted", f"You may not use the plugin {record_id!r} now.")
        return self.record


def call(record, args, *, signal=None, view="decks/onboarding"):
    records = Records(record)
    caller = AiToolCaller(records.read, InProcessRunner(), view_id=lambda: view)
    return asyncio.run(caller.call(record["id"] if record else "gone", args, signal=signal))


def failure(record, args, **options):
    with pytest.raises(ToolError) as failed:
        call(record, args, **options)
    return failed.value


def test_a_call_returns_what_invoke_returned_with_config_and_view_in_context():
    code = (
        "def invoke(args, context):\n    return {'q': args.get('q'), 'config': context.config, "
        "'view': context.view_id}\n"
    )
    assert call(record_with(code), {"q": "x"}) == {
        "q": "x",
        "config": {"endpoint": "/x"},
        "view": "decks/onboarding",
    }


def test_an_async_invoke_is_awaited():
    code = (
        "import asyncio\nasync def invoke(args, context):\n    await asyncio.sleep(0)\n    "
        "return 7\n"
    )
    assert call(record_with(code), {}) == 7


@pytest.mark.parametrize("raw", [None, "", "{}", '{"q": "x"}', '"{\\"q\\": \\"x\\"}"'])
def test_missing_empty_and_string_arguments_are_read_as_an_object(raw):
    code = "def invoke(args, context):\n    return args\n"
    assert call(record_with(code), raw) in ({}, {"q": "x"})


@pytest.mark.parametrize(
    "raw, path",
    [
        ({"q": 3}, "$.q"),
        ({"made_up": 1}, "$"),
        ("{not json", "$"),
        ([1], "$"),
        ({"q": "x" * 10, "r": 1}, "$"),
    ],
)
def test_bad_arguments_are_refused_with_json_paths_before_the_code_runs(raw, path):
    code = "def invoke(args, context):\n    raise AssertionError('must not run')\n"
    refused = failure(record_with(code), raw)
    assert refused.code == "invalid_arguments"
    assert path in [p["path"] for p in refused.details["problems"]]
    assert "Fix them and call it again" in str(refused)


def test_an_exception_becomes_a_failed_answer_with_its_message_and_type():
    code = (
        "def invoke(args, context):\n    raise ValueError('There is no building B-9; buildings: "
        "B-101.')\n"
    )
    failed = failure(record_with(code), {})
    assert failed.code == "failed" and failed.details["type"] == "ValueError"
    assert "There is no building B-9; buildings: B-101." in str(failed)


def test_a_context_without_an_http_client_refuses_a_fetch_as_unavailable():
    context = ToolContext({}, None, CancelToken())
    with pytest.raises(ReactorError, match="cannot fetch") as refused:
        asyncio.run(context.fetch_json("/api/x"))
    assert isinstance(refused.value, ToolError) and refused.value.code == "unavailable"


def test_a_timeout_frees_the_caller_even_when_the_code_ignores_the_signal():
    async def scenario():
        code = "import time\ndef invoke(args, context):\n    time.sleep(0.6)\n    return 'late'\n"
        record = record_with(code, annotations={"sideEffect": "none", "timeoutMs": 100})
        caller = AiToolCaller(Records(record).read, InProcessRunner())
        started = time.monotonic()
        with pytest.raises(ToolError) as timed_out:
            await caller.call("answer", {})
        return timed_out.value, time.monotonic() - started

    timed_out, waited = asyncio.run(scenario())
    assert timed_out.code == "timeout" and "within 100 ms" in str(timed_out)
    assert waited < 0.5


def test_code_that_honours_the_signal_stops_at_the_timeout(tmp_path):
    stopped = tmp_path / "stopped"

    async def scenario():
        code = (
            "import asyncio, pathlib\n"
            "async def invoke(args, context):\n"
            "    try:\n"
            "        while not context.signal.aborted:\n"
            "            await asyncio.sleep(0.01)\n"
            "    finally:\n"
            "        "
            "pathlib.Path(context.config['stopped']).write_text(str(context.signal.reason))\n"
        )
        record = record_with(code, annotations={"sideEffect": "none", "timeoutMs": 100})
        record["settings"]["config"] = {"stopped": str(stopped)}
        caller = AiToolCaller(Records(record).read, InProcessRunner())
        with pytest.raises(ToolError) as timed_out:
            await caller.call("answer", {})
        await asyncio.sleep(0.05)
        return timed_out.value

    assert asyncio.run(scenario()).code == "timeout"
    assert stopped.read_text() == "timeout"


def test_a_stop_from_the_caller_aborts_the_call():
    async def scenario():
        code = "import asyncio\nasync def invoke(args, context):\n    await asyncio.sleep(5)\n"
        signal = CancelToken()
        asyncio.get_running_loop().call_later(0.05, signal.abort, "the person pressed Stop")
        caller = AiToolCaller(Records(record_with(code)).read, InProcessRunner())
        with pytest.raises(ToolError) as stopped:
            await caller.call("answer", {}, signal=signal)
        return stopped.value

    assert asyncio.run(scenario()).code == "aborted"


def test_a_result_over_the_cap_is_refused_and_said_never_cut():
    code = "def invoke(args, context):\n    return 'x' * 1000\n"
    refused = failure(record_with(code, maxResultBytes=256), {})
    assert refused.code == "too_large" and refused.details == {"size": 1002, "cap": 256}
    assert "over its cap of 256 bytes" in str(refused)


def test_a_result_that_is_not_json_is_a_failed_answer():
    code = "def invoke(args, context):\n    return {'when': object()}\n"
    assert "not JSON data" in str(failure(record_with(code), {}))


def test_a_revoked_record_is_not_permitted_on_the_very_next_call():
    code = "def invoke(args, context):\n    return 1\n"
    records = Records(record_with(code))
    caller = AiToolCaller(records.read, InProcessRunner())
    assert asyncio.run(caller.call("answer", {})) == 1
    records.record = None
    with pytest.raises(ToolError) as refused:
        asyncio.run(caller.call("answer", {}))
    assert refused.value.code == "not_permitted" and records.reads == 2


def test_a_disabled_or_misdeclared_record_on_the_server_does_not_run():
    code = "def invoke(args, context):\n    return 1\n"
    assert failure({**record_with(code), "enabled": False}, {}).code == "unavailable"
    assert "misdeclared" in str(failure({**record_with(code), "name": "bad name"}, {}))


def test_javascript_tools_run_only_in_the_page():
    record = {
        **record_with("async function Invoke(args, context) { return 1; }"),
        "language": "javascript",
    }
    assert failure(record, {}).code == "unavailable"
