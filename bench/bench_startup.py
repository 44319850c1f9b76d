"""Start-up and time to first request, measured side by side in one run.

- `agentcli --version` / `--help` / `sessions list` / `doctor` / `undo` vs `python -c pass`
- time to first request, all against the same local fake Messages API server, interleaved:
  a floor client (a plain `http.client` script that POSTs one streaming request: the least any
  Python client can take), a minimal script that imports the SDK and sends one, and
  `agentcli run` on its default thin transport (`http`), on the SDK transport (`sdk`), and on
  the default transport in a git repository, whose start snapshot (a git tree of the working
  copy) it takes.

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
RUN_IMPORTS = (
    "import gc; gc.disable(); from agentcli.dataclass_code import install; install(); "
    "import agentcli.ui.cli, agentcli.ui.run, agentcli.model.http"
)
"""What `run` imports before its first request (with the collector off and dataclasses' methods
from the kept cache, as `entry.main` runs it): nearly all of its time to the first request."""
RUN_IMPORTS_CEILING_MS = 700
"""The import time of RUN_IMPORTS this bench flags (~600 ms on this 2-core machine when it was
set, against ~650 ms for the whole one-turn run; the module count is pinned in
tests/perf/test_import_budget.py)."""
CLAUDE_ROUNDS = 7
REPO_FILES = 2000

FLOOR_SCRIPT = """
import http.client, json, os, urllib.parse
url = urllib.parse.urlsplit(os.environ["ANTHROPIC_BASE_URL"])
body = json.dumps({"model": "claude-sonnet-4-5", "max_tokens": 10, "stream": True,
                   "messages": [{"role": "user", "content": "hi"}]}).encode()
connection = http.client.HTTPConnection(url.hostname, url.port)
connection.request("POST", url.path.rstrip("/") + "/v1/messages", body, {
    "content-type": "application/json", "anthropic-version": "2026-10-21",
    "authorization": "Bearer " + os.environ["ANTHROPIC_API_KEY"]})
response = connection.getresponse()
for line in response:
    pass
raise SystemExit(0 if response.status == 200 else 1)
"""
"""The floor: the least a Python process can do to send one streaming request."""

MINIMAL_SDK_SCRIPT = """
import anthropic, os
client = anthropic.Anthropic(max_retries=0)
with client.messages.stream(model="claude-sonnet-4-5", max_tokens=10,
                            messages=[{"role": "user", "content": "hi"}]) as s:
    for _ in s:
        pass
"""


Command = tuple[list[str], dict[str, str]]
"""A command line and the environment variables it runs with on top of the common ones."""


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
    return _first_request_and_wall(argv, env, cwd)[0]


def _first_request_and_wall(
    argv: list[str], env: dict[str, str], cwd: str, *, strict: bool = True
) -> tuple[float, float]:
    """Seconds from process start until the fake server sees the first request, and until
    the process has exited (one turn: the server answers "ok"). `strict` False for Claude
    Code, which sends a `role: "system"` message the strict fake refuses."""
    with FakeMessagesServer(strict=strict) as server:
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
            time.sleep(0.001)
        first = time.perf_counter() - started
        proc.wait(timeout=60)
        wall = time.perf_counter() - started
        if not server.requests:
            raise RuntimeError(f"{argv[0]} exited ({proc.returncode}) without a request")
    return first, wall


def _interleaved(
    measure: Callable[[list[str], dict[str, str], str], float],
    commands: list[Command],
    env: dict[str, str],
    cwd: str,
) -> list[list[float]]:
    """REPEAT samples of each command, taken in rounds (A B C, A B C, …) so that a change in
    the machine's load hits every command alike. An untimed first round warms the caches."""
    samples: list[list[float]] = [[] for _ in commands]
    for attempt in range(REPEAT + 1):
        for index, (argv, extra) in enumerate(commands):
            elapsed = measure(argv, {**env, **extra}, cwd)
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
        _wall,
        [
            ([python, "-c", "pass"], {}),
            ([python, "-c", RUN_IMPORTS], {}),
            *(([*agentcli, *args], {}) for _, args, _ in commands),
        ],
        env,
        cwd,
    )
    baseline = statistics.median(walls[0])
    imports = statistics.median(walls[1]) - baseline
    rows = [
        ("python -c pass", f"{baseline * 1000:.0f} ms"),
        (
            "imports of run's path (over the interpreter's start)",
            f"{imports * 1000:.0f} ms (ceiling {RUN_IMPORTS_CEILING_MS} ms"
            f"{'' if imports * 1000 <= RUN_IMPORTS_CEILING_MS else ': OVER'})",
        ),
    ]
    walls = [walls[0], *walls[2:]]
    for (label, _, target_ms), samples in zip(commands, walls[1:], strict=True):
        wall = statistics.median(samples)
        rows.append(
            (
                f"agentcli {label}",
                f"{wall * 1000:.0f} ms ({wall / baseline:.1f}x; target ≤ {target_ms} ms)",
            )
        )
    repo = _git_workspace(Path(cwd).parent / "repo")
    rows.extend(_first_requests(python, agentcli, repo, env, cwd))
    rows.extend(_beside_claude_code(agentcli, env, cwd))
    return rows


def _beside_claude_code(
    agentcli: list[str], env: dict[str, str], cwd: str
) -> list[tuple[str, str]]:
    """`agentcli run hi` and `claude -p hi`, one after the other in each round, against a fresh
    fake API each: medians of the time to the first request and of the one-turn wall, and
    agentcli's over Claude Code's (the goal: ≤ 1.0)."""
    claude = os.environ.get("CLAUDE_CODE_BIN")
    if not claude:
        return [("beside Claude Code", "skipped: set CLAUDE_CODE_BIN to its `claude` executable")]
    claude_env = {
        **env,
        "HOME": str(Path(cwd).parent / "home"),  # never the user's own ~/.claude
        "DISABLE_TELEMETRY": "1",
        "DISABLE_AUTOUPDATER": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    }
    ours: list[tuple[float, float]] = []
    theirs: list[tuple[float, float]] = []
    for attempt in range(CLAUDE_ROUNDS + 1):  # an untimed first round warms both
        mine = _first_request_and_wall([*agentcli, "run", "hi"], env, cwd)
        other = _first_request_and_wall([claude, "-p", "hi"], claude_env, cwd, strict=False)
        if attempt:
            ours.append(mine)
            theirs.append(other)
    rows = []
    for index, label in ((0, "time to first request"), (1, "one-turn wall")):
        a = statistics.median(sample[index] for sample in ours)
        c = statistics.median(sample[index] for sample in theirs)
        rows.append(
            (
                f"beside Claude Code: {label}",
                f"agentcli {a * 1000:.0f} ms, Claude Code {c * 1000:.0f} ms ({a / c:.2f}x; "
                "goal ≤ 1.0x)",
            )
        )
    return rows


FIRST_REQUESTS = (
    "floor client (http.client script)",
    "bare SDK script",
    "agentcli run, http transport",
    "agentcli run, sdk transport",
    f"agentcli run, http transport, git repo of {REPO_FILES} files",
)


def _first_requests(
    python: str, agentcli: list[str], repo: Path, env: dict[str, str], cwd: str
) -> list[tuple[str, str]]:
    """Time to first request of each of FIRST_REQUESTS, in one interleaved run; each against
    the floor (ratio, and the median of the paired differences) and `run` on the SDK transport
    against `run` on the http one."""
    http, sdk = {"AGENTCLI_TRANSPORT": "http"}, {"AGENTCLI_TRANSPORT": "sdk"}
    samples = _interleaved(
        _time_to_first_request,
        [
            ([python, "-c", FLOOR_SCRIPT], {}),
            ([python, "-c", MINIMAL_SDK_SCRIPT], {}),
            ([*agentcli, "run", "hi"], http),
            ([*agentcli, "run", "hi"], sdk),
            ([*agentcli, "run", "-C", str(repo), "hi"], http),
        ],
        env,
        cwd,
    )
    floor = samples[0]
    rows = [(f"first request: {FIRST_REQUESTS[0]}", f"{statistics.median(floor) * 1000:.0f} ms")]
    for label, runs in zip(FIRST_REQUESTS[1:], samples[1:], strict=True):
        median = statistics.median(runs)
        extra = statistics.median(o - b for o, b in zip(runs, floor, strict=True))
        rows.append(
            (
                f"first request: {label}",
                f"{median * 1000:.0f} ms ({median / statistics.median(floor):.2f}x the floor; "
                f"+{extra * 1000:.0f} ms, median of paired runs)",
            )
        )
    thin, through_sdk = statistics.median(samples[2]), statistics.median(samples[3])
    rows.append(("first request: run on sdk / run on http", f"{through_sdk / thin:.2f}x"))
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
