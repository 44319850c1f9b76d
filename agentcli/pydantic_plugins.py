"""agentcli's pydantic models run without pydantic plugins.

A pydantic plugin is any installed distribution with a `pydantic` entry point; pydantic finds
them the first time a model's validator is built by reading the entry points of every
distribution in the environment (~50 ms at each start here, with Ray and the MCP SDK installed)
and then hands each plugin every value validated: tool inputs, settings, hook definitions.
agentcli needs no observer of its own validation, so the discovery is skipped: pydantic's plugin
cache is filled with "none" before any validator is built. A pydantic without that cache (a
future version) simply discovers as before.
"""

from __future__ import annotations


def skip_plugin_discovery() -> None:
    try:
        from pydantic.plugin import _loader
    except ImportError:  # pragma: no cover - a pydantic that moved its loader
        return
    if getattr(_loader, "_plugins", ...) is None:  # not discovered yet, and the cache is as known
        _loader._plugins = {}
