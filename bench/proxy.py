"""Load through the deployed site: docs/DEPLOY.md's nginx terminating TLS before two `reactor
serve` processes on one PostgreSQL (bench/deployed.py, the site tests/test_deploy.py drives).

    .venv/bin/python -m bench.proxy [--seconds 30] [--clients 20] [--rounds 10]

Four loads, each by `--clients` clients at once for `--seconds` in all, cut into `--rounds`
rounds that take the loads in turn (each round starts with the next one), so that what else
the machine does hits every load alike; a short round before them warms every path and is not
counted:

- floor: `GET /auth/session` with a session token, the least a signed-in request does (the
  session's row read, the plugin switches read, the answer).
- decks: `GET /api/decks` as a browser asks it: `If-None-Match` with the ETag it last got,
  gzip accepted. The list holds decks enough to be `--list-kb` KB of JSON (the issue's 48 KB).
- decks_full: the same list without `If-None-Match`: the whole body each time, gzip accepted.
- mcp: `tools/call` of decks_get_deck by `--clients` agents (each its own agent token and
  2025-11-25 session, the era desktop agents speak), answered by a real page: the demo page in
  headless Chromium, signed in as ada with *Let my agents use this page* on, with no debugger
  attached once set up (`linked_page`). Half the calls reach the process that does not hold the
  page's link and cross by PostgreSQL's LISTEN/NOTIFY. A real page rather than the scripted one
  of tests/test_mcp_processes.py: it took 0.6-0.9 ms of CPU a call, a sixth of the call's, so it
  does not crowd the servers out of the two cores, and what a person's page spends is counted.

Every client speaks HTTP/1.1 over TLS with the standard library (one keep-alive connection each,
as a browser or an agent holds one): an HTTP library's own time per request (httpx's ~0.5 ms,
the MCP SDK client's 1.5-2.4 ms: bench/RESULTS.md) would be spent on the same two cores as the
servers and counted against them. The agents send the JSON-RPC an MCP client sends.

Printed, and written to `--out` (bench/proxy-results.json): ok answers per second, p50 and p95
of each load, the ratios the goals name, the CPU time each part took per answer (reactor's
processes, nginx, PostgreSQL, Chromium, the clients; `others`: the rest of the machine
meanwhile) and the PostgreSQL connections opened. Each ratio is given twice: of the loads' whole
figures, which the goals name, and as the median of each round's (paired: both loads of a round
met the same host). `--profile DIR` samples each reactor process with py-spy (`pip install
py-spy`) during the counted rounds: where its CPU goes.

The agent tokens' rate limit (120 calls a minute, a person's agent) is lifted in the processes
this bench starts: 20 agents here call far faster than that.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from postgres import SKIP_REASON, Cluster, postgres_bin  # noqa: E402
from reactor.server.loopback import free_port  # noqa: E402

from .deployed import NAME, NotDeployable, Site, deployed, wait_for_port  # noqa: E402
from .measure import CHROMIUM, FLAGS  # noqa: E402

PASSWORD = "bench-proxy-password-9"
ISSUE_DECKS_PER_SECOND = 180.0  # the issue's GET /api/decks through the proxy, 20 clients
LOADS = ["floor", "decks", "decks_full", "mcp"]
LABELS = {
    "floor": "GET /auth/session (signed in): the floor",
    "decks": "GET /api/decks with If-None-Match, as a browser",
    "decks_full": "GET /api/decks, the whole body each time",
    "mcp": "MCP tools/call decks_get_deck, answered by the page",
}
GOALS = {
    "decks_vs_issue": 3.0,  # decks ok/s >= 3x the issue's 180
    "decks_p95_ms": 50.0,
    "mcp_vs_floor": 0.5,  # mcp ok/s >= 0.5x the floor's
    "mcp_p95_vs_floor": 3.0,  # mcp p95 <= 3x the floor's
}
# `reactor`, with the agent tokens' rate limit lifted (a person's agent makes 120 calls a minute)
LAUNCH = (
    "import sys; from reactor.server.agents import tokens; tokens.RATE_LIMIT = 10**9; "
    "from reactor.cli import main; sys.exit(main())"
)
TOOL, TOOL_ARGS = "decks_get_deck", {"id": "onboarding"}


class Connection(http.client.HTTPSConnection):
    """One keep-alive HTTPS connection to reactor.test, reached at the proxy on loopback."""

    def __init__(self, site: Site) -> None:
        super().__init__(NAME, site.port, context=site.tls(), timeout=60)

    def connect(self) -> None:
        sock = socket.create_connection(("127.0.0.1", self.port), self.timeout)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock = self._context.wrap_socket(sock, server_hostname=self.host)  # type: ignore[attr-defined]

    def exchange(
        self, method: str, path: str, headers: dict[str, str], body: bytes | None = None
    ) -> tuple[int, http.client.HTTPResponse, bytes]:
        try:
            self.request(method, path, body, headers)
            answer = self.getresponse()
            return answer.status, answer, answer.read()
        except (OSError, http.client.HTTPException):
            self.close()  # the next request opens a new connection
            raise


class Browser:
    """A signed-in browser's requests: its session token, gzip accepted, the list's ETag kept."""

    def __init__(self, site: Site, session: str) -> None:
        self.connection = Connection(site)
        self.headers = {"authorization": f"Bearer {session}", "accept-encoding": "gzip"}
        self.etag = ""

    def floor(self) -> int:
        status, _, body = self.connection.exchange("GET", "/auth/session", self.headers)
        if status == 200 and b'"ada"' not in body:
            return 0
        return status

    def decks(self) -> int:
        headers = {**self.headers, "if-none-match": self.etag} if self.etag else self.headers
        status, answer, body = self.connection.exchange("GET", "/api/decks", headers)
        if status == 200:
            self.etag = answer.getheader("etag") or ""
            return 200 if body else 0
        return status

    def decks_full(self) -> int:
        status, _, body = self.connection.exchange("GET", "/api/decks", self.headers)
        return status if status != 200 or body else 0


class Agent:
    """An MCP client's requests (Streamable HTTP, 2025-11-25) with its own agent token:
    initialize once, then one POST per tools/call, the answer read from the JSON body or the
    event stream, whichever the server chose."""

    def __init__(self, site: Site, token: str) -> None:
        self.connection = Connection(site)
        self.headers = {
            "authorization": f"Bearer {token}",
            "accept": "application/json, text/event-stream",
            "content-type": "application/json",
            "accept-encoding": "gzip",
        }
        self.next_id = 0
        status, answer, _ = self.post("initialize", {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "bench.proxy", "version": "1"},
        })  # fmt: skip
        if status != 200:
            raise RuntimeError(f"initialize answered {status}")
        self.headers["mcp-session-id"] = answer.getheader("mcp-session-id") or ""
        self.headers["mcp-protocol-version"] = "2025-11-25"
        status, _, _ = self.connection.exchange(
            "POST",
            "/mcp",
            self.headers,
            json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode(),
        )
        if status != 202:
            raise RuntimeError(f"notifications/initialized answered {status}")

    def post(self, method: str, params: dict[str, Any]) -> tuple[int, Any, bytes]:
        self.next_id += 1
        message = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        return self.connection.exchange("POST", "/mcp", self.headers, json.dumps(message).encode())

    def call(self) -> int:
        status, answer, body = self.post("tools/call", {"name": TOOL, "arguments": TOOL_ARGS})
        if status != 200:
            return status
        if (answer.getheader("content-type") or "").startswith("application/json"):
            found = json.loads(body)
        else:  # an event stream: its answer is the data line with this call's id
            found = next(
                (
                    json.loads(line[6:])
                    for line in body.decode().splitlines()
                    if line.startswith("data: ") and f'"id":{self.next_id}' in line.replace(" ", "")
                ),
                {},
            )
        result = found.get("result") or {}
        deck = result.get("structuredContent", {}).get("deck", {})
        return 200 if deck.get("id") == TOOL_ARGS["id"] and not result.get("isError") else 0


# CPU time by part --------------------------------------------------------------------------

TICK = os.sysconf("SC_CLK_TCK")


def _stat(pid: str) -> tuple[int, str, float] | None:
    """(parent pid, command name, CPU seconds) of a process and of its children it has reaped
    (PostgreSQL's ended backends), None when it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    name = text[text.index("(") + 1 : text.rindex(")")]
    fields = text[text.rindex(")") + 2 :].split()
    return int(fields[1]), name, sum(int(v) for v in fields[11:15]) / TICK


def cpu_by_part(reactor_pids: set[int], postmaster: int) -> dict[str, float]:
    """CPU seconds used so far by this process and everything it started, and by PostgreSQL
    (`postmaster` and its backends: pg_ctl leaves it to init), by part; `machine`: every
    process's, from /proc/stat."""
    processes = {int(pid): s for pid in os.listdir("/proc") if pid.isdigit() and (s := _stat(pid))}
    children: dict[int, list[int]] = {}
    for number, (parent, _, _) in processes.items():
        children.setdefault(parent, []).append(number)
    parts: dict[str, float] = {}
    todo = [os.getpid(), postmaster]
    while todo:
        pid = todo.pop()
        todo += children.get(pid, [])
        found = processes.get(pid)
        if found is None:
            continue
        _, name, seconds = found
        if pid == os.getpid():
            part = "clients"
        elif pid in reactor_pids:
            part = "reactor"
        elif name.startswith("nginx"):
            part = "nginx"
        elif name.startswith("postgres"):
            part = "postgresql"
        elif "chrom" in name.lower():
            part = "chromium"
        elif name.startswith("node"):
            part = "playwright"
        else:
            part = "other"
        parts[part] = parts.get(part, 0.0) + seconds
    fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    busy = sum(int(v) for i, v in enumerate(fields[:8]) if i not in (3, 4))  # all but idle, iowait
    parts["machine"] = busy / TICK
    return parts


# Running a load ----------------------------------------------------------------------------


def run_load(work: list[Callable[[], int]], seconds: float) -> dict[str, Any]:
    """Each of `work` called over and over by a thread of its own for `seconds`: latencies,
    statuses (0: an answer that was not what was asked), the time taken."""
    latencies: list[list[float]] = [[] for _ in work]
    statuses: list[Counter[int]] = [Counter() for _ in work]
    start = threading.Barrier(len(work) + 1)
    until = [0.0]

    def client(number: int) -> None:
        start.wait()
        own, counted, one = latencies[number], statuses[number], work[number]
        while time.perf_counter() < until[0]:
            began = time.perf_counter()
            try:
                status = one()
            except (OSError, http.client.HTTPException):
                status = -1
            own.append(time.perf_counter() - began)
            counted[status] += 1

    threads = [threading.Thread(target=client, args=(n,), daemon=True) for n in range(len(work))]
    for thread in threads:
        thread.start()
    began = time.perf_counter()
    until[0] = began + seconds
    start.wait()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - began
    return {
        "latencies": [value for own in latencies for value in own],
        "statuses": sum(statuses, Counter()),
        "elapsed": elapsed,
    }


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def summary(segments: list[dict[str, Any]]) -> dict[str, Any]:
    latencies = [value for s in segments for value in s["latencies"]]
    statuses: Counter[int] = sum((s["statuses"] for s in segments), Counter())
    elapsed = sum(s["elapsed"] for s in segments)
    ok = sum(count for status, count in statuses.items() if status in (200, 304))
    cpu: dict[str, float] = {}
    for s in segments:
        for part, seconds in s["cpu"].items():
            cpu[part] = cpu.get(part, 0.0) + seconds
    return {
        "requests": len(latencies),
        "ok": ok,
        "per_second": round(ok / elapsed, 1),
        "p50_ms": round(statistics.median(latencies) * 1000, 2),
        "p95_ms": round(percentile(latencies, 0.95) * 1000, 2),
        "statuses": {str(k): v for k, v in sorted(statuses.items())},
        "per_second_by_round": [
            round(sum(c for st, c in s["statuses"].items() if st in (200, 304)) / s["elapsed"], 1)
            for s in segments
        ],
        "p95_ms_by_round": [
            round(percentile(s["latencies"], 0.95) * 1000, 2) if s["latencies"] else None
            for s in segments
        ],
        "seconds": round(elapsed, 2),
        # PostgreSQL connections opened per 1,000 answers (a pool that keeps too few opens more)
        "connections_per_1000": round(
            sum(s["connections"] for s in segments) * 1000 / max(ok, 1), 1
        ),
        # CPU milliseconds per ok answer, by part; `others`: what the rest of the machine used
        "cpu_ms_per_answer": {
            part: round(seconds * 1000 / max(ok, 1), 3) for part, seconds in sorted(cpu.items())
        },
        "cpu_cores_used": {
            part: round(seconds / elapsed, 2) for part, seconds in sorted(cpu.items())
        },
    }


# The site, its data and its page -----------------------------------------------------------


def fill_decks(site: Site, session: str, kilobytes: int) -> int:
    """Decks by ada until the list is `kilobytes` KB of JSON; the list's size."""
    headers = {"authorization": f"Bearer {session}", "if-match": '"0"'}
    with site.client(timeout=60) as http:
        size, number = len(http.get("/api/decks").content), 0
        while size < kilobytes * 1024:
            batch = range(number, number + 40)
            for n in batch:
                deck = {
                    "id": f"bench-{n:04d}",
                    "title": f"Bench deck {n}: the numbers of week {n % 52 + 1}",
                    "slides": [
                        {"title": f"Slide {s}", "body": f"- point {s} of deck {n}\n- and more"}
                        for s in range(1, 4)
                    ],
                }
                made = http.put(f"/api/decks/{deck['id']}", json=deck, headers=headers)
                if made.status_code != 201:
                    raise RuntimeError(f"a deck was refused: {made.status_code} {made.text[:200]}")
            number += len(batch)
            size = len(http.get("/api/decks").content)
    return size


def sign_in(site: Site) -> str:
    with site.client(timeout=60) as http:
        answer = http.post("/auth/sign-in", json={"username": "ada", "password": PASSWORD})
        answer.raise_for_status()
        return str(answer.json()["token"])


def agent_tokens(site: Site, session: str, count: int) -> list[str]:
    with site.client(timeout=60) as http:
        return [
            http.post(
                "/api/agent-tokens",
                json={"name": f"bench agent {n}"},
                headers={"authorization": f"Bearer {session}"},
            ).json()["token"]
            for n in range(count)
        ]


@contextmanager
def linked_page(site: Site, folder: Path) -> Iterator[subprocess.Popen[bytes]]:
    """A headless Chromium of its own showing the site, signed in as ada with the agents switch
    on, then left with no debugger attached, as a person's browser is: attached, Playwright hears
    every WebSocket frame of the page's link (CDP's events), which costs the page and the
    driver CPU per call that no person's browser spends (bench/unattached.py says the same of
    start-up)."""
    from playwright.sync_api import sync_playwright

    from reactor.testing import ReactorPage

    port = free_port()
    browser = subprocess.Popen(
        [CHROMIUM, *FLAGS, "--headless", f"--remote-debugging-port={port}"]
        + [f"--user-data-dir={folder}", f"--host-resolver-rules=MAP {NAME} 127.0.0.1"]
        + ["--ignore-certificate-errors", "about:blank"],  # the site's certificate is self-signed
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_port(port, browser)
        with sync_playwright() as playwright:
            attached = playwright.chromium.connect_over_cdp(f"http://127.0.0.1:{port}")
            context = attached.contexts[0]
            page = context.pages[0] if context.pages else context.new_page()
            ReactorPage(page, site).open().sign_in("ada", PASSWORD)
            page.get_by_test_id("agents-switch").check()
            page.get_by_test_id("agents-status").get_by_text("Your agents can use").wait_for()
            attached.close()  # only disconnects: the page, in the browser's own context, stays
        yield browser
    finally:
        browser.terminate()
        browser.wait(10)


def connections_opened(database: str) -> int:
    """How many connections PostgreSQL has opened to the site's database so far."""
    import psycopg

    with psycopg.connect(database, autocommit=True) as admin:
        row = admin.execute(
            "SELECT sessions FROM pg_stat_database WHERE datname = current_database()"
        ).fetchone()
    return int(row[0]) if row else 0


def measure(site: Site, database: str, postmaster: int, args: argparse.Namespace) -> dict[str, Any]:
    session = sign_in(site)
    list_bytes = fill_decks(site, session, args.list_kb)
    tokens = agent_tokens(site, session, args.clients)
    browsers = {
        load: [Browser(site, session) for _ in range(args.clients)]
        for load in ("floor", "decks", "decks_full")
    }
    agents = [Agent(site, token) for token in tokens]
    if agents[0].call() != 200:
        raise RuntimeError("the page did not answer an agent's call")
    work: dict[str, list[Callable[[], int]]] = {
        "floor": [b.floor for b in browsers["floor"]],
        "decks": [b.decks for b in browsers["decks"]],
        "decks_full": [b.decks_full for b in browsers["decks_full"]],
        "mcp": [a.call for a in agents],
    }
    reactor_pids = {p.pid for p in site.processes}
    chosen = [load for load in LOADS if load in args.loads.split(",")]
    segments: dict[str, list[dict[str, Any]]] = {load: [] for load in chosen}
    load_at_start = os.getloadavg()
    per_round = args.seconds / args.rounds
    profilers: list[subprocess.Popen[bytes]] = []
    for number in range(args.rounds + 1):  # round 0 warms every path and is not counted
        if number == 1 and args.profile:
            profilers = profile(site, args.profile)
        turn = number % len(chosen)
        for load in chosen[turn:] + chosen[:turn]:
            before, opened = cpu_by_part(reactor_pids, postmaster), connections_opened(database)
            segment = run_load(work[load], per_round if number else min(2.0, per_round))
            after = cpu_by_part(reactor_pids, postmaster)
            segment["connections"] = connections_opened(database) - opened - 1  # less its own
            segment["cpu"] = {part: after[part] - before.get(part, 0.0) for part in after}
            segment["cpu"]["others"] = segment["cpu"]["machine"] - sum(
                v for k, v in segment["cpu"].items() if k != "machine"
            )
            if number:
                segments[load].append(segment)
    for profiler in profilers:  # py-spy writes its stacks when interrupted
        profiler.send_signal(signal.SIGINT)
        profiler.wait(60)
    for agent in agents:
        agent.connection.close()
    for group in browsers.values():
        for browser in group:
            browser.connection.close()
    results = {load: summary(segments[load]) for load in chosen}
    ratios, met = judge(results)
    return {
        "clients": args.clients,
        "seconds": args.seconds,
        "rounds": args.rounds,
        "list_bytes": list_bytes,
        "load_average_at_start": [round(v, 2) for v in load_at_start],
        "load_average_at_end": [round(v, 2) for v in os.getloadavg()],
        "cpus": os.cpu_count(),
        "loads": results,
        "ratios": ratios,
        "goals": GOALS,
        "met": met,
    }


def profile(site: Site, folder: Path) -> list[subprocess.Popen[bytes]]:
    """py-spy sampling each reactor process until interrupted: collapsed stacks (flamegraph's
    input) in `folder`/reactor-<n>.txt, of the thread holding the GIL: where the CPU goes."""
    spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    if not Path(spy).exists():
        raise SystemExit("bench.proxy: --profile needs py-spy (pip install py-spy)")
    folder.mkdir(parents=True, exist_ok=True)
    return [
        subprocess.Popen(
            [spy, "record", "--pid", str(process.pid), "--format", "raw", "--rate", "250"]
            + ["--gil", "--nonblocking", "--output", str(folder / f"reactor-{n}.txt")],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for n, process in enumerate(site.processes)
    ]


def judge(results: dict[str, Any]) -> tuple[dict[str, float], dict[str, bool]]:
    """The ratios the goals name, and which goals are met (of the loads measured)."""
    per_second = {load: r["per_second"] for load, r in results.items()}
    p95 = {load: r["p95_ms"] for load, r in results.items()}
    ratios: dict[str, float] = {}
    met: dict[str, bool] = {}
    if "decks" in results:
        ratios["decks_vs_issue"] = round(per_second["decks"] / ISSUE_DECKS_PER_SECOND, 2)
        met["decks_vs_issue"] = ratios["decks_vs_issue"] >= GOALS["decks_vs_issue"]
        met["decks_p95_ms"] = p95["decks"] <= GOALS["decks_p95_ms"]
    if "floor" in results:
        for load in ("decks", "decks_full", "mcp"):
            if load in results:
                ratios[f"{load}_vs_floor"] = round(per_second[load] / per_second["floor"], 2)
        # each round's ratio, then their median: the loads of one round met the same host
        for load in ("decks", "mcp"):
            if load in results:
                ratios[f"{load}_vs_floor_paired"] = _paired(results, load, "per_second_by_round")
        if "mcp" in results:
            ratios["mcp_p95_vs_floor"] = round(p95["mcp"] / p95["floor"], 2)
            ratios["mcp_p95_vs_floor_paired"] = _paired(results, "mcp", "p95_ms_by_round")
            met["mcp_vs_floor"] = ratios["mcp_vs_floor"] >= GOALS["mcp_vs_floor"]
            met["mcp_p95_vs_floor"] = ratios["mcp_p95_vs_floor"] <= GOALS["mcp_p95_vs_floor"]
    return ratios, met


def _paired(results: dict[str, Any], load: str, figure: str) -> float:
    pairs = zip(results[load][figure], results["floor"][figure], strict=True)
    return round(statistics.median(a / b for a, b in pairs if a and b), 2)


def report(results: dict[str, Any]) -> str:
    lines = [
        f"{results['clients']} clients, {results['seconds']:g} s per load in "
        f"{results['rounds']} interleaved rounds; the list {results['list_bytes']:,} bytes; "
        f"load average at start {results['load_average_at_start'][0]}",
        "",
        "| load | ok/s | p50 ms | p95 ms | answers | statuses | connections opened / 1,000 |",
        "| --- | ---: | ---: | ---: | ---: | --- | ---: |",
    ]
    for load, r in results["loads"].items():
        lines.append(
            f"| {LABELS[load]} | {r['per_second']} | {r['p50_ms']} | {r['p95_ms']} | "
            f"{r['requests']} | {r['statuses']} | {r['connections_per_1000']} |"
        )
    ratios, met = results["ratios"], results["met"]
    lines.append("")
    if "decks_vs_issue" in ratios:
        lines.append(
            f"decks ok/s / the issue's {ISSUE_DECKS_PER_SECOND:g}: {ratios['decks_vs_issue']}x "
            f"(goal >= 3x: {_met(met['decks_vs_issue'])}); p95 "
            f"{results['loads']['decks']['p95_ms']} ms (goal <= 50 ms: "
            f"{_met(met['decks_p95_ms'])})"
        )
    for load in ("decks", "decks_full"):
        if f"{load}_vs_floor" in ratios:
            lines.append(f"{load} ok/s / the floor's: {ratios[f'{load}_vs_floor']}x")
    if "decks_vs_floor_paired" in ratios:
        lines.append(f"  (the median of each round's: {ratios['decks_vs_floor_paired']}x)")
    if "mcp_vs_floor" in ratios:
        lines.append(
            f"MCP ok/s / the floor's: {ratios['mcp_vs_floor']}x (goal >= 0.5x: "
            f"{_met(met['mcp_vs_floor'])}); p95 / the floor's: {ratios['mcp_p95_vs_floor']}x "
            f"(goal <= 3x: {_met(met['mcp_p95_vs_floor'])})"
        )
        lines.append(
            f"  (the medians of each round's: {ratios['mcp_vs_floor_paired']}x, "
            f"p95 {ratios['mcp_p95_vs_floor_paired']}x)"
        )
    lines += [
        "",
        "CPU ms per ok answer, by part (others: the rest of the machine meanwhile):",
    ]
    parts = sorted({p for r in results["loads"].values() for p in r["cpu_ms_per_answer"]})
    parts = [p for p in parts if p != "machine"] + ["machine"]
    lines.append("| load | " + " | ".join(parts) + " |")
    lines.append("| --- |" + " ---: |" * len(parts))
    for load, r in results["loads"].items():
        cpu = r["cpu_ms_per_answer"]
        lines.append(f"| {load} | " + " | ".join(str(cpu.get(p, 0)) for p in parts) + " |")
    return "\n".join(lines)


def _met(ok: bool) -> str:
    return "met" if ok else "NOT met"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.proxy", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--seconds", type=float, default=30, help="per load, in all rounds")
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--list-kb", type=int, default=48, help="the decks list's size")
    parser.add_argument("--profile", type=Path, help="a folder for py-spy's stacks of reactor")
    parser.add_argument(
        "--loads", default=",".join(LOADS), help="which loads (to profile one): " + ",".join(LOADS)
    )
    parser.add_argument(
        "--out", type=Path, default=Path(__file__).resolve().parent / "proxy-results.json"
    )
    args = parser.parse_args(argv)
    bin_dir = postgres_bin()
    if bin_dir is None:
        print(f"bench.proxy: {SKIP_REASON}", file=sys.stderr)
        return 2
    cluster = Cluster(bin_dir)
    cluster.start()
    try:
        database = cluster.database()
        with (
            tempfile.TemporaryDirectory(prefix="reactor-proxy-") as folder,
            deployed(
                Path(folder),
                database,
                password=PASSWORD,
                python=[sys.executable, "-c", LAUNCH],
            ) as site,
            linked_page(site, Path(folder) / "chromium"),
        ):
            postmaster = int((cluster.folder / "data" / "postmaster.pid").read_text().split()[0])
            results = measure(site, database, postmaster, args)
    except NotDeployable as missing:
        print(f"bench.proxy: {missing}", file=sys.stderr)
        return 2
    finally:
        cluster.stop()
    print(report(results))
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
