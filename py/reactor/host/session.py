"""The page's chat: one conversation whose model the person picks in the widget's settings.

The widget never talks to a provider itself: it hands settings and messages here, and hears
back events (messages, tool cards, approvals). The models on offer: the site's own, behind the
reactor server (host/site.py), when the server has one; the scripted model; and, where the
server lets a person type a key, any OpenAI-compatible or Anthropic model — that key stays in
the browser, given to the model adapter, which sends it only to the provider's own URL.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import urlsplit

from ..cancellation import CancelToken
from ..envelope import tool_failure
from .anthropic import AnthropicModel
from .approval import ApprovalRequest, Approve, needs_approval
from .errors import HostError, SettingsError
from .loop import ChatLoop, HostEvent
from .model import Model
from .openai import OpenAIChatModel
from .scripted import ScriptedModel, examples
from .site import SiteModel
from .threads import ThreadKeeper
from .tools import AgentSpec, Toolbox
from .transport import Send

PROVIDERS = ("site", "scripted", "openai", "anthropic")
TYPED_KEYS = ("openai", "anthropic")


def model_from_settings(
    settings: dict[str, Any],
    send: Send,
    *,
    site: dict[str, Any] | None = None,
    site_send: Send | None = None,
    keys: bool = True,
    thread: Callable[[], str] = lambda: "",
) -> Model:
    """The model the settings name (by default the site's, else the scripted one); a setting
    that cannot be used is a ValueError saying what to do."""
    provider = settings.get("provider") or ("site" if site else "scripted")
    if provider == "site":
        if not site:
            raise SettingsError("This site has no assistant of its own; pick another model.")
        return SiteModel(site, site_send or send, thread)
    if provider == "scripted":
        return ScriptedModel()
    if provider in TYPED_KEYS and not keys:
        raise SettingsError("This site does not let keys be typed here; use this site's assistant.")
    model, base_url, key = (
        str(settings.get(k) or "").strip() for k in ("model", "baseUrl", "apiKey")
    )
    if not model:
        raise SettingsError(
            "Name the model to use (for example gpt-4o-mini, claude-sonnet-4-5 or llama3.1)."
        )
    if len(model) > 200 or any(c.isspace() for c in model):
        raise SettingsError(
            f"{model[:60]!r} is not a model name: a model name has no spaces (for example "
            "gpt-4o-mini)."
        )
    if base_url:
        try:
            parts = urlsplit(base_url)
        except ValueError:  # e.g. an unclosed IPv6 bracket
            parts = None
        if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
            raise SettingsError(
                "The base URL must be an http:// or https:// address, such as "
                f"https://api.openai.com/v1; {base_url[:80]!r} is not."
            )
    if provider == "openai":
        if not base_url:
            raise SettingsError(
                "Give the base URL of the OpenAI-compatible API, e.g. https://api.openai.com/v1 "
                "or http://127.0.0.1:11434/v1 for Ollama."
            )
        where = urlsplit(base_url).netloc
        return OpenAIChatModel(
            base_url=base_url,
            model=model,
            send=send,
            api_key=key,
            stream=True,
            label=f"{model} · OpenAI-compatible at {where}",
        )
    if provider == "anthropic":
        if not key:
            raise SettingsError("Give the Anthropic API key; it stays in this browser tab.")
        return AnthropicModel(
            model=model,
            send=send,
            api_key=key,
            label=f"{model} · Anthropic",
            stream=True,
            **({"base_url": base_url} if base_url else {}),  # type: ignore[arg-type]  # a str, as base_url is
        )
    raise SettingsError(f"Unknown provider {provider!r}; use one of {', '.join(PROVIDERS)}.")


class ChatSession:
    """The chat of one page: its agent spec, its settings, one history kept across settings,
    kept as it goes by `keeper` (reactor.host.threads; by default nowhere)."""

    def __init__(
        self,
        reactor: Any,
        spec: AgentSpec,
        *,
        send: Send,
        approve: Approve,
        on_event: Callable[[HostEvent], object],
        max_steps: int = 8,
        site: dict[str, Any] | None = None,
        site_send: Send | None = None,
        keys: bool = True,
        keeper: ThreadKeeper | None = None,
    ) -> None:
        self.toolbox = Toolbox(reactor, spec)
        self.send_http = send
        self.approve = approve
        self.keeper = keeper or ThreadKeeper()
        self._tell = on_event
        self.max_steps = max_steps
        self.site, self.site_send, self.keys = site, site_send, keys
        self.loop = self._loop(self._model({}), history=[])

    @property
    def examples(self) -> list[str]:
        """What to type to this model with these tools (the scripted model's own; none for an
        AI)."""
        return examples(self.toolbox.tools()) if isinstance(self.loop.model, ScriptedModel) else []

    @property
    def label(self) -> str:
        return getattr(self.loop.model, "label", "") or type(self.loop.model).__name__

    @property
    def provider(self) -> str:
        """Which of `providers` is in use."""
        model = self.loop.model
        if isinstance(model, SiteModel):
            return "site"
        if isinstance(model, ScriptedModel):
            return "scripted"
        return "anthropic" if isinstance(model, AnthropicModel) else "openai"

    @property
    def providers(self) -> list[list[str]]:
        """The models a person may pick here, as [value, what the picker shows]."""
        offered = [["site", f"This site's assistant ({self.site['model']})"]] if self.site else []
        offered.append(["scripted", "Scripted model (no AI)"])
        if self.keys:
            offered += [
                ["openai", "OpenAI-compatible (OpenAI, llama.cpp, Ollama…)"],
                ["anthropic", "Anthropic"],
            ]
        return offered

    def configure(self, settings: dict[str, Any]) -> str:
        """Switch the model; the conversation and the "always allow" choices carry over."""
        if self.loop.running:
            raise SettingsError("Stop the chat before changing its model.")
        always = self.loop.approvals.always
        self.loop = self._loop(self._model(settings), history=self.loop.history)
        self.loop.approvals.always |= always
        self.on_event(HostEvent("model", {"label": self.label, "provider": self.provider}))
        return self.label

    def on_event(self, event: HostEvent) -> None:
        """Every event of the chat: the transcript records it, the widget hears it."""
        self.keeper.transcript.record(event)
        self._tell(event)

    def _model(self, settings: dict[str, Any]) -> Model:
        return model_from_settings(
            settings,
            self.send_http,
            site=self.site,
            site_send=self.site_send,
            keys=self.keys,
            thread=self._kept_thread,
        )

    def _kept_thread(self) -> str:
        """The thread the site's model answers in, when the server keeps it ("" otherwise)."""
        keeper = self.keeper
        kept_on_server = keeper.store is not None and keeper.store.where == "server"
        return keeper.thread["id"] if kept_on_server and keeper.thread else ""

    def can_reattach(self) -> bool:
        """Whether a reply the server kept for this page's thread can be read again here."""
        return isinstance(self.loop.model, SiteModel)

    async def reattach(self) -> dict[str, Any]:
        """Go on with a turn whose reply the server kept (the page was reloaded mid-answer): the
        rest of the reply as it comes, then the turn as it would have gone on."""
        if isinstance(self.loop.model, SiteModel):
            self.loop.model.reattaching = True
        return await self.resume(ask_again=False)

    async def send(self, text: str) -> dict[str, Any]:
        """Answer `text`; the widget hears `running` before and after, however the send was
        started."""
        return await self._answering(lambda: self.loop.send(text))

    async def resume(self, *, ask_again: bool) -> dict[str, Any]:
        """Go on with a turn a reload cut (ChatLoop.resume), as `send` answers a message."""
        return await self._answering(lambda: self.loop.resume(ask_again=ask_again))

    async def _answering(self, run: Callable[[], Awaitable[Any]]) -> dict[str, Any]:
        if self.loop.running:
            raise HostError("The chat is still answering the last message; stop it or wait for it.")
        self.on_event(HostEvent("running", {"running": True}))
        try:
            outcome = await run()
        finally:
            self.on_event(HostEvent("running", {"running": False}))
        return {
            "status": outcome.status,
            "text": outcome.text,
            "steps": outcome.steps,
            "error": outcome.error,
        }

    def stop(self) -> None:
        self.loop.stop()

    async def call_tool(
        self, name: str, args: Any, signal: CancelToken, agent_call: str = ""
    ) -> dict[str, Any]:
        """A tool called from outside the chat (a browser agent through WebMCP, a desktop agent's
        call `agent_call` through the server): admitted and approved the same way, so a write
        through another door still asks the person."""
        prepared = self.toolbox.prepare(name, args)
        if isinstance(prepared, dict):
            return prepared
        tool, checked = prepared
        asked = needs_approval(tool.side_effect) and tool.name not in self.loop.approvals.always
        request = ApprovalRequest(
            f"webmcp-{id(signal)}",
            tool.name,
            tool.description,
            checked,
            tool.side_effect,
            # the words the chat's own calls are asked in (they may wait on the page)
            await signal.race(tool.question(checked)) if asked else "",
            agent_call=agent_call,
        )
        decision = await self.loop.approvals.decide(request, signal)
        if decision in ("deny", "unasked"):
            return tool_failure(
                "denied", f"The person declined to run {tool.name}; it did not run."
            )
        return await self.toolbox.run(tool, checked, signal=signal)

    def _loop(self, model: Model, *, history: list[dict[str, Any]]) -> ChatLoop:
        return ChatLoop(
            model,
            self.toolbox,
            approve=self.approve,
            max_steps=self.max_steps,
            on_event=self.on_event,
            history=history,
            keep=self.keeper.keep,
        )
