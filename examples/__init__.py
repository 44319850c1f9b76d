"""Example tools built on agentcli's Tool API."""
