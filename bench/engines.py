"""Start-up and the first call after ready in each engine a site's visitors use: the demo page in
Chromium, Firefox and WebKit (Safari's), in one run.

    .venv/bin/python -m bench.engines [--rounds 7]

One reactor server on loopback with the demo's data; each round opens a fresh demo page in each
engine in turn (Chromium through Playwright, a new context; Firefox and WebKit as
tests/test_engines.py drives them, reactor.testing.engines: Playwright's own builds where
installed, else Debian's firefox-esr over WebDriver BiDi and WebKitGTK's WebDriver under Xvfb; a
user context or a session of their own). The engine that starts a round moves each round. The
page times itself with a script the bench's wrapper adds to its head (`PROBE`, from the server's
own origin, as its CSP asks): `ready_ms` from navigation start to `reactor.ready`, then, as a
page's own code would, `first_call_ms`: `reactor.callTool("decks_get_deck")` made the moment ready
resolves (queued behind whatever the page itself does then), and `second_call_ms`, the next one.
Each engine has a driver attached (DevTools, BiDi, WebDriver), which slows start-up alike.

Reported per engine: the median and range of each, each median against Chromium's, and the
median of each round's ratio to Chromium's in that round (`paired`: a host whose load moves
during the run moves both). The goal: WebKit's first call after ready within 5x Chromium's,
paired. Written to bench/engines-results.json.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import sync_playwright

from reactor.server.app import create_app
from reactor.server.loopback import LoopbackServer
from reactor.testing.engines import ENGINES, PlaywrightPage, debian_engine, playwright_own

from .measure import launch

GOAL_RATIO = 5.0
PROBE_PATH = "/bench-engines/probe.js"
PROBE = b"""addEventListener("DOMContentLoaded", async () => {
  const report = {};
  try {
    await window.reactor.ready;
    report.ready_ms = performance.now();
    let started = performance.now();
    const first = await window.reactor.callTool("decks_get_deck", {id: "onboarding"});
    report.first_call_ms = performance.now() - started;
    started = performance.now();
    await window.reactor.callTool("decks_get_deck", {id: "onboarding"});
    report.second_call_ms = performance.now() - started;
    if (!first.ok) report.error = first.error.message;
  } catch (error) {
    report.error = String(error?.message ?? error);
  }
  window.__engineBench = report;
  window.dispatchEvent(new Event("engine-bench"));
});"""
REPORT = """() => window.__engineBench ?? new Promise((resolve) =>
  addEventListener("engine-bench", () => resolve(window.__engineBench), {once: true}))"""
MEASURES = ("ready_ms", "first_call_ms", "second_call_ms")


def with_probe(app: Any) -> Any:
    """`app`, whose index page loads PROBE first (same origin: the page's CSP allows it)."""
    tag = f'<script src="{PROBE_PATH}"></script>'.encode()

    async def serve(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        if scope["path"] == PROBE_PATH:
            headers = [(b"content-type", b"text/javascript"), (b"cache-control", b"no-store")]
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            await send({"type": "http.response.body", "body": PROBE})
            return
        if scope["path"] != "/":
            await app(scope, receive, send)
            return
        scope = {**scope, "headers": [h for h in scope["headers"] if h[0] != b"accept-encoding"]}
        start: dict[str, Any] = {}
        body = bytearray()

        async def buffered(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                start.update(message)
                return
            body.extend(message.get("body", b""))
            if not message.get("more_body"):
                page = bytes(body).replace(b"<head>", b"<head>" + tag, 1)
                headers = [h for h in start["headers"] if h[0] != b"content-length"]
                headers.append((b"content-length", str(len(page)).encode()))
                await send({**start, "headers": headers})
                await send({"type": "http.response.body", "body": page})

        await app(scope, receive, buffered)

    return serve


def measure(rounds: int) -> dict[str, Any]:
    results: dict[str, list[dict[str, float]]] = {engine: [] for engine in ENGINES}
    drivers: dict[str, str] = {}
    missing: dict[str, str] = {}
    with (
        tempfile.TemporaryDirectory() as data,
        LoopbackServer(with_probe(create_app(Path(data), seed_demo=True))) as url,
        sync_playwright() as playwright,
    ):
        chromium = launch(playwright)
        pages: dict[str, Any] = {
            "chromium": lambda: PlaywrightPage(
                chromium.new_context().new_page(), "chromium", "Playwright's Chromium"
            )
        }
        opened = []
        for engine in ("firefox", "webkit"):
            if playwright_own(playwright, engine):
                browser = getattr(playwright, engine).launch()
                opened.append(browser.close)
                pages[engine] = lambda b=browser, e=engine: PlaywrightPage(
                    b.new_page(), e, f"Playwright's {e}"
                )
                continue
            try:
                started = debian_engine(engine)
                driver = started.__enter__()
            except pytest.skip.Exception as skipped:
                missing[engine] = str(skipped)
                continue
            opened.append(lambda s=started: s.__exit__(None, None, None))
            pages[engine] = driver.new_page
        try:
            order = [engine for engine in ENGINES if engine in pages]
            for number in range(rounds):
                turn = order[number % len(order) :] + order[: number % len(order)]
                for engine in turn:
                    page = pages[engine]()
                    try:
                        drivers[engine] = page.driver
                        page.goto(url + "/")
                        report = page.run(REPORT)
                    finally:
                        page.close()
                    if "error" in report:
                        raise SystemExit(f"bench: {engine}: {report['error']}")
                    results[engine].append({k: report[k] for k in MEASURES})
                    print(
                        f"round {number + 1} {engine}: "
                        + ", ".join(f"{k} {report[k]:.0f}" for k in MEASURES),
                        file=sys.stderr,
                    )
        finally:
            for close in reversed(opened):
                close()
            chromium.close()
    return summary(results, drivers, missing, rounds)


def summary(
    results: dict[str, list[dict[str, float]]],
    drivers: dict[str, str],
    missing: dict[str, str],
    rounds: int,
) -> dict[str, Any]:
    engines: dict[str, Any] = {}
    for engine, runs in results.items():
        if not runs:
            continue
        engines[engine] = {"driver": drivers[engine]}
        for key in MEASURES:
            values = [run[key] for run in runs]
            engines[engine][key] = {
                "median": statistics.median(values),
                "min": min(values),
                "max": max(values),
            }
    base = engines.get("chromium")
    for engine, figures in engines.items():
        for key in MEASURES:
            if base:
                figures[key]["x_chromium"] = figures[key]["median"] / base[key]["median"]
                ratios = [
                    run[key] / max(chromium[key], 0.1)
                    for run, chromium in zip(results[engine], results["chromium"])
                ]
                figures[key]["paired_x_chromium"] = statistics.median(ratios)
    webkit = engines.get("webkit", {}).get("first_call_ms", {}).get("paired_x_chromium")
    return {
        "rounds": rounds,
        "host": f"{platform.system()} {platform.machine()}, Python {platform.python_version()}",
        "engines": engines,
        "missing": missing,
        "goal": {
            "webkit_first_call_x_chromium": GOAL_RATIO,
            "met": None if webkit is None else webkit <= GOAL_RATIO,
        },
    }


def table(result: dict[str, Any]) -> str:
    lines = ["engine     ready (ms)                        first call (ms)                   next"]
    for engine, figures in result["engines"].items():
        cells = []
        for key in MEASURES:
            f = figures[key]
            cells.append(
                f"{f['median']:6.0f} ({f['min']:.0f}-{f['max']:.0f}) "
                f"{f['x_chromium']:4.1f}x, paired {f['paired_x_chromium']:4.1f}x"
            )
        lines.append(f"{engine:9}  " + "  ".join(cells))
    for engine, reason in result["missing"].items():
        lines.append(f"{engine:9}  not measured: {reason}")
    goal = result["goal"]
    lines.append(
        f"goal: WebKit's first call after ready <= {goal['webkit_first_call_x_chromium']:.0f}x "
        f"Chromium's (paired): "
        f"{'met' if goal['met'] else 'not met' if goal['met'] is False else 'n/a'}"
    )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description="Start-up and first call, per engine.")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument(
        "--out", type=Path, default=Path(__file__).with_name("engines-results.json")
    )
    args = parser.parse_args()
    result = measure(args.rounds)
    print(table(result))
    args.out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
