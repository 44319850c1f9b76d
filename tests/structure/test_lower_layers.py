"""Lower layers never reach up, read from the source: the journal (`agentcli/store/`) stores
records and runs nothing, so nothing under it imports the tool layer (`agentcli.tools`); the
records it stores are shared vocabulary at the bottom (`agentcli.call_records`)."""

from __future__ import annotations

from tests.structure.test_layering import import_graph


def _under(module: str, package: str) -> bool:
    return module == package or module.startswith(f"{package}.")


def test_nothing_under_store_imports_the_tool_layer() -> None:
    graph = import_graph()
    offending = {
        module: sorted(t for t in targets if _under(t, "agentcli.tools"))
        for module, targets in graph.items()
        if _under(module, "agentcli.store")
    }
    assert {module: found for module, found in offending.items() if found} == {}


def test_the_store_modules_are_seen() -> None:
    # The rule above is vacuous if the graph does not see the store's modules and imports.
    graph = import_graph()
    assert "agentcli.store.ledger" in graph["agentcli.store.sqlite"]
    assert "agentcli.call_records" in graph["agentcli.store"]


def test_running_a_tool_at_most_once_lives_with_the_runtime() -> None:
    graph = import_graph()
    assert "agentcli.tools.once" in graph["agentcli.tools.runtime"]
    assert "agentcli.store.ledger" in graph["agentcli.tools.once"]
