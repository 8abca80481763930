"""Plugins defined one at a time, each awaited, in the demo page (its palette, agent-tools list and
chat all listening), as a page that builds itself up does.

    .venv/bin/python -m bench.definitions [--plugins 1000]

Each plugin has 10 commands and 10 tools (JavaScript, `reactor.definePlugin`). Reported: the
total, the mean per plugin of the first ten and of the last hundred, their ratio, and the main
thread's long tasks (over 50 ms, by PerformanceObserver) meanwhile. Goals: the total under 5 s
at 1,000 plugins, the last hundred's per-plugin cost at most 1.25x the first ten's, no long task.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from reactor.server.app import create_app
from reactor.server.loopback import LoopbackServer

from .measure import launch

DEFINE = """async (count) => {
  const long = [];
  new PerformanceObserver((list) => long.push(...list.getEntries().map((e) => e.duration)))
    .observe({ type: "longtask" });
  const each = [];
  const started = performance.now();
  for (let i = 0; i < count; i++) {
    const name = `page_${String(i).padStart(4, "0")}`;
    const began = performance.now();
    await window.reactor.definePlugin({
      name,
      commands: Array.from({ length: 10 }, (_, t) => ({
        id: `${name}.t${t}`, execute: (args) => args })),
      agentTools: { id: name, name, commands: Array.from({ length: 10 }, (_, t) => ({
        name: `${name}_t${t}`, command: `${name}.t${t}`, description: `Tool ${t} of ${name}.`,
        parameters: { type: "object", properties: { id: { type: "string" } } } })) },
    });
    each.push(performance.now() - began);
  }
  const total = performance.now() - started;
  await new Promise((resolve) => setTimeout(resolve, 100));  // the observer's last entries
  const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;
  return { total_ms: total, first_ten_ms: mean(each.slice(0, 10)),
           last_hundred_ms: mean(each.slice(-100)), long_tasks_ms: long };
}"""


def run(plugins: int) -> dict[str, Any]:
    from playwright.sync_api import sync_playwright

    with (
        tempfile.TemporaryDirectory() as data,
        LoopbackServer(create_app(data)) as url,
        sync_playwright() as playwright,
    ):
        browser = launch(playwright)
        page = browser.new_page()
        page.goto(url)
        page.evaluate("window.reactor.ready")
        page.locator(
            "reactor-chat [data-testid=chat-model]"
        ).wait_for()  # every listener is in place
        figures: dict[str, Any] = page.evaluate(DEFINE, plugins)
        browser.close()
    figures = {k: (round(v, 2) if isinstance(v, float) else v) for k, v in figures.items()}
    figures["ratio"] = round(figures["last_hundred_ms"] / figures["first_ten_ms"], 2)
    figures["goals"] = {
        "total_under_5s": figures["total_ms"] < 5000,
        "ratio_at_most_1.25": figures["ratio"] <= 1.25,
        "no_long_task": not figures["long_tasks_ms"],
    }
    figures["plugins"] = plugins
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.definitions", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--plugins", type=int, default=1000)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    figures = run(args.plugins)
    print(json.dumps(figures, indent=2))
    if args.out:
        args.out.write_text(json.dumps(figures, indent=2) + "\n")
    return 0 if all(figures["goals"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
