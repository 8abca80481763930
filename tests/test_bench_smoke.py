"""The bench's own plumbing, on CPython: its page plugins load, its server ships them to the page.
The measurements themselves run with `python -m bench --quick` (real Chromium, about 2 minutes);
the load through the deployed site (bench/proxy.py) runs here for a second a load."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import httpx
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import reactor_bench  # noqa: E402
from bench.server import WithMarks, bench_app  # noqa: E402
from bench.unattached import MARKS_QUERY, launcher  # noqa: E402

from reactor import MemoryPage, Reactor, agent_tool_bundles  # noqa: E402


def test_synthetic_plugins_load_with_ten_validated_tools_each() -> None:
    reactor = Reactor(services={"page": MemoryPage()})
    report = reactor.load_plugins(
        [reactor_bench.PROBE_PLUGIN, reactor_bench.SYNTH_0000, reactor_bench.SYNTH_0001]
    )
    assert report.failed == {} and len(agent_tool_bundles(reactor)) == 3
    assert reactor.commands.execute("synth_0001.t9", {"id": "x", "count": 2}).result() == {
        "id": "x",
        "count": 2,
    }
    assert reactor.commands.execute("bench.noop", {"n": 1}).result() is None
    assert reactor_bench.validation(calls=20)["cache_misses"] == 0
    scaling = reactor_bench.call_scaling("synth_0001.t3", rounds=2, calls=5)
    assert scaling["ratio"] > 0 and scaling["tool_ratio"] > 0


def get(app: Any, *paths: str) -> list[httpx.Response]:
    async def fetch() -> list[httpx.Response]:
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1"
        ) as client:
            return [await client.get(path) for path in paths]

    return asyncio.run(fetch())


def test_the_lab_server_ships_the_bench_package_and_lists_its_plugins(tmp_path: Path) -> None:
    app = bench_app(tmp_path, lab=True, synthetic=2)
    boot, page = get(app, "/app/boot.json", "/bench/lab.html")
    archive = next(
        url for url in boot.json()["python"]["bundles"] if url.startswith("/bench/python-")
    )
    assert get(app, archive)[0].status_code == 200 and page.status_code == 200
    specs = [p["plugin"] for p in boot.json()["plugins"]]
    assert specs[-3:] == [
        "reactor_bench:PROBE_PLUGIN",
        "reactor_bench:SYNTH_0000",
        "reactor_bench:SYNTH_0001",
    ]


def test_the_product_server_serves_the_baseline_pages_and_the_product_boot(tmp_path: Path) -> None:
    bare, lab, boot = get(
        bench_app(tmp_path), "/bench/bare.html", "/bench/lab.html", "/app/boot.json"
    )
    assert "loadPyodide" in bare.text and lab.status_code == 404
    assert not any(url.startswith("/bench/") for url in boot.json()["python"]["bundles"])


def test_the_host_baseline_is_the_demo_markup_with_a_bare_worker_and_none_of_reactors_scripts(
    tmp_path: Path,
) -> None:
    host, demo = get(bench_app(tmp_path), "/bench/host.html", "/")
    assert (
        host.status_code == 200
        and '<reactor-chat id="chat"' in host.text
        and "/web/reactor.css" in host.text
    )
    assert "_loadSnapshot" in host.text and "{{" not in host.text
    assert (
        "/web/reactor.js" in demo.text
        and "/web/reactor.js" not in host.text
        and "early-worker" not in host.text
    )


def test_a_start_up_page_asked_for_with_marks_gets_them_under_its_content_security_policy(
    tmp_path: Path,
) -> None:
    script = "window.__marked = true;"
    app = WithMarks(bench_app(tmp_path), script, MARKS_QUERY)
    marked, plain, host, boot = get(
        app,
        f"/?{MARKS_QUERY}",
        "/",
        f"/bench/host.html?{MARKS_QUERY}",
        f"/app/boot.json?{MARKS_QUERY}",
    )
    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    # before all else
    assert marked.text.index("<head>") + len("<head>") == marked.text.index(
        f"<script>{script}</script>"
    )
    assert f"script-src 'sha256-{digest}' 'self'" in marked.headers["content-security-policy"]
    assert int(marked.headers["content-length"]) == len(marked.content)
    assert script not in plain.text and digest not in plain.headers["content-security-policy"]
    assert host.text.count(script) == 1 and boot.json()["runtime"]["ready"]  # JSON passes unmarked


def test_a_new_browser_shows_a_page_of_another_origin_before_the_page_timed(tmp_path: Path) -> None:
    target = f"http://127.0.0.1:8123/?{MARKS_QUERY}&bench-calls=%7B%22names%22%3A%5B%5D%7D"
    (first,) = re.findall(r'location.assign\("([^"]+)"\)', unquote(launcher(target)))
    parts = urlsplit(first)
    assert (parts.hostname, parts.port, parts.path) == ("localhost", 8123, "/bench/launch.html")
    assert unquote(parts.fragment) == target  # launch.html goes on to it, and only to it
    for app in bench_app(tmp_path / "product"), bench_app(tmp_path / "lab", lab=True):
        (page,) = get(app, "/bench/launch.html")
        assert page.status_code == 200 and 'target.hostname === "127.0.0.1"' in page.text


@pytest.mark.browser
def test_the_proxy_bench_loads_the_deployed_site_and_writes_every_figure(tmp_path):
    from bench import proxy

    out = tmp_path / "proxy-results.json"
    brief = ["--seconds", "1", "--rounds", "1", "--clients", "3", "--list-kb", "4"]
    # as a person runs it: a process of its own (Playwright's sync API refuses to run where the
    # suite's browser fixtures already run an event loop)
    ran = subprocess.run(
        [sys.executable, "-m", "bench.proxy", *brief, "--out", str(out)],
        cwd=Path(__file__).resolve().parents[1],
        capture_output=True,
        text=True,
        timeout=600,
    )
    if ran.returncode == 2:
        pytest.skip(ran.stderr.strip())  # no nginx or no PostgreSQL here
    assert ran.returncode == 0, ran.stderr[-3000:]
    results = json.loads(out.read_text())
    for load in proxy.LOADS:
        figures = results["loads"][load]
        assert figures["ok"] == figures["requests"] > 0, (load, figures["statuses"])
        assert figures["p50_ms"] <= figures["p95_ms"] and figures["cpu_ms_per_answer"]["reactor"]
    # a browser's list, asked again with its ETag through nginx, is a 304 each time
    assert results["loads"]["decks"]["statuses"] == {"304": results["loads"]["decks"]["ok"]}
    assert set(results["met"]) == set(proxy.GOALS) and results["list_bytes"] >= 4 * 1024
