"""The package graph is a DAG from `ui` down to the leaves, read from the source: each
subpackage (nested ones too: `ui.repl` apart from `ui`) is one node, each top-level module of
`agentcli/` its own, and every import counts as the file-level test counts it (under
`if TYPE_CHECKING:` or inside a function too). Shared vocabulary lives in leaf modules, so a
package that needs a word of another's never needs the rest of it."""

from __future__ import annotations

from tests.structure.test_layering import PACKAGE, cycles, import_graph


def _packages() -> set[str]:
    """Every package under `agentcli/`, by dotted name (the root `agentcli` included)."""
    return {
        ".".join(init.parent.relative_to(PACKAGE.parent).parts)
        for init in PACKAGE.rglob("__init__.py")
    }


def node_of(module: str, packages: set[str]) -> str:
    """The node a module belongs to: its deepest package below the root, or itself when it is
    a module directly in `agentcli/` (or the root package)."""
    parts = module.split(".")
    for end in range(len(parts), 1, -1):
        candidate = ".".join(parts[:end])
        if candidate in packages and candidate != "agentcli":
            return candidate
    return module


def package_graph() -> dict[str, set[str]]:
    packages = _packages()
    graph: dict[str, set[str]] = {}
    for module, targets in import_graph().items():
        node = node_of(module, packages)
        graph.setdefault(node, set())
        graph[node] |= {node_of(t, packages) for t in targets} - {node}
    return graph


def test_nodes_are_packages_and_top_level_modules() -> None:
    packages = _packages()
    assert node_of("agentcli.ui.repl.app", packages) == "agentcli.ui.repl"
    assert node_of("agentcli.ui.cli", packages) == "agentcli.ui"
    assert node_of("agentcli.sandbox.runner", packages) == "agentcli.sandbox"
    assert node_of("agentcli.loop", packages) == "agentcli.loop"
    assert node_of("agentcli", packages) == "agentcli"


def test_a_cycle_between_packages_is_found_though_no_file_imports_itself_back() -> None:
    files = {"p.a": {"q.b"}, "q.b": {"q.c"}, "q.c": {"p.d"}, "p.d": set()}
    assert cycles(files) == []  # no file-level cycle...
    nodes = {"p": {"q"}, "q": {"p"}}
    assert cycles(nodes) == [["p", "q"]]  # ...but the packages import each other


def test_the_package_graph_has_no_cycles() -> None:
    found = cycles(package_graph())
    assert found == [], f"package-level import cycles: {found}"


def test_nothing_below_the_ui_imports_it() -> None:
    """Only the entry point (`python -m agentcli`) starts the UI; the rest is beneath it."""
    graph = package_graph()
    ui = {node for node in graph if node == "agentcli.ui" or node.startswith("agentcli.ui.")}
    reaching = {
        node: sorted(graph[node] & ui)
        for node in graph
        if node not in ui and node != "agentcli.__main__"
    }
    assert {node: found for node, found in reaching.items() if found} == {}


def test_the_terminal_primitives_are_a_leaf_of_the_ui() -> None:
    """`ui.term` (escaping, diffs, pager, prompter) is what `ui` and `ui.repl` share: it
    imports neither, so the REPL never needs the command line and the command line can start
    the REPL."""
    graph = package_graph()
    assert "agentcli.ui.term" in graph
    assert graph["agentcli.ui.term"] & {"agentcli.ui", "agentcli.ui.repl"} == set()
    assert "agentcli.ui" not in graph["agentcli.ui.repl"]
