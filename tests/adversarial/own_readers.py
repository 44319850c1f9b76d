"""Every place agentcli reads a file it did not write, as one table for the differential test
(`test_class7_differential.py`, issue 26): where the file goes, and how to make agentcli read it.

A `Reader` plants its file at `rel` under the workspace (or the repository above it, or the
user's config dir: `base`), lets agentcli read it through the same function the product uses,
and reports a `Seen`: whether the file's content was used (`read`), what reached the model or
the user (`text`), and what agentcli said about it (`told`: a notice, an error, a tool error).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from agentcli.acceptance import detect_test_command
from agentcli.attachments import expand
from agentcli.config import flags_of, load_settings
from agentcli.errors import AgentError, ToolError
from agentcli.instructions import load_instructions
from agentcli.mcp.config import configured_servers
from agentcli.owngit.discover import locate
from agentcli.permissions.persist import append_allow_rule
from agentcli.permissions.setup import build_permissions
from agentcli.sandbox.runner import _submodule_git_files
from agentcli.snapshots import _GitIgnores, file_hash
from agentcli.tools.base import ToolContext
from agentcli.tools.edit_file import EditFile, EditFileInput
from agentcli.tools.glob_tool import Glob, GlobInput
from agentcli.tools.grep import Grep, GrepInput
from agentcli.tools.read_file import ReadFile, ReadFileInput
from agentcli.tools.write_file import WriteFile, WriteFileInput
from agentcli.ui.repl.calls import read_image


@dataclass(frozen=True, slots=True)
class Seen:
    read: bool
    """The file's content was used (for a control: it must be)."""
    text: str = ""
    """What reached the model or the user of it."""
    told: str = ""
    """What agentcli said about the file: a notice, an error, a tool error."""


@dataclass(frozen=True, slots=True)
class Place:
    """Where one reader's file lives in a lab."""

    ws: Path
    """The workspace (inside a git repository `repo` for the readers above it)."""
    repo: Path
    config: Path
    """The user's config dir (`AGENTCLI_CONFIG_DIR`)."""
    path: Path
    """The planted file."""
    content: str | None
    """A control's content (the text `read` must find)."""


@dataclass(frozen=True, slots=True)
class Reader:
    rel: str
    run: Callable[[Place], Seen]
    base: str = "ws"
    """`ws`, `repo` (the repository root, above the workspace), `mid` (between them), or
    `config` (the user's own config dir: links may go anywhere but into the kernel)."""
    body: Callable[[str], str] = lambda content: f"{content}\n"
    """A control's file text around its content (valid TOML or JSON where it must be)."""
    tells: bool = True
    """It says which file it refused (else it passes over it silently: data, not a setting)."""
    refuses: bool = True
    """A hostile file's content is never used (glob only lists names: it need not refuse)."""
    skip: frozenset[str] = frozenset()
    """Kinds not played at this place (each with its reason where the reader is listed)."""


def _ctx(place: Place) -> ToolContext:
    return ToolContext(workspace=place.ws, data_dir=place.ws.parent / "data")


def _tool(call: Callable[[], object], place: Place) -> Seen:
    try:
        output = call()
        if asyncio.iscoroutine(output):
            output = asyncio.run(output)
    except ToolError as exc:
        return Seen(read=False, told=str(exc))
    text = str(getattr(output, "text", output))
    return Seen(read=place.content is not None and place.content in text, text=text)


def _instructions(place: Place) -> Seen:
    found = load_instructions(place.ws)
    text = "\n".join(f.text for f in found.files)
    return Seen(place.content is not None and place.content in text, text, "\n".join(found.skipped))


def _settings(place: Place, *, trusted: bool = False) -> Seen:
    try:
        settings = load_settings(place.ws, trusted=trusted)
    except AgentError as exc:
        return Seen(read=False, told=str(getattr(exc, "message", exc)))
    return Seen(read=settings.model == place.content, text=settings.model)


def _mcp(place: Place, *, trusted: bool) -> Seen:
    try:
        found = configured_servers(load_settings(place.ws, trusted=trusted), place.ws)
    except AgentError as exc:
        return Seen(read=False, told=str(getattr(exc, "message", exc)))
    names = [*found.servers, *found.ignored]
    return Seen(read=place.content in names, text=" ".join(names), told=found.notice() or "")


def _gitmodules(place: Place) -> Seen:
    (place.ws / "sub").mkdir(exist_ok=True)
    (place.ws / "sub" / ".git").write_text("gitdir: ../.git/modules/sub\n")
    found = _submodule_git_files(place.ws)
    return Seen(read=bool(found), text=" ".join(map(str, found)))


def _attach(place: Place) -> Seen:
    settings = load_settings(place.ws, flags=flags_of())
    policy = build_permissions(settings=settings, workspace=place.ws).policy
    expanded = asyncio.run(expand(f"see @{place.path.name}", _ctx(place), policy))
    read = place.content is not None and place.content in expanded.text
    return Seen(read, expanded.text, "\n".join(expanded.notices))


def _gitignore(place: Place) -> Seen:
    # The parser the file-tree hash applies (the hash itself would also hash a 2 GiB file,
    # in bounded chunks but for seconds).
    ignores = _GitIgnores()
    with os.scandir(place.ws) as listing:  # as the walk decides to read it
        present = any(e.name == ".gitignore" and e.is_file() for e in listing)
    if present:
        ignores.enter(place.path, "")
    return Seen(read=ignores.ignored("ignored.txt", is_dir=False))


def _dotgit(place: Place) -> Seen:
    subprocess.run(["git", "init", "-q", str(place.ws.parent / "real")], check=True)
    found = locate(place.ws)
    return Seen(read=found is not None and found.directory == place.ws)


def _persist(place: Place) -> Seen:
    try:
        append_allow_rule(place.path, "shell(true)")
    except AgentError as exc:
        return Seen(read=False, told=str(getattr(exc, "message", exc)))
    return Seen(read=place.content is not None and place.content in place.path.read_text())


def _file_hash(place: Place) -> Seen:
    return Seen(read=file_hash(place.path, place.ws.resolve()) is not None)


def _image(place: Place) -> Seen:
    data = read_image(place.ws, {"path": place.path.name})
    text = "" if data is None else data.decode("utf-8", "replace")
    return Seen(read=place.content is not None and place.content in text, text=text)


def _edit(place: Place) -> Seen:
    args = EditFileInput(path=place.path.name, old_string=place.content or "x", new_string="y")
    return _tool(lambda: EditFile().plan(args, _ctx(place), check=False).before, place)


def _write(place: Place) -> Seen:
    args = WriteFileInput(path=place.path.name, content="new")
    return _tool(lambda: WriteFile().plan(args, _ctx(place), check=False).before, place)


def _model_toml(content: str) -> str:
    return f'model = "{content}"\n'


def _mcp_json(content: str) -> str:
    return json.dumps({"mcpServers": {content: {"command": "true"}}})


def _grep(p: Place) -> Seen:
    args = GrepInput(pattern="CONT", path=p.path.name, output_mode="content")
    return _tool(lambda: Grep().call(args, _ctx(p)), p)


def _glob(p: Place) -> Seen:
    seen = _tool(lambda: Glob().call(GlobInput(pattern="*"), _ctx(p)), p)
    return Seen(read=p.path.name in seen.text, text=seen.text, told=seen.told)


def _read_file(p: Place) -> Seen:
    return _tool(lambda: ReadFile().call(ReadFileInput(path=p.path.name), _ctx(p)), p)


READERS: dict[str, Reader] = {
    "instructions-workspace": Reader("AGENTS.md", _instructions),
    "instructions-claude-md": Reader("CLAUDE.md", _instructions),
    "instructions-repo-root": Reader("AGENTS.md", _instructions, base="repo"),
    "instructions-between": Reader("CLAUDE.md", _instructions, base="mid"),
    # The user's own files may link anywhere they chose (not into the kernel): no attack.
    "instructions-users-own": Reader(
        "AGENTS.md", _instructions, base="config", skip=frozenset({"outside-link"})
    ),
    "config-toml": Reader(".agentcli/config.toml", _settings, body=_model_toml),
    "config-local-toml": Reader(".agentcli/config.local.toml", _settings, body=_model_toml),
    "users-config-toml": Reader(
        "config.toml", _settings, base="config", body=_model_toml, skip=frozenset({"outside-link"})
    ),
    "mcp-json-trusted": Reader(".mcp.json", lambda p: _mcp(p, trusted=True), body=_mcp_json),
    "mcp-json-untrusted": Reader(
        ".mcp.json", lambda p: _mcp(p, trusted=False), body=_mcp_json, tells=False
    ),
    "gitmodules": Reader(
        ".gitmodules",
        _gitmodules,
        body=lambda c: f"# {c}\n[submodule]\n\tpath = sub\n",
        tells=False,
    ),
    "at-path-attachment": Reader("notes.md", _attach),
    "read-file": Reader("notes.md", _read_file),
    "edit-file": Reader("notes.md", _edit),
    "write-file": Reader("notes.md", _write),
    # ripgrep streams a file it is named: a 2 GiB one costs time (~10 s), never memory; grep is
    # what the model is told to use on a file too large for read_file.
    "grep-named-path": Reader("notes.md", _grep, skip=frozenset({"sparse-2g"})),
    # glob lists names, links left out (a link is no file of the workspace): no control link.
    "glob": Reader("notes.md", _glob, tells=False, refuses=False, skip=frozenset({"inside-link"})),
    "accept-tests-detection": Reader(
        "pyproject.toml",
        lambda p: Seen(read=detect_test_command(p.ws) is not None),
        body=lambda c: f"# {c}\n[tool.pytest.ini_options]\n",
        tells=False,
    ),
    # A `.gitignore` that is a link is not followed, as git (2.32 on) does not follow it.
    "snapshot-gitignore": Reader(
        ".gitignore",
        _gitignore,
        body=lambda c: f"# {c}\nignored.txt\n",
        tells=False,
        skip=frozenset({"inside-link"}),
    ),
    "own-git-dotgit-file": Reader(
        ".git", _dotgit, body=lambda c: f"gitdir: ../real/.git\n# {c}\n", tells=False
    ),
    "always-rule-persist": Reader(".agentcli/config.local.toml", _persist, body=_model_toml),
    # Hashing reads in chunks: a 2 GiB file is hashed (for seconds), never held in memory;
    # and a link is no file to undo and the manifests (a link is compared as a link).
    "undo-recovery-file-hash": Reader(
        "notes.md", _file_hash, tells=False, skip=frozenset({"sparse-2g", "inside-link"})
    ),
    "repl-diff-of-a-call": Reader("notes.md", _image, tells=False),
}


def place_for(reader: Reader, root: Path) -> tuple[Path, Path, Path, Path]:
    """(workspace, repository, user config dir, the directory the file goes in) of a lab."""
    repo = root / "repo"
    ws = repo / "pkg" / "ws"
    ws.mkdir(parents=True)
    if reader.base in ("repo", "mid"):
        subprocess.run(["git", "init", "-q", str(repo)], check=True)
    config = Path(os.environ["AGENTCLI_CONFIG_DIR"])
    config.mkdir(parents=True, exist_ok=True)
    where = {"ws": ws, "repo": repo, "mid": repo / "pkg", "config": config}[reader.base]
    return ws, repo, config, where
