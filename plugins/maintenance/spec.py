"""The maintenance demo, declared: a server half only (its AI Tools are records, not code here)."""

from typing import Any

from reactor.plugin_spec import PluginSpec


def _server() -> Any:
    from .server import MaintenanceServerPlugin

    return MaintenanceServerPlugin()


PLUGIN = PluginSpec(
    name="maintenance",
    description="Buildings and their maintenance work; the demo's AI Tools read it.",
    server=_server,
)
