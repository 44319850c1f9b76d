"""Start-up and time to first request, measured side by side in one run.

- `agentcli --version` / `--help` / `sessions list` / `doctor` / `undo` vs `python -c pass`
- time to first request: `agentcli run` vs a minimal script that imports the SDK and sends one
  streaming request, both against the same local fake Messages API server; `run` also in a
  git repository, whose start snapshot (a git tree of the working copy) it takes.

Byte-code is cached in a temporary PYTHONPYCACHEPREFIX (warmed by an untimed first run), even
where PYTHONDONTWRITEBYTECODE is set: an installed agentcli has its .pyc files, like the SDK, and
compiling our sources on every run would charge agentcli for something users never pay.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from agentcli.testing.fake_api import FakeMessagesServer, stream_message, text

REPEAT = 5
REPO_FILES = 2000

MINIMAL_SDK_SCRIPT = """
import anthropic, os
client = anthropic.Anthropic(max_retries=0)
with client.messages.stream(model="claude-sonnet-4-5", max_tokens=10,
                            messages=[{"role": "user", "content": "hi"}]) as s:
    for _ in s:
        pass
"""


def _wall(argv: list[str], env: dict[str, str], cwd: str) -> float:
    started = time.perf_counter()
    subprocess.run(
        argv,
        env=env,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=False,
    )
    return time.perf_counter() - started


def _time_to_first_request(argv: list[str], env: dict[str, str], cwd: str) -> float:
    """Seconds from process start until the fake server sees the request."""
    with FakeMessagesServer() as server:
        server.push(stream_message([text("ok")]))
        started = time.perf_counter()
        proc = subprocess.Popen(
            argv,
            env={**env, "ANTHROPIC_BASE_URL": server.base_url},
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        while not server.requests and proc.poll() is None:
            time.sleep(0.002)
        elapsed = time.perf_counter() - started
        proc.wait(timeout=60)
    return elapsed


def _interleaved(
    measure: Callable[[list[str], dict[str, str], str], float],
    commands: list[list[str]],
    env: dict[str, str],
    cwd: str,
) -> list[list[float]]:
    """REPEAT samples of each command, taken in rounds (A B C, A B C, …) so that a change in
    the machine's load hits every command alike. An untimed first round warms the caches."""
    samples: list[list[float]] = [[] for _ in commands]
    for attempt in range(REPEAT + 1):
        for index, argv in enumerate(commands):
            elapsed = measure(argv, env, cwd)
            if attempt:
                samples[index].append(elapsed)
    return samples


def run() -> list[tuple[str, str]]:
    with tempfile.TemporaryDirectory(prefix="agentcli-bench-startup-") as tmp:
        for name in ("cwd", "home", "pycache"):
            (Path(tmp) / name).mkdir()
        env = {
            **os.environ,
            "AGENTCLI_HOME": str(Path(tmp) / "home"),
            "ANTHROPIC_API_KEY": "bench",
            "NO_COLOR": "1",
            "PYTHONPYCACHEPREFIX": str(Path(tmp) / "pycache"),
        }
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        return _measure(env, str(Path(tmp) / "cwd"))


def _measure(env: dict[str, str], cwd: str) -> list[tuple[str, str]]:
    python = sys.executable
    agentcli = [python, "-m", "agentcli"]
    script = Path(sys.executable).with_name("agentcli")
    if script.exists():
        agentcli = [str(script)]
    commands = (
        ("--version", ["--version"], 100),
        ("--help", ["--help"], 400),
        ("sessions list", ["sessions", "list"], 400),
        ("doctor", ["doctor"], 400),
        ("undo (nothing to undo)", ["undo"], 400),
    )
    walls = _interleaved(
        _wall, [[python, "-c", "pass"], *([*agentcli, *args] for _, args, _ in commands)], env, cwd
    )
    baseline = statistics.median(walls[0])
    rows = [("python -c pass", f"{baseline * 1000:.0f} ms")]
    for (label, _, target_ms), samples in zip(commands, walls[1:], strict=True):
        wall = statistics.median(samples)
        rows.append(
            (
                f"agentcli {label}",
                f"{wall * 1000:.0f} ms ({wall / baseline:.1f}x; target ≤ {target_ms} ms)",
            )
        )
    repo = _git_workspace(Path(cwd).parent / "repo")
    sdk_runs, *our_runs = _interleaved(
        _time_to_first_request,
        [
            [python, "-c", MINIMAL_SDK_SCRIPT],
            [*agentcli, "run", "hi"],
            [*agentcli, "run", "-C", str(repo), "hi"],
        ],
        env,
        cwd,
    )
    sdk = statistics.median(sdk_runs)
    rows.append(("first request: bare SDK script", f"{sdk * 1000:.0f} ms"))
    for label, runs in zip(
        ("agentcli run", f"agentcli run, git repo of {REPO_FILES} files"), our_runs, strict=True
    ):
        ours = statistics.median(runs)
        extra = statistics.median(o - b for o, b in zip(runs, sdk_runs, strict=True))
        rows.append(
            (
                f"first request: {label}",
                f"{ours * 1000:.0f} ms ({ours / sdk:.2f}x; +{extra * 1000:.0f} ms, median of "
                "paired runs; target ≤ +300 ms)",
            )
        )
    return rows


def _git_workspace(path: Path) -> Path:
    """A committed repository of REPO_FILES small files: `run` snapshots it at the start."""
    for n in range(REPO_FILES):
        package = path / f"pkg{n // 100}"
        package.mkdir(parents=True, exist_ok=True)
        (package / f"m{n}.py").write_text(f"def f():\n    return {n}\n")
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "init"]):
        subprocess.run(
            ["git", "-c", "user.email=bench@example.com", "-c", "user.name=bench", *args],
            cwd=path,
            check=True,
        )
    return path


if __name__ == "__main__":
    for name, value in run():
        print(f"{name:40} {value}")
