"""The page plugin that offers the user's plugin records: AI Tools to the agent, UI plugins as
panels.

It lists the records the signed-in user can see (`GET /plugins`), registers one command per
enabled AI Tool and contributes their one bundle, and shows a panel per enabled UI plugin
(panels.py). Calling a tool, or opening a panel, re-reads its record with the user's session
first: what the page listed earlier grants nothing.
"""

from __future__ import annotations

from typing import Any

from reactor.commands import CommandOptions
from reactor.disposable import DisposableSet
from reactor.errors import ToolError
from reactor.page import HttpError
from reactor.plugins import PluginContext, define_plugin
from reactor.records.caller import AiToolCaller
from reactor.records.runner import InProcessRunner

from .bundle import AI_TOOLS_PLUGIN, ai_tool_bundle, ai_tool_command
from .panels import UiPanels

RECORDS_API = "/plugins"


class AiTools:
    """The AI Tools currently offered; `refresh` replaces them with what the server lists now."""

    def __init__(self, context: PluginContext) -> None:
        services = context.reactor.services
        self.context = context
        self.page = services["page"]
        self.caller = AiToolCaller(
            self.read_record,
            services.get("ai_tool_runner") or InProcessRunner(),
            view_id=lambda: getattr(self.page, "active_view", None),
        )
        self.offered = DisposableSet()
        context.disposables.add(self.offered)
        self.panels = UiPanels(self.page, self.read_record)
        context.on_dispose(self.panels.unload)
        context.disposables.add(self.page.left.connect(lambda _: self.panels.unload()))

    async def read_record(self, record_id: str) -> dict[str, Any]:
        try:
            return await self.page.fetch_json("GET", f"{RECORDS_API}/{record_id}")
        except HttpError as error:
            if error.status in (401, 403, 404):
                raise ToolError(
                    "not_permitted",
                    f"You may not use the plugin {record_id!r} now ({error.detail}); "
                    "nothing ran. Do not call it again unless the person restores access.",
                ) from None
            raise ToolError(
                "unavailable",
                f"The server could not check the plugin {record_id!r}: {error.detail}",
            ) from None
        except OSError as error:
            raise ToolError(
                "unavailable",
                f"The server could not be reached to check the plugin {record_id!r}; nothing "
                f"ran ({error}).",
            ) from None

    async def refresh(self, args: dict[str, Any] | None = None) -> dict[str, Any]:
        try:
            records = [r for r in await self.page.fetch_json("GET", RECORDS_API) if "location" in r]
        except HttpError as error:
            if error.status != 401:
                raise
            records = []  # nobody signed in: no AI Tools, no panels
        offered = [r for r in records if r.get("location") == "ai-tool" and r.get("enabled")]
        self.offered.clear()  # the tools offered before this refresh go; the set stays the plugin's
        if offered:
            handlers = {
                ai_tool_command(record["id"]): self._handler(record["id"]) for record in offered
            }
            self.offered.add(self.context.register_bundle(ai_tool_bundle(offered), handlers))
            self.caller.runner.warm()
        panels = await self.panels.refresh(records)
        return {"tools": [r["name"] for r in offered], "panels": panels}

    def _handler(self, record_id: str) -> Any:
        async def invoke(args: dict[str, Any]) -> Any:
            return await self.caller.call(record_id, args)

        return invoke


def _register(context: PluginContext) -> AiTools:
    tools = AiTools(context)
    context.register_command(
        "aiTools.refresh",
        CommandOptions(
            tools.refresh,
            label="Refresh AI Tools and panels",
            description="Offer the AI Tools, and show the UI plugin panels, the signed-in user "
            "can see now.",
        ),
    )

    return tools


async def _activate(context: PluginContext) -> None:
    await context.exports.refresh()


AI_TOOLS_PAGE_PLUGIN = define_plugin(
    name=AI_TOOLS_PLUGIN,
    register=_register,  # its description is the spec's (spec.py): one per plugin
    activate=_activate,
)
