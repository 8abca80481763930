"""The chat host: AgentTools bundles become model tools, and a loop runs the model and the tools.

    tools.py      AgentSpec, HostTool, Toolbox — admission by plugin and toolset; calls → envelopes
    approval.py   side-effect levels, MCP annotations, the approval gate
    formats.py    tools and results in OpenAI Chat, Responses, Anthropic and MCP formats
    model.py      the provider-neutral conversation, ModelTurn, and the Model protocol
    loop.py       ChatLoop: steps, approvals, stop, events
    transport.py  the injected `send`, and provider errors made readable
    openai.py     OpenAI-compatible Chat Completions (also llama.cpp, Ollama, vLLM)
    anthropic.py  Anthropic Messages
    scripted.py   ScriptedModel, for demos and tests without an AI
    session.py    ChatSession: the page's chat — settings, one history, tool calls from WebMCP
    transcript.py what the person saw, kept to draw it again; a conversation as Markdown
    threads.py    where a conversation is kept as it goes: the server, or this browser
    conversations.py  the widget's conversations: restore, resume, list, switch, sign-in
    errors.py     HostError, SettingsError, ProviderError

The envelope (reactor.envelope) and argument parsing (reactor.arguments) are the core's, shared
with AI Tool plugins.

Pure Python: runs on CPython and in Pyodide; HTTP goes through the `send` the caller gives.
"""

from __future__ import annotations

from ..envelope import envelope_text, is_failure, tool_failure, tool_success
from ..errors import FAILURE_CODES, ToolError
from .anthropic import AnthropicModel
from .approval import (
    ApprovalGate,
    ApprovalRequest,
    needs_approval,
    side_effect_level,
    tool_annotations,
)
from .errors import HostError, ProviderError, SettingsError
from .formats import (
    anthropic_result,
    anthropic_tools,
    mcp_call_result,
    mcp_list_tools,
    model_schema,
    openai_chat_result,
    openai_chat_tools,
    responses_result,
    responses_tools,
)
from .loop import ChatLoop, HostEvent, LoopOutcome
from .model import Model, ModelRequest, ModelTurn, ToolCall
from .openai import OpenAIChatModel
from .scripted import ScriptedModel
from .session import ChatSession, model_from_settings
from .tools import EVERY_PLUGIN, AgentSpec, HostTool, Toolbox
from .transport import Send, urllib_send

__all__ = [
    "AgentSpec",
    "AnthropicModel",
    "ApprovalGate",
    "ApprovalRequest",
    "ChatLoop",
    "ChatSession",
    "EVERY_PLUGIN",
    "FAILURE_CODES",
    "HostError",
    "HostEvent",
    "HostTool",
    "LoopOutcome",
    "Model",
    "ModelRequest",
    "ModelTurn",
    "OpenAIChatModel",
    "ProviderError",
    "SettingsError",
    "ScriptedModel",
    "Send",
    "ToolCall",
    "ToolError",
    "Toolbox",
    "anthropic_result",
    "anthropic_tools",
    "envelope_text",
    "is_failure",
    "mcp_call_result",
    "mcp_list_tools",
    "model_from_settings",
    "model_schema",
    "needs_approval",
    "openai_chat_result",
    "openai_chat_tools",
    "responses_result",
    "responses_tools",
    "side_effect_level",
    "tool_annotations",
    "tool_failure",
    "tool_success",
    "urllib_send",
]
