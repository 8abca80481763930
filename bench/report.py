"""The goals, checked against one run's results, and the table printed at the end."""

from __future__ import annotations

import os
import platform
import sys
from pathlib import Path
from typing import Any

# Tolerances for "as fast as" and "linear": timings on a shared machine wobble by a few percent.
SAME_SPEED = 1.25  # a call with 1,000 plugins may take up to 1.25x the call with 10 tools
LINEAR = 1.25  # per-plugin load time at the largest count may be up to 1.25x that at 100


def machine() -> dict[str, Any]:
    cpu = next(
        (
            line.split(":", 1)[1].strip()
            for line in _read("/proc/cpuinfo").splitlines()
            if line.startswith("model name")
        ),
        platform.processor(),
    )
    memory_kb = next(
        (
            int(line.split()[1])
            for line in _read("/proc/meminfo").splitlines()
            if line.startswith("MemTotal")
        ),
        0,
    )
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory_gb": round(memory_kb / 2**20, 1),
        "os": platform.platform(),
        "python": sys.version.split()[0],
    }


def _read(path: str) -> str:
    try:
        return Path(path).read_text()
    except OSError:
        return ""


def summarize(results: dict[str, Any]) -> list[dict[str, Any]]:
    """Fill the headline figures into `results` and return the goal rows."""
    startup, call, scale = results["startup"], results["call"], results["scale"]
    points = scale["points"]
    base, top = points[0], points[-1]
    hundred = next(
        (p for p in points if p["plugins"] >= 100), points[1] if len(points) > 1 else top
    )
    # Marginal cost per synthetic plugin: the first point's load is mostly the product's own
    # plugins.
    per_plugin = {
        p["plugins"]: (p["load_ms"] - base["load_ms"]) / (p["plugins"] - base["plugins"])
        for p in points
        if p is not base
    }
    scale.update(
        list_ms=top["list_ms"],
        list_after_change_ms=top["list_after_change_ms"],
        load_ms=top["load_ms"],
        load_ms_per_plugin=per_plugin,
        load_growth=per_plugin[top["plugins"]] / per_plugin[hundred["plugins"]],
        # Same page, same moment: the registry with every plugin against a fresh one of 10 tools.
        call_ratio_vs_10_tools=top["registry_call"]["ratio"],
        tool_path_ratio_vs_10_tools=top["registry_call"]["tool_ratio"],
        round_trip_ratio_vs_10_tools=top["call_p50_ms"] / base["call_p50_ms"],
        # Page to page (each its own noise, +-15 % here): callTool with every plugin against the
        # first point.
        tool_call_ratio_vs_base=top["call_tool_p50_ms"] / base["call_tool_p50_ms"],
        memory_before=base["memory"],
        memory_after=top["memory"],
    )
    n = top["plugins"]
    defined = results["define"]
    most = defined[-1]
    hundred_defined = next((d for d in defined if d["plugins"] >= 100), defined[0])
    results["define_growth"] = (
        most["last_tenth_ms_per_plugin"] / hundred_defined["last_tenth_ms_per_plugin"]
    )
    held = startup["reactor"]["cold"]["blocking"]
    return [
        _goal(
            "start-up: tools ready / bare main-thread Pyodide (cold, paired)",
            startup["ratio_vs_bare_pyodide"],
            1.05,
            "x",
        ),
        _goal(
            "start-up: tools ready - bare worker Pyodide (cold, paired)",
            startup["ms_over_bare_worker"],
            150.0,
            "ms",
        ),
        *snapshot_goals(results),
        _goal(
            "main thread: longest 10 ms timer gap, navigation to ready",
            held["longest_timer_gap_ms"],
            50.0,
            "ms",
        ),
        _goal(
            "main thread: long tasks during the timed calls",
            call["blocking_during_calls"]["long_tasks"],
            0,
            "tasks",
        ),
        _goal(
            "call: executeCommand no-op p50, across the thread boundary",
            call["noop_p50_ms"],
            0.1,
            "ms",
        ),
        _goal(
            "call: callTool no-op p50, across the thread boundary",
            call["noop_tool_p50_ms"],
            0.15,
            "ms",
        ),
        _goal(
            f"scale: load per plugin at {n} / at {hundred['plugins']}",
            scale["load_growth"],
            LINEAR,
            "x",
        ),
        _goal(f"scale: list {top['tools']} tools", top["list_ms"], 20.0, "ms"),
        _goal(
            f"scale: call with {n} plugins / with 10 tools",
            scale["call_ratio_vs_10_tools"],
            SAME_SPEED,
            "x",
        ),
        _goal(
            "agent: callTool / executeCommand, decks_get_deck p50",
            call["tool_vs_command"],
            1.5,
            "x",
        ),
        _goal(
            f"agent: callTool's path with {top['tools']} tools / with 10 (one page, interleaved)",
            scale["tool_path_ratio_vs_10_tools"],
            1.1,
            "x",
        ),
        _goal(
            f"agent: define {most['plugins']} plugins x 10 tools, total",
            most["total_ms"] / 1000,
            5.0,
            "s",
        ),
        _goal(
            f"agent: definePlugin per plugin at {most['plugins']} / at "
            f"{hundred_defined['plugins']}",
            results["define_growth"],
            LINEAR,
            "x",
        ),
        _goal(
            "agent: first listener hears the final list after the last definition",
            most["heard_after_last_ms"],
            50.0,
            "ms",
        ),
    ]


def snapshot_goals(results: dict[str, Any]) -> list[dict[str, Any]]:
    """Issue 36's goals: start-up against bare Pyodide restored from the same snapshot, and a
    first visit's bytes and its ready on a slow link against a bare Pyodide boot's, and a repeat
    visit's on that link against the first's."""
    startup, size = results["startup"], results["bytes"]
    goals = [
        _goal(
            "start-up: tools ready / bare worker Pyodide restored from the same snapshot "
            "(cold, paired)",
            startup["ratio_vs_bare_snapshot"],
            1.15,
            "x",
        ),
        _goal(
            "main thread: Total Blocking Time, navigation to ready",
            startup["reactor"]["cold"]["blocking"]["total_blocking_ms"],
            0,
            "ms",
        ),
        _goal(
            "main thread: longest 10 ms timer gap - the bare snapshot worker's (paired)",
            startup["gap_over_bare_snapshot_ms"],
            10.0,
            "ms",
        ),
        _goal(
            "bytes: first visit / a bare Pyodide boot's (gzip), same run",
            size["first_vs_bare_gzip"],
            1.25,
            "x",
        ),
        _goal("bytes: repeat load / first load", size["repeat_share"], 0.05, "share"),
    ]
    if "slow_link" in results:
        goals.append(
            _goal(
                "slow link (10 Mbit/s, 40 ms): ready / the bare worker page's (paired)",
                results["slow_link"]["ratio_vs_bare_worker"],
                1.0,
                "x",
            )
        )
        goals.append(
            _goal(
                "slow link: a repeat visit's ready / the first visit's",
                results["slow_link"]["repeat_vs_first"],
                0.6,
                "x",
            )
        )
    return goals


def snapshot_table(results: dict[str, Any], goals: list[dict[str, Any]]) -> str:
    """`python -m bench --startup` as text."""
    s, b = results["startup"], results["bytes"]
    lines = [
        "start-up, cold, median (ms): "
        + " | ".join(
            f"{name} {s[name]['cold']['median_ms']:.0f}"
            for name in ("bare_snapshot", "host_snapshot", "reactor")
        ),
        "reactor cold phases (ms): "
        + " | ".join(f"{k} {v:.0f}" for k, v in s["reactor"]["cold"]["phases_ms"].items()),
        "longest timer gap, median (ms): "
        + " | ".join(
            f"{name} {s[name]['cold']['blocking']['longest_timer_gap_ms']:.0f}"
            for name in ("bare_snapshot", "host_snapshot", "reactor")
        ),
        f"bytes: first visit {b['first']['bytes']:,} B ({b['first']['requests']} requests) | "
        "bare Pyodide boot (gzip) "
        f"{b['bare_pyodide_gzip']['bytes']:,} B | repeat {b['repeat']['bytes']:,} B",
        "largest: "
        + ", ".join(
            f"{e['path'].rsplit('/', 1)[-1]} {e['bytes']:,}" for e in b["first"]["largest"]
        ),
    ]
    if "slow_link" in results:
        link = results["slow_link"]
        lines.append(
            f"slow link ready (ms), first / repeat visit: reactor {link['reactor_ms']:.0f} / "
            f"{link['reactor_repeat_ms']:.0f} | bare worker {link['bare_worker_ms']:.0f} / "
            f"{link['bare_worker_repeat_ms']:.0f}"
        )
    lines.append("")
    width = max(len(g["goal"]) for g in goals)
    lines += [
        f"{'MET ' if g['met'] else 'MISS'}  {g['goal'].ljust(width)}  {g['value']:.4g} "
        f"{g['unit']} (goal <= {g['limit']:g})"
        for g in goals
    ]
    return "\n".join(lines)


def _goal(name: str, value: float, limit: float, unit: str) -> dict[str, Any]:
    return {"goal": name, "value": value, "limit": limit, "unit": unit, "met": value <= limit}


def table(results: dict[str, Any], goals: list[dict[str, Any]]) -> str:
    """The run as text: the headline figures, then the goals."""
    s, b, c, v, sc = (results[k] for k in ("startup", "bytes", "call", "validation", "scale"))
    phases = s["reactor"]["cold"]["phases_ms"]
    pages = (
        "bare_pyodide",
        "bare_worker",
        "bare_snapshot",
        "host_snapshot",
        "pyscript_print",
        "reactor",
    )
    rows = [
        *(
            (
                f"main thread, {name} (median)",
                "long tasks {long_tasks:.0f} | longest {longest_task_ms:.0f} ms | "
                "TBT {total_blocking_ms:.0f} ms | longest timer gap "
                "{longest_timer_gap_ms:.0f} ms".format(**s[name]["cold"]["blocking"]),
            )
            for name in pages
        ),
        (
            "timer gap: reactor - the demo's markup with the bare snapshot worker, paired",
            f"{s['gap_over_host_ms']:+.0f} ms (what reactor's own work adds to the longest gap)",
        ),
        (
            "start-up, cold, median (ms)",
            f"bare Pyodide {s['bare_pyodide']['cold']['median_ms']:.0f} | "
            f"in a worker {s['bare_worker']['cold']['median_ms']:.0f} | "
            f"worker from the snapshot {s['bare_snapshot']['cold']['median_ms']:.0f} | "
            f"PyScript print {s['pyscript_print']['cold']['median_ms']:.0f} | reactor "
            f"{s['reactor']['cold']['median_ms']:.0f} "
            f"(paired ratios: reactor {s['ratio_vs_bare_pyodide']:.3f}x, PyScript "
            f"{s['pyscript_ratio_vs_bare_pyodide']:.3f}x, "
            f"worker {s['worker_ratio_vs_bare_pyodide']:.3f}x; reactor "
            f"{s['ms_over_bare_worker']:+.0f} ms on the worker, "
            f"{s['ms_over_bare_snapshot']:+.0f} ms on the worker from the snapshot)",
        ),
        (
            "start-up, warm, median (ms)",
            f"bare Pyodide {s['bare_pyodide']['warm']['median_ms']:.0f} | "
            f"in a worker {s['bare_worker']['warm']['median_ms']:.0f} | "
            f"worker from the snapshot {s['bare_snapshot']['warm']['median_ms']:.0f} | "
            f"PyScript print {s['pyscript_print']['warm']['median_ms']:.0f} | reactor "
            f"{s['reactor']['warm']['median_ms']:.0f}",
        ),
        ("reactor cold phases (ms)", " | ".join(f"{k} {v:.0f}" for k, v in phases.items())),
        (
            "bytes first / repeat",
            f"{b['first']['bytes']:,} B ({b['first']['requests']} requests) / "
            f"{b['repeat']['bytes']:,} B ({b['repeat']['from_cache']} from cache, "
            f"{b['repeat']['not_modified']} x 304)",
        ),
        (
            "call p50 / p99 (ms)",
            f"no-op {c['noop_p50_ms']:.4f} / {c['noop_p99_ms']:.4f} (a blank worker's echo "
            f"{c['worker_echo_p50_ms']:.4f}: reactor adds {c['noop_over_echo_ms']:.4f}) | "
            f"decks_get_deck {c['get_deck_p50_ms']:.4f} / {c['get_deck_p99_ms']:.4f} | lumino "
            f"{c['lumino_p50_ms']:.5f} / {c['lumino_p99_ms']:.5f}",
        ),
        (
            "callTool p50 / p99 (ms)",
            f"no-op {c['noop_tool_p50_ms']:.4f} / {c['noop_tool_p99_ms']:.4f} | decks_get_deck "
            f"{c['get_deck_tool_p50_ms']:.4f} / {c['get_deck_tool_p99_ms']:.4f} "
            f"({c['tool_vs_command']:.2f}x the command)",
        ),
        (
            "first 16 calls after ready, mean (ms)",
            f"no-op {c['noop_cold_ms']:.4f} | callTool no-op {c['noop_tool_cold_ms']:.4f} | "
            f"echo {c['worker_echo_cold_ms']:.4f}"
            f" (then {c['warmup_ms']} ms of calls, untimed, before the p50s above)",
        ),
        *(
            (
                f"definePlugin x {d['plugins']}",
                f"total {d['total_ms']:.0f} ms | per plugin first tenth "
                f"{d['first_tenth_ms_per_plugin']:.2f} ms, last tenth "
                f"{d['last_tenth_ms_per_plugin']:.2f} ms | "
                f"heard {d['heard_after_last_ms']:.1f} ms after the last",
            )
            for d in results["define"]
        ),
        (
            "validation in Pyodide (calls/s)",
            f"cached {v['argument_problems_per_s']:,.0f} | compiled each call "
            f"{v['compiled_each_call_per_s']:,.0f} | registry call {v['registry_call_per_s']:,.0f}",
        ),
    ]
    for p in sc["points"]:
        rows.append(
            (
                f"scale {p['plugins']} plugins / {p['tools']} tools",
                f"load {p['load_ms']:.0f} ms | ready {p['ready_ms']:.0f} ms | list "
                f"{p['list_ms']:.2f} ms (after a change {p['list_after_change_ms']:.0f} ms) "
                f"| call p50 {p['call_p50_ms']:.4f} ms, callTool {p['call_tool_p50_ms']:.4f} "
                f"ms (registry {p['registry_call']['ratio']:.2f}x of 10 tools, "
                f"tool path {p['registry_call']['tool_ratio']:.2f}x) | wasm "
                f"{p['memory']['wasm_bytes'] or 0:,} B | JS heap {p['memory']['js_heap_used']:,} B",
            )
        )
    width = max(len(r[0]) for r in rows)
    lines = [f"{name.ljust(width)}  {value}" for name, value in rows]
    lines.append("")
    goal_width = max(len(g["goal"]) for g in goals)
    for g in goals:
        lines.append(
            f"{'MET ' if g['met'] else 'MISS'}  {g['goal'].ljust(goal_width)}  {g['value']:.4g} "
            f"{g['unit']} (goal <= {g['limit']:g})"
        )
    return "\n".join(lines)
