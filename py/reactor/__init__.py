"""reactor: a command registry and contribution points that give AI agents a safe reach into
plugins.

The same package runs on CPython (tests, the server) and in Pyodide (the page). Only
`reactor.browser` knows about `js`; `reactor.server` is the Python tier and never loads in the page.
"""

from __future__ import annotations

from .agent_tools import (
    AgentTools,
    agent_tool_bundles,
    check_agent_tools,
    define_agent_tools,
    load_agent_tools,
    watch_agent_tool_bundles,
)
from .cancellation import CancelToken
from .commands import (
    Command,
    CommandExecuted,
    CommandOptions,
    CommandRegistry,
    CommandsChanged,
    Settled,
)
from .contributions import Contribution, ContributionPoint, ContributionRegistry, contribution
from .disposable import Disposable, DisposableSet
from .errors import (
    AbortedError,
    CommandError,
    CommandFailedError,
    CommandNotFoundError,
    CommandUnavailableError,
    ContributionError,
    DeclarationError,
    DuplicateCommandError,
    InvalidArgumentsError,
    NotFoundError,
    PluginDependencyError,
    PluginError,
    PluginLoadError,
    PluginNotFoundError,
    ReactorError,
    ToolError,
)
from .events import Emitter
from .page import HttpError, MemoryPage, Page
from .platform import PluginPlatform
from .plugins import LoadReport, Plugin, PluginContext, Reactor, define_plugin
from .schema import NO_ARGUMENTS

__all__ = [
    "AbortedError",
    "AgentTools",
    "CancelToken",
    "Command",
    "CommandError",
    "CommandExecuted",
    "CommandFailedError",
    "CommandNotFoundError",
    "CommandOptions",
    "CommandRegistry",
    "CommandUnavailableError",
    "CommandsChanged",
    "Contribution",
    "ContributionError",
    "ContributionPoint",
    "ContributionRegistry",
    "DeclarationError",
    "Disposable",
    "DisposableSet",
    "DuplicateCommandError",
    "Emitter",
    "HttpError",
    "InvalidArgumentsError",
    "LoadReport",
    "MemoryPage",
    "NO_ARGUMENTS",
    "NotFoundError",
    "Page",
    "Plugin",
    "PluginContext",
    "PluginDependencyError",
    "PluginError",
    "PluginLoadError",
    "PluginNotFoundError",
    "PluginPlatform",
    "Reactor",
    "ReactorError",
    "Settled",
    "ToolError",
    "agent_tool_bundles",
    "check_agent_tools",
    "contribution",
    "define_agent_tools",
    "define_plugin",
    "load_agent_tools",
    "watch_agent_tool_bundles",
]
