"""What /mcp adds to a tool call: a desktop agent's `tools/call` of decks_get_deck, end to end
(client → the reactor server → the person's page → back), against the page's own
`reactor.callTool` of the same tool, in one run.

    .venv/bin/python -m bench.mcp_call [--rounds 10] [--calls 20] [--own-process]

One reactor server on loopback with the demo's data, in a thread of the bench's process (the
clients share its interpreter lock: its work after each answer counts in their time), or with
`--own-process` in a process of its own, as a deployment's is; one Chromium
page signed in as ada with *Let my agents use this page* on; two MCP clients with her token, each
on a 2025-11-25 session: the official SDK's (Streamable HTTP), and `Wire`, the same requests sent
with http.client and the answer read from the JSON body or the event stream (what any client
sends, without a client library's own time). Rounds interleave the paths: `--calls` calls timed
in each client (each call's wall time) and as many in the page (each `await
reactor.callTool(...)`, `performance.now()`), after a warm-up round; as each client's floor, its
`tools/call` of reactor_pages, which the server answers alone; and as the page link's floor, a
bare WebSocket echo between the same page and the same server process: `/bench/echo`, a route
mounted in front of the bench's app only (so behind the same middleware as the page's link),
which sends back each text it gets, timed in the page from `send` to the echo's `message` event.
Reported: p50 and p95 of each, what each client's call adds to the page's (p50 − p50), and the
floor beside it; the goal is that /mcp adds <= 1.5 ms on the wire. For each client path, the
time the server (its thread, or its process) and the browser's processes spent on a CPU per call
(Linux's schedstat): what a call costs, which other work on a shared machine does not inflate as
it does the wall time.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from starlette.routing import WebSocketRoute  # noqa: E402
from starlette.websockets import WebSocket, WebSocketDisconnect  # noqa: E402

from reactor.server.app import create_app  # noqa: E402
from reactor.server.loopback import LoopbackServer, free_port  # noqa: E402
from reactor.server.serving import graceful  # noqa: E402
from reactor.testing import ReactorPage  # noqa: E402
from test_mcp_page import Agent, connect_page, make_token_in_panel  # noqa: E402

from .measure import launch  # noqa: E402

GOAL_MS = 1.5
ECHO_PATH = "/bench/echo"
PATHS = ["page", "echo", "server", "mcp", "wire_server", "wire"]
LABELS = {
    "echo": "floor: a bare WebSocket echo, page > server > page",
    "page": "the page's own reactor.callTool(decks_get_deck)",
    "server": "SDK client: reactor_pages (the server alone)",
    "mcp": "SDK client: decks_get_deck (client > server > page > back)",
    "wire_server": "wire: reactor_pages (the server alone)",
    "wire": "wire: decks_get_deck (client > server > page > back)",
}
ARGS = {"id": "onboarding"}
IN_PAGE = """async ([calls, args]) => {
  const times = [];
  for (let i = 0; i < calls; i++) {
    const started = performance.now();
    const envelope = await window.reactor.callTool("decks_get_deck", args);
    times.push(performance.now() - started);
    if (!envelope.ok) throw new Error(envelope.error.message);
  }
  return times;
}"""
# The floor: the same page, a WebSocket of its own to the same server, a small message each way.
ECHO = """async ([path, calls, text]) => {
  const address = new URL(path, location.href);
  address.protocol = address.protocol === "https:" ? "wss:" : "ws:";
  const socket = window.__benchEcho ??= new WebSocket(address);
  if (socket.readyState !== WebSocket.OPEN) {
    await new Promise((resolve, reject) => { socket.onopen = resolve; socket.onerror = reject; });
  }
  const times = [];
  for (let i = 0; i < calls; i++) {
    const started = performance.now();
    const heard = new Promise((resolve) => { socket.onmessage = resolve; });
    socket.send(text);
    await heard;
    times.push(performance.now() - started);
  }
  return times;
}"""
# As long as a call of decks_get_deck sent down the page's link.
ECHO_TEXT = json.dumps(
    {"type": "call", "call": "0" * 25, "tool": "decks_get_deck", "arguments": ARGS, "agent": "b"}
)


async def echo(socket: WebSocket) -> None:
    """The floor's server end: each text back as it came."""
    await socket.accept()
    try:
        while True:
            await socket.send_text(await socket.receive_text())
    except WebSocketDisconnect:
        return


class Wire:
    """MCP's Streamable HTTP (2025-11-25) spoken over one keep-alive connection of the standard
    library's http.client (a client library's own time, httpx's ~0.5 ms a request, would count as
    /mcp's): initialize, then one POST per call, its answer read from the JSON body or the event
    stream, whichever the server chose."""

    def __init__(self, url: str, token: str) -> None:
        address = urlsplit(url)
        self.connection = http.client.HTTPConnection(address.hostname, address.port, timeout=30)
        self.headers = {
            "authorization": f"Bearer {token}",
            "accept": "application/json, text/event-stream",
            "content-type": "application/json",
        }
        self.next_id = 0
        status, headers, _ = self.post(self.request("initialize", {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "bench", "version": "1"},
        }))  # fmt: skip
        assert status == 200, status
        self.headers["mcp-session-id"] = headers["mcp-session-id"]
        self.headers["mcp-protocol-version"] = "2025-11-25"
        status, _, _ = self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        assert status == 202, status

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.next_id += 1
        return {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}

    def post(self, message: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
        self.connection.request("POST", "/mcp", json.dumps(message).encode(), self.headers)
        answer = self.connection.getresponse()
        body = answer.read()
        return answer.status, {k.lower(): v for k, v in answer.getheaders()}, body

    def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        sent = self.request("tools/call", {"name": tool, "arguments": arguments})
        status, headers, body = self.post(sent)
        if headers.get("content-type", "").startswith("application/json"):
            return json.loads(body)["result"]  # type: ignore[no-any-return]
        for line in body.decode().splitlines():
            if line.startswith("data: ") and json.loads(line[6:]).get("id") == sent["id"]:
                return json.loads(line[6:])["result"]  # type: ignore[no-any-return]
        raise AssertionError(f"no answer to {tool}: {status} {body[:200]!r}")

    def close(self) -> None:
        self.connection.close()


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def bench_app(data: str) -> Any:
    """The demo's app, with the floor's echo (the bench's app only) and no rate limit on tokens
    (the bench calls far faster than any person's agent may)."""
    from reactor.server.agents import tokens as agent_tokens

    agent_tokens.RATE_LIMIT = 1_000_000
    app = create_app(data, seed_demo=True)
    app.router.routes.insert(0, WebSocketRoute(ECHO_PATH, echo))
    return app


def on_cpu(tasks: list[str]) -> int:
    """Nanoseconds the tasks (/proc/<pid>/task/<tid> directories) have run on a CPU (Linux)."""
    total = 0
    for task in tasks:
        with contextlib.suppress(OSError):
            total += int(Path(task, "schedstat").read_text().split()[0])
    return total


def tasks_of(pid: int) -> list[str]:
    return [str(task) for task in Path(f"/proc/{pid}/task").glob("*")]


def browser_tasks(excluded: int) -> list[str]:
    """The tasks of the Chromium processes this bench started (none of the server's)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        with contextlib.suppress(OSError, ValueError, IndexError):
            parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            children.setdefault(parent, []).append(int(entry.name))
    found, todo = [], [os.getpid()]
    while todo:
        for child in children.get(todo.pop(), []):
            if child != excluded:
                found.append(child)
                todo.append(child)
    return [
        task
        for pid in found
        if b"chromium" in Path(f"/proc/{pid}/cmdline").read_bytes()
        for task in tasks_of(pid)
    ]


@contextlib.contextmanager
def served(data: str, in_process: bool) -> Iterator[tuple[str, Callable[[], list[str]], int]]:
    """The bench's server while it runs, in a thread here or a process of its own: its URL, its
    tasks (what it runs on a CPU) and its process id when it has its own."""
    if in_process:
        server = LoopbackServer(bench_app(data))
        try:
            task = f"/proc/self/task/{server.thread.native_id}"
            yield server.url, lambda: [task], 0
        finally:
            server.stop()
        return
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "bench.mcp_call", "--serve", data, str(port)])
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                http.client.HTTPConnection("127.0.0.1", port, timeout=1).request("GET", "/healthz")
                break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"the bench's server did not start on {url}") from None
                time.sleep(0.1)
        yield url, lambda: tasks_of(server.pid), server.pid
    finally:
        server.terminate()
        server.wait(15)


def serve(data: str, port: int) -> None:
    """The bench's server in this process, in the foreground (`--serve`)."""
    graceful(bench_app(data), host="127.0.0.1", port=port, log_level="warning").run()


def run(rounds: int, calls: int, *, in_process: bool = True) -> dict[str, Any]:
    from playwright.sync_api import sync_playwright

    # "server" and "wire_server": reactor_pages, answered by the server alone: each client's floor.
    times: dict[str, list[float]] = {path: [] for path in PATHS}
    # On-CPU time of the server and of the browser over the calls of each client path, in µs.
    cpu: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as data:
        with (
            served(data, in_process) as (url, server_tasks, server_pid),
            sync_playwright() as playwright,
        ):

            class Live:  # what the tests' page helpers read of a live server
                pass

            live = Live()
            live.url = url  # type: ignore[attr-defined]
            browser = launch(playwright)
            page = browser.new_page()
            connect_page(ReactorPage(page, live).open(), "ada")
            token = make_token_in_panel(page, "bench")
            agent, wire = Agent(url, token), Wire(url, token)
            try:
                for number in range(rounds + 1):  # round 0 warms every path and is not counted
                    for path in PATHS[number % len(PATHS) :] + PATHS[: number % len(PATHS)]:
                        if path == "page":
                            measured = page.evaluate(IN_PAGE, [calls, ARGS])
                        elif path == "echo":
                            measured = page.evaluate(ECHO, [ECHO_PATH, calls, ECHO_TEXT])
                        else:
                            tool, arguments = (
                                ("reactor_pages", {})
                                if path.endswith("server")
                                else ("decks_get_deck", ARGS)
                            )
                            measured = []
                            watched = server_tasks(), browser_tasks(server_pid)
                            before = [on_cpu(tasks) for tasks in watched]
                            for _ in range(calls):
                                started = time.perf_counter()
                                if path.startswith("wire"):
                                    failed = wire.call(tool, arguments).get("isError")
                                else:
                                    failed = agent.call(tool, arguments).result(30).is_error
                                measured.append((time.perf_counter() - started) * 1000)
                                assert not failed, path
                            if number:
                                spent = cpu.setdefault(path, {"server": 0.0, "browser": 0.0})
                                for side, tasks, start in zip(spent, watched, before, strict=True):
                                    spent[side] += (on_cpu(tasks) - start) / 1000
                        if number:
                            times[path] += measured
            finally:
                agent.close()
                wire.close()
                browser.close()
    report: dict[str, Any] = {
        path: {
            "p50": round(statistics.median(v), 2),
            "p95": round(percentile(v, 0.95), 2),
            "n": len(v),
        }
        for path, v in times.items()
    }
    for path, spent in cpu.items():
        report[path]["cpu_us_per_call"] = {
            side: round(total / len(times[path])) for side, total in spent.items()
        }
    report["added_ms"] = round(report["mcp"]["p50"] - report["page"]["p50"], 2)
    report["wire_added_ms"] = round(report["wire"]["p50"] - report["page"]["p50"], 2)
    report["floor_ms"] = report["echo"]["p50"]
    report["goal"] = {
        "limit_ms": GOAL_MS,
        "met_by_the_sdk_client": report["added_ms"] <= GOAL_MS,
        "met_on_the_wire": report["wire_added_ms"] <= GOAL_MS,
    }
    return report


def main() -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.mcp_call", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--own-process", action="store_true", help="the server in its own process")
    parser.add_argument("--serve", nargs=2, metavar=("DATA", "PORT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve[0], int(args.serve[1]))
        return 0
    report = run(args.rounds, args.calls, in_process=not args.own_process)
    report["server_process"] = "its own" if args.own_process else "the bench's"
    for path in PATHS:
        figures = report[path]
        spent = figures.get("cpu_us_per_call")
        print(
            f"{LABELS[path]:<58} p50 {figures['p50']:>7} ms   p95 {figures['p95']:>7} ms   "
            f"({figures['n']} calls)"
            + (
                f"   CPU a call: server {spent['server']} µs, browser {spent['browser']} µs"
                if spent
                else ""
            )
        )
    for client, key in (("with the SDK's client", "added_ms"), ("on the wire", "wire_added_ms")):
        met = report[key] <= GOAL_MS
        print(
            f"/mcp adds {report[key]} ms at p50 {client} (goal <= {GOAL_MS} ms on the wire; the "
            f"floor, a bare WebSocket round trip: {report['floor_ms']} ms): "
            f"{'met' if met else 'NOT met'}"
        )
    if args.out:
        args.out.write_text(json.dumps(report, indent=2) + "\n")
    return 0 if report["goal"]["met_on_the_wire"] else 1


if __name__ == "__main__":
    sys.exit(main())
