"""Streamed replies against real loopback servers that speak each provider's event stream.

The server sends its events one by one and holds the last ones until the test lets it go, so a
test can see text arrive before the answer is complete, and stop in the middle.
"""

import asyncio
import json
import socket
import struct
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from reactor.cancellation import CancelToken
from reactor.errors import AbortedError
from reactor.host import AnthropicModel, ModelRequest, OpenAIChatModel, ProviderError, urllib_send
from reactor.host.streaming import EventStream


class StreamingProvider:
    """Answers every POST with `events` (SSE text blocks), pausing before index `hold` until
    released."""

    def __init__(self, events, hold=None, content_type="text/event-stream"):
        self.events, self.hold, self.content_type = events, hold, content_type
        self.released, self.bodies, self.sent = threading.Event(), [], []
        self.dropping = False
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                outer.bodies.append(
                    json.loads(self.rfile.read(int(self.headers.get("content-length", 0))))
                )
                self.send_response(200)
                self.send_header("content-type", outer.content_type)
                self.end_headers()
                for index, event in enumerate(outer.events):
                    if index == outer.hold:
                        outer.released.wait(10)
                        if outer.dropping:  # a reset, not an orderly end: the connection is lost
                            self.connection.setsockopt(
                                socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)
                            )
                            self.connection.close()
                            return
                    try:
                        self.wfile.write(event.encode())
                        self.wfile.flush()
                    except OSError:
                        return  # the client hung up (Stop)
                    outer.sent.append(index)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, args=(0.02,), daemon=True).start()

    def drop(self):
        """The connection held at `hold` is reset, as when a network drops it."""
        self.dropping = True
        self.released.set()

    def close(self):
        self.released.set()
        self.server.shutdown()
        self.server.server_close()


def sse(data, event=None):
    return (
        f"event: {event}\n" if event else ""
    ) + f"data: {json.dumps(data) if not isinstance(data, str) else data}\n\n"


def openai_chunk(delta, finish=None):
    return sse(
        {
            "object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }
    )


async def until(condition, seconds=5.0):
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("timed out")
        await asyncio.sleep(0.01)


def text_before_the_rest(server, make_model, text):
    """Complete one turn; `text` must have arrived while the server still held its last events."""
    pieces = []

    async def scenario():
        model = make_model(server.url)
        turn = asyncio.ensure_future(
            model.complete(
                ModelRequest("", [{"role": "user", "content": "open q3"}], on_text=pieces.append),
                CancelToken(),
            )
        )
        await until(lambda: "".join(pieces) == text)
        assert not turn.done() and server.hold not in server.sent  # the text came before the rest
        server.released.set()
        return await turn

    try:
        turn = asyncio.run(scenario())
    finally:
        server.close()
    assert server.bodies[0]["stream"] is True
    return turn


def one_turn(server, make_model):
    """One turn of the model `make_model(url)` makes against `server`, which is closed after."""
    try:
        return asyncio.run(
            make_model(server.url).complete(
                ModelRequest("", [{"role": "user", "content": "x"}]), CancelToken()
            )
        )
    finally:
        server.close()


def test_events_are_cut_where_the_standard_cuts_them_whatever_the_chunks():
    text = (
        ': a comment\r\nevent: first\r\ndata: one\r\ndata: two\r\n\r\ndata: {"x": 1}\n\nretry: '
        "5\ndata: last"
    )
    for size in (1, 2, 3, 7, len(text)):
        stream = EventStream()
        events = [
            e
            for start in range(0, len(text), size)
            for e in stream.feed(text[start : start + size])
        ]
        assert events + stream.close() == [
            ("first", "one\ntwo"),
            ("message", '{"x": 1}'),
            ("message", "last"),
        ]


def test_openai_text_arrives_as_it_is_streamed_and_tool_calls_are_assembled_by_index():
    events = [
        openai_chunk({"role": "assistant", "content": ""}),
        openai_chunk({"content": "Opening "}),
        openai_chunk({"content": "it now."}),
        openai_chunk(
            {
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "call_a",
                        "type": "function",
                        "function": {"name": "decks_open", "arguments": ""},
                    }
                ]
            }
        ),
        openai_chunk(
            {
                "tool_calls": [
                    {
                        "index": 1,
                        "id": "call_b",
                        "function": {"name": "decks_list_decks", "arguments": "{}"},
                    }
                ]
            }
        ),
        openai_chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"id": '}}]}),
        openai_chunk({"tool_calls": [{"index": 0, "function": {"arguments": '"q3"}'}}]}),
        openai_chunk({}, "tool_calls"),
        sse("[DONE]"),
    ]
    server = StreamingProvider(events, hold=3)
    turn = text_before_the_rest(
        server,
        lambda url: OpenAIChatModel(base_url=url, model="m", send=urllib_send, stream=True),
        "Opening it now.",
    )
    assert turn.text == "Opening it now." and turn.stop_reason == "tool_use"
    assert [(c.id, c.name, json.loads(c.arguments)) for c in turn.tool_calls] == [
        ("call_a", "decks_open", {"id": "q3"}),
        ("call_b", "decks_list_decks", {}),
    ]


def test_local_servers_variants_a_whole_call_without_an_index_and_arguments_as_an_object():
    events = [
        openai_chunk({"content": "Sure."}),
        openai_chunk(
            {"tool_calls": [{"function": {"name": "decks_open", "arguments": {"id": "q3"}}}]},
            "stop",
        ),
        sse("[DONE]"),
    ]
    turn = one_turn(
        StreamingProvider(events),
        lambda url: OpenAIChatModel(base_url=url, model="llama3.1", send=urllib_send, stream=True),
    )
    assert turn.stop_reason == "tool_use" and turn.tool_calls[0].name == "decks_open"
    assert (
        json.loads(turn.tool_calls[0].arguments) == {"id": "q3"}
        and turn.tool_calls[0].id == "call_0"
    )


def test_a_server_that_answers_in_one_piece_still_works_when_asked_to_stream():
    whole = json.dumps(
        {
            "choices": [
                {"message": {"role": "assistant", "content": "Whole."}, "finish_reason": "stop"}
            ]
        }
    )
    turn = one_turn(
        StreamingProvider([whole], content_type="application/json"),
        lambda url: OpenAIChatModel(base_url=url, model="m", send=urllib_send, stream=True),
    )
    assert turn.text == "Whole." and turn.stop_reason == "end_turn"


def test_anthropic_text_and_tool_input_stream_and_assemble():
    events = [
        sse(
            {
                "type": "message_start",
                "message": {"id": "msg_1", "role": "assistant", "content": []},
            },
            "message_start",
        ),
        sse(
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
            "content_block_start",
        ),
        sse({"type": "ping"}, "ping"),
        sse(
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": "Let me "},
            },
            "content_block_delta",
        ),
        sse(
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": "look."},
            },
            "content_block_delta",
        ),
        sse({"type": "content_block_stop", "index": 0}, "content_block_stop"),
        sse(
            {
                "type": "content_block_start",
                "index": 1,
                "content_block": {
                    "type": "tool_use",
                    "id": "toolu_1",
                    "name": "decks_open",
                    "input": {},
                },
            },
            "content_block_start",
        ),
        sse(
            {
                "type": "content_block_delta",
                "index": 1,
                "delta": {"type": "input_json_delta", "partial_json": '{"id":'},
            },
            "content_block_delta",
        ),
        sse(
            {
                "type": "content_block_delta",
                "index": 1,
                "delta": {"type": "input_json_delta", "partial_json": ' "q3"}'},
            },
            "content_block_delta",
        ),
        sse({"type": "content_block_stop", "index": 1}, "content_block_stop"),
        sse(
            {
                "type": "message_delta",
                "delta": {"stop_reason": "tool_use"},
                "usage": {"output_tokens": 9},
            },
            "message_delta",
        ),
        sse({"type": "message_stop"}, "message_stop"),
    ]
    server = StreamingProvider(events, hold=5)
    turn = text_before_the_rest(
        server,
        lambda url: AnthropicModel(
            base_url=url, model="claude", send=urllib_send, api_key="k", stream=True
        ),
        "Let me look.",
    )
    assert turn.text == "Let me look." and turn.stop_reason == "tool_use"
    assert [(c.id, c.name, c.arguments) for c in turn.tool_calls] == [
        ("toolu_1", "decks_open", {"id": "q3"})
    ]


def test_an_overloaded_event_mid_stream_says_what_happened_and_what_to_do():
    events = [
        sse({"type": "message_start", "message": {}}, "message_start"),
        sse(
            {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
            "error",
        ),
    ]
    server = StreamingProvider(events)
    try:
        model = AnthropicModel(
            base_url=server.url, model="claude", send=urllib_send, api_key="k", stream=True
        )
        with pytest.raises(ProviderError) as error:
            asyncio.run(
                model.complete(ModelRequest("", [{"role": "user", "content": "x"}]), CancelToken())
            )
    finally:
        server.close()
    assert (
        str(error.value)
        == "Anthropic is overloaded and stopped mid-answer; send your message again in a minute."
    )
    assert error.value.kind == "overloaded" and error.value.detail == "Overloaded"


def test_stop_mid_stream_ends_the_call_and_drops_what_arrives_after():
    events = [
        openai_chunk({"content": "First part. "}),
        openai_chunk({"content": "Never shown."}),
        sse("[DONE]"),
    ]
    server = StreamingProvider(events, hold=1)
    pieces = []

    async def scenario():
        token = CancelToken()
        model = OpenAIChatModel(base_url=server.url, model="m", send=urllib_send, stream=True)
        turn = asyncio.ensure_future(
            model.complete(
                ModelRequest("", [{"role": "user", "content": "x"}], on_text=pieces.append), token
            )
        )
        await until(lambda: pieces == ["First part. "])
        token.abort("The person pressed Stop.")
        with pytest.raises(AbortedError):
            await turn
        server.released.set()
        await asyncio.sleep(0.2)

    try:
        asyncio.run(scenario())
    finally:
        server.close()
    assert pieces == ["First part. "]


def test_the_chat_loop_tells_each_streamed_piece_then_the_whole_message():
    from reactor import Reactor
    from reactor.host import AgentSpec, ChatLoop, Toolbox

    server = StreamingProvider(
        [
            openai_chunk({"content": "Hello "}),
            openai_chunk({"content": "there."}, "stop"),
            sse("[DONE]"),
        ]
    )
    events = []
    try:
        model = OpenAIChatModel(base_url=server.url, model="m", send=urllib_send, stream=True)
        loop = ChatLoop(model, Toolbox(Reactor(), AgentSpec("a")), on_event=events.append)
        outcome = asyncio.run(loop.send("hi"))
    finally:
        server.close()
    told = [(e.type, e.data.get("text")) for e in events if e.type.startswith("message")]
    assert told[-3:] == [
        ("message.delta", "Hello "),
        ("message.delta", "there."),
        ("message", "Hello there."),
    ]
    assert outcome.text == "Hello there."


def test_a_stream_cut_off_before_its_end_is_an_error_not_half_an_answer():
    server = StreamingProvider([openai_chunk({"content": "Half an ans"})])  # no finish, no [DONE]
    try:
        model = OpenAIChatModel(base_url=server.url, model="m", send=urllib_send, stream=True)
        with pytest.raises(
            ProviderError, match="The answer was cut off: .* ended its stream before it finished"
        ) as error:
            asyncio.run(
                model.complete(ModelRequest("", [{"role": "user", "content": "x"}]), CancelToken())
            )
    finally:
        server.close()
    assert error.value.kind == "cut_off"


def test_whole_calls_without_an_index_in_separate_chunks_stay_separate_calls():
    events = [
        openai_chunk(
            {
                "tool_calls": [
                    {"id": "a", "function": {"name": "decks_open", "arguments": {"id": "q3"}}}
                ]
            }
        ),
        openai_chunk(
            {
                "tool_calls": [
                    {"id": "b", "function": {"name": "decks_list_decks", "arguments": {}}}
                ]
            },
            "stop",
        ),
        sse("[DONE]"),
    ]
    turn = one_turn(
        StreamingProvider(events),
        lambda url: OpenAIChatModel(base_url=url, model="llama3.1", send=urllib_send, stream=True),
    )
    assert [(c.id, c.name) for c in turn.tool_calls] == [
        ("a", "decks_open"),
        ("b", "decks_list_decks"),
    ]


def test_a_tool_call_cut_by_the_token_limit_comes_back_as_such_for_the_loop_to_handle():
    events = [
        sse(
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "tool_use", "id": "t", "name": "decks_open", "input": {}},
            }
        ),
        sse(
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "input_json_delta", "partial_json": '{"id": "q'},
            }
        ),
        sse({"type": "message_delta", "delta": {"stop_reason": "max_tokens"}}),
        sse({"type": "message_stop"}),
    ]
    turn = one_turn(
        StreamingProvider(events),
        lambda url: AnthropicModel(
            base_url=url, model="claude", send=urllib_send, api_key="k", stream=True
        ),
    )
    assert turn.stop_reason == "max_tokens" and turn.tool_calls[0].arguments == '{"id": "q'


def test_a_connection_dropped_after_text_arrived_says_the_answer_was_cut_off():
    server = StreamingProvider([openai_chunk({"content": "Half an ans"}), 'data: {"choi'], hold=1)
    try:
        model = OpenAIChatModel(base_url=server.url, model="m", send=urllib_send, stream=True)

        async def scenario():
            turn = asyncio.ensure_future(
                model.complete(ModelRequest("", [{"role": "user", "content": "x"}]), CancelToken())
            )
            await until(lambda: server.sent == [0])
            server.drop()  # the connection goes while the answer is still coming
            return await turn

        with pytest.raises(ProviderError) as error:
            asyncio.run(scenario())
    finally:
        server.close()
    assert error.value.kind == "cut_off"
    assert str(error.value).startswith(
        "The answer was cut off: the connection to OpenAI-compatible server dropped"
    )
