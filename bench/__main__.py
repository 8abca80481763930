"""`python -m bench [--quick | --startup] [--out FILE]`: start-up, bytes, call latency, validation
and scale, each against a baseline measured in the same run and the same Chromium. Prints a table
and writes the results as JSON (bench/results.json unless --out says otherwise). `--startup` times
only reactor against bare Pyodide restored from the same snapshot, and a first visit's bytes.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .measure import (
    PAGE_MARKS,
    READY_TIMEOUT_MS,
    SNAPSHOT_PAGES,
    define_plugins,
    execute,
    lab_page,
    launch,
    load_times,
    median,
    scale_point,
    slow_link,
    startup,
    transfer,
)
from .report import machine, snapshot_goals, snapshot_table, summarize, table
from .server import BENCH, WireCounter, WithMarks, bench_app, serving
from .unattached import MARKS_QUERY, Offline, switches, visit

ROOT = BENCH.parent
LUMINO = "@lumino/commands@2.3.4"
FULL = {
    "rounds": 19,
    "warm_rounds": 7,
    "boots": 5,
    "batches": 300,
    "call_warmup_ms": 5000,
    "plugins": [1, 100, 300, 1000],
    "validation_calls": 5000,
    "defined": [10, 100, 1000],
    "slow_link_rounds": 2,
}
QUICK = {
    "rounds": 1,
    "warm_rounds": 1,
    "boots": 1,
    "batches": 30,
    "call_warmup_ms": 500,
    "plugins": [1, 10, 30],
    "validation_calls": 500,
    "defined": [10, 100],
    "slow_link_rounds": 0,
}
STARTUP = {"rounds": 19, "warm_rounds": 0, "slow_link_rounds": 2}


def say(text: str) -> None:
    print(f"bench: {text}", file=sys.stderr, flush=True)


def set_up() -> None:
    """The self-hosted runtime (web/vendor.py, as ./dev does) and the Lumino baseline (npm)."""
    if not (ROOT / "web" / "vendor" / "manifest.json").is_file():
        say("vendoring the runtime (web/vendor.py)")
        subprocess.run([sys.executable, str(ROOT / "web" / "vendor.py")], check=True)
    if not (BENCH / "vendor" / "node_modules" / "@lumino" / "commands" / "package.json").is_file():
        if shutil.which("npm") is None:
            sys.exit("bench: npm is needed once, to vendor @lumino/commands into bench/vendor/")
        say(f"vendoring {LUMINO} into bench/vendor/")
        subprocess.run(
            [
                "npm",
                "install",
                "--no-audit",
                "--no-fund",
                "--prefix",
                str(BENCH / "vendor"),
                LUMINO,
            ],
            check=True,
            stdout=subprocess.DEVNULL,
        )


class Session:
    """What every run needs: its results (the machine recorded), the requests that left the
    origin, Chromium with the switches of an unattached one, and a folder for the apps' data."""

    def __init__(self, results: dict[str, Any], browser: Any, folder: Path) -> None:
        self.results, self.browser, self.folder = results, browser, folder
        self.offline = Offline()
        self.command = switches(browser)
        self.strays: list[str] = []


@contextmanager
def session(plan: dict[str, Any]) -> Iterator[Session]:
    """A run's set-up and its end: the machine and its load before and after, one Chromium."""
    from playwright.sync_api import sync_playwright

    results: dict[str, Any] = {"machine": machine(), "plan": plan}
    results["machine"]["load_average_before"] = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as playwright:
        browser = launch(playwright)
        results["machine"]["chromium"] = browser.version
        bench = Session(results, browser, Path(tmp))
        try:
            yield bench
        finally:
            browser.close()
            bench.offline.close()
    results["machine"]["load_average_after"] = os.getloadavg()
    results["external_requests"] = bench.strays


def first_visits(bench: Session, plan: dict[str, Any], pages: tuple[str, ...] = ()) -> None:
    """The product app served, its bytes counted: start-up (of `pages`, else every page), a
    first and a repeat visit's bytes, and first and repeat visits on the slow link."""
    counter = WireCounter(WithMarks(bench_app(bench.folder / "product"), PAGE_MARKS, MARKS_QUERY))
    with serving(counter) as url:
        every = "bare Pyodide (main thread and worker), PyScript and reactor"
        names = ", ".join(pages) if pages else every
        warm = f" ({plan['warm_rounds']} of them warm too)" if plan["warm_rounds"] else ""
        say(f"start-up: {plan['rounds']} rounds of {names}, cold{warm}")
        chosen = {"names": pages} if pages else {}
        rounds, strays = plan["rounds"], bench.strays
        warm_rounds = plan["warm_rounds"]
        figures = startup(bench.command, bench.offline, url, rounds, strays, warm_rounds, **chosen)
        bench.results["startup"] = figures
        say("bytes: a first and a repeat visit, and a bare Pyodide boot's")
        bench.results["bytes"] = transfer(bench.browser, url, counter, bench.strays)
        if plan["slow_link_rounds"]:
            rounds = plan["slow_link_rounds"]
            pages = "reactor and the bare worker page"
            say(f"slow link: {rounds} first and repeat visits each of {pages}")
            bench.results["slow_link"] = slow_link(bench.browser, url, strays, rounds)


def run_startup(plan: dict[str, Any]) -> dict[str, Any]:
    """Start-up against bare Pyodide restored from the same snapshot, bytes and the slow link
    only."""
    with session(plan) as bench:
        first_visits(bench, plan, SNAPSHOT_PAGES)
    return bench.results


def run(plan: dict[str, Any]) -> dict[str, Any]:
    with session(plan) as bench:
        first_visits(bench, plan)
        browser, command, offline = bench.browser, bench.command, bench.offline
        strays, results = bench.strays, bench.results
        results["scale"] = {"points": []}
        for count in plan["plugins"]:
            say(f"scale: {count} synthetic plugins of 10 tools")
            lab = bench_app(bench.folder / f"lab-{count}", lab=True, synthetic=count)
            app = WithMarks(lab, PAGE_MARKS, MARKS_QUERY)
            with serving(app) as url:
                if count == plan["plugins"][0]:
                    say(
                        "calls: no-op, decks_get_deck and Lumino, as commands and as tools, "
                        "interleaved"
                    )
                    results["call"] = call_figures(
                        command, offline, url, plan["batches"], plan["call_warmup_ms"]
                    )
                with lab_page(browser, url, strays) as (page, boot):
                    point = scale_point(page, boot, count, plan["batches"], plan["call_warmup_ms"])
                    if count == plan["plugins"][0]:
                        say("validation, and where a plugin's load goes")
                        results["validation"] = execute(
                            page, "bench.validation", {"calls": plan["validation_calls"]}
                        )
                        results["scale"]["load_profile"] = execute(
                            page, "bench.profileLoad", {"plugins": 5}
                        )
                for _ in range(plan["boots"] - 1):  # load times are medians of several fresh boots
                    with lab_page(browser, url, strays) as (page, boot):
                        point["boots"].append(load_times(page, boot))
                point.update(
                    {key: median([b[key] for b in point["boots"]]) for key in point["boots"][0]}
                )
                if count == plan["plugins"][0]:
                    results["define"] = []
                    for defined in plan["defined"]:
                        say(f"define: {defined} plugins of 10 tools with reactor.definePlugin")
                        with lab_page(browser, url, strays) as (page, _):
                            results["define"].append(define_plugins(page, defined))
            results["scale"]["points"].append(point)
    return bench.results


def call_figures(
    command: list[str], offline: Offline, url: str, batches: int, warmup_ms: int
) -> dict[str, Any]:
    """The lab page's call timings, in a browser no debugger is attached to (bench/unattached.py):
    attached, the worker's half of a no-op call cost ~20 us more here."""
    names = ["lumino", "echo", "noop", "getDeck", "noopTool", "getDeckTool"]
    options = {"batches": batches, "minBatchMs": 2, "warmupMs": warmup_ms, "extra": {}}
    (report,) = visit(
        command,
        offline,
        url + "/bench/lab.html",
        warm=False,
        timeout_s=READY_TIMEOUT_MS / 1000,
        calls={"names": names, "options": options},
    )
    timed, held = report["calls"], report["calls_blocking"]
    figures: dict[str, Any] = {}
    for name, key in (
        ("noop", "noop"),
        ("getDeck", "get_deck"),
        ("lumino", "lumino"),
        ("echo", "worker_echo"),
        ("noopTool", "noop_tool"),
        ("getDeckTool", "get_deck_tool"),
    ):
        figures[f"{key}_p50_ms"] = timed[name]["p50_ms"]
        figures[f"{key}_p99_ms"] = timed[name]["p99_ms"]
        figures[f"{key}_batch"] = timed[name]["batch"]
        figures[f"{key}_cold_ms"] = timed[name]["cold_ms"]
    figures["batches"] = batches
    figures["warmup_ms"] = warmup_ms
    figures["blocking_during_calls"] = held
    figures["noop_over_echo_ms"] = figures["noop_p50_ms"] - figures["worker_echo_p50_ms"]
    figures["noop_vs_lumino"] = figures["noop_p50_ms"] / figures["lumino_p50_ms"]
    figures["tool_vs_command"] = figures["get_deck_tool_p50_ms"] / figures["get_deck_p50_ms"]
    figures["noop_tool_vs_command"] = figures["noop_tool_p50_ms"] / figures["noop_p50_ms"]
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n\n")[0])
    kind = parser.add_mutually_exclusive_group()
    kind.add_argument(
        "--quick", action="store_true", help="fewer rounds and plugins: a smoke test (~1 minute)"
    )
    kind.add_argument(
        "--startup",
        action="store_true",
        help="only start-up against bare Pyodide from the same snapshot, bytes and the slow link "
        "(~4 minutes)",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help="where to write the JSON (default bench/results.json; bench/out/quick.json with "
        "--quick)",
    )
    options = parser.parse_args(argv)
    default = BENCH / (
        "out/quick.json"
        if options.quick
        else "startup-results.json"
        if options.startup
        else "results.json"
    )
    out = options.out or default
    set_up()
    started = time.monotonic()
    if options.startup:
        results = run_startup(STARTUP)
        goals = snapshot_goals(results)
    else:
        results = run(QUICK if options.quick else FULL)
        goals = summarize(results)
    results.update(goals=goals, seconds=round(time.monotonic() - started))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=1) + "\n")
    print(snapshot_table(results, goals) if options.startup else table(results, goals))
    say(f"wrote {out} in {results['seconds']} s")
    if results["external_requests"]:
        say(
            "FAILED: the pages asked for something off loopback: "
            f"{results['external_requests'][:5]}"
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
