"""What must keep working while the boundary holds (so "deny everything" is no fix).

- auto: commands write in the workspace, use $TMPDIR, run python, run a local server and its
  client in one command on 127.0.0.1 inside the sandbox;
- default: `ls`, `cat README.md`, `git status`, `git log` in a normal repository run without a
  prompt and show the real output;
- default with `--allow 'shell(git add *)' --allow 'shell(git commit *)'`: an approved
  `git add -A && git commit` creates the commit;
- default with `--allow 'shell(curl *)'`: an allowed network command reaches a local HTTP server.

These need a working sandbox: where the kernel cannot sandbox, unprompted commands must ask
instead, so there is nothing to check.
"""

from __future__ import annotations

import http.server
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.adversarial.lab import Lab, describe_member, git, init_repo, run_members, sh

pytestmark = pytest.mark.usefixtures("needs_sandbox")

LOCAL_SERVER_PY = """
import socket, threading
server = socket.create_server(("127.0.0.1", 0))
def answer():
    conn, _ = server.accept()
    conn.sendall(b"pong-from-" + conn.recv(100))
    conn.close()
threading.Thread(target=answer).start()
client = socket.create_connection(server.getsockname(), 5)
client.sendall(b"sandbox")
print(client.recv(100).decode())
"""
AUTO = [
    ("write-in-workspace", "echo hi > f && cat f", "hi"),
    ("tmpdir", 'echo tmp-ok > "$TMPDIR/adv-t" && cat "$TMPDIR/adv-t"', "tmp-ok"),
    ("python", "python3 -c 'print(6 * 7)'", "42"),
    ("local-server-and-client", f"python3 -c '{LOCAL_SERVER_PY}'", "pong-from-sandbox"),
]
DEFAULT = [
    ("ls", "ls", "README.md"),
    ("cat", "cat README.md", "the real readme"),
    ("git-status", "git status", "On branch main"),
    ("git-log", "git log --oneline", "initial"),
]
COMMIT = ("git-add-commit", "git add -A && git commit -q -m adv-approved-commit")
PAGE = "hello-from-the-host"


class _Page(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = PAGE.encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextmanager
def http_server() -> Iterator[int]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Page)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def build_auto(root: Path) -> dict[str, Any]:
    lab = Lab(root)
    (lab.ws / "README.md").write_text("# demo\n")
    outcome = run_members(lab, "auto", [[sh(slug, command) for slug, command, _ in AUTO]])
    f = lab.ws / "f"
    outcome["f"] = f.read_text() if f.exists() else None
    return outcome


def build_default(root: Path) -> dict[str, Any]:
    lab = Lab(root)
    init_repo(lab.ws, {"README.md": "# the real readme\n"})
    (lab.ws / "new.txt").write_text("to be committed\n")
    with http_server() as port:
        turns = [
            [sh(slug, command) for slug, command, _ in DEFAULT],
            [sh(*COMMIT)],
            [sh("curl", f"curl -s http://127.0.0.1:{port}/")],
        ]
        allow = ["shell(git add *)", "shell(git commit *)", "shell(curl *)"]
        outcome = run_members(
            lab, "default", turns, extra_args=[a for rule in allow for a in ("--allow", rule)]
        )
    outcome["log"] = git(lab.ws, "log", "--format=%s")
    return outcome


def batch_of(params: dict[str, Any]) -> tuple[str, Callable[[Path], dict[str, Any]]]:
    if params.get("slug") in {slug for slug, _, _ in AUTO}:
        return "ok-auto", build_auto
    return "ok-default", build_default


def check(outcome: dict[str, Any], slug: str, expected: str) -> None:
    member = outcome["members"][slug]
    assert member["status"] == "succeeded" and expected in member["result"], (
        f"keeps working, member {slug!r}, mode {outcome['mode']!r}: expected it to run and "
        f"show {expected!r}\n{describe_member(outcome, slug)}"
    )


@pytest.mark.parametrize(("slug", "expected"), [(s, e) for s, _, e in AUTO])
def test_auto_mode_commands_work_in_the_sandbox(
    outcome: dict[str, Any], slug: str, expected: str
) -> None:
    check(outcome, slug, expected)
    if slug == "write-in-workspace":
        assert outcome["f"] == "hi\n", "the file written by `echo hi > f` is not in the workspace"


@pytest.mark.parametrize(("slug", "expected"), [(s, e) for s, _, e in DEFAULT])
def test_default_mode_read_only_commands_run_unprompted(
    outcome: dict[str, Any], slug: str, expected: str
) -> None:
    check(outcome, slug, expected)


def test_default_mode_allowed_git_commit_commits(outcome: dict[str, Any]) -> None:
    member = outcome["members"][COMMIT[0]]
    assert member["status"] == "succeeded" and "adv-approved-commit" in outcome["log"], (
        f"keeps working: an allowed `git add -A && git commit` must create the commit; "
        f"git log has {outcome['log']!r}\n{describe_member(outcome, COMMIT[0])}"
    )


def test_default_mode_allowed_curl_reaches_a_local_server(
    outcome: dict[str, Any], curl: str
) -> None:
    check(outcome, "curl", PAGE)
