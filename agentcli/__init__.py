"""agentcli: a terminal coding agent that verifies before it claims success."""

__version__ = "0.1.0"
