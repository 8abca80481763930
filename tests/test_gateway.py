"""The site's model behind the server (reactor/server/gateway/), on CPython: what passes, who
may ask, the limits, the provider's failures as sentences, and the key kept from everyone but
the provider. The page's side is in test_gateway_page.py."""

import asyncio
import json
import logging
import queue
import threading

import httpx
import pytest
from conftest import app_server_over, bearer, new_database, run_reactor

from reactor.cancellation import CancelToken
from reactor.errors import DeclarationError
from reactor.host import ModelRequest, ProviderError, urllib_send
from reactor.host.site import SiteModel
from reactor.server.gateway.allowance import ALLOWANCE_USED, input_estimate
from reactor.server.gateway.config import AssistantConfig
from reactor.server.loopback import LoopbackServer, free_port
from reactor.testing.standins import StandIn, call, text
from test_many_processes import serve

KEY = "sk-marker-4f1c2a9e7b3d"  # searched for in every answer and log line
ROUTE = {"openai": "/api/assistant/v1/chat/completions", "anthropic": "/api/assistant/v1/messages"}


@pytest.fixture(params=["openai", "anthropic"])
def provider(request):
    return request.param


@pytest.fixture
def stand_in(provider):
    stand_in = StandIn(provider, KEY)
    yield stand_in
    stand_in.stop()


def gateway_app(tmp_path, stand_in, database="", **options):
    config = AssistantConfig(
        provider=stand_in.provider,
        model="site-model",
        api_key=KEY,
        base_url=stand_in.url,
        **options,
    )
    return app_server_over(tmp_path / "data", seed_demo=True, assistant=config, database=database)


def ask(server, headers, body=None, provider="openai", **extra):
    body = body or {"messages": [{"role": "user", "content": "hello"}], "stream": True}
    if provider == "anthropic":
        body = {"max_tokens": 100, **body}
    with server.client(headers) as client:
        return client.post(ROUTE[provider], json={**body, **extra})


def events(answer):
    return [json.loads(line[6:]) for line in answer.text.splitlines() if line.startswith("data: {")]


def test_a_signed_in_request_is_relayed_as_the_provider_streams_it_with_the_key_added(
    tmp_path, stand_in, provider
):
    server = gateway_app(tmp_path, stand_in)
    stand_in.answers = [call("decks_open", {"id": "onboarding", "slide": 4}, words="Opening it.")]
    answer = ask(server, bearer(server, "bob"), provider=provider)
    assert answer.status_code == 200 and answer.headers["content-type"].startswith(
        "text/event-stream"
    )
    relayed = events(answer)
    if provider == "openai":
        assert (
            "".join(
                c["choices"][0]["delta"].get("content") or "" for c in relayed if c.get("choices")
            )
            == "Opening it. "
        )
        assert stand_in.headers[0]["authorization"] == f"Bearer {KEY}"
        # the usage the allowance counts
        assert stand_in.requests[0]["stream_options"] == {"include_usage": True}
        assert answer.text.rstrip().endswith("data: [DONE]")
    else:
        assert [e["type"] for e in relayed][-2:] == ["message_delta", "message_stop"]
        assert stand_in.headers[0]["x-api-key"] == KEY and stand_in.headers[0]["anthropic-version"]
    sent = stand_in.requests[0]
    assert sent["model"] == "site-model" and sent["max_tokens"] == (
        100 if provider == "anthropic" else 4096
    )
    assert "bob" not in json.dumps(sent), "the provider sees a hashed id, not the person's name"
    assert KEY not in answer.text and KEY not in json.dumps(dict(answer.headers))


def test_signed_out_pages_are_refused_unless_the_operator_opened_it(tmp_path, stand_in, provider):
    closed = ask(gateway_app(tmp_path, stand_in), {}, provider=provider)
    assert closed.status_code == 401
    assert closed.json()["error"] == "Sign in at the top of the page to use this site's assistant."
    assert stand_in.requests == []
    opened = ask(gateway_app(tmp_path / "open", stand_in, anonymous=True), {}, provider=provider)
    assert opened.status_code == 200 and len(stand_in.requests) == 1


@pytest.mark.parametrize(
    ("body", "field", "sentence"),
    [
        (
            {"messages": [{"role": "user", "content": "x"}], "store": True},
            "store",
            "does not pass on the field 'store'",
        ),
        (
            {"messages": [{"role": "user", "content": "x"}], "model": "gpt-5"},
            "model",
            "is site-model; the request named 'gpt-5'",
        ),
        (
            {"messages": [{"role": "user", "content": "x"}], "max_tokens": 5000},
            "max_tokens",
            "from 1 to 4096",
        ),
        (
            {"messages": [{"role": "user", "content": "x"}], "max_tokens": "9"},
            "max_tokens",
            "from 1 to 4096",
        ),
        ({"messages": [{"role": "user", "content": "x"}], "n": 3}, "n", "n must be 1"),
        ({"messages": []}, "messages", "messages, a list that is not empty"),
        ({"messages": "hello"}, "messages", "messages, a list that is not empty"),
        (
            {"messages": [{"role": "user", "content": "x"}], "stream": "yes"},
            "stream",
            "true or false",
        ),
    ],
)
def test_what_the_provider_does_not_define_or_the_site_does_not_allow_is_refused_naming_it(
    tmp_path, body, field, sentence
):
    stand_in = StandIn("openai", KEY)
    try:
        server = gateway_app(tmp_path, stand_in)
        answer = ask(server, bearer(server, "bob"), body)
    finally:
        stand_in.stop()
    assert answer.status_code == 422 and answer.json()["field"] == field
    assert sentence in answer.json()["error"]
    assert stand_in.requests == [], "nothing reached the provider"


def test_hostile_bodies_are_refused_at_the_door(tmp_path):
    stand_in = StandIn("openai", KEY)
    try:
        server = gateway_app(tmp_path, stand_in, max_body=10_000)
        headers = {**bearer(server, "bob"), "content-type": "application/json"}
        with server.client(headers) as client:
            huge = client.post(
                ROUTE["openai"],
                content=json.dumps({"messages": [{"role": "user", "content": "x" * 20_000}]}),
            )
            broken = client.post(ROUTE["openai"], content=b"{not json")
            deep = client.post(ROUTE["openai"], content=b"[" * 5000 + b"]" * 5000)
            listed = client.post(ROUTE["openai"], content=b"[]")
    finally:
        stand_in.stop()
    assert huge.status_code == 413 and "too long for this site's assistant" in huge.json()["error"]
    assert broken.status_code == 400 and "not valid JSON" in broken.json()["error"]
    assert deep.status_code == 400 and "nests deeper" in deep.json()["error"]
    assert listed.status_code == 400 and "must be a JSON object" in listed.json()["error"]
    assert stand_in.requests == []


def test_requests_per_minute_are_limited_per_person_with_retry_after(tmp_path, stand_in, provider):
    server = gateway_app(tmp_path, stand_in, limit_rpm=2)
    bob, ada = bearer(server, "bob"), bearer(server, "ada")
    assert [ask(server, bob, provider=provider).status_code for _ in range(2)] == [200, 200]
    refused = ask(server, bob, provider=provider)
    assert refused.status_code == 429 and 1 <= int(refused.headers["retry-after"]) <= 61
    assert "You have sent 2 messages to the assistant in the last minute" in refused.json()["error"]
    assert ask(server, ada, provider=provider).status_code == 200, (
        "another person has their own allowance"
    )
    assert len(stand_in.requests) == 3


def test_the_daily_allowance_counts_the_tokens_the_provider_reports(tmp_path, stand_in, provider):
    server = gateway_app(tmp_path, stand_in, limit_tokens=50)
    bob = bearer(server, "bob")
    stand_in.usage = (10, 20)  # 30 tokens an answer
    assert ask(server, bob, provider=provider).status_code == 200
    # a whole answer counts too
    assert ask(server, bob, provider=provider, stream=False).status_code == 200
    refused = ask(server, bob, provider=provider)
    assert refused.status_code == 429 and refused.json()["error"] == ALLOWANCE_USED
    assert 1 <= int(refused.headers["retry-after"]) <= 86_401
    assert len(stand_in.requests) == 2


# The numbers: answers of 2,000 tokens (a 2,000-token bound), a limit of 5,000 a day.
ANSWER_WORDS, CLOSED_AT = 40, 19
LONG_ANSWER = text(" ".join(f"word{n}" for n in range(ANSWER_WORDS)))


def open_stream(url, headers, provider, max_tokens=2000):
    body = {"messages": [{"role": "user", "content": "hi"}], "stream": True}
    return httpx.stream(
        "POST", url + ROUTE[provider], json={**body, "max_tokens": max_tokens}, headers=headers,
        timeout=20,
    )  # fmt: skip


def test_closing_the_stream_before_the_usage_event_is_charged_as_reading_to_the_end(
    request, tmp_path, stand_in, provider, backend
):
    """The issue: four 2,000-token answers read to their 19th chunk and closed, before the
    provider's usage event; the request after the limit is refused, as it is for a person who
    reads each answer to the end (429 after three)."""
    database = new_database(request, backend, tmp_path / "data")
    server = gateway_app(tmp_path, stand_in, database, limit_tokens=5000)
    stand_in.usage = (10, 1990)
    stand_in.answers = [LONG_ANSWER] * 8
    stand_in.hold_after = CLOSED_AT + 1  # the provider is still answering when the person goes
    bob, ada = bearer(server, "bob"), bearer(server, "ada")
    closed, read = [], []
    with LoopbackServer(server.app) as url:
        stand_in.hold.clear()
        for _ in range(4):
            stand_in.hung_up.clear()
            with open_stream(url, bob, provider) as answer:
                closed.append(answer.status_code)
                if answer.status_code != 200:
                    refused = json.loads(answer.read())
                    continue
                chunks = (line for line in answer.iter_lines() if line.startswith("data: "))
                assert len([c for _, c in zip(range(CLOSED_AT), chunks)]) == CLOSED_AT
            assert stand_in.hung_up.wait(10), "the gateway closed the provider's request"
        stand_in.hold.set()
        for _ in range(4):
            with open_stream(url, ada, provider) as answer:
                read.append(answer.status_code)
                whole = answer.read().decode()
                assert answer.status_code != 200 or "word39" in whole
    assert closed == [200, 200, 200, 429], "closed at the 19th chunk: 429 after three"
    assert refused["error"] == ALLOWANCE_USED
    assert read == closed, "read to the end: the same"


def test_requests_sent_in_parallel_cannot_pass_the_limit_by_more_than_one_requests_bound(
    request, tmp_path, backend
):
    stand_in = StandIn("openai", KEY)
    database = new_database(request, backend, tmp_path / "data")
    limit, max_tokens, sent = 5000, 2000, 8
    try:
        server = gateway_app(tmp_path, stand_in, database, limit_tokens=limit)
        stand_in.usage = (10, max_tokens - 10)  # each answer uses all of its bound
        stand_in.hold.clear()  # every answer waits after its first word until all were asked
        bob = bearer(server, "bob")
        statuses: queue.Queue[tuple[int, str]] = queue.Queue()

        def ask_one(url):
            with open_stream(url, bob, "openai", max_tokens) as answer:
                statuses.put((answer.status_code, answer.headers["content-type"]))
                body = answer.read().decode()
            if answer.status_code != 200:
                assert json.loads(body)["error"] == ALLOWANCE_USED

        with LoopbackServer(server.app) as url:
            threads = [threading.Thread(target=ask_one, args=(url,)) for _ in range(sent)]
            for thread in threads:
                thread.start()
            answered = [statuses.get(timeout=20)[0] for _ in range(sent)].count(200)
            stand_in.hold.set()
            for thread in threads:
                thread.join(20)
            after = ask(server, bob)
    finally:
        stand_in.stop()
    bound = max_tokens + input_estimate(json.dumps(stand_in.requests[0]).encode())
    assert 1 <= answered == len(stand_in.requests)
    assert answered * sum(stand_in.usage) < limit + bound, (
        f"{answered} answers of {sum(stand_in.usage)} tokens: past the limit by more than one "
        "request's bound"
    )
    assert after.status_code == 429 and after.json()["error"] == ALLOWANCE_USED


@pytest.mark.parametrize(
    ("status", "answered", "sentence"),
    [
        (401, 502, "its provider refused the site's key"),
        (429, 429, "busy (its provider's rate limit); wait 7 seconds"),
        (500, 502, "failed to answer; try again in a moment"),
    ],
)
def test_the_providers_errors_become_a_sentence_for_the_person_and_a_line_for_the_operator(
    tmp_path, stand_in, provider, status, answered, sentence, caplog
):
    server = gateway_app(tmp_path, stand_in)
    stand_in.failures = [status]
    with caplog.at_level(logging.INFO):
        answer = ask(server, bearer(server, "bob"), provider=provider)
    assert answer.status_code == answered and sentence in answer.json()["error"]
    assert status != 429 or answer.headers["retry-after"] == "7"
    logged = [r.getMessage() for r in caplog.records if r.name == "reactor.assistant"]
    assert any(f"answered {status}" in line for line in logged), logged
    assert KEY not in caplog.text and KEY not in answer.text


def test_an_overloaded_provider_is_a_503_saying_to_try_again(tmp_path):
    stand_in = StandIn("anthropic", KEY)
    try:
        server = gateway_app(tmp_path, stand_in)
        stand_in.failures = [529]
        answer = ask(server, bearer(server, "bob"), provider="anthropic")
    finally:
        stand_in.stop()
    assert (
        answer.status_code == 503
        and answer.json()["error"]
        == "This site's model is overloaded right now; try again in a minute."
    )


def test_a_wrong_key_on_the_server_is_never_the_persons_fault_nor_shown(
    tmp_path, stand_in, provider, caplog
):
    config = AssistantConfig(
        provider=provider, model="site-model", api_key="sk-wrong-key-0000", base_url=stand_in.url
    )
    server = app_server_over(tmp_path / "data", seed_demo=True, assistant=config)
    with caplog.at_level(logging.INFO):
        answer = ask(server, bearer(server, "bob"), provider=provider)
    assert (
        answer.status_code == 502
        and "The site's operator can see why in the server's log." in answer.json()["error"]
    )
    assert "sk-wrong-key-0000" not in answer.text and "sk-wrong-key-0000" not in caplog.text


def test_a_stream_cut_short_ends_with_an_error_event_in_the_providers_own_format(
    tmp_path, stand_in, provider, caplog
):
    server = gateway_app(tmp_path, stand_in)
    stand_in.answers = [text("Half of an answer")]
    stand_in.cut_next = True
    with caplog.at_level(logging.INFO):
        answer = ask(server, bearer(server, "bob"), provider=provider)
    last = events(answer)[-1]
    error = last["error"]
    assert error["message"].startswith("The answer was cut off: the site's model stopped sending")
    assert provider == "openai" or last["type"] == "error"
    assert any(
        "stream cut" in r.getMessage() for r in caplog.records if r.name == "reactor.assistant"
    )


def test_an_unreachable_provider_is_a_502_sentence(tmp_path):
    config = AssistantConfig(
        provider="openai", model="m", base_url=f"http://127.0.0.1:{free_port()}/v1"
    )
    server = app_server_over(tmp_path / "data", seed_demo=True, assistant=config)
    answer = ask(server, bearer(server, "bob"))
    assert (
        answer.status_code == 502
        and answer.json()["error"]
        == "This site's assistant could not reach its model; try again in a moment."
    )


def test_a_person_leaving_mid_answer_closes_the_request_to_the_provider(
    tmp_path, stand_in, provider
):
    server = gateway_app(tmp_path, stand_in)
    stand_in.answers = [text("The first words and then the rest")]
    stand_in.hold.clear()
    with LoopbackServer(server.app) as url:
        headers = bearer(server, "bob")
        body = {"messages": [{"role": "user", "content": "hi"}], "stream": True, "max_tokens": 50}
        with httpx.stream(
            "POST", url + ROUTE[provider], json=body, headers=headers, timeout=10
        ) as answer:
            for line in answer.iter_lines():
                if "The " in line:
                    break  # the first text arrived while the provider still holds the rest
        assert stand_in.hung_up.wait(1.0), "the provider saw the connection close within a second"


def test_boot_json_names_the_model_and_never_the_key(tmp_path, stand_in):
    server = gateway_app(tmp_path, stand_in)
    with server.client() as client:
        boot = client.get("/app/boot.json")
        page = client.get("/")
    site = boot.json()["assistant"]["site"]
    assert site["label"] == "site-model · via this site" and site["url"] == "/api/assistant"
    assert boot.json()["assistant"]["browserKeys"] is False
    assert "connect-src 'self';" in page.headers["content-security-policy"], (
        "no provider is reachable from the page"
    )
    assert KEY not in boot.text and stand_in.url not in boot.text


@pytest.mark.parametrize(
    ("options", "sentence"),
    [
        (
            {"provider": "gemini", "model": "m", "api_key": "k"},
            "There is no model provider 'gemini'",
        ),
        ({"provider": "openai", "model": "", "api_key": "k"}, "Name the site's model with --model"),
        (
            {"provider": "openai", "model": "gpt 4", "api_key": "k"},
            "Name the site's model with --model",
        ),
        (
            {"provider": "anthropic", "model": "claude"},
            "set REACTOR_MODEL_API_KEY (or ANTHROPIC_API_KEY)",
        ),
        (
            {"provider": "openai", "model": "gpt-4o-mini"},
            "set REACTOR_MODEL_API_KEY (or OPENAI_API_KEY)",
        ),
        (
            {"provider": "openai", "model": "m", "base_url": "ftp://x"},
            "must be an http:// or https:// address",
        ),
        (
            {"provider": "openai", "model": "m", "api_key": "k", "limit_rpm": 0},
            "--model-limit-rpm must be between",
        ),
    ],
)
def test_a_configuration_that_cannot_work_is_one_sentence_naming_what_to_set(options, sentence):
    with pytest.raises(DeclarationError) as error:
        AssistantConfig(**options)
    assert sentence in str(error.value)


def test_a_local_openai_compatible_server_needs_no_key():
    config = AssistantConfig(
        provider="openai", model="llama3.1", base_url="http://127.0.0.1:11434/v1"
    )
    assert config.url == "http://127.0.0.1:11434/v1" and "api_key" not in repr(config)


def test_reactor_serve_says_in_one_line_what_to_set(tmp_path):
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    wrong = run_reactor(
        "serve", "--data", str(tmp_path), "--model-provider", "gemini", "--model", "m", env=env
    )
    keyless = run_reactor(
        "serve",
        "--data",
        str(tmp_path),
        "--model-provider",
        "anthropic",
        "--model",
        "claude",
        env=env,
    )
    port = free_port()
    away = run_reactor(
        "serve", "--data", str(tmp_path), "--model-provider", "openai", "--model", "llama3.1",
        "--model-base-url", f"http://127.0.0.1:{port}/v1", env=env,
    )  # fmt: skip
    for result, said in (
        (wrong, "There is no model provider 'gemini'"),
        (keyless, "set REACTOR_MODEL_API_KEY (or ANTHROPIC_API_KEY)"),
        (away, f"the site's model at http://127.0.0.1:{port}/v1 cannot be reached"),
    ):
        assert result.returncode == 2 and said in result.stderr
        assert len(result.stderr.strip().splitlines()) == 1, result.stderr
        assert "Traceback" not in result.stderr


def serve_with_a_model(tmp_path, name, database, base_url):
    return serve(
        tmp_path, database, name,
        "--model-provider", "openai", "--model", "site-model", "--model-base-url", base_url,
        "--model-limit-rpm", "3",
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "REACTOR_MODEL_API_KEY": KEY},
    )  # fmt: skip


def test_two_server_processes_on_postgresql_share_one_persons_limit(tmp_path, postgres_cluster):
    stand_in = StandIn("openai", KEY)
    database = postgres_cluster.database()
    started = [serve_with_a_model(tmp_path, name, database, stand_in.url) for name in ("a", "b")]
    try:
        (_, a), (_, b) = started
        token = httpx.post(
            f"{a}/auth/sign-in", json={"username": "bob", "password": "bob-demo"}
        ).json()["token"]
        body = {"messages": [{"role": "user", "content": "hi"}], "stream": True}
        statuses = [
            httpx.post(
                url + ROUTE["openai"],
                json=body,
                headers={"authorization": f"Bearer {token}"},
                timeout=10,
            ).status_code
            for url in (a, b, a, b)
        ]
    finally:
        stand_in.stop()
        for process, _ in started:
            process.terminate()
            process.wait(timeout=30)
            process.stdout.close()
    assert statuses == [200, 200, 200, 429], (
        "the fourth request in a minute is over the limit, on whichever process"
    )
    assert len(stand_in.requests) == 3


def site_model(url, provider="openai"):
    return SiteModel(
        {
            "provider": provider,
            "model": "site-model",
            "url": f"{url}/api/assistant",
            "maxTokens": 100,
        },
        urllib_send,
    )


def test_the_pages_adapter_reads_the_relayed_stream_into_text_and_tool_calls(
    tmp_path, stand_in, provider
):
    server = gateway_app(tmp_path, stand_in, anonymous=True)
    stand_in.answers = [
        call("decks_open", {"id": "onboarding", "slide": 4}, "call_7", words="Opening it.")
    ]
    pieces = []
    with LoopbackServer(server.app) as url:
        request = ModelRequest(
            "", [{"role": "user", "content": "open onboarding at 4"}], on_text=pieces.append
        )
        turn = asyncio.run(site_model(url, provider).complete(request, CancelToken()))
    assert "".join(pieces).strip() == turn.text.strip() == "Opening it."
    assert [
        (c.name, json.loads(c.arguments) if isinstance(c.arguments, str) else c.arguments)
        for c in turn.tool_calls
    ] == [("decks_open", {"id": "onboarding", "slide": 4})]


def test_the_pages_adapter_words_what_only_the_page_sees():
    model = site_model(f"http://127.0.0.1:{free_port()}")
    with pytest.raises(ProviderError) as error:
        asyncio.run(
            model.complete(ModelRequest("", [{"role": "user", "content": "x"}]), CancelToken())
        )
    assert (
        str(error.value)
        == "This site could not be reached, so its assistant cannot answer; check your "
        "connection and try again."
    )


def test_openapi_declares_exactly_what_the_route_passes(tmp_path, stand_in, provider):
    server = gateway_app(tmp_path, stand_in)
    with server.client() as client:
        operation = client.get("/openapi.json").json()["paths"][ROUTE[provider]]["post"]
    schema = operation["requestBody"]["content"]["application/json"]["schema"]
    assert schema["additionalProperties"] is False and schema["required"] == ["messages"]
    assert "store" not in schema["properties"] and "mcp_servers" not in schema["properties"]
    assert schema["properties"]["model"]["const"] == "site-model"
    assert schema["properties"]["max_tokens"]["maximum"] == 4096
    assert {"400", "401", "413", "422", "429", "502", "503"} <= set(operation["responses"])
