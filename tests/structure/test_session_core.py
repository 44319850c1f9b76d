"""The UI reaches sessions only through the session core, read from the source: no module under
`agentcli/ui/` imports the journal (`agentcli.store`), crash recovery, the checkpoints or undo,
and configuration is read by key only where settings are resolved."""

from __future__ import annotations

import ast

from tests.structure.test_layering import PACKAGE, import_graph, parsed

BEHIND_THE_CORE = ("agentcli.store", "agentcli.recovery", "agentcli.checkpoints", "agentcli.undo")


def _under(module: str, package: str) -> bool:
    return module == package or module.startswith(f"{package}.")


def test_the_detector_sees_an_import_inside_a_function() -> None:
    graph = import_graph()
    # `ui/cli.py` imports `ui.sessions` only inside its commands.
    assert "agentcli.ui.sessions" in graph["agentcli.ui.cli"]


def test_nothing_under_ui_imports_store_recovery_or_checkpoints() -> None:
    offending = {
        module: sorted(t for t in targets if any(_under(t, p) for p in BEHIND_THE_CORE))
        for module, targets in import_graph().items()
        if _under(module, "agentcli.ui")
    }
    assert {module: found for module, found in offending.items() if found} == {}


def test_the_ui_uses_the_session_core() -> None:
    users = {
        module
        for module, targets in import_graph().items()
        if any(_under(t, "agentcli.session") for t in targets)
    }
    for module in ("agentcli.ui.run", "agentcli.ui.sessions", "agentcli.ui.repl.backend"):
        assert module in users


def test_no_setting_is_named_by_its_dotted_key_outside_the_settings_modules() -> None:
    """`files.get("sandbox.network")`, `files.integer("convergence.repeat_limit", 3)`: a
    string that is a setting's dotted name is how code read settings by key."""
    from agentcli.config import leaf_fields

    keys = {key for key in leaf_fields() if "." in key}
    found = [
        f"{path.relative_to(PACKAGE.parent)}:{node.lineno}: {node.value}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.name not in ("config.py", "settings.py")
        for node in ast.walk(parsed(path))
        if isinstance(node, ast.Constant) and node.value in keys
    ]
    assert found == []
