"""The HTTP app: webhooks, REST, MCP, dashboard, browser terminal, SSE."""

__all__ = [
    "api",
    "app",
    "auth",
    "limits",
    "mcp",
    "mcp_door",
]
