"""The measurements, each in real headless Chromium (Debian's, as the tests use).

Start-up loads run each in its own browser with no debugger attached (bench/unattached.py), as a
person's page does; the other pages run in a fresh Playwright context, so their HTTP cache starts
empty as on a first visit. Nothing is routed through Playwright (routing turns the HTTP cache
off). Requests are watched, and any that leaves loopback is reported as a failure of the run.
"""

from __future__ import annotations

import statistics
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit

from .unattached import Offline, reporter, visit

CHROMIUM = "/usr/bin/chromium"
FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
READY_TIMEOUT_MS = 600_000
DONE = "bench: done"

# Marks on the page's clock (ms since navigation start): the product's own performance marks
# (`reactor:pyodide-start` when the worker is made, `-pyodide-ready`, `-python-installed` and
# `-plugins` as the worker reports them: web/reactor-worker.js), `ready` when reactor.ready
# resolves, `listed` when the bundles have been listed. On every page, long tasks and the gaps of
# a 10 ms timer are watched from navigation on (window.__blocking), as a person would feel them.
MARKS = """
// a page says it is done by setting window.__benchDone; the bench hears it on the console
let benchDone;
Object.defineProperty(window, "__benchDone", {
  get: () => benchDone,
  set: (value) => { benchDone = value; console.debug(DONE); window.__benchReport?.(); },
});
const blocking = window.__blocking = { tasks: [], gaps: [], last: performance.now() };
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) {
    blocking.tasks.push({ start: entry.startTime, duration: entry.duration });
  }
}).observe({ type: "longtask", buffered: true });
setInterval(() => {
  const now = performance.now();
  blocking.gaps.push({ at: now, gap: now - blocking.last });
  blocking.last = now;
}, 10);
const marks = {};
addEventListener("DOMContentLoaded", async () => {
  if (!window.reactor) return;
  try {
    await window.reactor.ready;
    marks.ready = performance.now();
    await window.reactor.agentToolBundles();
    marks.listed = performance.now();
    for (const name of ["pyodide-start", "pyodide-ready", "python-installed", "plugins"]) {
      marks[name.replace("-", "_")] = performance.getEntriesByName(`reactor:${name}`)[0]?.startTime;
    }
  } catch (error) {
    marks.error = String(error?.message ?? error);
  }
  window.__bench = marks;
  window.__benchDone = marks.listed ?? -1;
});
""".replace("DONE", repr(DONE))
# What held the main thread between `from` and `until` (ms on the page's clock): long tasks
# (> 50 ms), Total Blocking Time (the sum of each long task's part over 50 ms, as Lighthouse counts
# it) and the longest gap of the 10 ms timer.
BLOCKING = """([from, until]) => {
  const tasks = window.__blocking.tasks.filter((t) => t.start >= from && t.start < until);
  const gaps = window.__blocking.gaps.filter((g) => g.at > from && g.at <= until).map((g) => g.gap);
  return {long_tasks: tasks.length, longest_task_ms: Math.max(0, ...tasks.map((t) => t.duration)),
          total_blocking_ms: tasks.reduce((sum, t) => sum + Math.max(0, t.duration - 50), 0),
          longest_timer_gap_ms: Math.max(0, ...gaps)};
}"""
RESOURCES = """performance.getEntriesByType("resource").map((e) => ({
  path: new URL(e.name).pathname, start: e.startTime, end: e.responseEnd,
  transfer: e.transferSize}))"""
# What the bench server writes into the start-up pages, for browsers no debugger is attached to.
PAGE_MARKS = reporter(MARKS, BLOCKING, RESOURCES)


def launch(playwright: Any) -> Any:
    return playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS, chromium_sandbox=False)


def median(values: list[float]) -> float:
    return statistics.median(values)


@contextmanager
def fresh_page(browser: Any, strays: list[str]) -> Iterator[Any]:
    """A page in a new context (empty HTTP cache); requests off loopback go into `strays`."""
    context = browser.new_context()
    page = context.new_page()
    page.add_init_script(MARKS)

    def watch(request: Any) -> None:
        parts = urlsplit(request.url)
        if parts.scheme in {"http", "https", "ws", "wss"} and parts.hostname not in {
            "127.0.0.1",
            "localhost",
        }:
            strays.append(request.url)

    page.on("request", watch)
    page.on("pageerror", lambda error: print(f"bench: page error: {error}", file=sys.stderr))
    try:
        yield page
    finally:
        context.close()


def load(page: Any, url: str) -> dict[str, Any]:
    """Navigate, wait until the page says it is done, and read its marks and resource timing.
    The wait listens to the console: Playwright's wait_for_function would evaluate its own script
    in the page during the boot (a 40-70 ms task here, the longest timer gap of a bare page)."""
    with page.expect_console_message(
        lambda message: message.text == DONE, timeout=READY_TIMEOUT_MS
    ):
        page.goto(url)
    marks = page.evaluate("window.__bench ?? {}")
    if "error" in marks:
        raise RuntimeError(f"{url} did not start: {marks['error']}")
    done = page.evaluate("window.__benchDone")
    return {
        "done": done,
        **marks,
        "resources": page.evaluate(RESOURCES),
        "blocking": blocking(page, 0, done),
    }


def blocking(page: Any, start: float, end: float) -> dict[str, float]:
    """Long tasks, Total Blocking Time and the longest timer gap between two times of the page's
    clock."""
    return page.evaluate(BLOCKING, [start, end])


def phases(run: dict[str, Any]) -> dict[str, float]:
    """Where the product page's boot time goes, from its marks (ms)."""
    return {
        "page_and_glue": run["pyodide_start"],
        "pyodide_boot": run["pyodide_ready"] - run["pyodide_start"],
        "install_bundle": run["python_installed"] - run["pyodide_ready"],
        "import_reactor": run["plugins"] - run["python_installed"],
        "plugins_load": run["ready"] - run["plugins"],
        "list_bundles": run["listed"] - run["ready"],
    }


PAGES = {
    "bare_pyodide": "/bench/bare.html",
    "bare_worker": "/bench/worker.html",
    "bare_snapshot": "/bench/snapshot.html",
    "host_snapshot": "/bench/host.html",
    "pyscript_print": "/bench/pyscript.html",
    "reactor": "/",
}
# `python -m bench --startup`: reactor against its floors restored from the same snapshot only.
SNAPSHOT_PAGES = ("bare_snapshot", "host_snapshot", "reactor")


def startup(
    command: list[str],
    offline: Offline,
    url: str,
    rounds: int,
    strays: list[str],
    warm_rounds: int | None = None,
    names: tuple[str, ...] = tuple(PAGES),
) -> dict[str, Any]:
    """Cold (first visit) boots in `rounds` rounds, warm (second visit, same profile) ones in the
    first `warm_rounds`; pages (`names` of PAGES) interleaved per round, in an order that rotates,
    after one discarded warm-up round (the server's and the OS's first-read costs). Each load runs
    in its own browser (`command`) with no debugger attached (bench/unattached.py), `url` being
    served through `WithMarks`. Ratios are paired: the median over rounds of each round's ratio, so
    a machine that slows down for a while slows both sides alike; a single cold boot varies by
    +-15 % here, hence many rounds for the goal's ratio."""
    pages = {name: PAGES[name] for name in names}
    runs: dict[str, dict[str, list[Any]]] = {name: {"cold": [], "warm": []} for name in pages}
    warm_rounds = rounds if warm_rounds is None else warm_rounds
    for round in range(rounds + 1):
        order = list(pages.items())
        for name, path in order[round % len(order) :] + order[: round % len(order)]:
            warm = 0 < round <= warm_rounds
            reports = visit(
                command, offline, url + path, warm=warm, timeout_s=READY_TIMEOUT_MS / 1000
            )
            strays.extend(url for report in reports for url in report["offsite"])
            if round:
                runs[name]["cold"].append(reports[0])
                if warm:
                    runs[name]["warm"].append(reports[1])
    kinds = ("cold", "warm") if warm_rounds else ("cold",)
    result: dict[str, Any] = {}
    for name, by in runs.items():
        result[name] = {
            kind: {
                "median_ms": median([r["done"] for r in by[kind]]),
                "runs_ms": [r["done"] for r in by[kind]],
            }
            for kind in kinds
        }
        result[name]["cold"]["blocking"] = {
            key: median([r["blocking"][key] for r in by["cold"]])
            for key in by["cold"][0]["blocking"]
        }
    for kind in kinds:
        split = [phases(r) for r in runs["reactor"][kind]]
        result["reactor"][kind]["phases_ms"] = {k: median([s[k] for s in split]) for k in split[0]}

    def ratio(page: dict[str, Any], base: dict[str, Any]) -> float:
        return page["done"] / base["done"]

    def over(page: dict[str, Any], base: dict[str, Any]) -> float:
        return page["done"] - base["done"]

    def gap_over(page: dict[str, Any], base: dict[str, Any]) -> float:
        return page["blocking"]["longest_timer_gap_ms"] - base["blocking"]["longest_timer_gap_ms"]

    figures = {
        "ratio_vs_bare_pyodide": ("reactor", "bare_pyodide", ratio, "cold"),
        "warm_ratio_vs_bare_pyodide": ("reactor", "bare_pyodide", ratio, "warm"),
        "pyscript_ratio_vs_bare_pyodide": ("pyscript_print", "bare_pyodide", ratio, "cold"),
        "worker_ratio_vs_bare_pyodide": ("bare_worker", "bare_pyodide", ratio, "cold"),
        "ms_over_bare_worker": ("reactor", "bare_worker", over, "cold"),
        "ms_over_bare_snapshot": ("reactor", "bare_snapshot", over, "cold"),
        # The floor of issue 36: bare Pyodide in a worker restored from the same snapshot file.
        "ratio_vs_bare_snapshot": ("reactor", "bare_snapshot", ratio, "cold"),
        "gap_over_bare_snapshot_ms": ("reactor", "bare_snapshot", gap_over, "cold"),
        "gap_over_host_ms": ("reactor", "host_snapshot", gap_over, "cold"),
    }
    for key, (name, base, figure, kind) in figures.items():
        # paired: each round's figure, then their median
        if name in runs and base in runs and kind in kinds:
            result[key] = median(
                [figure(page, other) for page, other in zip(runs[name][kind], runs[base][kind])]
            )
    if "bare_pyodide" in runs:
        result["ratio_of_cold_medians"] = (
            result["reactor"]["cold"]["median_ms"] / result["bare_pyodide"]["cold"]["median_ms"]
        )
    result["rounds"] = rounds
    result["warm_rounds"] = warm_rounds
    return result


def transfer(browser: Any, url: str, counter: Any, strays: list[str]) -> dict[str, Any]:
    """Bytes the server sent (status line, headers, body) for a first and a repeat visit, counted
    at the server (`WireCounter`): the worker's requests included, a cache hit costs nothing. The
    baseline, in the same run: a first visit of the bare worker page (Pyodide booted from its
    files), its requests answered as if they accepted gzip alone (what Pyodide's files cost
    anywhere)."""
    loads = []
    with fresh_page(browser, strays) as page:
        first_paths: set[str] = set()
        for _ in range(2):
            counter.take()
            load(page, url + "/")
            page.wait_for_timeout(300)  # late requests (the views, the AI Tools) land too
            sent = counter.take()
            paths = {e["path"] for e in sent}
            loads.append(
                {
                    "bytes": sum(e["bytes"] for e in sent),
                    "requests": len(sent),
                    "from_cache": len(first_paths - paths),
                    "not_modified": sum(e["status"] == 304 for e in sent),
                    "largest": sorted(
                        ({"path": e["path"], "bytes": e["bytes"]} for e in sent),
                        key=lambda e: -e["bytes"],
                    )[:6],
                }
            )
            first_paths = first_paths or paths
    with fresh_page(browser, strays) as page:
        counter.take()
        counter.encodings = "gzip"
        try:
            load(page, url + "/bench/worker.html")
        finally:
            counter.encodings = None
        sent = counter.take()
    bare = {"bytes": sum(e["bytes"] for e in sent), "requests": len(sent)}
    first, repeat = loads
    return {
        "first": first,
        "repeat": repeat,
        "repeat_share": repeat["bytes"] / first["bytes"],
        "bare_pyodide_gzip": bare,
        "first_vs_bare_gzip": first["bytes"] / bare["bytes"],
    }


# Chromium's network emulation for the slow link: 10 Mbit/s each way, 40 ms of latency.
SLOW_LINK = {
    "offline": False,
    "latency": 40,
    "downloadThroughput": 10e6 / 8,
    "uploadThroughput": 10e6 / 8,
}


def slow_link(browser: Any, url: str, strays: list[str], rounds: int) -> dict[str, Any]:
    """Ready on an emulated slow link (SLOW_LINK): reactor and the bare worker page (Pyodide booted
    from its files), interleaved, `rounds` each, a first visit and then a repeat visit in the same
    profile (its HTTP cache kept); paired ratio reactor / bare on the first visits, and reactor's
    repeat visit / its first."""
    runs: dict[str, list[float]] = {"reactor": [], "bare_worker": []}
    repeats: dict[str, list[float]] = {"reactor": [], "bare_worker": []}
    for round in range(rounds):
        order = [("reactor", "/"), ("bare_worker", "/bench/worker.html")]
        for name, path in order[round % 2 :] + order[: round % 2]:
            with fresh_page(browser, strays) as page:
                cdp = page.context.new_cdp_session(page)
                cdp.send("Network.enable")
                cdp.send("Network.emulateNetworkConditions", SLOW_LINK)
                runs[name].append(load(page, url + path)["done"])
                repeats[name].append(load(page, url + path)["done"])
    return {
        "link": SLOW_LINK,
        **{f"{name}_ms": median(values) for name, values in runs.items()},
        **{f"{name}_repeat_ms": median(values) for name, values in repeats.items()},
        "runs_ms": runs,
        "repeat_runs_ms": repeats,
        "ratio_vs_bare_worker": median(
            [r / b for r, b in zip(runs["reactor"], runs["bare_worker"])]
        ),
        "repeat_vs_first": median([r / f for r, f in zip(repeats["reactor"], runs["reactor"])]),
    }


@contextmanager
def lab_page(browser: Any, url: str, strays: list[str]) -> Iterator[tuple[Any, dict[str, Any]]]:
    """The lab page, ready with its bundles listed, and the marks of its boot."""
    with fresh_page(browser, strays) as page:
        yield page, load(page, url + "/bench/lab.html")


def execute(page: Any, command: str, args: dict[str, Any] | None = None) -> Any:
    return page.evaluate("([c, a]) => window.reactor.executeCommand(c, a)", [command, args or {}])


def calls(
    page: Any,
    names: list[str],
    batches: int,
    extra: dict[str, Any] | None = None,
    warmup_ms: int = 0,
) -> dict[str, Any]:
    """p50/p99 per call of each subject, timed in batches of >= 2 ms after `warmup_ms` of untimed
    calls, and the mean of each one's first calls (see bench/pages/lab.js)."""
    return page.evaluate(
        "([names, options]) => window.bench.calls(names, options)",
        [names, {"batches": batches, "minBatchMs": 2, "warmupMs": warmup_ms, "extra": extra or {}}],
    )


def memory(page: Any) -> dict[str, Any]:
    """The page's JS heap after a full GC (CDP) and Pyodide's wasm memory (from the probe)."""
    cdp = page.context.new_cdp_session(page)
    cdp.send("HeapProfiler.enable")
    cdp.send("HeapProfiler.collectGarbage")
    heap = cdp.send("Runtime.getHeapUsage")
    stats = execute(page, "bench.stats")
    return {"js_heap_used": heap.get("usedSize"), "wasm_bytes": stats["memory"].get("wasm_bytes")}


def load_times(page: Any, boot: dict[str, Any]) -> dict[str, float]:
    """How long this boot of the lab page took to load its plugins (ms)."""
    stats = execute(page, "bench.stats")
    return {
        "load_ms": stats["loaded_at"] - stats["imported_at"],
        "declare_ms": stats["defined_at"] - stats["imported_at"],
        "register_ms": stats["loaded_at"] - stats["defined_at"],
        "ready_ms": boot["ready"],
    }


def scale_point(
    page: Any, boot: dict[str, Any], plugins: int, batches: int, warmup_ms: int
) -> dict[str, Any]:
    """One page with `plugins` synthetic plugins of 10 tools: load, list, call (after `warmup_ms`
    of untimed calls, as the call figures: each point is a fresh page), memory."""
    listing = page.evaluate("(n) => window.bench.list(n)", 9)
    middle = f"synth_{plugins // 2:04d}.t3"
    args = {"id": "x", "count": 1}
    subjects = {"synth": [middle, args], "synthTool": [f"tool:{middle.replace('.', '_')}", args]}
    timed = calls(page, ["synth", "synthTool"], batches, subjects, warmup_ms=warmup_ms)
    call, tool = timed["synth"], timed["synthTool"]
    return {
        "plugins": plugins,
        "tools": listing["tools"],
        "boots": [load_times(page, boot)],
        "list_ms": median(listing["ms"]),
        "list_runs_ms": listing["ms"],
        "list_after_change_ms": median(listing["changedMs"]),
        "list_after_change_runs_ms": listing["changedMs"],
        "list_breakdown_ms": execute(page, "bench.listing"),
        "call_p50_ms": call["p50_ms"],
        "call_tool_p50_ms": tool["p50_ms"],
        "call_tool_p99_ms": tool["p99_ms"],
        "registry_call": execute(page, "bench.callScaling", {"command": middle}),
        "call_p99_ms": call["p99_ms"],
        "memory": memory(page),
    }


def define_plugins(page: Any, count: int) -> dict[str, Any]:
    """`count` plugins of 10 tools defined with reactor.definePlugin in a fresh lab page."""
    return page.evaluate("(n) => window.bench.define(n)", count)
