"""The built-in tools, in the order the model sees them."""

from __future__ import annotations

from typing import Any

from agentcli.tools.base import Tool
from agentcli.tools.edit_file import EditFile
from agentcli.tools.glob_tool import Glob
from agentcli.tools.grep import Grep
from agentcli.tools.read_file import ReadFile
from agentcli.tools.shell import Shell
from agentcli.tools.write_file import WriteFile


def builtin_tools() -> list[Tool[Any]]:
    """Fresh instances of read_file, write_file, edit_file, glob, grep and shell."""
    return [ReadFile(), WriteFile(), EditFile(), Glob(), Grep(), Shell()]
