"""Start-up and time to first request, measured side by side in one run.

- `agentcli --version` / `--help` / `sessions list` / `doctor` vs `python -c pass`
- time to first request: `agentcli run` vs a minimal script that imports the SDK and sends one
  streaming request, both against the same local fake Messages API server.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from agentcli.testing.fake_api import FakeMessagesServer, stream_message, text

REPEAT = 5

MINIMAL_SDK_SCRIPT = """
import anthropic, os
client = anthropic.Anthropic(max_retries=0)
with client.messages.stream(model="claude-sonnet-4-5", max_tokens=10,
                            messages=[{"role": "user", "content": "hi"}]) as s:
    for _ in s:
        pass
"""


def _median_wall(argv: list[str], env: dict[str, str], cwd: str) -> float:
    times = []
    for _ in range(REPEAT):
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
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def _time_to_first_request(argv: list[str], env: dict[str, str], cwd: str) -> float:
    """Median seconds from process start until the fake server sees the request."""
    samples = []
    for _ in range(REPEAT):
        with FakeMessagesServer() as server:
            server.push(stream_message([text("ok")]))
            seen = threading.Event()
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
            if server.requests:
                seen.set()
            samples.append(time.perf_counter() - started)
            proc.wait(timeout=30)
    return statistics.median(samples)


def run() -> list[tuple[str, str]]:
    cwd = tempfile.mkdtemp(prefix="agentcli-bench-")
    home = tempfile.mkdtemp(prefix="agentcli-home-")
    env = {**os.environ, "AGENTCLI_HOME": home, "ANTHROPIC_API_KEY": "bench", "NO_COLOR": "1"}
    python = sys.executable
    agentcli = [python, "-m", "agentcli"]
    script = Path(sys.executable).with_name("agentcli")
    if script.exists():
        agentcli = [str(script)]
    baseline = _median_wall([python, "-c", "pass"], env, cwd)
    rows = [("python -c pass", f"{baseline * 1000:.0f} ms")]
    for label, args in (
        ("--version", ["--version"]),
        ("--help", ["--help"]),
        ("sessions list", ["sessions", "list"]),
        ("doctor", ["doctor"]),
    ):
        wall = _median_wall([*agentcli, *args], env, cwd)
        rows.append((f"agentcli {label}", f"{wall * 1000:.0f} ms ({wall / baseline:.1f}x)"))
    sdk = _time_to_first_request([python, "-c", MINIMAL_SDK_SCRIPT], env, cwd)
    ours = _time_to_first_request([*agentcli, "run", "hi"], env, cwd)
    rows.append(("first request: bare SDK script", f"{sdk * 1000:.0f} ms"))
    rows.append(
        (
            "first request: agentcli run",
            f"{ours * 1000:.0f} ms ({ours / sdk:.2f}x, +{(ours - sdk) * 1000:.0f} ms)",
        )
    )
    return rows


if __name__ == "__main__":
    for name, value in run():
        print(f"{name:40} {value}")
