"""What the site's model behind the server costs a streamed answer, against the page talking to
the same provider directly, in one run.

    .venv/bin/python -m bench.gateway [--rounds 15] [--deltas 20] [--gap-ms 10]

One stand-in provider on loopback (reactor/testing/standins.py, OpenAI's streaming wire format)
writes each text delta at a time it records (`time.time()`), `--gap-ms` apart. One reactor server
holds it as the site's model (reactor/server/gateway/) and lets keys be typed too. One demo page
in Chromium asks, in interleaved rounds, through its chat (`reactor.chat.send`, the widget drawing
the reply): the site's assistant (page → server → provider) and the same provider configured in
*Model settings* (page → provider). A MutationObserver stamps each delta when its words are in
the reply's element (`performance.timeOrigin + now()`, the same clock). Reported, p50 and p95:
the provider's first text to the page's screen, and each later delta, for both paths; the goals
are on the gateway's addition (p50 of gateway minus p50 of direct): <= 5 ms to first text,
<= 1 ms per delta; and first text on screen within 50 ms of the provider sending it.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

from reactor.server.app import create_app
from reactor.server.gateway.config import AssistantConfig
from reactor.server.loopback import LoopbackServer
from reactor.testing.standins import StandIn, text

from .measure import launch

KEY = "sk-bench-gateway"
GOALS = {"first_text_added_ms": 5.0, "delta_added_ms": 1.0, "first_text_on_screen_ms": 50.0}

# Sends one message through the chat and stamps each delta as its words appear in the reply.
ASK = """async ([words, deltas]) => {
  const log = document.querySelector("reactor-chat ol.chat-log");
  const stamps = [];
  const observer = new MutationObserver(() => {
    const reply = log.querySelector("[data-streaming=true]") ?? log.lastElementChild;
    const arrived = (reply?.textContent.match(/\\bw\\d+\\b/g) ?? []).length;
    while (stamps.length < arrived) stamps.push(performance.timeOrigin + performance.now());
  });
  observer.observe(log, { childList: true, subtree: true, characterData: true });
  const outcome = await window.reactor.chat.send(words);
  observer.disconnect();
  if (outcome.status !== "done") {
    throw new Error(`the reply ended ${outcome.status}: ${outcome.error}`);
  }
  return stamps.slice(0, deltas);
}"""


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def summary(values: list[float]) -> dict[str, float]:
    return {
        "p50": round(statistics.median(values), 2),
        "p95": round(percentile(values, 0.95), 2),
        "n": len(values),
    }


def run(rounds: int, deltas: int, gap_ms: float) -> dict[str, Any]:
    from playwright.sync_api import sync_playwright

    stand_in = StandIn("openai", KEY, cors=True)
    stand_in.delta_gap = gap_ms / 1000
    config = AssistantConfig(
        provider="openai",
        model="bench-model",
        api_key=KEY,
        base_url=stand_in.url,
        anonymous=True,
        limit_rpm=10_000,
    )
    paths = {"direct": {"first": [], "later": []}, "gateway": {"first": [], "later": []}}
    with (
        tempfile.TemporaryDirectory() as data,
        LoopbackServer(create_app(data, assistant=config, browser_keys=True)) as url,
    ):
        with sync_playwright() as playwright:
            browser = launch(playwright)
            page = browser.new_page()
            page.goto(url)
            page.evaluate("window.reactor.ready")
            page.locator("reactor-chat [data-testid=chat-model]").wait_for()
            settings = {
                "direct": {
                    "provider": "openai",
                    "baseUrl": stand_in.url,
                    "model": "bench-model",
                    "apiKey": KEY,
                },
                "gateway": {"provider": "site"},
            }
            for number in range(rounds + 1):  # round 0 warms both paths up and is not counted
                order = ["direct", "gateway"] if number % 2 else ["gateway", "direct"]
                for path in order:
                    # a refusal rejects, and the evaluation raises with its sentence
                    page.evaluate("(s) => window.reactor.chat.configure(s)", settings[path])
                    stand_in.answers = [text(" ".join(f"w{i}" for i in range(deltas)))]
                    stand_in.sent_at.clear()
                    stamps = page.evaluate(ASK, [f"round {number}", deltas])
                    sent = [t * 1000 for t in stand_in.sent_at]
                    if number == 0:
                        continue
                    paths[path]["first"].append(stamps[0] - sent[0])
                    paths[path]["later"] += [seen - at for seen, at in zip(stamps[1:], sent[1:])]
            browser.close()
    stand_in.stop()
    report = {
        path: {name: summary(values) for name, values in figures.items()}
        for path, figures in paths.items()
    }
    report["added"] = {
        "first_text_added_ms": round(
            report["gateway"]["first"]["p50"] - report["direct"]["first"]["p50"], 2
        ),
        "delta_added_ms": round(
            report["gateway"]["later"]["p50"] - report["direct"]["later"]["p50"], 2
        ),
        "first_text_on_screen_ms": report["gateway"]["first"]["p50"],
    }
    report["goals"] = {
        name: {"limit": limit, "met": report["added"][name] <= limit}
        for name, limit in GOALS.items()
    }
    report["plan"] = {"rounds": rounds, "deltas": deltas, "gap_ms": gap_ms}
    return report


def main() -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.gateway", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--rounds", type=int, default=15, help="counted rounds of each path (15)")
    parser.add_argument("--deltas", type=int, default=20, help="text deltas per answer (20)")
    parser.add_argument(
        "--gap-ms", type=float, default=10.0, help="the provider's pause between deltas (10)"
    )
    parser.add_argument("--out", type=Path, help="also write the figures as JSON here")
    args = parser.parse_args()
    report = run(args.rounds, args.deltas, args.gap_ms)
    print(
        f"{'path':<10}{'first text p50':>16}{'p95':>8}{'later deltas p50':>19}{'p95':>8}   "
        "(ms after the provider sent)"
    )
    for path in ("direct", "gateway"):
        first, later = report[path]["first"], report[path]["later"]
        print(f"{path:<10}{first['p50']:>16}{first['p95']:>8}{later['p50']:>19}{later['p95']:>8}")
    for name, goal in report["goals"].items():
        print(
            f"{name}: {report['added'][name]} ms (goal <= {goal['limit']} ms) "
            f"{'met' if goal['met'] else 'NOT met'}"
        )
    if args.out:
        args.out.write_text(json.dumps(report, indent=2) + "\n")
    return 0 if all(goal["met"] for goal in report["goals"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
