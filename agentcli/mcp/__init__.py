"""MCP: tools from the Model Context Protocol servers the user configured, offered to the model
as `mcp__SERVER__TOOL`.

- `entry`: one server's configuration (Claude Code's `.mcp.json` keys), shared by every source;
- `config`: where servers come from (`[mcp_servers.NAME]`, `.mcp.json` in a trusted workspace,
  `--mcp-config FILE`), merged by name, `${VAR}` expanded;
- `client`: the only module that imports the official `mcp` SDK (and only once a server is
  configured: with none, agentcli never loads it);
- `hub`: the running servers of this process, on an event loop of their own;
- `tool`: a server's tool as an agentcli `Tool`;
- `session`: what the session core calls: start the servers, hand over their tools.
"""
