"""The provider adapters against real loopback HTTP servers speaking each provider's wire format.

Each server checks requests the way the provider does (auth header, every tool call answered,
turns alternating) and answers in its format, errors included, so an adapter that renders the
conversation wrongly fails here as it would against the real API.
"""

import asyncio
import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from conftest import DECK_OPEN, decks_bundle

from reactor import NO_ARGUMENTS, Reactor, define_plugin
from reactor.cancellation import CancelToken
from reactor.host import (
    AgentSpec,
    AnthropicModel,
    ChatLoop,
    ModelRequest,
    OpenAIChatModel,
    ProviderError,
    Toolbox,
    urllib_send,
)
from reactor.server.loopback import free_port

KEY = "sk-test-5ecret-key"
BUNDLE = decks_bundle("decks_list_decks", "decks_open")


class LoopbackProvider:
    """A real HTTP server on 127.0.0.1; `answer(path, headers, body)` returns (status, headers,
    data)."""

    def __init__(self, answer):
        self.answer = answer
        self.requests = []
        self.gate = threading.Event()
        self.gate.set()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                raw = self.rfile.read(int(self.headers.get("content-length", 0)))
                headers = {k.lower(): v for k, v in self.headers.items()}
                body = json.loads(raw)
                outer.requests.append({"path": self.path, "headers": headers, "body": body})
                outer.gate.wait(10)
                try:
                    status, extra, data = outer.answer(self.path, headers, body)
                except Exception as error:  # a broken test server says so instead of hanging up
                    status, extra, data = (
                        500,
                        {},
                        {"error": {"message": f"test server: {error!r}", "type": "server_error"}},
                    )
                payload = data.encode() if isinstance(data, str) else json.dumps(data).encode()
                self.send_response(status)
                self.send_header(
                    "content-type", "application/json" if not isinstance(data, str) else "text/html"
                )
                self.send_header("content-length", str(len(payload)))
                for name, value in extra.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.02,), daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.gate.set()
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(5)


def reactor_and_page():
    page = {"open": None, "slide": 0}

    def open_deck(args):
        page.update(open=args["id"], slide=args.get("slide", 1))
        return {"open": args["id"], "slide": page["slide"]}

    def register(context):
        listed = [{"id": "quarterly-review", "title": "Quarterly review"}]
        context.register_bundle(
            BUNDLE, {"decks.listDecks": lambda args: listed, "decks.open": open_deck}
        )

    reactor = Reactor()
    reactor.load_plugin(define_plugin(name="decks", register=register))
    return reactor, page


def chat_loop(model):
    reactor, page = reactor_and_page()
    toolbox = Toolbox(
        reactor,
        AgentSpec("presenter", "You present decks.", ("decks",)),
        side_effects={"decks_list_decks": "read", "decks_open": "none"},
    )
    return ChatLoop(model, toolbox), page


def tools_of(loop):
    return ModelRequest("", [{"role": "user", "content": "hi"}], loop.toolbox.tools())


# OpenAI-compatible Chat Completions


def openai_error(status, message, type_, code=None, headers=None):
    return (
        status,
        headers or {},
        {"error": {"message": message, "type": type_, "param": None, "code": code}},
    )


def openai_checks(path, headers, body):
    """What the real endpoint refuses; None when the request is well formed."""
    if path != "/v1/chat/completions":
        return (
            404,
            {},
            {"error": {"message": f"Invalid URL (POST {path})", "type": "invalid_request_error"}},
        )
    if headers.get("authorization") != f"Bearer {KEY}":
        given = headers.get("authorization", "").removeprefix("Bearer ")
        return openai_error(
            401,
            f"Incorrect API key provided: {given}. You can find your API key at https://platform.openai.com/account/api-keys.",
            "invalid_request_error",
            "invalid_api_key",
        )
    messages = body["messages"]
    for index, message in enumerate(messages):
        if message["role"] == "assistant" and message.get("tool_calls"):
            answered = [
                m.get("tool_call_id")
                for m in messages[index + 1 : index + 1 + len(message["tool_calls"])]
            ]
            for call in message["tool_calls"]:
                if not isinstance(call["function"]["arguments"], str) or call["id"] not in answered:
                    return openai_error(
                        400,
                        "An assistant message with 'tool_calls' must be followed by tool "
                        "messages responding to each 'tool_call_id'.",
                        "invalid_request_error",
                    )
        if message["role"] == "tool" and not isinstance(message["content"], str):
            return openai_error(
                400, "Invalid type for 'messages[].content'.", "invalid_request_error"
            )
    return None


def openai_completion(message, finish_reason):
    return (
        200,
        {},
        {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 1,
            "model": "gpt-test",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", **message},
                    "finish_reason": finish_reason,
                }
            ],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        },
    )


def openai_presenter(path, headers, body):
    """Opens the deck it is asked about, then says what the tool answered."""
    refused = openai_checks(path, headers, body)
    if refused:
        return refused
    last = body["messages"][-1]
    if last["role"] == "user":
        call = {
            "id": "call_abc",
            "type": "function",
            "function": {
                "name": "decks_open",
                "arguments": '{"id": "quarterly-review", "slide": 4}',
            },
        }
        return openai_completion({"content": None, "tool_calls": [call]}, "tool_calls")
    result = json.loads(last["content"])
    return openai_completion({"content": f"Opened at slide {result['result']['slide']}."}, "stop")


def openai_model(server, key=KEY):
    return OpenAIChatModel(
        base_url=server.url + "/v1", model="gpt-test", api_key=key, send=urllib_send
    )


def test_openai_runs_a_tool_call_and_answers_with_the_result_over_real_http():
    with LoopbackProvider(openai_presenter) as server:
        loop, page = chat_loop(openai_model(server))
        outcome = asyncio.run(loop.send("Open the quarterly review at slide 4"))
    assert (outcome.status, outcome.text, outcome.stop_reason) == (
        "done",
        "Opened at slide 4.",
        "end_turn",
    )
    assert page == {"open": "quarterly-review", "slide": 4}
    first, second = (r["body"] for r in server.requests)
    assert first["model"] == "gpt-test"
    assert first["messages"][0] == {"role": "system", "content": "You present decks."}
    assert first["tools"][1] == {
        "type": "function",
        "function": {
            "name": "decks_open",
            "description": "Open a deck at a slide.",
            "parameters": DECK_OPEN,
        },
    }
    assert first["tools"][0]["function"]["parameters"] == NO_ARGUMENTS
    assert (
        second["messages"][-2]["tool_calls"][0]["function"]["arguments"]
        == '{"id": "quarterly-review", "slide": 4}'
    )
    assert second["messages"][-1] == {
        "role": "tool",
        "tool_call_id": "call_abc",
        "content": json.dumps({"ok": True, "result": {"open": "quarterly-review", "slide": 4}}),
    }


def test_openai_parses_stop_reasons_and_local_server_quirks():
    model = OpenAIChatModel(base_url="http://unused", model="m", send=urllib_send)
    turn = model.parse_response(
        {"choices": [{"message": {"content": "Cut"}, "finish_reason": "length"}]}
    )
    assert (turn.text, turn.stop_reason, turn.provider_stop_reason) == (
        "Cut",
        "max_tokens",
        "length",
    )
    # llama.cpp / Ollama: no id, arguments as an object, finish_reason "stop" beside the calls.
    turn = model.parse_response(
        {
            "choices": [
                {
                    "message": {
                        "content": "",
                        "tool_calls": [
                            {"function": {"name": "decks_open", "arguments": {"id": "q"}}}
                        ],
                    },
                    "finish_reason": "stop",
                }
            ]
        }
    )
    assert turn.stop_reason == "tool_use" and turn.tool_calls[0].id == "call_0"
    assert turn.tool_calls[0].arguments == {"id": "q"}
    with pytest.raises(ProviderError, match="without choices"):
        model.parse_response({"object": "list"})


def test_openai_through_a_local_server_without_a_key_sends_no_authorization():
    def local(path, headers, body):
        assert "authorization" not in headers
        return openai_completion({"content": "Hello from llama.cpp"}, "stop")

    with LoopbackProvider(local) as server:
        model = OpenAIChatModel(base_url=server.url + "/v1", model="local", send=urllib_send)
        turn = asyncio.run(
            model.complete(ModelRequest("", [{"role": "user", "content": "hi"}]), CancelToken())
        )
    assert turn.text == "Hello from llama.cpp" and "tools" not in server.requests[0]["body"]


@pytest.mark.parametrize(
    "answer, status, kind, says",
    [
        (None, 401, "authentication", "Check the API key."),
        (
            openai_error(
                429,
                "Rate limit reached for gpt-test in organization org-x on requests per min.",
                "requests",
                "rate_limit_exceeded",
                {"retry-after": "2"},
            ),
            429,
            "rate_limit",
            "Wait 2 seconds and try again.",
        ),
        (
            (404, {}, {"error": "model 'llama3' not found, try pulling it first"}),
            404,
            "not_found",
            "model 'llama3' not found",
        ),  # Ollama's shape
        (
            (
                500,
                {},
                {
                    "error": {
                        "code": 500,
                        "message": "failed to parse tools",
                        "type": "server_error",
                    }
                },
            ),
            500,
            "server",
            "failed to parse tools",
        ),  # llama.cpp's shape
        ((502, {}, "<html>Bad gateway</html>"), 502, "server", "<html>Bad gateway</html>"),
    ],
)
def test_openai_error_bodies_become_clear_provider_errors(answer, status, kind, says):
    with LoopbackProvider(lambda *request: answer or openai_checks(*request)) as server:
        model = openai_model(server, key=KEY if answer else "sk-wrong-key-000")
        with pytest.raises(ProviderError) as info:
            asyncio.run(
                model.complete(ModelRequest("", [{"role": "user", "content": "hi"}]), CancelToken())
            )
    error = info.value
    assert (error.status, error.kind) == (status, kind) and says in str(error)
    assert "sk-wrong-key-000" not in str(error) and KEY not in str(error) and KEY not in repr(model)
    if kind == "rate_limit":
        assert error.retry_after == 2


def test_openai_refuses_a_conversation_with_an_unanswered_tool_call_like_the_real_api():
    history = [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"id": "call_1", "name": "decks_open", "arguments": "{}"}],
        },
        {"role": "user", "content": "again"},
    ]
    with LoopbackProvider(openai_presenter) as server:
        with pytest.raises(ProviderError, match="must be followed by tool messages"):
            asyncio.run(openai_model(server).complete(ModelRequest("", history), CancelToken()))


def test_an_unreachable_server_is_a_provider_error_saying_so():
    model = OpenAIChatModel(
        base_url=f"http://127.0.0.1:{free_port()}/v1", model="m", api_key=KEY, send=urllib_send
    )
    with pytest.raises(ProviderError, match="could not be reached") as info:
        asyncio.run(
            model.complete(ModelRequest("", [{"role": "user", "content": "hi"}]), CancelToken())
        )
    assert info.value.kind == "unreachable"


def test_stop_during_a_slow_provider_request_returns_at_once_and_drops_the_answer():
    with LoopbackProvider(openai_presenter) as server:
        server.gate.clear()  # the server holds its answer
        loop, page = chat_loop(openai_model(server))

        async def scenario():
            running = asyncio.ensure_future(loop.send("Open the quarterly review"))
            while not server.requests:
                await asyncio.sleep(0.005)
            loop.stop()
            outcome = await asyncio.wait_for(running, 2)
            server.gate.set()  # the answer arrives after the stop
            await asyncio.sleep(0.1)
            return outcome

        outcome = asyncio.run(scenario())
    assert outcome.status == "stopped"
    assert (
        loop.history == [{"role": "user", "content": "Open the quarterly review"}]
        and page["open"] is None
    )


# Anthropic Messages


def anthropic_error(status, type_, message, headers=None):
    return status, headers or {}, {"type": "error", "error": {"type": type_, "message": message}}


def anthropic_checks(path, headers, body):
    if path != "/v1/messages":
        return anthropic_error(404, "not_found_error", f"Not found: {path}")
    if headers.get("x-api-key") != KEY:
        return anthropic_error(401, "authentication_error", "invalid x-api-key")
    if "anthropic-version" not in headers:
        return anthropic_error(
            400, "invalid_request_error", "anthropic-version: header is required"
        )
    if "max_tokens" not in body:
        return anthropic_error(400, "invalid_request_error", "max_tokens: Field required")
    messages = body["messages"]
    for index, message in enumerate(messages):
        if message["role"] != ("user" if index % 2 == 0 else "assistant"):
            return anthropic_error(
                400,
                "invalid_request_error",
                "messages: roles must alternate between user and assistant",
            )
        content = (
            message["content"]
            if isinstance(message["content"], list)
            else [{"type": "text", "text": message["content"]}]
        )
        if any(part["type"] == "text" and not part["text"] for part in content):
            return anthropic_error(
                400, "invalid_request_error", "messages: text content blocks must be non-empty"
            )
        uses = [part["id"] for part in content if part["type"] == "tool_use"]
        if uses:
            following = messages[index + 1]["content"] if index + 1 < len(messages) else []
            results = (
                [p.get("tool_use_id") for p in following if p["type"] == "tool_result"]
                if isinstance(following, list)
                else []
            )
            leading = (
                [p["type"] for p in following[: len(uses)]] if isinstance(following, list) else []
            )
            if set(uses) - set(results) or set(leading) != {"tool_result"}:
                return anthropic_error(
                    400,
                    "invalid_request_error",
                    "messages: `tool_use` ids were found without `tool_result` blocks "
                    "immediately after",
                )
    return None


def anthropic_message(content, stop_reason):
    return (
        200,
        {},
        {
            "id": "msg_01",
            "type": "message",
            "role": "assistant",
            "model": "claude-test",
            "content": content,
            "stop_reason": stop_reason,
            "stop_sequence": None,
            "usage": {"input_tokens": 1, "output_tokens": 1},
        },
    )


def anthropic_presenter(path, headers, body):
    """Lists, then opens the first deck at slide 2 in one turn with two tool_use blocks, then
    answers."""
    refused = anthropic_checks(path, headers, body)
    if refused:
        return refused
    last = body["messages"][-1]["content"]
    results = (
        [part for part in last if part["type"] == "tool_result"] if isinstance(last, list) else []
    )
    if not results:
        return anthropic_message(
            [
                {"type": "text", "text": "Let me look."},
                {"type": "tool_use", "id": "toolu_01", "name": "decks_list_decks", "input": {}},
                {
                    "type": "tool_use",
                    "id": "toolu_02",
                    "name": "decks_open",
                    "input": {"id": "quarterly-review", "slide": 2},
                },
            ],
            "tool_use",
        )
    opened = json.loads(results[1]["content"])["result"]
    return anthropic_message(
        [{"type": "text", "text": f"Slide {opened['slide']} is up."}], "end_turn"
    )


def anthropic_model(server, key=KEY):
    return AnthropicModel(
        base_url=server.url, model="claude-test", api_key=key, send=urllib_send, max_tokens=512
    )


def test_anthropic_runs_tool_use_blocks_and_returns_tool_results_over_real_http():
    with LoopbackProvider(anthropic_presenter) as server:
        loop, page = chat_loop(anthropic_model(server))
        outcome = asyncio.run(loop.send("Put the quarterly review on slide 2"))
        # the whole history, rendered again, is still accepted
        again = asyncio.run(loop.send("Thanks"))
    assert (outcome.status, outcome.text) == ("done", "Slide 2 is up.")
    assert again.status == "done" and page == {"open": "quarterly-review", "slide": 2}
    first, second = (r for r in server.requests[:2])
    assert first["headers"]["anthropic-version"] == "2023-06-01"
    assert first["headers"]["anthropic-dangerous-direct-browser-access"] == "true"
    assert first["body"]["system"] == "You present decks." and first["body"]["max_tokens"] == 512
    assert first["body"]["tools"][1] == {
        "name": "decks_open",
        "description": "Open a deck at a slide.",
        "input_schema": DECK_OPEN,
    }
    results = second["body"]["messages"][-1]["content"]
    assert [r["tool_use_id"] for r in results] == ["toolu_01", "toolu_02"]
    assert results[1] == {
        "type": "tool_result",
        "tool_use_id": "toolu_02",
        "is_error": False,
        "content": json.dumps({"ok": True, "result": {"open": "quarterly-review", "slide": 2}}),
    }


def test_anthropic_tool_errors_go_back_marked_as_errors():
    def wrong_tool(path, headers, body):
        refused = anthropic_checks(path, headers, body)
        if refused:
            return refused
        if body["messages"][-1]["content"][0]["type"] == "text":
            return anthropic_message(
                [{"type": "tool_use", "id": "toolu_9", "name": "decks_delete", "input": {}}],
                "tool_use",
            )
        return anthropic_message([{"type": "text", "text": "I cannot delete."}], "end_turn")

    with LoopbackProvider(wrong_tool) as server:
        loop, _ = chat_loop(anthropic_model(server))
        asyncio.run(loop.send("delete everything"))
    [result] = server.requests[1]["body"]["messages"][-1]["content"]
    assert (
        result["is_error"] is True
        and json.loads(result["content"])["error"]["code"] == "unknown_tool"
    )


def test_anthropic_parses_stop_reasons():
    model = AnthropicModel(model="m", api_key=KEY, send=urllib_send)
    for reason, stop in (
        ("end_turn", "end_turn"),
        ("max_tokens", "max_tokens"),
        ("tool_use", "tool_use"),
        ("stop_sequence", "end_turn"),
        ("refusal", "refusal"),
        ("pause_turn", "other"),
    ):
        turn = model.parse_response(
            {"content": [{"type": "text", "text": "x"}], "stop_reason": reason}
        )
        assert (turn.stop_reason, turn.provider_stop_reason) == (stop, reason)
    with pytest.raises(ProviderError, match="without a content list"):
        model.parse_response({"type": "message"})


@pytest.mark.parametrize(
    "answer, status, kind, says",
    [
        (
            None,
            401,
            "authentication",
            "Anthropic answered 401 (authentication_error): invalid x-api-key. Check the API key.",
        ),
        (
            anthropic_error(
                429,
                "rate_limit_error",
                "Number of request tokens has exceeded your per-minute rate limit.",
                {"retry-after": "30"},
            ),
            429,
            "rate_limit",
            "Wait 30 seconds and try again.",
        ),
        (
            anthropic_error(529, "overloaded_error", "Overloaded"),
            529,
            "overloaded",
            "overloaded_error",
        ),
        (
            anthropic_error(
                400, "invalid_request_error", "model: Input should be a valid model name"
            ),
            400,
            "invalid_request",
            "model: Input should be a valid model name",
        ),
    ],
)
def test_anthropic_error_bodies_become_clear_provider_errors(answer, status, kind, says):
    with LoopbackProvider(lambda *request: answer or anthropic_checks(*request)) as server:
        model = anthropic_model(server, key=KEY if answer else "sk-ant-wrong")
        with pytest.raises(ProviderError) as info:
            asyncio.run(
                model.complete(ModelRequest("", [{"role": "user", "content": "hi"}]), CancelToken())
            )
    assert (info.value.status, info.value.kind) == (status, kind) and says in str(info.value)
    assert "sk-ant-wrong" not in repr(model)


def test_anthropic_rendering_merges_adjacent_user_turns_and_skips_empty_text():
    model = AnthropicModel(model="m", api_key=KEY, send=urllib_send)
    history = [
        {"role": "user", "content": "one"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"id": "toolu_1", "name": "decks_open", "arguments": '{"id": "q"}'}],
        },
        {
            "role": "tool",
            "tool_call_id": "toolu_1",
            "name": "decks_open",
            "result": {"ok": True, "result": 1},
        },
        {"role": "user", "content": "two"},
    ]
    messages = model.request_body(ModelRequest("", history))["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert messages[1]["content"] == [
        {"type": "tool_use", "id": "toolu_1", "name": "decks_open", "input": {"id": "q"}}
    ]
    assert [p["type"] for p in messages[2]["content"]] == ["tool_result", "text"]
    assert (
        anthropic_checks(
            "/v1/messages",
            {"x-api-key": KEY, "anthropic-version": "1"},
            {"max_tokens": 1, "messages": messages},
        )
        is None
    )


@pytest.mark.parametrize(
    "settings, reason",
    [
        (
            {"provider": "openai", "model": "gpt", "baseUrl": "not a url"},
            "must be an http:// or https:// address",
        ),
        (
            {"provider": "openai", "model": "gpt", "baseUrl": "ftp://host/v1"},
            "must be an http:// or https:// address",
        ),
        (
            {"provider": "openai", "model": "gpt", "baseUrl": "https://"},
            "must be an http:// or https:// address",
        ),
        ({"provider": "openai", "model": "gpt", "baseUrl": "http://[::1/v1"}, "must be an http"),
        (
            {"provider": "openai", "model": "gpt 4", "baseUrl": "https://api.openai.com/v1"},
            "is not a model name",
        ),
        (
            {"provider": "openai", "model": "", "baseUrl": "https://api.openai.com/v1"},
            "Name the model",
        ),
        (
            {
                "provider": "anthropic",
                "model": "claude",
                "apiKey": "k",
                "baseUrl": "javascript:alert(1)",
            },
            "must be an http",
        ),
        ({"provider": "gemini", "model": "g"}, "Unknown provider 'gemini'"),
    ],
)
def test_model_settings_are_checked_and_the_reason_named(settings, reason):
    from reactor.host import SettingsError
    from reactor.host.session import model_from_settings

    with pytest.raises(SettingsError, match=re.escape(reason)):
        model_from_settings(settings, send=None)


def test_the_model_label_names_the_provider_and_the_model():
    from reactor.host.session import model_from_settings

    openai = model_from_settings(
        {"provider": "openai", "model": "llama3.1", "baseUrl": "http://127.0.0.1:11434/v1"},
        send=None,
    )
    assert openai.label == "llama3.1 · OpenAI-compatible at 127.0.0.1:11434"
    anthropic = model_from_settings(
        {"provider": "anthropic", "model": "claude-sonnet-4-5", "apiKey": "k"}, send=None
    )
    assert anthropic.label == "claude-sonnet-4-5 · Anthropic"
