"""The page in each engine a site's visitors use, driven alike: Chromium (Playwright), Firefox and
WebKit (Safari's engine). Playwright's own Firefox and WebKit where they are installed; else
Debian's `firefox-esr`, driven over WebDriver BiDi (no geckodriver), and WebKitGTK through its
`WebKitWebDriver` (W3C WebDriver) under an Xvfb display of its own. reactor's tests
(tests/test_engines.py) and its bench (bench/engines.py) use them; so may a plugin's tests.

Each driver is the few requests of the W3C protocols a test needs — open a page, run a function
in it, click and press keys as a person does, take a screenshot, hear its errors and requests —
written here over
websockets and httpx (the server's own dependencies): Selenium's releases require a `certifi`
newer than some package mirrors hold.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from reactor.server.loopback import free_port

ENGINES = ("chromium", "firefox", "webkit")
SHOTS = Path("test-results") / "engines"  # beside pytest-playwright's own test-results/
VIEWPORT = {"width": 1280, "height": 800}
START_TIMEOUT_S = 60

# A function of one JSON argument, run in the page: its value comes back as JSON text, whatever
# the engine's own way of returning values is.
AS_JSON = "async (text) => JSON.stringify((await ({function})(JSON.parse(text))) ?? null)"

# Firefox with nothing of its own to fetch: no updates, telemetry, remote settings or safe
# browsing lists (the page under test is the only thing it asks for), and the page's console on
# stdout. The remote agent adds its own recommended preferences on top.
FIREFOX_PREFS = {
    "app.update.disabledForTesting": True,
    "browser.region.network.url": "",
    "browser.safebrowsing.blockedURIs.enabled": False,
    "browser.safebrowsing.downloads.enabled": False,
    "browser.safebrowsing.malware.enabled": False,
    "browser.safebrowsing.phishing.enabled": False,
    "browser.search.update": False,
    "browser.shell.checkDefaultBrowser": False,
    "datareporting.healthreport.uploadEnabled": False,
    "datareporting.policy.dataSubmissionEnabled": False,
    "extensions.getAddons.cache.enabled": False,
    "extensions.update.enabled": False,
    "network.captive-portal-service.enabled": False,
    "network.connectivity-service.enabled": False,
    "services.settings.server": "data:,#remote-settings-off",
    "toolkit.telemetry.enabled": False,
    "devtools.console.stdout.content": True,
}


# Keys by Playwright's names, as WebDriver's actions spell them (its "normalized key values").
KEYS = {
    "Backspace": "\ue003",
    "Tab": "\ue004",
    "Enter": "\ue007",
    "Shift": "\ue008",
    "Control": "\ue009",
    "Alt": "\ue00a",
    "Escape": "\ue00c",
    "Space": " ",
    "PageUp": "\ue00e",
    "PageDown": "\ue00f",
    "End": "\ue010",
    "Home": "\ue011",
    "ArrowLeft": "\ue012",
    "ArrowUp": "\ue013",
    "ArrowRight": "\ue014",
    "ArrowDown": "\ue015",
    "Delete": "\ue017",
    "Meta": "\ue03d",
}


def key_actions(combo: str) -> list[dict[str, str]]:
    """WebDriver's key actions for a press of `combo` ("Tab", "Shift+Tab", "a"): the modifiers
    down, the key down and up, the modifiers up."""
    *held, key = combo.split("+") if combo != "+" else ["+"]
    codes = [KEYS.get(name, name) for name in [*held, key]]
    if any(len(code) != 1 for code in codes):
        raise ValueError(f"no such key: {combo!r} (known: {', '.join(KEYS)} or one character)")
    return [{"type": "keyDown", "value": code} for code in codes] + [
        {"type": "keyUp", "value": code} for code in reversed(codes)
    ]


def typed_actions(text: str) -> list[dict[str, str]]:
    """WebDriver's key actions typing `text`, one character after another."""
    return [
        {"type": kind, "value": character} for character in text for kind in ("keyDown", "keyUp")
    ]


FOCUS_IN = """(selector) => {
  const e = document.querySelector(selector), at = document.activeElement;
  return !!e && !!at && (e === at || e.contains(at));
}"""


class EnginePage:
    """One page in one engine. `run(function, arg)` runs a JavaScript function (async or not) of
    one JSON argument in the page and answers its value as JSON; `click(selector)` is a person's
    click and `press(key)` / `type(text)` a person's keys (the engine's own input, so full screen
    and popups count them as a gesture)."""

    engine = ""
    driver = ""  # what drives it, for the test's report

    def __init__(self) -> None:
        self.errors: list[str] = []  # page errors and console errors, where the engine tells
        self.requests: list[str] = []  # the URLs the page asked for, where the engine tells

    def goto(self, url: str) -> None:
        raise NotImplementedError

    def _run_text(self, script: str, text: str) -> str:
        raise NotImplementedError

    def click(self, selector: str) -> None:
        raise NotImplementedError

    def press(self, key: str) -> None:
        """Press `key` ("Tab", "Shift+Tab", "Enter", "Space", "a") where the focus is."""
        self._keys(key_actions(key))

    def type(self, text: str) -> None:
        """Type `text` where the focus is, one key after another."""
        self._keys(typed_actions(text))

    def _keys(self, actions: list[dict[str, str]]) -> None:
        raise NotImplementedError

    def focus_in(self, selector: str) -> bool:
        """Whether the focus is on the first element matching `selector`, or inside it."""
        return bool(self.run(FOCUS_IN, selector))

    def heard(self) -> list[str]:
        """The page's errors and console errors heard so far."""
        return list(self.errors)

    def screenshot(self, name: str) -> Path:
        """A PNG of the viewport in test-results/engines/, to be looked at."""
        SHOTS.mkdir(parents=True, exist_ok=True)
        # What was drawn last is painted (WebKitGTK's screenshot is of the last painted frame).
        self.run("() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)))")
        path = SHOTS / f"{self.engine}-{name}.png"
        path.write_bytes(self._png())
        return path

    def _png(self) -> bytes:
        raise NotImplementedError

    def close(self) -> None:
        pass

    def asked(self) -> list[str]:
        """The URLs the page has asked for so far."""
        return list(self.requests)

    def run(self, function: str, arg: Any = None) -> Any:
        return json.loads(self._run_text(AS_JSON.replace("{function}", function), json.dumps(arg)))

    def until(self, selector: str, *, text: str = "", timeout_ms: int = 30_000) -> None:
        """Wait, in the page, until an element matching `selector` (holding `text`) is there: a
        MutationObserver's, not a poll."""
        found = self.run(UNTIL, [selector, text, timeout_ms])
        if not found:
            said = f" holding {text!r}" if text else ""
            shown = self.run("() => document.body.innerText.slice(0, 600)")
            raise AssertionError(
                f"{self.engine}: no {selector}{said} within {timeout_ms} ms; the page shows:\n"
                f"{shown}"
            )


UNTIL = """([selector, text, timeout]) => new Promise((resolve) => {
  const there = () => [...document.querySelectorAll(selector)]
    .some((e) => !text || e.textContent.includes(text));
  if (there()) { resolve(true); return; }
  const seen = new MutationObserver(() => { if (there()) { seen.disconnect(); resolve(true); } });
  seen.observe(document, {subtree: true, childList: true, characterData: true, attributes: true});
  setTimeout(() => { seen.disconnect(); resolve(there()); }, timeout);
})"""


LOADED = """() => new Promise((resolve) => {
  if (document.readyState === "complete") resolve(true);
  else addEventListener("load", () => resolve(true), {once: true});
})"""


class PlaywrightPage(EnginePage):
    """A Playwright page: Chromium, or Playwright's own Firefox or WebKit."""

    def __init__(self, page: Any, engine: str, driver: str) -> None:
        super().__init__()
        self.page, self.engine, self.driver = page, engine, driver
        page.set_viewport_size(VIEWPORT)
        page.on("pageerror", lambda error: self.errors.append(f"page error: {error}"))
        page.on(
            "console",
            lambda m: m.type == "error" and self.errors.append(f"console error: {m.text}"),
        )
        page.context.on("request", lambda request: self.requests.append(request.url))

    def goto(self, url: str) -> None:
        self.page.goto(url)

    def _run_text(self, script: str, text: str) -> str:
        return str(self.page.evaluate(script, text))

    def click(self, selector: str) -> None:
        self.page.click(selector)

    def press(self, key: str) -> None:
        self.page.keyboard.press(key)

    def type(self, text: str) -> None:
        self.page.keyboard.type(text)

    def _png(self) -> bytes:
        return bytes(self.page.screenshot())


class BidiFirefox:
    """Debian's Firefox, headless, its WebDriver BiDi session on a free loopback port."""

    driver = "Firefox ESR (Debian) over WebDriver BiDi"

    def __init__(self, binary: str) -> None:
        from websockets.sync.client import connect

        self.profile = tempfile.mkdtemp(prefix="reactor-firefox-")
        prefs = "".join(
            f"user_pref({json.dumps(k)}, {json.dumps(v)});\n" for k, v in FIREFOX_PREFS.items()
        )
        Path(self.profile, "user.js").write_text(prefs)
        self.process = subprocess.Popen(
            [
                binary,
                "--headless",
                "--no-remote",
                "--profile",
                self.profile,
                "--remote-debugging-port=0",
                "about:blank",
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.reader: threading.Thread | None = None
        url = self._listening()
        self.stack = contextlib.ExitStack()
        self.socket = self.stack.enter_context(
            connect(f"{url}/session", max_size=None, open_timeout=START_TIMEOUT_S)
        )
        self.lock = threading.Lock()
        self.next_id = 0
        self.listeners: dict[str, list[Any]] = {}
        self.command("session.new", {"capabilities": {}})
        self.command(
            "session.subscribe", {"events": ["log.entryAdded", "network.beforeRequestSent"]}
        )

    def _listening(self) -> str:
        assert self.process.stderr is not None
        said: list[str] = []
        deadline = time.monotonic() + START_TIMEOUT_S
        for line in self.process.stderr:
            said.append(line)
            found = re.search(r"WebDriver BiDi listening on (ws://\S+)", line)
            if found:
                # what Firefox says next goes nowhere, but is read: a full pipe would stall it
                self.reader = threading.Thread(target=self.process.stderr.read, daemon=True)
                self.reader.start()
                return found[1]
            if time.monotonic() > deadline:
                break
        self.close()
        raise RuntimeError("Firefox did not start its WebDriver BiDi: " + "".join(said)[-2000:])

    def command(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """Send one command and read until its answer; events met on the way go to listeners."""
        with self.lock:
            self.next_id += 1
            asked = self.next_id
            self.socket.send(json.dumps({"id": asked, "method": method, "params": params}))
            while True:
                message = json.loads(self.socket.recv())
                if message.get("id") == asked:
                    if message.get("type") == "error":
                        raise RuntimeError(
                            f"{method}: {message['error']}: {message.get('message')}"
                        )
                    return message["result"]  # type: ignore[no-any-return]
                if message.get("type") == "event":
                    params_ = message["params"]
                    context = params_.get("source", {}).get("context") or params_.get("context")
                    for listener in self.listeners.get(context, []):
                        listener(message["method"], params_)

    def new_page(self) -> BidiPage:
        return BidiPage(self)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.command("session.end", {})
        with contextlib.suppress(Exception):
            self.stack.close()
        stop(self.process)
        if self.reader is not None:
            self.reader.join(timeout=10)
        if self.process.stderr is not None:
            self.process.stderr.close()
        shutil.rmtree(self.profile, ignore_errors=True)


class BidiPage(EnginePage):
    """A tab of its own in a user context of its own (cookies and storage apart)."""

    engine = "firefox"

    def __init__(self, browser: BidiFirefox) -> None:
        super().__init__()
        self.browser, self.driver = browser, browser.driver
        self.user_context = browser.command("browser.createUserContext", {})["userContext"]
        made = browser.command(
            "browsingContext.create", {"type": "tab", "userContext": self.user_context}
        )
        self.context = made["context"]
        browser.listeners[self.context] = [self._heard]
        browser.command(
            "browsingContext.setViewport", {"context": self.context, "viewport": VIEWPORT}
        )

    def _heard(self, method: str, params: dict[str, Any]) -> None:
        if method == "log.entryAdded" and params.get("level") == "error":
            self.errors.append(f"{params.get('type')} error: {params.get('text')}")
        elif method == "network.beforeRequestSent":
            self.requests.append(params["request"]["url"])

    def goto(self, url: str) -> None:
        self.browser.command(
            "browsingContext.navigate", {"context": self.context, "url": url, "wait": "complete"}
        )

    def _call(self, script: str, arguments: list[dict[str, Any]]) -> dict[str, Any]:
        answer = self.browser.command(
            "script.callFunction",
            {
                "functionDeclaration": script,
                "arguments": arguments,
                "target": {"context": self.context},
                "awaitPromise": True,
                "userActivation": False,
            },
        )
        if answer["type"] == "exception":
            details = answer["exceptionDetails"]
            raise AssertionError(f"firefox: the page's script failed: {details.get('text')}")
        return answer["result"]  # type: ignore[no-any-return]

    def _run_text(self, script: str, text: str) -> str:
        return str(self._call(script, [{"type": "string", "value": text}])["value"])

    def click(self, selector: str) -> None:
        element = self._call(
            "(s) => document.querySelector(s)", [{"type": "string", "value": selector}]
        )
        if element.get("type") != "node":
            raise AssertionError(f"firefox: nothing matches {selector!r} to click")
        self._call(
            "(e) => e.scrollIntoView({block: 'center'})", [{"sharedId": element["sharedId"]}]
        )
        origin = {"type": "element", "element": {"sharedId": element["sharedId"]}}
        self.browser.command(
            "input.performActions",
            {
                "context": self.context,
                "actions": [
                    {
                        "type": "pointer",
                        "id": "mouse",
                        "actions": [
                            {"type": "pointerMove", "x": 0, "y": 0, "origin": origin},
                            {"type": "pointerDown", "button": 0},
                            {"type": "pointerUp", "button": 0},
                        ],
                    }
                ],
            },
        )

    def _keys(self, actions: list[dict[str, str]]) -> None:
        self.browser.command(
            "input.performActions",
            {
                "context": self.context,
                "actions": [{"type": "key", "id": "keyboard", "actions": actions}],
            },
        )

    def _png(self) -> bytes:
        shot = self.browser.command("browsingContext.captureScreenshot", {"context": self.context})
        return base64.b64decode(shot["data"])

    def close(self) -> None:
        self.browser.listeners.pop(self.context, None)
        with contextlib.suppress(Exception):
            self.browser.command("browser.removeUserContext", {"userContext": self.user_context})


class WebKitDriver:
    """WebKitGTK's WebDriver on a free loopback port, its MiniBrowser on a display of its own."""

    driver = "WebKitGTK (Debian) through WebKitWebDriver, under Xvfb"

    def __init__(self, driver: str, minibrowser: str | None, display: str) -> None:
        self.port = free_port()
        self.minibrowser = minibrowser
        self.process = subprocess.Popen(
            [driver, f"--port={self.port}"],
            env={**os.environ, "DISPLAY": display},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self.http = httpx.Client(base_url=f"http://127.0.0.1:{self.port}", timeout=300)
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            with contextlib.suppress(httpx.TransportError):
                if self.http.get("/status").status_code == 200:
                    break
            if time.monotonic() > deadline or self.process.poll() is not None:
                self.close()
                raise RuntimeError("WebKitWebDriver did not answer")
            time.sleep(0.1)  # a process starting: nothing to wait on but its port

    def new_page(self) -> WebKitPage:
        return WebKitPage(self)

    def close(self) -> None:
        self.http.close()
        stop(self.process)


# WebKitWebDriver tells nothing of the console, and runs no script at document start (Debian's
# WebKitGTK 2.50 refuses WebDriver BiDi's `webSocketUrl`): this records the page's uncaught
# errors, unhandled rejections and console errors from the moment it runs in a new document (its
# value: the document's readyState then; null while the old document is still there).
HEAR = """() => {
  if (window.__reactorLeaving) return null;
  if (!window.__reactorHeard) {
    const heard = window.__reactorHeard = [];
    const text = (v) => {
      if (v instanceof Error) return `${v.name}: ${v.message}`;
      if (typeof v === "string") return v;
      try { return JSON.stringify(v) ?? String(v); } catch { return String(v); }
    };
    addEventListener("error", (e) => heard.push(`page error: ${e.message || text(e.error)}`));
    addEventListener("unhandledrejection",
                     (e) => heard.push(`page error: unhandled rejection: ${text(e.reason)}`));
    const error = console.error;
    console.error = (...args) => {
      heard.push(`console error: ${args.map(text).join(" ")}`);
      error.apply(console, args);
    };
    window.__reactorHeardFrom = document.readyState;
  }
  return window.__reactorHeardFrom;
}"""
HEARD = "() => window.__reactorHeard ?? []"
LEAVING = "() => { window.__reactorLeaving = true; return window.__reactorHeard ?? []; }"


class WebKitPage(EnginePage):
    """A MiniBrowser of its own (one WebDriver session), so nothing carries over between tests.
    WebKit tells WebDriver nothing of the console or the network: `requests` are the page's
    resource timings (the page's own requests, not its workers'), and `heard()` what `HEAR`
    recorded in each document the page opened, from the moment `goto` found it there: not at
    document start, which WebKitWebDriver has no way to reach. `heard_from` says when: mostly
    "loading" or "interactive" (the demo page's modules not run yet), at times "complete"."""

    engine = "webkit"

    def __init__(self, driver: WebKitDriver) -> None:
        super().__init__()
        self.http, self.driver = driver.http, driver.driver
        self.heard_from = ""  # the document's readyState when HEAR began recording in it
        options: dict[str, Any] = {"args": ["--automation"]}
        if driver.minibrowser:
            options["binary"] = driver.minibrowser
        # "none": navigating answers at once, so that HEAR runs as soon as the new document is
        # there; goto waits for the load event itself.
        wanted = {"webkitgtk:browserOptions": options, "pageLoadStrategy": "none"}
        made = self._send("POST", "/session", {"capabilities": {"alwaysMatch": wanted}})
        self.session = f"/session/{made['sessionId']}"
        self._send("POST", f"{self.session}/timeouts", {"script": 300_000})
        self._send("POST", f"{self.session}/window/rect", {**VIEWPORT, "x": 0, "y": 0})

    def _send(self, method: str, path: str, body: Any = None) -> Any:
        answer = self.http.request(method, path, json=body)
        value = answer.json()["value"]
        if answer.status_code != 200:
            raise AssertionError(f"webkit: {path}: {value.get('error')}: {value.get('message')}")
        return value

    def goto(self, url: str) -> None:
        self.errors += self.run(LEAVING)  # what the document being left said
        self._send("POST", f"{self.session}/url", {"url": url})
        deadline = time.monotonic() + START_TIMEOUT_S
        while (state := self._hear()) is None:  # the old document, until the new one is there
            if time.monotonic() > deadline:
                raise AssertionError(f"webkit: {url} did not replace the page it was on")
        self.heard_from = state
        self.run(LOADED)

    def _hear(self) -> str | None:
        """HEAR's answer; None also when the document it ran in was replaced meanwhile."""
        try:
            return self.run(HEAR)  # type: ignore[no-any-return]
        except AssertionError as error:
            if "no such frame" in str(error) or "unload" in str(error):
                return None
            raise

    def heard(self) -> list[str]:
        return [*self.errors, *self.run(HEARD)]

    def _run_text(self, script: str, text: str) -> str:
        # WebDriver's Execute Script waits for a promise it is given.
        body = {"script": f"return ({script})(arguments[0]);", "args": [text]}
        return str(self._send("POST", f"{self.session}/execute/sync", body))

    def asked(self) -> list[str]:
        return self.run(  # type: ignore[no-any-return]
            "() => [location.href, ...performance.getEntriesByType('resource').map((e) => e.name)]"
        )

    def click(self, selector: str) -> None:
        found = self._send(
            "POST", f"{self.session}/element", {"using": "css selector", "value": selector}
        )
        element = next(iter(found.values()))
        self._send("POST", f"{self.session}/element/{element}/click", {})

    def _keys(self, actions: list[dict[str, str]]) -> None:
        key = [{"type": "key", "id": "keyboard", "actions": actions}]
        self._send("POST", f"{self.session}/actions", {"actions": key})

    def _png(self) -> bytes:
        return base64.b64decode(self._send("GET", f"{self.session}/screenshot"))

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._send("DELETE", self.session)


class Xvfb:
    """An X display of its own (Xvfb picks a free number and says which)."""

    def __init__(self, binary: str) -> None:
        read, write = os.pipe()
        self.process = subprocess.Popen(
            [binary, "-displayfd", str(write), "-screen", "0", "1280x1024x24", "-nolisten", "tcp"],
            pass_fds=(write,),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(write)
        with os.fdopen(read) as said:
            number = said.readline().strip()
        if not number:
            self.close()
            raise RuntimeError("Xvfb did not start")
        self.display = f":{number}"

    def close(self) -> None:
        stop(self.process)


def stop(process: subprocess.Popen[Any]) -> None:
    """End a process this module started: asked first, then killed."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def playwright_own(playwright: Any, engine: str) -> bool:
    """Whether Playwright's own build of `engine` is installed (its download needs the internet)."""
    try:
        return Path(getattr(playwright, engine).executable_path).exists()
    except Exception:
        return False


def debian_firefox() -> str | None:
    return shutil.which("firefox-esr") or shutil.which("firefox")


def debian_webkit() -> tuple[str, str | None, str] | None:
    """(WebKitWebDriver, its MiniBrowser if found, Xvfb), or None when one is missing."""
    driver, xvfb = shutil.which("WebKitWebDriver"), shutil.which("Xvfb")
    if not driver or not xvfb:
        return None
    found = sorted(Path("/usr/lib").glob("*/webkit2gtk-4.*/MiniBrowser"))
    return driver, str(found[-1]) if found else None, xvfb


MISSING = {
    "firefox": "no Firefox: ./dev test installs Debian's firefox-esr (as root), or run "
    "`playwright install firefox`",
    "webkit": "no WebKit: ./dev test installs Debian's webkit2gtk-driver and xvfb (as root), or "
    "run `playwright install webkit`",
}


@contextlib.contextmanager
def debian_engine(engine: str) -> Iterator[Any]:
    """The Debian browser of `engine`, started once, with what it needs (Xvfb for WebKit)."""
    if engine == "firefox":
        binary = debian_firefox()
        if binary is None:
            pytest.skip(MISSING[engine])
        browser = BidiFirefox(binary)
        try:
            yield browser
        finally:
            browser.close()
        return
    found = debian_webkit()
    if found is None:
        pytest.skip(MISSING[engine])
    driver, minibrowser, xvfb = found
    display = Xvfb(xvfb)
    try:
        webkit = WebKitDriver(driver, minibrowser, display.display)
        try:
            yield webkit
        finally:
            webkit.close()
    finally:
        display.close()
