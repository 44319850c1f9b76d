"""REPL start-up, measured in a pseudo-terminal, side by side with what it hides.

- prompt ready: process start until the prompt is on screen (target ≤ 0.6 s), next to
  `python -c pass` and a bare `import anthropic` (the cost the REPL moves to the background);
- keystroke echo while the SDK loads in the background (the prompt must stay responsive);
- first request: Enter to the fake server seeing the request, typed at once (the SDK is still
  loading) and typed after the background load had time to finish.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pexpect

from agentcli.testing.fake_api import FakeMessagesServer, stream_message, text

REPEAT = 5
PROMPT = "❯"
SDK_SETTLE_S = 8.0


def _spawn(env: dict[str, str], cwd: str) -> tuple[pexpect.spawn, float]:
    started = time.perf_counter()
    child = pexpect.spawn(
        sys.executable,
        ["-m", "agentcli"],
        cwd=cwd,
        env=env,
        dimensions=(24, 80),
        encoding="utf-8",
        codec_errors="replace",
        timeout=60,
    )
    child.delaybeforesend = None  # pexpect sleeps 50 ms before each send by default
    return child, started


def _close(child: pexpect.spawn) -> None:
    child.sendcontrol("d")
    child.expect(pexpect.EOF)
    child.close()


def _wait_for_request(server: FakeMessagesServer, timeout: float = 60.0) -> float:
    deadline = time.perf_counter() + timeout
    while not server.requests:
        if time.perf_counter() > deadline:
            raise RuntimeError("the REPL never sent the request")
        time.sleep(0.002)
    return time.perf_counter()


def _prompt_and_echo(env: dict[str, str], cwd: str) -> tuple[float, float]:
    child, started = _spawn(env, cwd)
    child.expect_exact(PROMPT)
    ready = time.perf_counter() - started
    sent = time.perf_counter()
    child.send("z")
    child.expect_exact("z")
    echo = time.perf_counter() - sent
    child.sendcontrol("c")  # clears the line, so that Ctrl-D means exit
    _close(child)
    return ready, echo


def _first_request(env: dict[str, str], cwd: str, settle_s: float) -> float:
    with FakeMessagesServer() as server:
        server.push(stream_message([text("ok")]))
        child, _ = _spawn({**env, "ANTHROPIC_BASE_URL": server.base_url}, cwd)
        child.expect_exact(PROMPT)
        if settle_s:
            time.sleep(settle_s)  # let the background import finish, as a user's typing would
        sent = time.perf_counter()
        child.send("hi\r")
        seen = _wait_for_request(server)
        child.expect_exact("task ")
        child.expect_exact(PROMPT)
        _close(child)
        return seen - sent


def _median_wall(argv: list[str], env: dict[str, str], cwd: str) -> float:
    samples = []
    for _ in range(REPEAT):
        started = time.perf_counter()
        subprocess.run(argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL, check=False)
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


def run() -> list[tuple[str, str]]:
    cwd = tempfile.mkdtemp(prefix="agentcli-bench-")
    home = tempfile.mkdtemp(prefix="agentcli-home-")
    env = {
        **os.environ,
        "AGENTCLI_HOME": home,
        "ANTHROPIC_API_KEY": "bench",
        "TERM": "xterm-256color",
        "PROMPT_TOOLKIT_NO_CPR": "1",  # pexpect cannot answer cursor-position requests
    }
    baseline = _median_wall([sys.executable, "-c", "pass"], env, cwd)
    sdk = _median_wall([sys.executable, "-c", "import anthropic"], env, cwd)
    samples = [_prompt_and_echo(env, cwd) for _ in range(REPEAT)]
    ready = statistics.median(s[0] for s in samples)
    echo = statistics.median(s[1] for s in samples)
    at_once = statistics.median(_first_request(env, cwd, 0.0) for _ in range(3))
    settled = statistics.median(_first_request(env, cwd, SDK_SETTLE_S) for _ in range(3))
    verdict = "ok" if ready <= 0.6 else "over the 0.6 s target"
    return [
        ("python -c pass", f"{baseline * 1000:.0f} ms"),
        ("python -c 'import anthropic'", f"{sdk * 1000:.0f} ms"),
        ("repl: prompt ready", f"{ready * 1000:.0f} ms ({verdict}; {ready / sdk:.2f}x the SDK)"),
        ("repl: key echo while the SDK loads", f"{echo * 1000:.0f} ms"),
        ("repl: first request, typed at once", f"{at_once * 1000:.0f} ms after Enter"),
        ("repl: first request, SDK preloaded", f"{settled * 1000:.0f} ms after Enter"),
    ]


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    for name, value in run():
        print(f"{name:40} {value}")
