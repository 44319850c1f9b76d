"""`@path` in a task: what is attached, and what is refused with the same rules as read_file."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentcli.attachments import MAX_ATTACHMENTS, expand, mentions
from agentcli.config import flags_of, load_settings
from agentcli.permissions.setup import build_permissions
from agentcli.tools.base import ToolContext


@pytest.mark.parametrize(
    ("prompt", "paths"),
    [
        ("explain @src/app.py please", ["src/app.py"]),
        ("look at @src/app.py.", ["src/app.py"]),
        ("compare @a.txt, @b.txt and @a.txt!", ["a.txt", "b.txt"]),
        ('read @"docs/my notes.md" first', ["docs/my notes.md"]),
        ("(see @README.md)", ["README.md"]),
        ("mail me at dev@example.com", []),
        ("@@twice", []),
        ("no mention here", []),
    ],
)
def test_what_counts_as_a_mention(prompt: str, paths: list[str]) -> None:
    assert mentions(prompt) == paths


def make(workspace: Path, deny: list[str] = ()) -> tuple[ToolContext, object]:  # type: ignore[assignment]
    settings = load_settings(workspace, flags=flags_of(deny=deny))
    policy = build_permissions(settings=settings, workspace=workspace).policy
    return ToolContext(workspace=workspace, data_dir=workspace.parent / "data"), policy


async def test_a_mentioned_file_is_attached_as_read_file_shows_it(workspace: Path) -> None:
    (workspace / "src").mkdir()
    (workspace / "src" / "app.py").write_text("def main():\n    return 42\n")
    ctx, policy = make(workspace)
    expanded = await expand("why 42? @src/app.py", ctx, policy)  # type: ignore[arg-type]
    assert expanded.notices == [] and expanded.attached == ["src/app.py"]
    assert expanded.text.startswith('why 42? @src/app.py\n\n<attached_file path="src/app.py">')
    assert "1\tdef main():\n2\t    return 42" in expanded.text
    # The model has now read it: an edit needs no second read.
    assert (workspace / "src" / "app.py").resolve() in ctx.read_hashes


@pytest.mark.parametrize(
    ("setup", "mention", "said"),
    [
        (lambda ws: None, "missing.py", "missing.py does not exist"),
        (lambda ws: (ws / "dir").mkdir(), "dir", "is a directory"),
        (lambda ws: (ws / "blob.bin").write_bytes(b"\0\1\2" * 100), "blob.bin", "binary"),
        (lambda ws: None, "../outside.txt", "outside the workspace"),
        (lambda ws: None, "/etc/passwd", "outside the workspace"),
        (lambda ws: (ws / "link").symlink_to("/etc/hostname"), "link", "outside the workspace"),
    ],
    ids=["missing", "directory", "binary", "parent", "absolute", "symlink-out"],
)
async def test_what_cannot_be_attached_is_said_and_the_task_goes_on(
    workspace: Path, setup: object, mention: str, said: str
) -> None:
    (workspace.parent / "outside.txt").write_text("secret")
    setup(workspace)  # type: ignore[operator]
    ctx, policy = make(workspace)
    prompt = f"do it @{mention}"
    expanded = await expand(prompt, ctx, policy)  # type: ignore[arg-type]
    assert expanded.text == prompt and expanded.attached == []
    (notice,) = expanded.notices
    assert notice.startswith(f"@{mention} not attached: ") and said in notice
    assert "secret" not in expanded.text


async def test_a_denied_read_is_not_attached(workspace: Path) -> None:
    (workspace / ".env").write_text("API_TOKEN=hunter2")
    ctx, policy = make(workspace, deny=["read(**/.env)"])
    expanded = await expand("check @.env", ctx, policy)  # type: ignore[arg-type]
    assert "hunter2" not in expanded.text
    (notice,) = expanded.notices
    assert notice.startswith("@.env not attached: reading it needs permission")


async def test_at_most_so_many_files(workspace: Path) -> None:
    for n in range(MAX_ATTACHMENTS + 2):
        (workspace / f"f{n}.txt").write_text(f"content {n}")
    ctx, policy = make(workspace)
    prompt = " ".join(f"@f{n}.txt" for n in range(MAX_ATTACHMENTS + 2))
    expanded = await expand(prompt, ctx, policy)  # type: ignore[arg-type]
    assert len(expanded.attached) == MAX_ATTACHMENTS
    assert expanded.notices == [
        f"only the first {MAX_ATTACHMENTS} @-mentioned files were attached (2 more were not)"
    ]
