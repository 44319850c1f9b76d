"""The shared vocabulary sits at the bottom, read from the source: ids, messages, errors, risk
and permission targets, call records, terminal reasons and the forms of file names import only
one another, so every layer can use them without reaching up."""

from __future__ import annotations

import ast

from tests.structure.test_layering import PACKAGE, import_graph, parsed

VOCABULARY = frozenset(
    {
        "agentcli.ids",
        "agentcli.messages",
        "agentcli.errors",
        "agentcli.terminal_reason",
        "agentcli.call_records",
        "agentcli.vocabulary",
        "agentcli.confinement",
        "agentcli.fsnames",
    }
)


def _reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    seen: set[str] = set()
    todo = [start]
    while todo:
        for target in graph[todo.pop()]:
            if target not in seen:
                seen.add(target)
                todo.append(target)
    return seen


def test_the_vocabulary_imports_only_the_vocabulary() -> None:
    graph = import_graph()
    above = {module: sorted(_reachable(graph, module) - VOCABULARY) for module in VOCABULARY}
    assert {module: found for module, found in above.items() if found} == {}


def test_terminal_reason_is_imported_from_its_own_module() -> None:
    """Not through `agentcli.errors`, which only uses it."""
    found = [
        f"{path.relative_to(PACKAGE.parent)}:{node.lineno}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for node in ast.walk(parsed(path))
        if isinstance(node, ast.ImportFrom)
        and node.module != "agentcli.terminal_reason"
        and any(alias.name == "TerminalReason" for alias in node.names)
    ]
    assert found == []
