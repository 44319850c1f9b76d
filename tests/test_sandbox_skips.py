"""A skipped sandbox or adversarial test fails the run where the sandbox is enforced (issue 26,
class 8: CI could be green with the sandbox untested): `tests.sandbox_skips`, played on a
small project of its own by a real pytest run under xdist, as CI runs the suite.

The project's pytest loads no plugin but the one it tests (and xdist where it runs under
xdist): loading the suite's own (hypothesis above all) cost ~1 s of CPU in each of the three
interpreters an `-n 2` run starts, and the project uses none of them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.sandbox_skips import sandbox_enforced

CHECKOUT = Path(__file__).resolve().parents[1]
CONFTEST = f"""
import importlib.util, sys
spec = importlib.util.spec_from_file_location(
    "sandbox_skips", {str(CHECKOUT / "tests" / "sandbox_skips.py")!r}
)
module = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = module
spec.loader.exec_module(module)

def pytest_configure(config):
    config.pluginmanager.register(module.SandboxSkips(), "agentcli-sandbox-skips")
"""
FILES = {
    "pytest.ini": "[pytest]\nxfail_strict = true\n",
    "conftest.py": CONFTEST,
    "tests/sandbox/test_guarded.py": (
        "import pytest\n"
        "def test_runs():\n    pass\n"
        "def test_skips():\n    pytest.skip('SKIPPED-IN-SANDBOX-DIR')\n"
        "@pytest.mark.xfail(reason='known')\ndef test_xfails():\n    assert False\n"
    ),
    "tests/adversarial/test_guarded_too.py": (
        "import pytest\n"
        "@pytest.mark.skipif(True, reason='SKIPPED-IN-ADVERSARIAL-DIR')\n"
        "def test_skips():\n    pass\n"
    ),
    "tests/other/test_free.py": (
        "import pytest\ndef test_skips():\n    pytest.skip('SKIPPED-ELSEWHERE')\n"
    ),
}


def _project(root: Path, files: dict[str, str]) -> Path:
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
    return root


def _pytest(project: Path, *options: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "PYTHONPATH"))}
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"  # (xdist's workers inherit it)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *options],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_a_skip_in_the_sandbox_tests_fails_the_run_where_the_sandbox_is_enforced(
    tmp_path: Path,
) -> None:
    enforced, _line = sandbox_enforced()
    run = _pytest(_project(tmp_path, FILES), "-p", "xdist.plugin", "-n", "2")  # as CI runs it
    out = run.stdout + run.stderr
    assert "1 passed, 3 skipped, 1 xfailed" in out, out  # the project played as written
    assert "created: 2/2 workers" in out, out  # under xdist: the controller decides
    if not enforced:
        assert run.returncode == 0, out  # nothing to test here: the skips are honest
        return
    assert run.returncode == 1, out
    assert "2 sandbox/adversarial test(s) skipped, but the sandbox is enforced here" in out
    assert "tests/sandbox/test_guarded.py::test_skips: SKIPPED-IN-SANDBOX-DIR" in out
    assert "tests/adversarial/test_guarded_too.py::test_skips" in out
    assert "test_free.py::test_skips:" not in out  # elsewhere a skip is only a skip


def test_without_a_skip_in_the_sandbox_tests_the_run_passes(tmp_path: Path) -> None:
    files = {k: v for k, v in FILES.items() if "guarded" not in k}
    files["tests/sandbox/test_guarded.py"] = "def test_runs():\n    pass\n"
    run = _pytest(_project(tmp_path, files))
    assert run.returncode == 0, run.stdout + run.stderr
    assert "sandbox tests skipped" not in run.stdout
