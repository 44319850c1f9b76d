"""A skipped sandbox test fails the run where the sandbox is enforced (issue 26, class 8).

The sandbox tests (tests/sandbox) and the adversarial tests (tests/adversarial) skip where the
kernel cannot sandbox (no Landlock, no user namespaces, no libseccomp): there agentcli asks
instead, and there is nothing to test. Where `agentcli doctor` reports the sandbox enforced,
though, a skip means the product's main promise went untested (a fixture that could not find
a place it needed, a tool missing on the CI image), and a green run would hide it. This plugin
counts those skips and, when the sandbox is enforced here, makes the run fail, naming each.

Registered by tests/conftest.py; under xdist it works in the controller, which gets every
worker's reports.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field

import pytest

GUARDED = ("tests/sandbox/", "tests/adversarial/")
"""Where a skip must not happen on a machine that sandboxes (node ids from the rootdir)."""


def sandbox_enforced() -> tuple[bool, str]:
    """What `agentcli doctor` reports: is the sandbox enforced here, and its first line. The
    probe's cache goes to a scratch data dir, never the user's."""
    from agentcli.sandbox.support import probe_support, sandbox_report

    previous = os.environ.get("AGENTCLI_HOME")
    with tempfile.TemporaryDirectory(prefix="agentcli-skips-") as scratch:
        os.environ["AGENTCLI_HOME"] = scratch
        try:
            probe_support.cache_clear()
            support = probe_support()
        finally:
            if previous is None:
                os.environ.pop("AGENTCLI_HOME", None)
            else:
                os.environ["AGENTCLI_HOME"] = previous
            probe_support.cache_clear()
    return support.ok, sandbox_report(support)[0]


@dataclass(eq=False)  # a plugin must be hashable: identity
class SandboxSkips:
    """The pytest plugin: see the module docstring."""

    skipped: list[tuple[str, str]] = field(default_factory=list)
    """(node id, reason) of each guarded test that skipped."""
    verdict: str | None = None
    """Why the run failed because of them (None: it did not)."""

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if not report.skipped or hasattr(report, "wasxfail"):
            return
        if report.nodeid.startswith(GUARDED):
            longrepr = report.longrepr
            reason = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
            reason = reason.removeprefix("Skipped: ")
            self.skipped.append((report.nodeid, reason))

    @pytest.hookimpl
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if not self.skipped or hasattr(session.config, "workerinput"):
            return  # an xdist worker: the controller sees every report and decides
        enforced, line = sandbox_enforced()
        if not enforced:
            return
        self.verdict = (
            f"{len(self.skipped)} sandbox/adversarial test(s) skipped, but the sandbox is "
            f"enforced here ({line}): each skip is a guarantee that went untested"
        )
        session.exitstatus = pytest.ExitCode.TESTS_FAILED

    @pytest.hookimpl
    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if self.verdict is None:
            return
        terminalreporter.section("sandbox tests skipped", sep="=", red=True, bold=True)
        terminalreporter.write_line(self.verdict, red=True)
        for nodeid, reason in self.skipped:
            terminalreporter.write_line(f"  {nodeid}: {reason}")
