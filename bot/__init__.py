"""signoff: a Slack approval bot for AI agent workflows, on the `graphs` runtime."""
