"""The page's chat served from the reactor worker: its session, its conversations, its requests."""

from __future__ import annotations

from typing import Any

from ..cancellation import CancelToken
from ..protocol import WorkerEndpoint
from .agent_calls import AgentCalls
from .sending import browser_send
from .server_link import ServerLink
from .worker_page import PageStorage


def serve_chat(
    endpoint: WorkerEndpoint,
    reactor: Any,
    agent: dict[str, Any],
    assistant: dict[str, Any],
    server: ServerLink,
    agent_calls: AgentCalls,
) -> None:
    """The chat widget's requests: a ChatSession whose events and approvals cross as messages.

    The host is imported and the session made on first use, not at boot: tools are ready sooner."""
    sessions: list[Any] = []
    conversations: list[Any] = []

    def session() -> Any:
        if not sessions:
            from ..host import AgentSpec, ChatSession, HostEvent
            from ..host.conversations import Conversations
            from ..host.threads import LocalThreads, ServerThreads

            async def approve(request: Any) -> str:
                return str(
                    await endpoint.ask(
                        "chat.approve",
                        request={
                            "callId": request.call_id,
                            "tool": request.tool,
                            "description": request.description,
                            "arguments": request.arguments,
                            "sideEffect": request.side_effect,
                            "question": request.question,
                            # the page claims it from the server before it runs (web/agents.js)
                            "agentCall": request.agent_call,
                        },
                    )
                )

            def on_event(event: HostEvent) -> None:
                endpoint.notify("chat.event", event={"type": event.type, **event.data})

            sessions.append(
                ChatSession(
                    reactor,
                    AgentSpec.from_dict(agent),
                    send=browser_send,
                    approve=approve,
                    on_event=on_event,
                    site=assistant.get("site"),
                    site_send=server.send,
                    keys=assistant.get("browserKeys", True),
                )
            )

            async def fetch(method: str, url: str, body: Any = None) -> Any:
                return await server.fetch_json(url, method=method, body=body, headers={})

            conversations.append(
                Conversations(
                    sessions[0],
                    server=ServerThreads(fetch),
                    local=LocalThreads(PageStorage(endpoint)),
                )
            )
        return sessions[0]

    def chats() -> Any:
        session()
        return conversations[0]

    chosen = False  # whether a model was chosen in this page (by the person or the page's code)

    def configure(message: dict[str, Any], signal: CancelToken) -> dict[str, Any]:
        """Choose the chat's model; with `unlessChosen` (the widget's first choice), a model chosen
        already stays, and is described. `chosen` in the answer: this call chose. Settings that
        cannot be used raise SettingsError: the page's call rejects with its sentence."""
        nonlocal chosen
        chat = session()
        keep = bool(message.get("unlessChosen")) and chosen
        label = chat.label if keep else chat.configure(message["settings"])
        chosen = chosen or not message.get("unlessChosen")
        return {
            "chosen": not keep,
            "label": label,
            "examples": chat.examples,
            "provider": chat.provider,
            "providers": chat.providers,
        }

    def tools(message: dict[str, Any], signal: CancelToken) -> list[dict[str, Any]]:
        from ..host import tool_annotations

        return [
            {
                "name": t.name,
                "title": t.title,
                "description": t.description,
                "inputSchema": t.parameters,
                "annotations": tool_annotations(t.side_effect),
            }
            for t in session().toolbox.tools()
        ]

    def stop(message: dict[str, Any], signal: CancelToken) -> None:
        if sessions:
            sessions[0].stop()

    endpoint.handle("chat.configure", configure)
    endpoint.handle("chat.label", lambda message, signal: session().label)
    endpoint.handle("chat.send", lambda message, signal: chats().send(message["text"]))
    endpoint.handle("chat.thread", lambda message, signal: chats().handle(message))
    endpoint.handle("chat.resume", lambda message, signal: chats().resume())
    endpoint.handle("chat.tools", tools)
    endpoint.handle(
        "chat.callTool",
        lambda message, signal: session().call_tool(message["name"], message["args"], signal),
    )
    endpoint.handle("chat.stop", stop)
    agent_calls.session = session
