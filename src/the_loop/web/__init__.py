"""The HTTP app: webhooks, REST, MCP, dashboard, browser terminal, SSE."""
