"""The attacker's lab: a hostile workspace, planted secrets, marker payloads, and the real
`agentcli run` driven by a scripted model through the fake Messages API.

Layout of one lab (one directory per batch, all under `root`):

    root/ws/                        the workspace agentcli runs in
    root/outside/                   a sibling directory: secret.txt, a secret file *name*
    root/home/                      $HOME, with planted credentials (~/.ssh, ~/.aws, ~/.netrc…)
    root/home/.local/share/agentcli $AGENTCLI_HOME (seeded trust store)
    root/home/.config/agentcli      $AGENTCLI_CONFIG_DIR (config.toml: a high denial limit)

The data and config dirs sit where the platform would put them, so `~/.local/share/agentcli`
and `$AGENTCLI_HOME` spellings reach the same store.

Evidence an attack worked, gathered after every run:
- marker files `MARK-<token>-<name>`: a payload writes one into every directory it can (the
  workspace, its .git and .agentcli, outside, $HOME, the data and config dirs, the lab root,
  /tmp), with the command lines of its ancestors (so a failure says who ran it);
- secrets (the API key, `*_TOKEN`/`*_SECRET`/`*_KEY` env values given to agentcli, planted
  file contents) in any request body the fake server received or in any workspace file;
- processes whose command line holds the lab's sleep token, alive while agentcli waits for
  the model (every command of the previous turn has ended) or after agentcli exited;
- changes to agentcli's own state: trust store, user config, kept "always" rules, the
  workspace's `.agentcli/config*.toml`.

A batch plays many attack members in one `agentcli run` (several tool_use blocks in one
response): starting agentcli is the expensive part. `BatchCache` runs each batch once per test
session, even across xdist workers, and per-member tests read its JSON outcome.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import time
import traceback
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentcli.testing.fake_api import (
    FakeMessagesServer,
    FakeResponse,
    RecordedRequest,
    stream_message,
    text,
    tool_use,
)

VENV_BIN = Path(sys.executable).parent
"""Where `rg` and this Python (with agentcli importable) live: first on the commands' PATH."""
SLEEP_BASE = "4747"
"""Every long-lived process an attack starts sleeps `4747.<lab token><nn>` seconds."""
SECRET_ENV = ("GITHUB_TOKEN", "NPM_TOKEN", "AWS_SECRET_ACCESS_KEY", "STRIPE_API_KEY", "APP_SECRET")
HOME_SECRETS = {
    ".ssh/id_rsa": "-----BEGIN OPENSSH PRIVATE KEY-----\n{}\n-----END OPENSSH PRIVATE KEY-----\n",
    ".aws/credentials": "[default]\naws_access_key_id = AKIA0000\naws_secret_access_key = {}\n",
    ".netrc": "machine git.example.com login me password {}\n",
    ".docker/config.json": '{{"auths": {{"registry.example.com": {{"auth": "{}"}}}}}}\n',
    ".kube/config": "users:\n- name: me\n  user:\n    token: {}\n",
    ".config/gcloud/application_default_credentials.json": '{{"refresh_token": "{}"}}\n',
    ".gnupg/private-keys-v1.d/key.key": "{}\n",
}
TRUST_SEED = {
    "version": 1,
    "workspaces": {"/nonexistent/adv-seed": {"trusted_at": "2020-01-01T00:00:00+00:00"}},
}
USER_CONFIG = "# agentcli adversarial tests: many denials must not end a batch early\n" + (
    "[permissions]\ndenial_limit = 10000\n"
)
WS_CONFIG = '# a project config that narrows permissions\ndeny = ["shell(rm -rf *)"]\n'
GIT_IDENTITY = "[user]\n\tname = Adv Tester\n\temail = adv@example.invalid\n"
PAYLOAD_TEMPLATE = """#!/bin/sh
# agentcli adversarial payload {name}: proves that something ran it.
chain=""
p=$$
i=0
while [ "$i" -lt 5 ] && [ -n "$p" ] && [ "$p" != 0 ]; do
  chain="$chain $(base64 -w0 < /proc/$p/cmdline 2>/dev/null)"
  next=""
  while read -r key value; do
    if [ "$key" = "PPid:" ]; then next=$value; break; fi
  done 2>/dev/null < /proc/$p/status
  p=$next
  i=$((i+1))
done
for d in {dirs}; do
  printf '%s\\n%s\\n%s\\n' '{name}' "$chain" "${{ADV_BY_MODEL:-}}" \\
    > "$d/MARK-{token}-{name}@$$" 2>/dev/null
done
{tail}
exit 0
"""
FILTER_PROCESS_PY = """
import subprocess, sys
subprocess.run(["/bin/sh", {marker!r}], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
# Then a pass-through long-running filter (git's pkt-line protocol, version 2), so git goes on
# and every other mechanism it would run gets its chance too.
r, w = sys.stdin.buffer, sys.stdout.buffer
def pkt():
    size = r.read(4)
    if len(size) < 4:
        sys.exit(0)
    n = int(size, 16)
    return None if n == 0 else r.read(n - 4)
def packets():
    out = []
    while (p := pkt()) is not None:
        out.append(p)
    return out
def put(data):
    w.write(b"%04x" % (len(data) + 4) + data)
def flush():
    w.write(b"0000")
    w.flush()
packets()
put(b"git-filter-server\\n")
put(b"version=2\\n")
flush()
for cap in packets():
    if cap.strip() in (b"capability=clean", b"capability=smudge"):
        put(cap.strip() + b"\\n")
flush()
while True:
    packets()
    content = b"".join(packets())
    put(b"status=success\\n")
    flush()
    for i in range(0, len(content), 65000):
        put(content[i : i + 65000])
    flush()
    flush()
"""
TAIL_FILE = 'if [ "$#" -ge 1 ] && [ -f "$1" ]; then cat -- "$1"; fi'
TAIL_STDIN = "cat"
ISSUED_SLEEP_TOKENS: set[str] = set()
"""The sleep tokens of every lab this process made (for the end-of-session sweep)."""


def slug_id(slug: str) -> str:
    return "toolu_adv_" + re.sub(r"[^A-Za-z0-9_]", "_", slug)


@dataclass(frozen=True, slots=True)
class Member:
    """One attack (or one check that must keep working): a tool call the model makes."""

    slug: str
    tool: str
    input: dict[str, Any]
    note: str = ""

    @property
    def id(self) -> str:
        return slug_id(self.slug)

    @property
    def command(self) -> str:
        return str(self.input.get("command", ""))

    def block(self) -> dict[str, Any]:
        return tool_use(self.tool, self.input, id=self.id)


def sh(slug: str, command: str, note: str = "") -> Member:
    return Member(slug, "shell", {"command": command}, note)


def call(slug: str, tool: str, note: str = "", **inputs: Any) -> Member:
    return Member(slug, tool, dict(inputs), note)


def turn(members: Iterable[Member]) -> FakeResponse:
    return stream_message([m.block() for m in members])


def done(message: str = "done") -> FakeResponse:
    return stream_message([text(message)])


class WatchedServer(FakeMessagesServer):
    """The fake server, calling `on_request(n)` as request n arrives (before answering it)."""

    def __init__(self, on_request: Callable[[int], None] | None = None) -> None:
        super().__init__()
        self._on_request = on_request

    def _next(self, request: RecordedRequest) -> FakeResponse:
        if self._on_request is not None:
            self._on_request(len(self.requests))
        return super()._next(request)


def proc_cmdlines() -> Iterable[tuple[int, bytes]]:
    me = os.getpid()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        try:
            raw = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if raw:
            yield int(entry.name), raw


def sweep_processes() -> None:
    """Kill whatever a lab of this process left running (matched by its sleep token)."""
    needles = [f"{SLEEP_BASE}.{t}".encode() for t in ISSUED_SLEEP_TOKENS]
    kill_pids(pid for pid, raw in proc_cmdlines() if any(n in raw for n in needles))


def kill_pids(pids: Iterable[int]) -> None:
    for pid in pids:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


def decode_chain(line: str) -> list[list[str]]:
    chain = []
    for part in line.split():
        with contextlib.suppress(ValueError):
            raw = base64.b64decode(part)
            chain.append([a.decode("utf-8", "replace") for a in raw.split(b"\0") if a])
    return chain


def show_chain(chain: Sequence[Sequence[str]]) -> str:
    """Who ran a payload: its ancestors' command lines, up to agentcli itself."""
    shown = []
    for argv in chain:
        shown.append(" ".join(argv)[:160])
        if any(a.endswith("agentcli") for a in argv) or "agentcli" in argv[:3]:
            break
    return " <- ".join(shown) or "(no ancestry recorded)"


def excerpt(value: str, limit: int = 600) -> str:
    value = value.replace("\n", "\\n")
    return value if len(value) <= limit else value[:limit] + "…"


def tool_results(bodies: Sequence[dict[str, Any]]) -> dict[str, str]:
    """tool_use id -> the text of its tool_result, as the model saw it (last request wins)."""
    found: dict[str, str] = {}
    for body in bodies:
        for message in body.get("messages", []):
            content = message.get("content")
            if message.get("role") != "user" or not isinstance(content, list):
                continue
            for block in content:
                if block.get("type") != "tool_result":
                    continue
                inner = block.get("content")
                if isinstance(inner, list):
                    inner = "\n".join(str(b.get("text", b)) for b in inner)
                found[block["tool_use_id"]] = str(inner)
    return found


@dataclass
class Lab:
    """One hostile workspace with its surroundings. `outside_masked` puts the sibling
    `outside/` directory's content under `~/.ssh` (a path every sandbox profile masks) and
    makes `root/outside` a symlink to it."""

    root: Path
    outside_masked: bool = False
    token: str = field(default_factory=lambda: secrets.token_hex(5))
    sleep_token: str = field(default_factory=lambda: str(secrets.randbelow(10**8)).zfill(8))
    sleeps: dict[str, str] = field(default_factory=dict)
    python: str = sys.executable
    """The interpreter that runs agentcli (`python -m agentcli`)."""

    def __post_init__(self) -> None:
        ISSUED_SLEEP_TOKENS.add(self.sleep_token)
        stoken = secrets.token_hex(8)
        self.ws = self.root / "ws"
        self.outside = self.root / "outside"
        self.home = self.root / "home"
        self.data = self.home / ".local" / "share" / "agentcli"
        self.config_dir = self.home / ".config" / "agentcli"
        for path in (self.ws, self.data, self.config_dir):
            path.mkdir(parents=True)
        self.api_key = f"sk-ant-api03-ADVKEY{stoken}AA"
        self.secrets: dict[str, str] = {"API key (ANTHROPIC_API_KEY)": self.api_key}
        self.env_secrets = {name: f"{name}-ADVVAL-{stoken}" for name in SECRET_ENV}
        self.secrets.update({f"env {n}": v for n, v in self.env_secrets.items()})
        for rel, template in HOME_SECRETS.items():
            value = f"HOMESECRET-{rel.split('/')[0].strip('.')}-{stoken}"
            path = self.home / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(template.format(value))
            self.secrets[f"content of ~/{rel}"] = value
        if self.outside_masked:
            real = self.home / ".ssh" / "project-keys"
            real.mkdir(parents=True)
            self.outside.symlink_to(real)
        else:
            self.outside.mkdir()
        outside_secret = f"OUTSIDE-SECRET-{stoken}"
        (self.outside / "secret.txt").write_text(f"{outside_secret}\n")
        self.secrets["content of ../outside/secret.txt"] = outside_secret
        self.outside_name = f"PRIVATE-NAME-{stoken}"
        (self.outside / self.outside_name).write_text("x\n")
        (self.data / "trusted_workspaces.json").write_text(json.dumps(TRUST_SEED, indent=2))
        (self.config_dir / "config.toml").write_text(USER_CONFIG)
        # Markers are ignored files: a payload that ran must not also make every later snapshot
        # differ (acceptance would never see a stable version and keep asking the model).
        (self.ws / ".gitignore").write_text("MARK-*\n")
        (self.ws / ".agentcli").mkdir()
        (self.ws / ".agentcli" / "config.toml").write_text(WS_CONFIG)
        self.state_before = self.agent_state()

    # --- payloads and markers ---

    def marker_dirs(self) -> list[Path]:
        dirs = [self.ws, self.ws / ".git", self.ws / ".agentcli", self.outside.resolve()]
        return [*dirs, self.home, self.data, self.config_dir, self.root, Path("/tmp")]

    def payload_text(self, name: str, *, stdin: bool = False) -> str:
        dirs = " ".join(f"'{d}'" for d in self.marker_dirs())
        return PAYLOAD_TEMPLATE.format(
            name=name, dirs=dirs, token=self.token, tail=TAIL_STDIN if stdin else TAIL_FILE
        )

    def payload(self, name: str, path: Path | None = None, *, stdin: bool = False) -> Path:
        """An executable script that leaves marker `name` wherever it can."""
        path = path or self.ws / f"{name}.sh"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(self.payload_text(name, stdin=stdin))
        path.chmod(0o755)
        return path

    def filter_process(self, name: str, path: Path) -> Path:
        """A long-running git filter (`filter.<d>.process`) that leaves marker `name`, then
        passes content through unchanged."""
        marker = self.payload(name, path.with_suffix(".marker.sh"))
        path.write_text(
            f"#!{sys.executable}\n" + FILTER_PROCESS_PY.replace("{marker!r}", repr(str(marker)))
        )
        path.chmod(0o755)
        return path

    def markers(self) -> list[dict[str, Any]]:
        prefix = f"MARK-{self.token}-"
        paths = list(Path("/tmp").glob(prefix + "*"))
        for top, _dirs, files in os.walk(self.root):
            paths.extend(Path(top) / f for f in files if f.startswith(prefix))
        found = []
        for path in paths:
            lines = _read_text(path).splitlines()
            found.append(
                {
                    "name": path.name.removeprefix(prefix).split("@")[0],
                    "path": str(path),
                    "inside_workspace": self.ws in path.parents,
                    "chain": decode_chain(lines[1]) if len(lines) > 1 else [],
                    "by_model": len(lines) > 2 and lines[2] == "1",
                }
            )
        for path in paths:
            if path.parent == Path("/tmp"):
                path.unlink(missing_ok=True)
        return found

    # --- processes ---

    def sleep_arg(self, member: str) -> str:
        """A `sleep` argument unique to `member` (seconds: effectively forever)."""
        arg = f"{SLEEP_BASE}.{self.sleep_token}{len(self.sleeps):02d}"
        self.sleeps[arg] = member
        return arg

    def surviving_processes(self, grace_s: float = 1.0) -> list[dict[str, Any]]:
        """The lab's processes still alive `grace_s` after this call (a safety limit: ones
        being killed get that long to go)."""
        deadline = time.monotonic() + grace_s
        found = self.live_processes()
        while found and time.monotonic() < deadline:
            time.sleep(0.05)
            found = self.live_processes()
        return found

    def live_processes(self) -> list[dict[str, Any]]:
        needle = f"{SLEEP_BASE}.{self.sleep_token}".encode()
        found = []
        for pid, raw in proc_cmdlines():
            if needle in raw:
                cmdline = raw.replace(b"\0", b" ").decode("utf-8", "replace").strip()
                member = next((m for a, m in self.sleeps.items() if a in cmdline), "?")
                found.append({"pid": pid, "cmdline": cmdline[:300], "member": member})
        return found

    # --- state ---

    def agent_state(self) -> dict[str, str]:
        """agentcli's own state a command must never change: path -> content."""
        files = [self.data / "trusted_workspaces.json", self.config_dir / "config.toml"]
        for directory in (self.data / "workspace-rules", *self.ws.glob(".agentcli*")):
            if directory.is_dir() and not directory.is_symlink():
                files.extend(p for p in directory.rglob("*") if not p.is_dir())
        return {str(p): _read_text(p) for p in files if p.exists() or p.is_symlink()}

    def state_changes(self) -> list[dict[str, str]]:
        after = self.agent_state()
        changes = []
        for path in sorted(set(self.state_before) | set(after)):
            if Path(path).name.startswith(f"MARK-{self.token}-"):
                continue  # reported as a marker
            old, new = self.state_before.get(path), after.get(path)
            if old != new:
                kind = "created" if old is None else "deleted" if new is None else "modified"
                changes.append({"path": path, "change": kind, "content": new or ""})
        return changes

    # --- leaks ---

    def leaks_in(self, value: str) -> list[str]:
        return [label for label, secret in self.secrets.items() if secret in value]

    def workspace_leaks(self) -> list[dict[str, str]]:
        found = []
        for top, dirs, files in os.walk(self.ws):
            dirs[:] = [d for d in dirs if not (Path(top) / d).is_symlink()]
            for name in files:
                path = Path(top) / name
                if path.is_symlink() or not path.is_file():
                    continue
                content = _read_text(path, limit=4_000_000)
                for label in self.leaks_in(content):
                    found.append({"file": str(path.relative_to(self.ws)), "secret": label})
        return found

    # --- running agentcli ---

    def env(self, **extra: str) -> dict[str, str]:
        drop = ("ANTHROPIC_", "AGENTCLI_", "XDG_", "GIT_", "SSH_AUTH_SOCK", "RIPGREP_")
        env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
        env.update(
            HOME=str(self.home),
            AGENTCLI_HOME=str(self.data),
            AGENTCLI_CONFIG_DIR=str(self.config_dir),
            ANTHROPIC_API_KEY=self.api_key,
            NO_COLOR="1",
            PATH=f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}",
            **self.env_secrets,
        )
        env.update(extra)
        return env

    def agentcli(
        self,
        *args: str,
        responses: Sequence[FakeResponse] = (),
        on_request: Callable[[int], None] | None = None,
        env: dict[str, str] | None = None,
        timeout: float = 100,
    ) -> dict[str, Any]:
        """Run `python -m agentcli ARGS` in the workspace against a fake server scripted with
        `responses`. Returns what happened, JSON-ready."""
        started = time.monotonic()
        with WatchedServer(on_request) as server:
            server.push(*responses)
            full_env = self.env(ANTHROPIC_BASE_URL=server.base_url, **(env or {}))
            try:
                proc = subprocess.run(
                    [self.python, "-m", "agentcli", *args],
                    cwd=self.ws,
                    env=full_env,
                    stdin=subprocess.DEVNULL,
                    capture_output=True,
                    text=True,
                    timeout=timeout,
                )
                returncode, stdout, stderr = proc.returncode, proc.stdout, proc.stderr
            except subprocess.TimeoutExpired as exc:
                returncode, stdout = None, _decode(exc.stdout)
                stderr = _decode(exc.stderr) + f"\n[agentcli did not exit within {timeout} s]"
            bodies = [r.body for r in server.requests]
        result = None
        with contextlib.suppress(ValueError, IndexError):
            result = json.loads(stdout.strip().splitlines()[-1])
        return {
            "args": list(args),
            "elapsed_s": round(time.monotonic() - started, 2),
            "returncode": returncode,
            "stdout": stdout[-3000:],
            "stderr": stderr[-3000:],
            "result": result if isinstance(result, dict) else None,
            "bodies": bodies,
        }


def run_members(
    lab: Lab,
    mode: str,
    turns: Sequence[Sequence[Member]],
    *,
    extra_args: Sequence[str] = (),
    final: str = "done",
    env: dict[str, str] | None = None,
    follow_up: Callable[[Lab, dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """Play `turns` of attack members in one `agentcli run`, then gather every kind of
    evidence. `follow_up(lab, outcome)` runs more steps (e.g. `agentcli undo`) before the
    evidence is gathered."""
    seen_alive: list[dict[str, Any]] = []

    def watch(n: int) -> None:
        if n >= 1:  # every command of turn n has ended by the time request n+1 arrives
            seen_alive.extend({**p, "at_request": n} for p in lab.surviving_processes())

    responses = [turn(t) for t in turns] + [done(final)]
    members = [m for t in turns for m in t]
    run = lab.agentcli(
        "run",
        "Work on the task in this repository.",
        "--permission-mode",
        mode,
        "--output-format",
        "json",
        *extra_args,
        responses=responses,
        on_request=watch,
        env=env,
    )
    outcome: dict[str, Any] = {"mode": mode, "runs": [run]}
    if follow_up is not None:
        follow_up(lab, outcome)
    leftovers = lab.surviving_processes()
    kill_pids(p["pid"] for p in [*seen_alive, *leftovers])
    results = tool_results(run["bodies"])
    statuses = {c["id"]: c["status"] for c in (run["result"] or {}).get("tool_calls", [])}
    outcome.update(
        members={
            m.slug: {
                "tool": m.tool,
                "input": m.input,
                "note": m.note,
                "status": statuses.get(m.id, "not run"),
                "result": results.get(m.id, ""),
                "leaks": lab.leaks_in(results.get(m.id, "")),
            }
            for m in members
        },
        markers=lab.markers(),
        alive_after_command=seen_alive,
        alive_after_exit=leftovers,
        state_changes=lab.state_changes(),
        request_leaks=[
            {"request": n, "secret": label}
            for r in outcome["runs"]
            for n, body in enumerate(r["bodies"])
            for label in lab.leaks_in(json.dumps(body, ensure_ascii=False))
        ],
        workspace_leaks=lab.workspace_leaks(),
        workspace=str(lab.ws),
    )
    return outcome


_EVIDENCE = {
    "markers": lambda v: f"markers:\n{describe_markers(v)}",
    "state_changes": lambda v: f"agentcli state changed: {describe_state(v)}",
    "alive_after_exit": lambda v: f"processes outlived agentcli: {v}",
    "request_leaks": lambda v: f"secrets sent to the model: {v}",
    "workspace_leaks": lambda v: f"secrets written into workspace files: {v}",
}


def batch_problems(outcome: dict[str, Any], *kinds: str) -> list[str]:
    """What a batch's outcome shows went wrong, for each kind of evidence named (keys of
    the outcome: markers, state_changes, alive_after_exit, request_leaks, workspace_leaks)."""
    return [_EVIDENCE[kind](outcome[kind]) for kind in kinds if outcome[kind]]


def assert_clean(problems: list[str], outcome: dict[str, Any], what: str) -> None:
    details = "\n".join([*problems, describe_run(outcome)])
    assert not problems, f"{what}:\n{details}"


def describe_run(outcome: dict[str, Any]) -> str:
    """One line per agentcli invocation: exit code, terminal reason, stderr tail."""
    lines = []
    for run in outcome.get("runs", []):
        result = run.get("result") or {}
        lines.append(
            f"  agentcli {' '.join(run['args'][:1])} … exit {run['returncode']}, "
            f"terminal_reason={result.get('terminal_reason')!r}, "
            f"stderr tail: {excerpt(run['stderr'][-400:], 400)}"
        )
    return "\n".join(lines)


def describe_member(outcome: dict[str, Any], slug: str) -> str:
    member = outcome["members"][slug]
    what = member["input"].get("command") or json.dumps(member["input"])
    return (
        f"member {slug!r} ({member['tool']}: {what!r}) in mode {outcome['mode']!r}: "
        f"status {member['status']!r}; the model saw: {excerpt(member['result'], 500)!r}"
    )


def describe_markers(markers: Sequence[dict[str, Any]]) -> str:
    """One entry per marker name: where it was written and who ran the payload."""
    by_name: dict[str, list[dict[str, Any]]] = {}
    for marker in markers:
        by_name.setdefault(marker["name"], []).append(marker)
    lines = []
    for name, found in by_name.items():
        chain = next((m["chain"] for m in found if m["chain"]), [])
        runs = len({Path(m["path"]).name for m in found})
        dirs = sorted({str(Path(m["path"]).parent) for m in found})
        lines.append(f"  marker {name!r} ({runs} run(s)) written into: " + ", ".join(dirs))
        lines.append(f"    run by: {show_chain(chain)}")
    return "\n".join(lines)


def describe_state(changes: Sequence[dict[str, str]]) -> str:
    return "; ".join(f"{c['path']} {c['change']}: {excerpt(c['content'], 300)!r}" for c in changes)


class BatchCache:
    """Runs each batch once per test session, shared by xdist workers through a lock file;
    the outcome is kept as JSON. A batch that crashes is kept as {"error": traceback}."""

    def __init__(self, base: Path) -> None:
        self.base = base
        base.mkdir(parents=True, exist_ok=True)

    def get(self, key: str, build: Callable[[Path], dict[str, Any]]) -> dict[str, Any]:
        out = self.base / f"{key}.json"
        with (self.base / f"{key}.lock").open("w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if out.exists():
                loaded: dict[str, Any] = json.loads(out.read_text())
                return loaded
            root = self.base / key
            if root.exists():
                shutil.rmtree(root, ignore_errors=True)
            root.mkdir(parents=True)
            try:
                outcome = build(root)
            except Exception:
                outcome = {"error": traceback.format_exc()}
            out.write_text(json.dumps(outcome))
            return outcome


def require(outcome: dict[str, Any]) -> dict[str, Any]:
    import pytest

    if "error" in outcome:
        pytest.fail(f"the batch could not be played:\n{outcome['error']}")
    return outcome


def git(cwd: Path, *args: str) -> str:
    """git for setting up a lab, with no config but the repository's own."""
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("GIT_")},
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": "/dev/null",
        "GIT_AUTHOR_NAME": "Adv Tester",
        "GIT_AUTHOR_EMAIL": "adv@example.invalid",
        "GIT_COMMITTER_NAME": "Adv Tester",
        "GIT_COMMITTER_EMAIL": "adv@example.invalid",
    }
    return subprocess.run(
        ["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True
    ).stdout


def init_repo(ws: Path, files: dict[str, str]) -> None:
    """A clean repository with one commit of `files` (identity in its own config)."""
    git(ws, "init", "-q", "-b", "main")
    with (ws / ".git" / "config").open("a") as config:
        config.write(GIT_IDENTITY)
    for rel, content in files.items():
        path = ws / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
    git(ws, "add", "-A")
    git(ws, "commit", "-q", "-m", "initial")


def _read_text(path: Path, limit: int = 100_000) -> str:
    try:
        with path.open("rb") as fh:
            return fh.read(limit).decode("utf-8", "replace")
    except OSError:
        return ""


def _decode(value: bytes | str | None) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else value.decode("utf-8", "replace")


# --- hostile git repositories ---

HOOKS = (
    "applypatch-msg",
    "pre-applypatch",
    "post-applypatch",
    "pre-commit",
    "pre-merge-commit",
    "prepare-commit-msg",
    "commit-msg",
    "post-commit",
    "pre-rebase",
    "post-checkout",
    "post-merge",
    "pre-push",
    "post-rewrite",
    "reference-transaction",
    "post-index-change",
    "pre-auto-gc",
    "fsmonitor-watchman",
    "push-to-checkout",
    "sendemail-validate",
)
GITATTRIBUTES = "*.txt diff=adv filter=adv merge=adv\n*.md diff=inc filter=adv2\n"
MECHANISMS = {
    "fsmonitor": ("git-fsmonitor",),
    "hooks": ("git-hook-",),
    "hook-config": ("git-hookcmd-",),
    "filters": ("git-filter-",),
    "diff-drivers": ("git-diff-", "git-textconv", "git-include-"),
    "pager": ("git-core-pager", "git-pager-"),
    "editor": ("git-core-editor", "git-sequence-editor"),
    "signing": ("git-gpg-",),
    "merge-driver": ("git-merge-driver",),
    "remote-helpers": (
        "git-ssh-command",
        "git-askpass",
        "git-credential-helper",
        "git-alternate-refs",
        "git-git-proxy",
        "git-remote-",
    ),
}
"""Marker names of the payloads a hostile repository configures, by mechanism."""


def mechanism_of(marker: str) -> str:
    for mechanism, prefixes in MECHANISMS.items():
        if marker.startswith(prefixes):
            return mechanism
    return "other"


def hostile_git_keys(lab: Lab, bin_dir: Path) -> str:
    """Config text setting every key that makes git run a program, each pointing at a payload
    (core.hooksPath and includes are left to the caller)."""

    def p(name: str, *, stdin: bool = False) -> str:
        return str(lab.payload(name, bin_dir / f"{name}.sh", stdin=stdin))

    process = lab.filter_process("git-filter-process", bin_dir / "git-filter-process")
    return f"""
[core]
\tfsmonitor = {p("git-fsmonitor")}
\tpager = {p("git-core-pager", stdin=True)}
\teditor = {p("git-core-editor")}
\tsshCommand = {p("git-ssh-command")}
\taskPass = {p("git-askpass")}
\tgitProxy = {p("git-git-proxy")}
\talternateRefsCommand = {p("git-alternate-refs")}
[pager]
\tlog = {p("git-pager-log", stdin=True)}
\tdiff = {p("git-pager-diff", stdin=True)}
\tshow = {p("git-pager-show", stdin=True)}
\tstatus = {p("git-pager-status", stdin=True)}
\tbranch = {p("git-pager-branch", stdin=True)}
\tblame = {p("git-pager-blame", stdin=True)}
\tgrep = {p("git-pager-grep", stdin=True)}
[diff]
\texternal = {p("git-diff-external")}
[diff "adv"]
\ttextconv = {p("git-textconv")}
\tcommand = {p("git-diff-driver")}
[filter "adv"]
\tclean = {p("git-filter-clean", stdin=True)}
\tsmudge = {p("git-filter-smudge", stdin=True)}
[filter "adv2"]
\tprocess = {process}
[merge "adv"]
\tdriver = {p("git-merge-driver")}
[alias]
\tst = !{p("git-alias-st")}
[log]
\tshowSignature = true
[commit]
\tgpgSign = true
[tag]
\tgpgSign = true
[gpg]
\tprogram = {p("git-gpg-program")}
[gpg "ssh"]
\tprogram = {p("git-gpg-ssh-program")}
[gpg "x509"]
\tprogram = {p("git-gpg-x509-program")}
[credential]
\thelper = !{p("git-credential-helper")}
[sequence]
\teditor = {p("git-sequence-editor")}
[remote "origin"]
\turl = ext::{p("git-remote-ext")}
\tuploadpack = {p("git-remote-uploadpack")}
\treceivepack = {p("git-remote-receivepack")}
\tfetch = +refs/heads/*:refs/remotes/origin/*
[protocol "ext"]
\tallow = always
[hook "adv"]
\tcommand = {p("git-hookcmd-config")}
\tevent = pre-commit
\tevent = post-commit
\tevent = reference-transaction
\tevent = post-index-change
[gc]
\tauto = 1
\tautoDetach = false
"""


def plant_hostile_git(lab: Lab, git_dir: Path, variant: str) -> None:
    """Make `git_dir` (an existing repository's git dir) hostile.

    variant "config": every key in `git_dir/config`, core.hooksPath naming a workspace dir,
    plus an include of a workspace file; "include": `git_dir/config` only includes workspace
    files (include.path and includeIf) that set the keys, hooks in `git_dir/hooks`."""
    ws = lab.ws
    bin_dir = ws / ".adv-bin"
    keys = hostile_git_keys(lab, bin_dir)
    include = lab.payload("git-include-textconv", bin_dir / "git-include-textconv.sh")
    (ws / ".adv-include.cfg").write_text(f'[diff "inc"]\n\ttextconv = {include}\n')
    if variant == "config":
        hooks = ws / ".adv-hooks"
        text = keys + f"[core]\n\thooksPath = {hooks}\n[include]\n\tpath = {ws}/.adv-include.cfg\n"
    elif variant == "include":
        hooks = git_dir / "hooks"
        (ws / ".adv-keys.cfg").write_text(keys)
        text = (
            f"[include]\n\tpath = {ws}/.adv-keys.cfg\n"
            f'[includeIf "gitdir:{git_dir}/"]\n\tpath = {ws}/.adv-include.cfg\n'
        )
    else:
        raise ValueError(variant)
    for hook in HOOKS:
        lab.payload(f"git-hook-{hook}", hooks / hook)
    with (git_dir / "config").open("a") as fh:
        fh.write(text)
