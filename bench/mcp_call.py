"""What /mcp adds to a tool call: a desktop agent's `tools/call` of decks_get_deck, end to end
(the official SDK's client → the reactor server → the person's page → back), against the page's
own `reactor.callTool` of the same tool, in one run.

    .venv/bin/python -m bench.mcp_call [--rounds 10] [--calls 20]

One reactor server on loopback with the demo's data; one Chromium page signed in as ada with
*Let my agents use this page* on; one MCP client (Streamable HTTP, 2025-11-25 session) with her
token. Rounds alternate: `--calls` calls timed in the client (each call's wall time), then as
many timed in the page (each `await reactor.callTool(...)`, `performance.now()`), after a warm-up
round of each; and, as the floor, the same client's `tools/call` of reactor_pages, which the server
answers alone. Reported: p50 and p95 of each, and the addition (p50 − p50); the goal is <= 5 ms.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from reactor.server.app import create_app  # noqa: E402
from reactor.server.loopback import LoopbackServer  # noqa: E402
from test_mcp_page import Agent, connect_page, make_token_in_panel  # noqa: E402

from .measure import launch  # noqa: E402

GOAL_MS = 5.0
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


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def run(rounds: int, calls: int) -> dict[str, Any]:
    from playwright.sync_api import sync_playwright

    from reactor.server import agent_tokens

    agent_tokens.RATE_LIMIT = 1_000_000  # the bench calls far faster than any person's agent may

    # "server": reactor_pages, answered by the server alone: the SDK's own floor for a tools/call.
    times: dict[str, list[float]] = {"mcp": [], "page": [], "server": []}
    with tempfile.TemporaryDirectory() as data, LoopbackServer(create_app(data, seed_demo=True)) as url:

        class Live:  # what the tests' page helpers read of a live server
            pass

        live = Live()
        live.url = url  # type: ignore[attr-defined]
        with sync_playwright() as playwright:
            browser = launch(playwright)
            page = browser.new_page()
            connect_page(page, live, "ada")
            agent = Agent(url, make_token_in_panel(page, "bench"))
            try:
                for number in range(rounds + 1):  # round 0 warms both paths and is not counted
                    order = ["mcp", "page", "server"] if number % 2 else ["server", "page", "mcp"]
                    for path in order:
                        if path == "page":
                            measured = page.evaluate(IN_PAGE, [calls, ARGS])
                        else:
                            tool, arguments = ("decks_get_deck", ARGS) if path == "mcp" else ("reactor_pages", {})
                            measured = []
                            for _ in range(calls):
                                started = time.perf_counter()
                                result = agent.call(tool, arguments).result(30)
                                measured.append((time.perf_counter() - started) * 1000)
                                assert not result.is_error, result.content
                        if number:
                            times[path] += measured
            finally:
                agent.close()
                browser.close()
    report: dict[str, Any] = {
        path: {"p50": round(statistics.median(v), 2), "p95": round(percentile(v, 0.95), 2), "n": len(v)}
        for path, v in times.items()
    }
    report["added_ms"] = round(report["mcp"]["p50"] - report["page"]["p50"], 2)
    report["goal"] = {"limit_ms": GOAL_MS, "met": report["added_ms"] <= GOAL_MS}
    return report


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.mcp_call", description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    report = run(args.rounds, args.calls)
    for path in ("page", "server", "mcp"):
        print(f"{path:<5} p50 {report[path]['p50']:>8} ms   p95 {report[path]['p95']:>8} ms   ({report[path]['n']} calls)")
    print(f"/mcp adds {report['added_ms']} ms at p50 (goal <= {GOAL_MS} ms): {'met' if report['goal']['met'] else 'NOT met'}")
    if args.out:
        args.out.write_text(json.dumps(report, indent=2) + "\n")
    return 0 if report["goal"]["met"] else 1


if __name__ == "__main__":
    sys.exit(main())
