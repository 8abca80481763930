"""What kept conversations cost (issue: conversations that last), each against a floor measured
in the same run.

    .venv/bin/python -m bench.threads [--loads 10] [--appends 200] [--out FILE]

On screen: a thread of 500 messages with 100 tool cards, drawn at a cold load (a new browser
context: empty HTTP cache) of the demo page signed in as its owner, against the same page of a
person with no thread, in interleaved loads. `ready` is when `reactor.ready` resolves, `on
screen` the first animation frame after the chat drew the conversation (its `data-thread="drawn"`),
both on the page's clock. The goals, p50: on screen at most 150 ms after its own ready (a thread
drawn before ready counts as 0), and at most 150 ms after the empty page's ready of the same round
(so a ready the drawing delays counts too).

Appending: a turn (a message and its item, ~1 KB) appended with `POST /api/threads/{id}/turns`
over HTTP on loopback (one keep-alive client, a uvicorn server), against `GET /auth/me` (the same
sign-in check and a read) in the same interleaved run, on SQLite (the data folder's file, WAL) and
on PostgreSQL (a throwaway cluster with fsync and synchronous commits on). The goal: an append's
p50 at most 5 ms on each.
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

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from postgres import SKIP_REASON, Cluster, postgres_bin  # noqa: E402
from reactor.server.app import create_app  # noqa: E402
from reactor.server.loopback import LoopbackServer  # noqa: E402

from .measure import launch  # noqa: E402

# Stamps ready and the first frame after the conversation is drawn, on the page's clock.
STAMPS = """
window.__stamps = {};
const hook = setInterval(() => {
  if (!window.reactor) return;
  clearInterval(hook);
  window.reactor.ready.then(() => { window.__stamps.ready = performance.now(); });
}, 1);
new MutationObserver((changes, observer) => {
  const chat = document.querySelector("reactor-chat[data-thread=drawn]");
  if (!chat) return;
  observer.disconnect();
  requestAnimationFrame(() => { window.__stamps.onScreen = performance.now(); });
}).observe(document, { subtree: true, attributes: true, attributeFilter: ["data-thread"] });
"""


def bearer(client: httpx.Client, username: str) -> dict[str, str]:
    answer = client.post(
        "/auth/sign-in", json={"username": username, "password": f"{username}-demo"}
    )
    answer.raise_for_status()
    return {"authorization": f"Bearer {answer.json()['token']}"}


def long_thread(client: httpx.Client, headers: dict[str, str]) -> dict[str, Any]:
    """500 messages with 100 tool cards: 100 turns with a tool call, 50 without."""
    answer = (
        "Here is what I found:\n\n- **Onboarding**, five slides\n- *Quarterly review*, six\n\n"
        "Say which one to open."
    )
    made = None
    version = 0
    for turn in range(150):
        user = {"role": "user", "content": f"Message {turn}: list the decks and open one"}
        messages: list[dict[str, Any]] = [user]
        items: list[dict[str, Any]] = [{"type": "message", "role": "user", "text": user["content"]}]
        if turn < 100:
            call_id = f"call_{turn}"
            result = {"ok": True, "result": [{"id": "onboarding", "slides": 5}]}
            messages += [
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [{"id": call_id, "name": "decks_list_decks", "arguments": "{}"}],
                },
                {
                    "role": "tool",
                    "tool_call_id": call_id,
                    "name": "decks_list_decks",
                    "result": result,
                },
            ]
            items.append(
                {
                    "type": "tool_call.finished",
                    "call_id": call_id,
                    "name": "decks_list_decks",
                    "title": "Decks: List Decks",
                    "arguments": "{}",
                    "summary": "Decks (3): ‘Onboarding: your first week’, ‘Quarterly review’.",
                    "result": result,
                }
            )
        messages.append({"role": "assistant", "content": answer})
        items.append({"type": "message", "role": "assistant", "text": answer})
        body = {"messages": messages, "items": items, "tab": "bench", "answering": False}
        if made is None:
            made = client.post("/api/threads", json=body, headers=headers).json()
            version = made["version"]
        else:
            sent = client.post(
                f"/api/threads/{made['id']}/turns",
                json={**body, "version": version},
                headers=headers,
            )
            sent.raise_for_status()
            version = sent.json()["version"]
    assert made is not None
    thread = client.get(f"/api/threads/{made['id']}", headers=headers).json()
    return {
        "messages": len(thread["messages"]),
        "cards": sum(1 for i in thread["items"] if i["type"].startswith("tool_call.")),
        "bytes": thread["size"],
    }


def cold_load(browser: Any, url: str, username: str) -> dict[str, float]:
    """A new context signed in as `username`, the demo page loaded: ready and on screen."""
    context = browser.new_context()
    try:
        signed = context.request.post(
            f"{url}/auth/sign-in", data={"username": username, "password": f"{username}-demo"}
        )
        assert signed.ok, signed.text()
        page = context.new_page()
        page.add_init_script(STAMPS)
        page.goto(url)
        page.wait_for_function(
            "window.__stamps.ready !== undefined && window.__stamps.onScreen !== undefined",
            timeout=120_000,
            polling=100,
        )
        stamps = page.evaluate("window.__stamps")
        drawn = page.locator("reactor-chat ol.chat-log > li").count()
        return {"ready": stamps["ready"], "on_screen": stamps["onScreen"], "items": drawn}
    finally:
        context.close()


def on_screen(url: str, loads: int) -> dict[str, Any]:
    from playwright.sync_api import sync_playwright

    rows: dict[str, list[dict[str, float]]] = {"thread": [], "empty": []}
    with sync_playwright() as playwright:
        browser = launch(playwright)
        cold_load(browser, url, "bob")  # warms the server's caches up; not counted
        for number in range(loads):
            order = [("thread", "ada"), ("empty", "bob")]
            for kind, username in order if number % 2 else order[::-1]:
                rows[kind].append(cold_load(browser, url, username))
        browser.close()

    def figures(loaded: list[dict[str, float]]) -> dict[str, Any]:
        after = [max(0.0, r["on_screen"] - r["ready"]) for r in loaded]
        return {
            "ready_ms": round(statistics.median(r["ready"] for r in loaded), 1),
            "on_screen_ms": round(statistics.median(r["on_screen"] for r in loaded), 1),
            "on_screen_after_ready_ms": round(statistics.median(after), 1),
            "on_screen_after_ready_max_ms": round(max(after), 1),
            "items_drawn": loaded[0]["items"],
        }

    report = {kind: figures(loaded) for kind, loaded in rows.items()}
    pairs = list(zip(rows["thread"], rows["empty"]))
    report["ready_thread_over_empty"] = round(
        statistics.median(t["ready"] / e["ready"] for t, e in pairs), 3
    )
    # The thread on screen against the empty page's ready, paired: what drawing it costs a
    # person, a later ready included.
    report["on_screen_after_empty_ready_ms"] = round(
        statistics.median(max(0.0, t["on_screen"] - e["ready"]) for t, e in pairs), 1
    )
    return report


def appends(url: str, count: int) -> dict[str, Any]:
    """Interleaved: an append, then the no-op read; p50 and p95 of each, in ms."""
    with httpx.Client(base_url=url, timeout=30) as client:
        headers = bearer(client, "ada")
        turn = {
            "messages": [{"role": "user", "content": "x" * 400}],
            "items": [{"type": "message", "role": "user", "text": "x" * 400}],
            "tab": "bench",
            "answering": False,
        }
        made = client.post("/api/threads", json=turn, headers=headers).json()
        version, timed = made["version"], {"append": [], "floor": []}
        for number in range(count + 20):  # the first 20 warm up and are not counted
            started = time.perf_counter()
            answer = client.post(
                f"/api/threads/{made['id']}/turns",
                json={**turn, "version": version},
                headers=headers,
            )
            took = time.perf_counter() - started
            answer.raise_for_status()
            version = answer.json()["version"]
            started = time.perf_counter()
            client.get("/auth/me", headers=headers).raise_for_status()
            floor = time.perf_counter() - started
            if number >= 20:
                timed["append"].append(took * 1000)
                timed["floor"].append(floor * 1000)

    def spread(values: list[float]) -> dict[str, float]:
        ordered = sorted(values)
        return {
            "p50": round(statistics.median(values), 2),
            "p95": round(ordered[round(0.95 * (len(ordered) - 1))], 2),
        }

    report = {name: spread(values) for name, values in timed.items()}
    report["added_p50_ms"] = round(report["append"]["p50"] - report["floor"]["p50"], 2)
    return report


class DurableCluster(Cluster):
    """The tests' throwaway cluster, but writing as a production one does: fsync and synchronous
    commits on."""

    def start(self) -> None:
        data = self.folder / "data"
        self._run("initdb", "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8",
                  "--locale=C.UTF-8")  # fmt: skip
        options = (
            f"-c listen_addresses=127.0.0.1 -p {self.port} -c "
            f"unix_socket_directories={self.folder} -c max_connections=100"
        )
        self._run(
            "pg_ctl", "-D", str(data), "-l", str(self.folder / "log"), "-o", options, "-w", "start"
        )


def run(loads: int, count: int) -> dict[str, Any]:
    report: dict[str, Any] = {"plan": {"loads": loads, "appends": count}}
    with (
        tempfile.TemporaryDirectory() as data,
        LoopbackServer(create_app(data, seed_demo=True)) as url,
    ):
        with httpx.Client(base_url=url, timeout=60) as client:
            report["thread"] = long_thread(client, bearer(client, "ada"))
        report["screen"] = on_screen(url, loads)
        report["sqlite"] = appends(url, count)
    bin_dir = postgres_bin()
    if bin_dir is None:
        report["postgresql"] = {"skipped": SKIP_REASON}
    else:
        cluster = DurableCluster(bin_dir)
        cluster.start()
        try:
            with (
                tempfile.TemporaryDirectory() as data,
                LoopbackServer(
                    create_app(data, seed_demo=True, database=cluster.database())
                ) as url,
            ):
                report["postgresql"] = appends(url, count)
        finally:
            cluster.stop()
    screen = report["screen"]["thread"]["on_screen_after_ready_ms"]
    paired = report["screen"]["on_screen_after_empty_ready_ms"]
    report["goals"] = {
        "on_screen_after_ready_ms": {"value": screen, "limit": 150.0, "met": screen <= 150.0},
        "on_screen_after_empty_ready_ms": {
            "value": paired,
            "limit": 150.0,
            "met": paired <= 150.0,
        },
        **{
            f"append_p50_ms_{kind}": {
                "value": report[kind]["append"]["p50"],
                "limit": 5.0,
                "met": report[kind]["append"]["p50"] <= 5.0,
            }
            for kind in ("sqlite", "postgresql")
            if "append" in report[kind]
        },
    }
    return report


def main() -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.threads", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--loads", type=int, default=10, help="cold loads of each page (10)")
    parser.add_argument("--appends", type=int, default=200, help="timed appends per database")
    parser.add_argument("--out", type=Path, help="also write the figures as JSON here")
    args = parser.parse_args()
    report = run(args.loads, args.appends)
    print(json.dumps(report, indent=2))
    if args.out:
        args.out.write_text(json.dumps(report, indent=2) + "\n")
    return 0 if all(goal["met"] for goal in report["goals"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
