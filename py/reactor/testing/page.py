"""A reactor page in a test, driven as a person or the page's own code would drive it.

Every value crosses the browser boundary as JSON text, both ways: what a test passes must be
JSON (anything else fails the test naming the value), and what comes back is what
`JSON.stringify` made of the page's answer — never a pickled or proxied object.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import urlsplit

import pytest

from ..errors import ReactorError
from .server import TestUser
from .standins import StandIn

# Runs a window.reactor call in the page and answers JSON text: {"ok", "value"} or
# {"ok": false, "name", "message"}.
CALL = """async ([method, args]) => {
  try {
    const value = await window.reactor[method](...JSON.parse(args));
    return JSON.stringify({ ok: true, value: value ?? null });
  } catch (error) {
    return JSON.stringify({
      ok: false, name: error.name, message: error.message, problems: error.problems ?? null,
    });
  }
}"""

AT_LOAD = "reactor.testing at load: "  # the console line execute_at_load's script answers with
AT_LOAD_SCRIPT = """addEventListener("DOMContentLoaded", async () => {
  const ready = await window.reactor.ready, out = [];
  for (const [id, args] of CALLS) {
    out.push(await window.reactor.executeCommand(id, args).catch((e) => ({ error: e.message })));
  }
  console.log(MARK + JSON.stringify({ ready, out }));
});"""


class Served(Protocol):
    """A reactor server as a page needs it: where it serves (ReactorServer, or the test's own)."""

    url: str


class PageCallError(ReactorError, AssertionError):
    """A window.reactor call the page refused: `name` is the error's class
    (InvalidArgumentsError…)."""

    def __init__(self, call: str, name: str, message: str, problems: Any = None) -> None:
        super().__init__(f"{call} failed: {name}: {message}")
        self.name, self.message, self.problems = name, message, problems


@dataclass
class Exchange:
    """One message of a chat and what the person then saw: the tool cards' text, the replies,
    errors."""

    message: str
    cards: list[str] = field(default_factory=list)
    replies: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    @property
    def reply(self) -> str:
        return self.replies[-1] if self.replies else ""


class ReactorPage:
    """A Playwright page of `server`, ready once `open()` has waited for `reactor.ready`.

    The fixture fails the test on any request off the server's origin (and those of
    `allow_origin`), any page error and any console error not expected with
    `expect_console_error(pattern)`; `open()` fails it at once when a plugin failed to load,
    unless `expect_load_failure(pattern)`. `server` is anything with the `url` it serves at."""

    def __init__(self, page: Any, server: Served) -> None:
        self.page, self.server = page, server
        self.ready: dict[str, Any] = {}  # what reactor.ready resolved to: {"loaded", "failures"}
        self.strays: list[str] = []
        self.errors: list[str] = []
        self.allowed: list[re.Pattern[str]] = []
        self.allowed_failures: list[re.Pattern[str]] = []  # load failures the test expects
        self.origins: set[str] = set()  # where the page may send requests: host:port
        self._strays_at: re.Pattern[str] | None = None
        page.on("pageerror", lambda error: self.errors.append(f"page error: {error}"))
        page.on(
            "console",
            lambda message: (
                message.type == "error" and self.errors.append(f"console error: {message.text}")
            ),
        )
        self.allow_origin(server.url)

    def open(self, path: str = "/", *, agent_plugins: list[str] | None = None) -> ReactorPage:
        """Go to `path` of the server (or a whole URL: a page that embeds reactor) and wait until
        reactor is ready (plugins loaded, tools listed); `ready` then holds what it resolved to.

        `agent_plugins` names the plugins whose tools the page's chat may call (its agent spec;
        by default the server's agent.json)."""
        if agent_plugins is not None:
            agent = {"name": "Test agent", "instructions": "", "plugins": list(agent_plugins)}
            self.page.add_init_script(
                f"window.reactorConfig = {{...(window.reactorConfig ?? {{}}), agent: "
                f"{json.dumps(agent)}}};"
            )
        self.page.goto(path if urlsplit(path).scheme else self.server.url + path)
        self.ready = self.page.evaluate("window.reactor.ready")
        self._check_loaded()
        return self

    def execute_at_load(self, calls: list[tuple[str, Any]], path: str = "/") -> list[Any]:
        """Open `path` and run `calls` ((command id, arguments) pairs) as the page's own code
        would once reactor is ready: with no user gesture, which Playwright's calls would count
        as (browsers grant full screen and popups only after one). Each call's value, or
        {"error": message}."""
        try:
            text = json.dumps(calls, allow_nan=False)
        except (TypeError, ValueError) as error:
            pytest.fail(f"execute_at_load: the calls must be JSON ({error}): {calls!r}")
        script = AT_LOAD_SCRIPT.replace("MARK", json.dumps(AT_LOAD)).replace("CALLS", text)
        self.page.add_init_script(script)
        # Heard on the console, not by a locator: a locator's polling in the page is a gesture.
        said = lambda message: message.text.startswith(AT_LOAD)  # noqa: E731
        with self.page.expect_console_message(said, timeout=60_000) as message:
            self.page.goto(path if urlsplit(path).scheme else self.server.url + path)
        answer = json.loads(message.value.text.removeprefix(AT_LOAD))
        self.ready = answer["ready"]
        self._check_loaded()
        return answer["out"]  # type: ignore[no-any-return]

    def expect_load_failure(self, pattern: str) -> ReactorPage:
        """A plugin failing to load with a sentence matching `pattern` (a regular expression)
        does not fail the test at `open()`; it is still in `ready["failures"]`."""
        self.allowed_failures.append(re.compile(pattern))
        return self

    def _check_loaded(self) -> None:
        """A plugin that failed to load fails the test now, with the load failure's own sentence:
        every later wait for its tools would only time out."""
        failed = [
            failure
            for failure in self.ready.get("failures", [])
            if not any(pattern.search(failure) for pattern in self.allowed_failures)
        ]
        if failed:
            pytest.fail(
                "A plugin failed to load in the page:\n" + "\n".join(f"  - {f}" for f in failed),
                pytrace=False,
            )

    def allow_origin(self, url: str) -> ReactorPage:
        """Let the page send requests to `url`'s origin too (the site that embeds reactor)."""
        self.origins.add(urlsplit(url).netloc)
        # Only the requests off every allowed origin are routed: a routed request waits for this
        # thread, which Playwright's sync API lends only while the test is inside one of its calls
        # (a test waiting on a threading.Event would hold each of the page's requests meanwhile).
        if self._strays_at is not None:
            self.page.context.unroute(self._strays_at, self._stray)
        allowed = "|".join(re.escape(origin) for origin in sorted(self.origins))
        self._strays_at = re.compile(rf"^(?:https?|wss?)://(?!(?:{allowed})(?:[/?#]|$))")
        self.page.context.route(self._strays_at, self._stray)
        return self

    def _stray(self, route: Any) -> None:
        self.strays.append(route.request.url)
        route.abort()

    def sign_in(self, user: TestUser | str, password: str = "") -> ReactorPage:
        """Sign in with the form in the page's header, as a person does."""
        name = user.name if isinstance(user, TestUser) else user
        password = user.password if isinstance(user, TestUser) else password or f"{user}-demo"
        self.page.fill("#session input[name=username]", name)
        self.page.fill("#session input[name=password]", password)
        self.page.click("#session button[type=submit]")
        self.page.get_by_test_id("signed-in-as").wait_for()
        return self

    def call_tool(self, name: str, args: Any = None) -> dict[str, Any]:
        """`reactor.callTool(name, args)`: the envelope, {"ok": true, "result"} or {"ok": false,
        "error"}."""
        return self._call("callTool", f"call_tool({name!r})", name, {} if args is None else args)  # type: ignore[no-any-return]

    def execute(self, command: str, args: Any = None) -> Any:
        """`reactor.executeCommand(id, args)`: what the handler returned; PageCallError when
        refused."""
        return self._call(
            "executeCommand", f"execute({command!r})", command, {} if args is None else args
        )

    def bundles(self) -> list[dict[str, Any]]:
        """The page's AgentTools bundles, as `reactor.agentToolBundles()` lists them."""
        return self._call("agentToolBundles", "bundles()")  # type: ignore[no-any-return]

    def tools(self) -> list[str]:
        """The names of every tool of every bundle."""
        return [command["name"] for bundle in self.bundles() for command in bundle["commands"]]

    def wait_for_tool(self, name: str, timeout_ms: int = 30_000) -> None:
        """Wait until a bundle offers the tool `name`, by the page's own listener (no polling)."""
        offered = "bundles.some((b) => b.commands.some((c) => c.name === key))"
        if not self._wait_for(offered, name, timeout_ms):
            pytest.fail(
                f"No bundle offered the tool {name!r} within {timeout_ms} ms; the page has "
                f"{self.tools()}.{self._failures_said()}"
            )

    def wait_for_bundle(self, bundle_id: str, timeout_ms: int = 30_000) -> None:
        """Wait until the page lists the bundle `bundle_id` (even one that offers no tool yet)."""
        if not self._wait_for("bundles.some((b) => b.id === key)", bundle_id, timeout_ms):
            listed = [bundle["id"] for bundle in self.bundles()]
            pytest.fail(
                f"No bundle {bundle_id!r} within {timeout_ms} ms; the page has {listed}."
                f"{self._failures_said()}"
            )

    def _failures_said(self) -> str:
        failures = self.ready.get("failures", [])
        return f" Plugins that failed to load: {' '.join(failures)}" if failures else ""

    def chat(self, messages: list[str] | str, *, approve: bool | None = None) -> list[Exchange]:
        """Type each message into the page's chat as a person would and wait for its answer.

        `approve` answers every approval asked meanwhile (True: Allow, False: Deny); None leaves
        them, and an approval then fails the test, naming the tool."""
        chat = self.page.locator("reactor-chat")
        self.page.get_by_test_id("chat-model").wait_for()
        exchanges = []
        for message in [messages] if isinstance(messages, str) else messages:
            log = chat.locator("ol.chat-log > li")
            before = log.count()
            chat.locator("textarea").fill(message)
            chat.get_by_role("button", name="Send").click()
            pending = chat.locator("[data-testid=approval]:not([data-decision])")
            idle = self.page.locator("reactor-chat[data-running=false]")
            while True:
                pending.or_(idle).first.wait_for()
                if not pending.count():
                    break
                if approve is None:
                    asked = pending.first.inner_text()
                    pytest.fail(
                        f"The chat asked for approval ({asked!r}); pass approve=True or "
                        "approve=False."
                    )
                pending.first.get_by_role(
                    "button", name="Allow" if approve else "Deny", exact=True
                ).click()
            items = log.all()[before:]
            exchange = Exchange(message)
            for item in items:
                kind = item.get_attribute("class") or ""
                words = item.inner_text().strip()
                if "chat-tool" in kind:
                    exchange.cards.append(words.split("\nDetails")[0].strip())
                elif "chat-assistant" in kind:
                    exchange.replies.append(words)
                elif "chat-error" in kind:
                    exchange.errors.append(words)
            exchanges.append(exchange)
        return exchanges

    def use_model(self, stand_in: StandIn) -> ReactorPage:
        """Point the page's chat at `stand_in` (reactor_model), as a person does in Model settings;
        the page may then reach that one other origin."""
        self.allow_origin(stand_in.url)
        self.page.get_by_test_id(
            "chat-model"
        ).wait_for()  # the widget has set up its own model first
        settings = {
            "provider": stand_in.provider,
            "baseUrl": stand_in.url,
            "model": "stand-in",
            "apiKey": stand_in.key,
        }
        configure = (
            "(s) => window.reactor.chat.configure(s).then(() => null, (error) => error.message)"
        )
        refused = self.page.evaluate(configure, settings)
        if refused is not None:
            pytest.fail(f"The chat refused the stand-in model: {refused}")
        self.page.get_by_test_id("chat-model").get_by_text("stand-in").wait_for()
        return self

    def expect_console_error(self, pattern: str) -> None:
        """A console error matching `pattern` (a regular expression) does not fail the test."""
        self.allowed.append(re.compile(pattern))

    def problems(self) -> list[str]:
        """What fails the test when it ends: requests off the origin, page and console errors."""
        stray = [f"a request outside the server's origin: {url}" for url in self.strays]
        return stray + [
            error for error in self.errors if not any(p.search(error) for p in self.allowed)
        ]

    def _wait_for(self, test: str, key: str, timeout_ms: int) -> bool:
        """Whether `test` (JavaScript of `bundles` and `key`) held within `timeout_ms`, heard by
        the page's own listener: Playwright's wait_for_function would poll, in the page."""
        return bool(
            self.page.evaluate(
                f"""async ([key, timeout]) => {{
                  const has = (bundles) => {test};
                  let stop;
                  const heard = new Promise((resolve) => {{
                    stop = window.reactor.onAgentToolBundles((b) => has(b) && resolve(true));
                  }});
                  const late = new Promise((resolve) => setTimeout(() => resolve(false), timeout));
                  const now = window.reactor.agentToolBundles().then((b) => has(b) || heard);
                  try {{ return await Promise.race([now, late]); }} finally {{ stop(); }}
                }}""",
                [key, timeout_ms],
            )
        )

    def _call(self, method: str, call: str, *args: Any) -> Any:
        try:
            text, problem = json.dumps(list(args), allow_nan=False), ""
        except (TypeError, ValueError) as error:
            text, problem = "", str(error)
        if problem:  # failed out here, so the report shows the test's line, not json's insides
            pytest.fail(f"{call}: the arguments must be JSON ({problem}): {args[-1]!r}")
        answer = json.loads(self.page.evaluate(CALL, [method, text]))
        if not answer["ok"]:
            raise PageCallError(call, answer["name"], answer["message"], answer.get("problems"))
        return answer["value"]
