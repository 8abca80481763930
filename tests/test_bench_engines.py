"""bench.engines' own plumbing, on CPython: the page it times loads its probe under the page's
own Content-Security-Policy, and its report says each engine against Chromium and the goal.
The measurements run with `python -m bench.engines` (each engine, about 3 minutes)."""

from __future__ import annotations

import sys
from pathlib import Path

from conftest import AppClient

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.engines import PROBE_PATH, summary, table, with_probe  # noqa: E402

from reactor.server.app import create_app  # noqa: E402


def test_the_timed_page_loads_the_probe_from_its_own_origin_first(tmp_path: Path) -> None:
    client = AppClient(with_probe(create_app(tmp_path, seed_demo=False)))
    page = client.get("/", headers={"accept-encoding": "gzip"})
    assert page.status_code == 200 and "content-encoding" not in page.headers
    head = page.text.split("<head>", 1)[1]
    assert head.startswith(f'<script src="{PROBE_PATH}"></script>')
    assert "script-src 'self'" in page.headers["content-security-policy"]
    probe = client.get(PROBE_PATH)
    assert probe.headers["content-type"] == "text/javascript"
    assert 'callTool("decks_get_deck"' in probe.text
    assert client.get("/app/boot.json").json()["plugins"], "the rest is the product's own"


def test_the_report_puts_each_engine_against_chromium_and_says_whether_the_goal_is_met() -> None:
    def run(ready: float, first: float) -> dict[str, float]:
        return {"ready_ms": ready, "first_call_ms": first, "second_call_ms": 1.0}

    result = summary(
        {
            "chromium": [run(1000, 100), run(1200, 300), run(1100, 200)],
            "firefox": [],
            "webkit": [run(2000, 900), run(2200, 1100), run(2100, 1000)],
        },
        {"chromium": "Playwright's Chromium", "webkit": "WebKitGTK"},
        {"firefox": "no Firefox: ./dev test installs Debian's firefox-esr (as root)"},
        3,
    )
    webkit = result["engines"]["webkit"]
    # rounds paired: 900/100, 1100/300, 1000/200
    assert webkit["first_call_ms"] == {
        "median": 1000,
        "min": 900,
        "max": 1100,
        "x_chromium": 5.0,
        "paired_x_chromium": 5.0,
    }
    assert result["goal"] == {"webkit_first_call_x_chromium": 5.0, "met": True}
    said = table(result)
    assert "webkit" in said and "5.0x" in said and "goal: WebKit's first call" in said
    assert "firefox    not measured: no Firefox" in said
