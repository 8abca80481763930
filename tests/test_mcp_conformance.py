"""The MCP project's own conformance harness (`@modelcontextprotocol/conformance`, npm; installed
into .npm-mcp by ./dev test, with Node.js 22 from the npm registry where this machine's is older)
runs its server scenarios against /mcp of a real loopback server, with a page connected for
agents. The page is scripted (it speaks the page's protocol: the event stream down, JSON POSTs
up) and offers those of the harness's fixture tools a reactor page can express: a page tool's
result is a JSON value (no image, audio or resource content), it reports no progress of its own,
and the person decides in the page, not through the agent (no sampling, no elicitation). The
harness sends no headers of its own, so the app is served with the agent token's Authorization
added to each /mcp request. `python -m bench.mcp_conformance` prints the whole table."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import httpx
from conftest import bearer

from reactor.server.agents import tokens as agent_tokens
from reactor.server.app import create_app
from reactor.server.loopback import LoopbackServer
from test_mcp_processes import ScriptedPage
from test_mcp_sessions import RoundRobin

NPM_MCP = Path(__file__).resolve().parent.parent / ".npm-mcp"
HARNESS = NPM_MCP / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
NO_ARGUMENTS = {"type": "object", "properties": {}}
# as the json-schema-2020-12 scenario asks: $schema, $defs and additionalProperties kept
SCHEMA_2020_12 = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }
    },
    "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
    "additionalProperties": False,
}
TOOLS = [
    {
        "name": "test_simple_text",
        "description": "Returns simple text.",
        "inputSchema": NO_ARGUMENTS,
    },
    {"name": "test_error_handling", "description": "Always fails.", "inputSchema": NO_ARGUMENTS},
    {
        "name": "json_schema_2020_12_tool",
        "description": "Tool with JSON Schema 2020-12 features",
        "inputSchema": SCHEMA_2020_12,
    },
    {"name": "test_reconnection", "description": "Answers at once.", "inputSchema": NO_ARGUMENTS},
]
ANSWERS = {
    "test_simple_text": {"ok": True, "result": "This is a simple text response for testing."},
    "test_error_handling": {
        "ok": False,
        "error": {"code": "failed", "message": "This tool intentionally returns an error."},
    },
    "json_schema_2020_12_tool": {"ok": True, "result": {"received": True}},
    "test_reconnection": {"ok": True, "result": "Reconnection test completed successfully"},
}
NOT_OFFERED = "Method not found"  # prompts, resources, completion, logging: /mcp offers tools only
# Each server scenario of conformance 0.1.16: "pass", "warn" (only SHOULDs missed), or the reason it
# fails.
EXPECTED = {
    "server-initialize": "pass",
    "ping": "pass",
    "tools-list": "pass",
    "tools-call-simple-text": "pass",
    "tools-call-error": "pass",
    "json-schema-2020-12": "pass",
    "server-sse-multiple-streams": "pass",
    "dns-rebinding-protection": "pass",
    # A call answered before anything else is one JSON body, so no POST stream is left to poll.
    "server-sse-polling": "pass",
    "tools-call-image": "No image content found",
    "tools-call-audio": "No audio content found",
    "tools-call-embedded-resource": "No resource content found",
    "tools-call-mixed-content": "Expected multiple content items",
    # progress only while a person decides
    "tools-call-with-progress": "No progress notifications received",
    "tools-call-sampling": "did not request sampling",
    "tools-call-elicitation": "did not request elicitation",
    "elicitation-sep1034-defaults": "did not request elicitation",
    "elicitation-sep1330-enums": "did not request elicitation",
    "tools-call-with-logging": NOT_OFFERED,
    "logging-set-level": NOT_OFFERED,
    "completion-complete": NOT_OFFERED,
    **{
        name: NOT_OFFERED
        for name in [
            "resources-list",
            "resources-read-text",
            "resources-read-binary",
            "resources-templates-read",
            "resources-subscribe",
            "resources-unsubscribe",
            "prompts-list",
            "prompts-get-simple",
            "prompts-get-with-args",
            "prompts-get-embedded-resource",
            "prompts-get-with-image",
        ]
    },
}


def answer(call: dict[str, Any]) -> dict[str, Any]:
    return ANSWERS.get(
        call["tool"], {"ok": False, "error": {"code": "not_found", "message": "No such tool."}}
    )


def with_token(app: Any, token: list[str]) -> Any:
    """The app, with the agent token's Authorization added to each /mcp request; every other
    route as it is."""

    async def serve(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"] == "/mcp" and token:
            scope = {
                **scope,
                "headers": [*scope["headers"], (b"authorization", f"Bearer {token[0]}".encode())],
            }
        await app(scope, receive, send)

    return serve


def node() -> str:
    """Node.js 22 or later, which the harness needs: this machine's, else the one ./dev
    installed."""
    found = shutil.which("node")
    if (
        found
        and subprocess.run(
            [found, "-e", "process.exit(process.versions.node.split('.')[0] < 22 ? 1 : 0)"]
        ).returncode
        == 0
    ):
        return found
    return str(NPM_MCP / "node_modules" / "node" / "bin" / "node")


def run_scenarios(data: Path, database: str | None = None) -> dict[str, tuple[str, str]]:
    """Every server scenario of the harness against a fresh server over `data` (or, given a
    PostgreSQL `database`, two processes' apps on it behind a balancer with no affinity): its
    name → ("pass" | "warn" | "fail", the first failure's or warning's message)."""
    assert HARNESS.exists(), (
        "run ./dev test once: it installs the conformance harness into .npm-mcp"
    )
    token: list[str] = []  # made once the server runs, through its own API
    # the harness sends ~200 requests at once
    rate, agent_tokens.RATE_LIMIT = agent_tokens.RATE_LIMIT, 1_000_000
    apps = (
        [create_app(data, seed_demo=True)]
        if database is None
        else [create_app(data / n, seed_demo=True, database=database) for n in ("a", "b")]
    )
    servers = [LoopbackServer(with_token(app, token), start_timeout=10) for app in apps]
    if database is not None:
        servers.append(LoopbackServer(RoundRobin([s.url for s in servers]), start_timeout=10))
    server, front = servers[0], servers[-1]  # the page links to a process, the harness to front
    try:
        session = bearer(server, "ada")
        made = httpx.post(
            f"{server.url}/api/agent-tokens", json={"name": "conformance"}, headers=session
        )
        token.append(made.json()["token"])
        page = ScriptedPage(server.url, session, answer, tools=TOOLS)
        out = data.parent / "conformance"
        command = [
            node(),
            str(HARNESS),
            "server",
            "--url",
            f"{front.url}/mcp",
            "--suite",
            "all",
            "-o",
            str(out),
        ]
        subprocess.run(command, capture_output=True, timeout=300, check=False)
        page.close()
    finally:
        for running in reversed(servers):
            running.stop()
        agent_tokens.RATE_LIMIT = rate
    found = {}
    for checks in out.glob("server-*/checks.json"):
        # the run's time
        name = re.sub(r"-\d{4}-\d\d-\d\dT[\d-]+Z$", "", checks.parent.name.removeprefix("server-"))
        judged = {
            status: [c for c in json.loads(checks.read_text()) if c.get("status") == status]
            for status in ("FAILURE", "WARNING")
        }
        worst = judged["FAILURE"] or judged["WARNING"]
        found[name] = (
            "fail" if judged["FAILURE"] else "warn" if worst else "pass",
            worst[0].get("errorMessage", "") if worst else "",
        )
    return found


def test_the_conformance_harness_passes_what_mcp_serves_and_fails_only_what_it_does_not_offer(
    tmp_path,
):
    judge(run_scenarios(tmp_path / "data"))


def test_behind_a_balancer_without_affinity_over_two_processes_the_harness_finds_the_same(
    tmp_path, postgres_cluster
):
    """Each request of a scenario to the next process in turn (its session opened on one, used on
    both: server/agents/sessions.py)."""
    judge(run_scenarios(tmp_path / "data", postgres_cluster.database()))


def judge(found: dict[str, tuple[str, str]]) -> None:
    assert set(found) == set(EXPECTED), "the harness's scenarios are the ones this test knows"
    for name, expected in EXPECTED.items():
        status, why = found[name]
        if expected in ("pass", "warn"):
            assert status == expected, (name, why)
        else:
            assert status == "fail" and expected in why, (name, why)
