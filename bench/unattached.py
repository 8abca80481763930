"""Page loads in a Chromium that no debugger is attached to, as a person's browser is.

Playwright drives Chromium over the DevTools protocol: it holds each new worker until it has
attached to it, and it hears every request and console message. Attached, the demo page's
start-up took 50-70 % longer here and its timer gaps were longer (bench/HISTORY.md run 11). So the
start-up loads run in a Chromium started for each load, with a fresh profile (an empty HTTP
cache, as on a first visit) and the switches of Playwright's own browser, minus the debugging
pipe. Before the page, the browser shows one page of another origin: a new Chromium sets up its
omnibox popup's renderer on its first page (~0.2 s of CPU on the other core of two; the page's
ready 1,545 -> 962 ms, its timer gap 46 -> 40 ms, once that was over first); a person's browser
did that long before. The bench server writes the marks script into the page (bench/server.py
`WithMarks`), the page reports on its console, and Chromium's log brings the report here.
Requests that leave loopback fail at a proxy nothing answers at (`Offline`); the page reports
any it made itself.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import socket
import subprocess
import tempfile
import threading
import time
from typing import Any
from urllib.parse import quote

REPORT = "bench: report "
MARKS_QUERY = "bench-marks"  # a page asked for with it gets the marks script (WithMarks)
SETTLE_MS = 1500  # the new browser's own start-up work is over before the page is asked for
# ...and its first page's: bench/pages/launch.html, on another origin (`localhost`) so the page
# timed still meets an empty HTTP cache and no open connection.
IN_USE_MS = 1500
# Switches of Playwright's command line that belong to its session, not to the browser's behaviour.
SESSION_SWITCHES = ("--remote-debugging-pipe", "--no-startup-window", "--user-data-dir=")


def reporter(marks: str, blocking: str, resources: str) -> str:
    """The script written into the page: the bench's marks, and a report on the console once the
    page is done. With `bench-calls` (JSON {names, options}) in its query the report also has the
    lab page's call timings (window.bench.calls) and what held the main thread meanwhile; with
    `bench-warm` the page then visits itself a second time."""
    return (
        marks
        + """
window.__benchReport = async () => {
  const done = window.__benchDone;
  const offsite = performance.getEntriesByType("resource").map((e) => e.name)
    .filter((name) => /^(https?|wss?):/.test(name)
      && !["127.0.0.1", "localhost"].includes(new URL(name).hostname));
  const report = { ...(window.__bench ?? {}), done, blocking: (BLOCKING)([0, done]),
                   resources: RESOURCES, offsite };
  const query = new URLSearchParams(location.search);
  if (query.has("bench-calls") && !report.error) {
    const { names, options } = JSON.parse(query.get("bench-calls"));
    const since = performance.now();
    try {
      report.calls = await window.bench.calls(names, options);
    } catch (error) {
      report.error = `the timed calls failed: ${error?.message ?? error}`;
    }
    report.calls_blocking = (BLOCKING)([since, performance.now()]);
  }
  console.log(REPORT + JSON.stringify(report));
  if (query.has("bench-warm") && !query.has("bench-second")) {
    setTimeout(() => location.assign(`${location.href}&bench-second`));
  }
};
""".replace("BLOCKING", blocking)
        .replace("RESOURCES", resources)
        .replace("REPORT", json.dumps(REPORT))
    )


def switches(browser: Any) -> list[str]:
    """The program and switches Playwright's browser runs with (chrome://version), minus its
    session's."""
    page = browser.new_page()
    try:
        page.goto("chrome://version")
        line = page.inner_text("#command_line").split()  # none of Playwright's switches has a space
    finally:
        page.close()
    return [arg for arg in line if not arg.startswith(SESSION_SWITCHES)]


class Offline:
    """A proxy address nothing answers at (a loopback port bound, never listening): the browser's
    own calls home (update checks, sign-in) fail at once instead of leaving the machine. Chromium
    never proxies loopback, so the pages reach the bench server directly."""

    def __init__(self) -> None:
        self.socket = socket.socket()
        self.socket.bind(("127.0.0.1", 0))
        self.switch = f"--proxy-server=http://127.0.0.1:{self.socket.getsockname()[1]}"

    def close(self) -> None:
        self.socket.close()


def launcher(target: str) -> str:
    """The new browser's start page: after SETTLE_MS it goes to bench/pages/launch.html on
    `localhost`, which goes to `target` (on 127.0.0.1) after IN_USE_MS."""
    origin = "/".join(target.replace("//127.0.0.1:", "//localhost:", 1).split("/", 3)[:3])
    first = f"{origin}/bench/launch.html?wait={IN_USE_MS}#{quote(target, safe='')}"
    return "data:text/html," + quote(
        f"<script>setTimeout(() => location.assign({json.dumps(first)}), {SETTLE_MS})</script>"
    )


def visit(
    command: list[str],
    offline: Offline,
    url: str,
    *,
    warm: bool,
    timeout_s: float,
    calls: dict[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """The reports of a first visit to `url` in a new browser and, with `warm`, of a second one;
    `calls` ({names, options} of lab.js's calls) has the lab page time calls before it reports."""
    query = (
        MARKS_QUERY
        + ("&bench-warm" if warm else "")
        + (f"&bench-calls={quote(json.dumps(calls))}" if calls else "")
    )
    target = url + ("&" if "?" in url else "?") + query
    wanted = 2 if warm else 1
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as profile:
        browser = subprocess.Popen(
            [
                *command,
                f"--user-data-dir={profile}",
                offline.switch,
                "--enable-logging=stderr",
                "--v=0",
                launcher(target),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            errors="replace",
            start_new_session=True,
        )
        lines: queue.Queue[str] = queue.Queue()
        threading.Thread(
            target=lambda: [lines.put(line) for line in browser.stderr], daemon=True
        ).start()  # type: ignore[union-attr]
        reports: list[dict[str, Any]] = []
        errors: list[str] = []
        deadline = time.monotonic() + timeout_s
        try:
            while len(reports) < wanted:
                try:
                    line = lines.get(timeout=max(0.1, deadline - time.monotonic()))
                except queue.Empty:
                    raise RuntimeError(
                        f"{url} did not report within {timeout_s:.0f} s; its console said: "
                        f"{errors[-3:]}"
                    ) from None
                if REPORT in line:
                    text = line[line.index(REPORT) + len(REPORT) :]
                    reports.append(json.loads(text[: text.rindex("}") + 1]))
                elif ":CONSOLE" in line and "Uncaught" in line:
                    errors.append(line.strip())
        finally:
            os.killpg(browser.pid, signal.SIGKILL)
            browser.wait()
    for report in reports:
        if "error" in report:
            raise RuntimeError(f"{url} did not start: {report['error']}")
    return reports
