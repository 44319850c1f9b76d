"""The exit tail of `agentcli run` on a large git repository: from the fake Messages API
having sent the last answer to the process's exit, measured side by side in one run.

The repository has LARGE_FILES committed files (`BENCH_EXIT_FILES` overrides), a few modified
and untracked. Each `run` is one task: a text answer, or a `write_file` call then the answer
(whose end also ends the task's undo checkpoint). Compared, interleaved:
- `agentcli run` as installed (`python -m agentcli`: the process ends without the
  interpreter's teardown once the result is printed);
- the same command through `main(argv)`, which returns and so pays the teardown; both also
  with the SDK transport (`AGENTCLI_TRANSPORT=sdk`), whose modules make the teardown long;
- floors: `git status --porcelain` on the same repository (one look at the working copy, by
  git alone), and one `take_snapshot` in process, through the kept index and fresh.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from agentcli.testing.fake_api import FakeMessagesServer, stream_message, text, tool_use

LARGE_FILES = int(os.environ.get("BENCH_EXIT_FILES", "20000"))
REPEAT = 5
WITH_TEARDOWN = "import sys\nfrom agentcli.ui.entry import main\nsys.exit(main(sys.argv[1:]))\n"


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.email=bench@example.com", "-c", "user.name=bench", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
    )


def _repository(root: Path) -> Path:
    for n in range(LARGE_FILES):
        package = root / f"pkg{n // 1000}" / f"sub{(n // 50) % 20}"
        package.mkdir(parents=True, exist_ok=True)
        (package / f"m{n}.py").write_text(f"def f{n}():\n    return {n}\n" * 20)
    past = time.time() - 60
    for path in root.rglob("*.py"):
        os.utime(path, (past, past))
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "init")
    for n in range(10):
        (root / "pkg0" / "sub0" / f"m{n}.py").write_text(f"changed = {n}\n")
        (root / f"new{n}.txt").write_text(f"untracked {n}\n")
    return root


def _tail(argv: list[str], env: dict[str, str], cwd: Path, *, writes: bool) -> tuple[float, float]:
    """(time to first request, exit tail) in seconds for one `run`."""
    with FakeMessagesServer() as server:
        if writes:
            server.push(
                stream_message([tool_use("write_file", {"path": "out.txt", "content": "x"})])
            )
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
        first = None
        while len(server.requests) < (2 if writes else 1) and proc.poll() is None:
            if first is None and server.requests:
                first = time.perf_counter()
            time.sleep(0.001)
        answered = time.perf_counter()  # the fake server answers at once
        proc.wait(timeout=120)
        ended = time.perf_counter()
    (cwd / "out.txt").unlink(missing_ok=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{argv} exited {proc.returncode}")
    return (first or answered) - started, ended - answered


def run() -> list[tuple[str, str]]:
    with tempfile.TemporaryDirectory(prefix="agentcli-bench-exit-") as tmp:
        for name in ("home", "pycache"):
            (Path(tmp) / name).mkdir()
        env = {
            **os.environ,
            "AGENTCLI_HOME": str(Path(tmp) / "home"),
            "ANTHROPIC_API_KEY": "bench",
            "NO_COLOR": "1",
            "PYTHONPYCACHEPREFIX": str(Path(tmp) / "pycache"),
        }
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        return _measure(_repository(Path(tmp) / "repo"), env)


def _measure(root: Path, env: dict[str, str]) -> list[tuple[str, str]]:
    base = [sys.executable, "-m", "agentcli"]
    teardown = [sys.executable, "-c", WITH_TEARDOWN]
    args = ["run", "--permission-mode", "yolo", "do it"]
    sdk = {"AGENTCLI_TRANSPORT": "sdk"}
    cases: dict[str, tuple[list[str], bool, dict[str, str]]] = {
        "text answer": (base, False, {}),
        "write_file, then the answer": (base, True, {}),
        "text answer, with the interpreter's teardown": (teardown, False, {}),
        "text answer, SDK transport": (base, False, sdk),
        "text answer, SDK transport, with the teardown": (teardown, False, sdk),
    }
    tails: dict[str, list[float]] = {name: [] for name in cases}
    firsts: dict[str, list[float]] = {name: [] for name in cases}
    status: list[float] = []
    for attempt in range(REPEAT + 1):  # interleaved; the first round warms the caches
        for name, (argv, writes, extra) in cases.items():
            first, tail = _tail([*argv, *args], {**env, **extra}, root, writes=writes)
            if attempt:
                firsts[name].append(first)
                tails[name].append(tail)
        started = time.perf_counter()
        subprocess.run(["git", "status", "--porcelain"], cwd=root, capture_output=True)
        if attempt:
            status.append(time.perf_counter() - started)
    rows = []
    floor = statistics.median(status)
    for name in cases:
        tail = statistics.median(tails[name])
        rows.append(
            (
                f"exit tail, {LARGE_FILES} files: {name}",
                f"median {tail * 1e3:.0f} ms ({tail / floor:.1f}x git status); first request "
                f"at {statistics.median(firsts[name]) * 1e3:.0f} ms",
            )
        )
    rows.append((f"git status --porcelain, {LARGE_FILES} files", f"median {floor * 1e3:.0f} ms"))
    rows += _snapshots(root, env)
    return rows


def _snapshots(root: Path, env: dict[str, str]) -> list[tuple[str, str]]:
    from agentcli.owngit import find_repo
    from agentcli.owngit.index import fresh_tree
    from agentcli.snapshots import take_snapshot

    saved = os.environ.get("AGENTCLI_HOME")
    os.environ["AGENTCLI_HOME"] = env["AGENTCLI_HOME"]
    try:
        repo = find_repo(root)
        assert repo is not None
        git_dir = root / ".git"
        samples: dict[str, list[float]] = {"kept": [], "fresh": []}
        for attempt in range(REPEAT + 1):
            for name, action in (
                ("kept", lambda: take_snapshot(root, repo)),
                ("fresh", lambda: fresh_tree(repo.run, git_dir / "index", git_dir)),
            ):
                started = time.perf_counter()
                action()
                if attempt:
                    samples[name].append(time.perf_counter() - started)
    finally:
        if saved is None:
            os.environ.pop("AGENTCLI_HOME", None)
        else:
            os.environ["AGENTCLI_HOME"] = saved
    kept, fresh = (statistics.median(samples[k]) * 1e3 for k in ("kept", "fresh"))
    return [
        (
            f"take_snapshot in process, {LARGE_FILES} files",
            f"median {kept:.0f} ms through the kept index, {fresh:.0f} ms fresh",
        )
    ]


if __name__ == "__main__":
    for name, value in run():
        print(f"{name:60} {value}")
