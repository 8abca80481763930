"""Desktop agents' calls, one hop a file: the MCP endpoint and its transport, the relay to
the person's open pages, its PostgreSQL bus between processes, and the agent tokens."""
