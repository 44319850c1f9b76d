"""Reading a task file: SWE-bench's names, agentcli's fields, and every bad line reported
with its number."""

from __future__ import annotations

from pathlib import Path

from agentcli.batch.taskfile import Limits, RepoSource, read_task_file
from agentcli.vocabulary import PermissionMode
from tests.batch.helpers import write_tasks


def test_swe_bench_rows_and_agentcli_fields(tmp_path: Path) -> None:
    tasks = write_tasks(
        tmp_path / "t.jsonl",
        [
            {
                "instance_id": "django__django-11099",
                "problem_statement": "UsernameValidator allows trailing newline",
                "repo": "https://github.com/django/django",
                "base_commit": "d26b2424437dabeeca94d7900b37d2df4410da0c",
                "patch": "diff --git …",
                "FAIL_TO_PASS": "[]",
                "version": "3.0",
            },
            "",
            {
                "id": "local.1",
                "task": "fix it",
                "repo": "../repos/a",
                "accept": "pytest -q",
                "setup": ["pip install -e ."],
                "model": "sonnet",
                "permission_mode": "accept-edits",
                "limits": {"max_turns": 5, "max_cost_usd": 1, "timeout_s": 60.5},
            },
        ],
    )
    loaded = read_task_file(tasks)
    assert loaded.bad == ()
    swe, local = loaded.tasks
    assert swe.repo == RepoSource(url="https://github.com/django/django")
    assert swe.base_commit == "d26b2424437dabeeca94d7900b37d2df4410da0c"
    assert (swe.accept, swe.permission_mode, swe.line) == ((), None, 1)
    assert local.instance_id == "local.1"
    assert local.repo == RepoSource(path=(tmp_path / "../repos/a").resolve())
    assert local.accept == ("pytest -q",)
    assert local.setup == ("pip install -e .",)
    assert local.permission_mode is PermissionMode.ACCEPT_EDITS
    assert local.limits == Limits(max_turns=5, max_cost_usd=1.0, timeout_s=60.5)
    assert local.line == 3
    assert swe.fingerprint() != local.fingerprint()


def test_every_bad_line_is_named_with_its_number(tmp_path: Path) -> None:
    tasks = tmp_path / "t.jsonl"
    tasks.write_bytes(
        b'{"id": "a", "task": "x", "repo": "r"}\n'
        b"{oops\n"
        b"[1, 2]\n"
        b'{"task": "x", "repo": "r"}\n'
        b'{"id": "a", "task": "again", "repo": "r"}\n'
        b'{"id": "../escape", "task": "x", "repo": "r"}\n'
        b'{"id": "b", "task": "  ", "repo": "r"}\n'
        b'{"id": "c", "task": "x", "repo": "r", "limits": {"max_turns": 0}}\n'
        b'{"id": "d", "task": "x", "repo": "r", "limits": {"timeout": 5}}\n'
        b'{"id": "e", "task": "x", "repo": "r", "permission_mode": "sudo"}\n'
        b'{"id": "f", "task": "x", "repo": "r", "accept": [""]}\n'
        b'{"id": "g", "task": "x", "repo": "r", "base_commit": "--upload-pack=x"}\n'
        b'{"id": "h.lock", "task": "x", "repo": "r"}\n'
        b"\xff\xfe\n"
        b'{"id": "i", "task": "x", "repo": "r", "limits": {"max_turns": true}}\n'
    )
    loaded = read_task_file(tasks)
    assert [t.instance_id for t in loaded.tasks] == ["a"]
    said = {bad.line: bad.problem for bad in loaded.bad}
    assert said[2].startswith("not JSON")
    assert said[3] == "a task line must be a JSON object"
    assert said[4] == "missing field 'instance_id' (or id)"
    assert said[5] == "duplicate instance_id 'a' (line 1)"
    assert "must be letters, digits" in said[6]
    assert said[7] == "problem_statement: must not be empty"
    assert said[8].startswith("limits.max_turns:")
    assert said[9] == "unknown key 'limits.timeout'"
    assert "permission_mode 'sudo' is not one of" in said[10]
    assert said[11] == "accept: an empty command"
    assert "is not a commit" in said[12]
    assert "'.lock' ending" in said[13]
    assert said[14] == "not UTF-8 (byte 0xff)"
    assert said[15].startswith("limits.max_turns:")
    assert str(loaded.bad[0]).startswith("line 2: ")


def test_every_id_the_file_accepts_makes_a_valid_branch_name(tmp_path: Path) -> None:
    """The branch each task's commit is to go on (`agentcli/ID`), checked by git itself."""
    import subprocess

    from agentcli.batch.runner import branch_for

    ids = ["django__django-11099", "a", "x.y_z-1", "A9.b", "v1.0-rc", "a" * 200]
    tasks = write_tasks(tmp_path / "t.jsonl", [{"id": i, "task": "t", "repo": "r"} for i in ids])
    assert [t.instance_id for t in read_task_file(tasks).tasks] == ids
    for ident in ids:
        subprocess.run(["git", "check-ref-format", f"refs/heads/{branch_for(ident)}"], check=True)


def test_ids_git_would_refuse_as_a_branch_are_bad_lines(tmp_path: Path) -> None:
    ids = ["ends.", "x.lock", "a..b", "-lead", ".hidden", "sp ace", "a/b", "a" * 201]
    tasks = write_tasks(tmp_path / "t.jsonl", [{"id": i, "task": "t", "repo": "r"} for i in ids])
    loaded = read_task_file(tasks)
    assert loaded.tasks == ()
    assert [bad.line for bad in loaded.bad] == list(range(1, len(ids) + 1))
