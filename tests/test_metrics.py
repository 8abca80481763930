"""Prometheus metrics at /metrics (reactor/server/metrics.py): counted by route template, read
from this machine or with the metrics token only, and what the gateway, /mcp and the database
add to them."""

from __future__ import annotations

import asyncio
import logging
import sqlite3

import httpx
import pytest
from conftest import (
    app_server_over,
    bearer,
    open_2025_session,
    run_reactor,
    start_server,
    stop_server,
)
from prometheus_client.parser import text_string_to_metric_families

from reactor.errors import DatabaseBusy, DatabaseError
from reactor.server.agents.relay import PageRelay
from reactor.server.database import Database
from reactor.server.gateway.config import AssistantConfig
from reactor.server.metrics import Metrics
from reactor.testing.standins import StandIn

TOKEN = "metrics-marker-7c1e09b2d4a8f3"  # searched for in every answer and log line


def samples(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    """Each sample of a scrape by its name and labels."""
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def value(scraped: dict, name: str, **labels: str) -> float:
    return scraped.get((name, frozenset(labels.items())), 0.0)


def test_a_scrape_from_this_machine_counts_requests_by_route_template_never_by_path(tmp_path):
    server = app_server_over(tmp_path / "data", seed_demo=True)
    other = app_server_over(tmp_path / "other", seed_demo=True)  # its own registry
    with server.client() as client:
        assert client.get("/api/decks").status_code == 200
        assert client.get("/api/decks/onboarding").status_code == 200
        assert client.get("/api/decks/deck-raw-id-4411").status_code == 404
        assert client.get("/no/such/path-raw-5522").status_code == 404
        scrape = client.get("/metrics")
        listed = client.get("/openapi.json").json()["paths"]["/metrics"]["get"]
    assert scrape.status_code == 200 and scrape.headers["content-type"].startswith("text/plain")
    scraped = samples(scrape.text)
    requests = "reactor_http_requests_total"
    assert value(scraped, requests, route="/api/decks", method="GET", status="200") == 1
    assert value(scraped, requests, route="/api/decks/{id}", method="GET", status="200") == 1
    assert value(scraped, requests, route="/api/decks/{id}", method="GET", status="404") == 1
    assert value(scraped, requests, route="unmatched", method="GET", status="404") == 1
    assert (
        value(
            scraped, "reactor_http_request_duration_seconds_count", route="/api/decks/{id}",
            method="GET",
        )
        == 2
    )  # fmt: skip
    assert "deck-raw-id-4411" not in scrape.text and "path-raw-5522" not in scrape.text
    assert "onboarding" not in scrape.text
    assert "text/plain" in listed["responses"]["200"]["content"] and "401" in listed["responses"]
    with other.client() as client:
        assert value(samples(client.get("/metrics").text), requests, route="/api/decks",
                     method="GET", status="200") == 0  # fmt: skip


def test_a_request_through_a_proxy_or_from_elsewhere_needs_the_metrics_token(tmp_path, caplog):
    server = app_server_over(tmp_path / "data", seed_demo=True, metrics_token=TOKEN)

    def scrape(headers: dict[str, str], peer: str = "127.0.0.1") -> httpx.Response:
        async def send() -> httpx.Response:
            transport = httpx.ASGITransport(app=server.app, client=(peer, 40000))
            async with httpx.AsyncClient(transport=transport, base_url=server.url) as client:
                return await client.get("/metrics", headers=headers)

        return asyncio.run(send())

    with caplog.at_level(logging.DEBUG):
        forwarded = scrape({"x-forwarded-for": "203.0.113.7"})
        standard = scrape({"forwarded": "for=203.0.113.7"})
        remote = scrape({}, peer="203.0.113.7")
        wrong = scrape({"x-forwarded-for": "203.0.113.7", "authorization": "Bearer x" + TOKEN})
        session = scrape({"x-forwarded-for": "203.0.113.7", **bearer(server, "ada")})
        tokened = scrape({"x-forwarded-for": "203.0.113.7", "authorization": f"Bearer {TOKEN}"})
        remote_tokened = scrape({"authorization": f"Bearer {TOKEN}"}, peer="203.0.113.7")
        local = scrape({})
    for refused in (forwarded, standard, remote, wrong, session):
        assert refused.status_code == 401
        assert refused.json()["error"].startswith(
            "/metrics answers only requests made straight to the server from its own machine"
        )
        assert refused.headers["www-authenticate"].startswith("Bearer")
    for answered in (tokened, remote_tokened, local):
        assert answered.status_code == 200 and "reactor_http_requests_total" in answered.text
    everything = [r.text + str(r.headers) for r in (forwarded, wrong, tokened, local)]
    assert all(TOKEN not in said for said in everything) and TOKEN not in caplog.text


@pytest.mark.parametrize("token", ["short", "has spaces in it, sixteen+", "é" * 20])
def test_a_metrics_token_that_cannot_work_is_one_sentence_that_never_shows_it(tmp_path, token):
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    given = run_reactor("serve", "--data", str(tmp_path), "--metrics-token", token, env=env)
    from_env = run_reactor(
        "serve", "--data", str(tmp_path), env={**env, "REACTOR_METRICS_TOKEN": token}
    )
    for result in (given, from_env):
        assert result.returncode == 2 and "must be 16 to 512 printable ASCII" in result.stderr
        assert token not in result.stderr and "Traceback" not in result.stderr


def test_the_gateway_tokens_counter_moves_by_what_an_answer_is_charged(tmp_path):
    stand_in = StandIn("openai", "sk-metrics-test")
    try:
        config = AssistantConfig(
            provider="openai", model="m", api_key="sk-metrics-test", base_url=stand_in.url
        )
        server = app_server_over(tmp_path / "data", seed_demo=True, assistant=config)
        with server.client(bearer(server, "bob")) as client:
            before = samples(client.get("/metrics").text)
            body = {"messages": [{"role": "user", "content": "hi"}], "stream": True}
            assert client.post("/api/assistant/v1/chat/completions", json=body).status_code == 200
            after = samples(client.get("/metrics").text)
    finally:
        stand_in.stop()
    tokens = "reactor_gateway_tokens_total"
    assert value(before, tokens, kind="input") == value(before, tokens, kind="output") == 0
    assert (value(after, tokens, kind="input"), value(after, tokens, kind="output")) == (
        stand_in.usage
    )


def test_the_agent_calls_counter_counts_each_tools_call_by_its_outcome(tmp_path):
    from test_mcp_processes import ScriptedPage, agent_token

    answers = {
        "fine": {"ok": True, "result": {"n": 3}},
        "declined": {"ok": False, "error": {"code": "denied", "message": "The person declined."}},
        "odd": {"ok": False, "error": {"code": "made-up-code-9", "message": "?"}},
    }
    live = start_server(tmp_path / "data", seed_demo=True)
    page = ScriptedPage(live.url, bearer(live, "ada"), lambda call: answers[call["arguments"]["a"]])
    try:
        headers = open_2025_session(live.url, agent_token(live))
        with httpx.Client(base_url=live.url, headers=headers, timeout=10) as http:
            calls = [
                ("notes_count", {"a": "fine"}),
                ("notes_count", {"a": "fine"}),
                ("notes_count", {"a": "declined"}),
                ("notes_count", {"a": "odd"}),
                ("reactor_call", {"page": "no-such-page", "tool": "notes_count"}),
            ]
            for number, (name, arguments) in enumerate(calls, start=1):
                params = {"name": name, "arguments": arguments}
                message = {"jsonrpc": "2.0", "id": number, "method": "tools/call", "params": params}
                assert "result" in http.post("/mcp", json=message).json()
        scraped = samples(httpx.get(f"{live.url}/metrics").text)
    finally:
        page.close()
        stop_server(live)
    outcomes = {
        outcome: value(scraped, "reactor_agent_calls_total", outcome=outcome)
        for outcome in ("ok", "denied", "other", "not_found")
    }
    assert outcomes == {"ok": 2, "denied": 1, "other": 1, "not_found": 1}
    assert "made-up-code-9" not in str(scraped), "a page's own code is no label"
    assert value(scraped, "reactor_agent_pages_linked") == 1


def test_database_errors_are_counted_busy_or_error(tmp_path):
    database = Database(tmp_path / "reactor.sqlite3")
    metrics = Metrics(database, PageRelay())
    with database.transaction() as db:
        db.execute("CREATE TABLE t (id TEXT PRIMARY KEY, n INTEGER NOT NULL)")
    with pytest.raises(DatabaseError):
        with database.transaction() as db:
            db.execute("INSERT INTO t (id, n) VALUES ('a', NULL)")  # NOT NULL: an error
    database.backend.busy_timeout = 0.05  # type: ignore[attr-defined]
    database.backend.idle.queue.clear()  # type: ignore[attr-defined]  # new connections: the timeout
    holder = sqlite3.connect(tmp_path / "reactor.sqlite3")
    holder.execute("BEGIN IMMEDIATE")  # another writer holds the lock
    try:
        with pytest.raises(DatabaseBusy):
            with database.transaction(immediate=True) as db:
                db.execute("INSERT INTO t (id, n) VALUES ('b', 1)")
    finally:
        holder.rollback()
        holder.close()
    scraped = metrics.registry
    assert scraped.get_sample_value("reactor_database_errors_total", {"kind": "error"}) == 1
    assert scraped.get_sample_value("reactor_database_errors_total", {"kind": "busy"}) == 1
    database.close()
