"""Reading a batch's task file: one JSON object per line, SWE-bench's field names where they
exist (`instance_id` or `id`, `problem_statement` or `task`, `repo`, `base_commit`) and
agentcli's own (`accept`, `model`, `permission_mode`, `limits`, `setup`).

Every line is checked before anything starts: a line that is not JSON, lacks a field, has a
wrong value or repeats an id is a `BadLine` with its line number, and the good lines are
`BatchTask`s. Other fields are ignored, so raw SWE-bench rows (`patch`, `FAIL_TO_PASS`, …)
load as they are; inside `limits`, where a typo would silently lift a limit, an unknown key is
an error.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from agentcli.safe_read import read_bytes
from agentcli.vocabulary import PermissionMode

ID_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,199}")
"""An instance id names a directory (`DIR/tasks/ID/`) and, later, a branch
(`agentcli/ID`): letters, digits, `.`, `_` and `-`, starting with a letter or digit (and, as
git wants of a branch, with no `..` and no `.` or `.lock` at the end)."""
URL_PATTERN = re.compile(r"^[a-z][a-z0-9+.-]*://|^[\w.-]+@[\w.-]+:")
"""A git URL (`https://…`, `ssh://…`, `file://…`) or scp-like `user@host:path`."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Limits:
    """A task's own limits, passed to its `agentcli run` (`--max-turns`, `--max-cost`,
    `--timeout`)."""

    max_turns: int | None = None
    max_cost_usd: float | None = None
    timeout_s: float | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class RepoSource:
    """Where a task's code comes from: a local repository (`path`) or a git URL (`url`)."""

    url: str | None = None
    path: Path | None = None

    @property
    def shown(self) -> str:
        return self.url if self.url is not None else str(self.path)


@dataclass(frozen=True, slots=True, kw_only=True)
class BatchTask:
    """One line of the task file, checked."""

    instance_id: str
    problem_statement: str
    repo: RepoSource
    base_commit: str | None
    """None: the repository's HEAD (resolved once, before the batch starts)."""
    accept: tuple[str, ...] = ()
    model: str | None = None
    permission_mode: PermissionMode | None = None
    """None: the batch's `--permission-mode`, else `auto`."""
    limits: Limits = Limits()
    setup: tuple[str, ...] = ()
    line: int = 0

    def fingerprint(self) -> str:
        """What the task asks, hashed: a rerun into the same directory must be the same task."""
        said = [
            self.instance_id,
            self.problem_statement,
            self.repo.shown,
            self.base_commit,
            list(self.accept),
            self.model,
            self.permission_mode,
            [self.limits.max_turns, self.limits.max_cost_usd, self.limits.timeout_s],
            list(self.setup),
        ]
        return hashlib.sha256(json.dumps(said).encode()).hexdigest()[:16]


@dataclass(frozen=True, slots=True)
class BadLine:
    line: int
    problem: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.problem}"


@dataclass(frozen=True, slots=True)
class TaskFile:
    path: Path
    tasks: tuple[BatchTask, ...]
    bad: tuple[BadLine, ...]


class _Limits(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    max_turns: int | None = Field(default=None, ge=1)
    max_cost_usd: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    timeout_s: float | None = Field(default=None, gt=0, allow_inf_nan=False)

    @field_validator("max_cost_usd", "timeout_s", mode="before")
    @classmethod
    def _number(cls, value: Any) -> Any:
        return float(value) if isinstance(value, int) and not isinstance(value, bool) else value


class _Line(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True)
    instance_id: str
    problem_statement: str
    repo: str
    base_commit: str | None = None
    accept: list[str] = []
    model: str | None = None
    permission_mode: PermissionMode | None = None
    limits: _Limits = _Limits()
    setup: list[str] = []

    @model_validator(mode="before")
    @classmethod
    def _aliases(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            raise ValueError("a task line must be a JSON object")
        data = dict(data)
        for name, alias in (("instance_id", "id"), ("problem_statement", "task")):
            if name not in data and alias in data:
                data[name] = data.pop(alias)
        for name in ("accept", "setup"):
            if isinstance(data.get(name), str):
                data[name] = [data[name]]
        if isinstance(data.get("permission_mode"), str):
            try:
                data["permission_mode"] = PermissionMode(data["permission_mode"])
            except ValueError:
                known = ", ".join(mode.value for mode in PermissionMode)
                raise ValueError(
                    f"permission_mode {data['permission_mode']!r} is not one of {known}"
                ) from None
        return data

    @field_validator("instance_id")
    @classmethod
    def _id(cls, value: str) -> str:
        if not ID_PATTERN.fullmatch(value) or ".." in value or value.endswith((".lock", ".")):
            raise ValueError(
                f"instance_id {value!r} must be letters, digits, '.', '_' and '-' (it names a "
                "directory and a branch), without '..' or a '.' or '.lock' ending"
            )
        return value

    @field_validator("problem_statement", "repo")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be empty")
        return value

    @field_validator("base_commit")
    @classmethod
    def _commit(cls, value: str | None) -> str | None:
        if value is not None and (not value.strip() or value.startswith("-")):
            raise ValueError(f"base_commit {value!r} is not a commit")
        return value

    @field_validator("accept", "setup")
    @classmethod
    def _commands(cls, value: list[str]) -> list[str]:
        if any(not command.strip() for command in value):
            raise ValueError("an empty command")
        return value


MAX_TASK_FILE_BYTES = 256 * 1024 * 1024
"""A task file larger than this is refused (SWE-bench-sized sets are a few MB)."""


def read_task_file(path: Path) -> TaskFile:
    """Every line of `path`, checked: the tasks and the bad lines (blank lines are skipped).
    OSError when the file cannot be read; a file that is not UTF-8 is one bad line per line
    that is not."""
    tasks: list[BatchTask] = []
    bad: list[BadLine] = []
    seen: dict[str, int] = {}
    base = path.resolve().parent
    data = read_bytes(path, inside=None, limit=MAX_TASK_FILE_BYTES)  # never a pipe's endless read
    for number, raw in enumerate(data.splitlines(), 1):
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            bad.append(BadLine(number, f"not UTF-8 (byte 0x{raw[exc.start]:02x})"))
            continue
        if not text.strip():
            continue
        parsed = _parse_line(text, number, base)
        if isinstance(parsed, BadLine):
            bad.append(parsed)
        elif parsed.instance_id in seen:
            first = seen[parsed.instance_id]
            bad.append(
                BadLine(number, f"duplicate instance_id {parsed.instance_id!r} (line {first})")
            )
        else:
            seen[parsed.instance_id] = number
            tasks.append(parsed)
    return TaskFile(path=path, tasks=tuple(tasks), bad=tuple(bad))


def _parse_line(text: str, number: int, base: Path) -> BatchTask | BadLine:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        return BadLine(number, f"not JSON ({exc.msg} at column {exc.colno})")
    try:
        line = _Line.model_validate(data)
    except ValidationError as exc:
        return BadLine(number, _problems(exc))
    limits = line.limits
    return BatchTask(
        instance_id=line.instance_id,
        problem_statement=line.problem_statement,
        repo=_source(line.repo, base),
        base_commit=line.base_commit,
        accept=tuple(line.accept),
        model=line.model,
        permission_mode=line.permission_mode,
        limits=Limits(
            max_turns=limits.max_turns,
            max_cost_usd=limits.max_cost_usd,
            timeout_s=limits.timeout_s,
        ),
        setup=tuple(line.setup),
        line=number,
    )


def _source(repo: str, base: Path) -> RepoSource:
    """A URL as given; a path relative to the task file's directory."""
    if URL_PATTERN.match(repo):
        return RepoSource(url=repo)
    return RepoSource(path=(base / Path(repo).expanduser()).resolve())


def _problems(exc: ValidationError) -> str:
    said = []
    for error in exc.errors():
        where = ".".join(str(part) for part in error["loc"])
        message = error["msg"].removeprefix("Value error, ")
        if error["type"] == "missing":
            alias = {"instance_id": " (or id)", "problem_statement": " (or task)"}.get(where, "")
            said.append(f"missing field {where!r}{alias}")
        elif error["type"] == "extra_forbidden":
            said.append(f"unknown key {where!r}")
        else:
            said.append(f"{where}: {message}" if where else message)
    return "; ".join(said)
