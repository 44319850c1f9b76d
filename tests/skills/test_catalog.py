"""Finding skills and commands: every location and format, the precedence table, namespaces,
and files that cannot be used (skipped with a notice naming them, never a failure)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from agentcli.skills.catalog import Catalog, discover
from agentcli.skills.sources import Kind
from tests.skills.layout import (
    command,
    everyday,
    simple_skill,
    skill,
    write,
)


def active(catalog: Catalog) -> dict[str, str]:
    """Active name → the file that defines it, as the user is shown it."""
    return {d.name: catalog.shown(d.path) for d in catalog.active()}


def test_the_anchors_files_are_found_in_their_places(workspace: Path, home: Path) -> None:
    everyday(workspace, home)
    catalog = discover(workspace, trusted=True)
    assert active(catalog) == {
        "code-review": ".agents/skills/code-review/SKILL.md",
        "pdf": ".claude/skills/pdf/SKILL.md",
        "commit-push-pr": ".claude/commands/commit-push-pr.md",
        "fix-issue": ".claude/commands/fix-issue.md",
        "git:commit": ".claude/commands/git/commit.md",
        "draftpr": "~/.codex/prompts/draftpr.md",
    }
    pdf = catalog.find("pdf")
    assert pdf is not None and pdf.kind is Kind.SKILL and pdf.problems == ()
    assert pdf.description.startswith("Extract text and tables from PDF files")
    commit = catalog.find("git:commit")
    assert commit is not None and commit.front.argument_hint == "[message]"
    fix = catalog.find("fix-issue")
    assert fix is not None and fix.front.argument_hint == "[issue-number] [priority]"
    assert catalog.find("prompts:draftpr") is catalog.find("draftpr")  # Codex's spelling
    assert catalog.find("prompts:pdf") is None  # only Codex prompts answer to it


def test_precedence_from_the_highest_row_to_the_lowest(workspace: Path, home: Path) -> None:
    """The same name defined in all eleven places: each removal uncovers the next row."""
    config = Path(os.environ["AGENTCLI_CONFIG_DIR"])
    rows = [
        ("skill", workspace / ".agentcli" / "skills"),
        ("command", workspace / ".agentcli" / "commands"),
        ("skill", workspace / ".agents" / "skills"),
        ("skill", workspace / ".claude" / "skills"),
        ("command", workspace / ".claude" / "commands"),
        ("skill", config / "skills"),
        ("command", config / "commands"),
        ("skill", home / ".agents" / "skills"),
        ("skill", home / ".claude" / "skills"),
        ("command", home / ".claude" / "commands"),
        ("prompt", home / ".codex" / "prompts"),
    ]
    files = []
    for number, (kind, root) in enumerate(rows, start=1):
        if kind == "skill":
            files.append(skill(root, "deploy", simple_skill("deploy", f"row {number}")))
        else:
            files.append(command(root, "deploy", f"---\ndescription: row {number}\n---\nGo.\n"))
    for number, file in enumerate(files, start=1):
        catalog = discover(workspace, trusted=True)
        found = catalog.find("deploy")
        assert found is not None and found.description == f"row {number}"
        listed = [entry for entry in catalog.listed if entry.definition.name == "deploy"]
        assert len(listed) == len(files) - number + 1
        assert all(entry.hidden_by == file for entry in listed[1:])  # which file won
        file.unlink()
    assert discover(workspace, trusted=True).find("deploy") is None


def test_a_skill_beats_a_command_of_its_name_at_the_same_level(workspace: Path, home: Path) -> None:
    command(workspace / ".claude" / "commands", "deploy", "Deploy as a command.\n")
    skill(workspace / ".claude" / "skills", "deploy", simple_skill("deploy", "as a skill"))
    found = discover(workspace, trusted=True).find("deploy")
    assert found is not None and found.kind is Kind.SKILL


def test_subfolders_are_namespaces(workspace: Path) -> None:
    root = workspace / ".agentcli" / "commands"
    command(root, "git:commit", "Commit.\n")
    command(root, "git:hub:pr", "Open a PR.\n")
    command(root, "review", "Review.\n")
    assert set(active(discover(workspace, trusted=True))) == {"git:commit", "git:hub:pr", "review"}


def test_codex_reads_only_top_level_prompts(workspace: Path, home: Path) -> None:
    prompts = home / ".codex" / "prompts"
    command(prompts, "top", "Top.\n")
    command(prompts, "nested:deep", "Not a prompt.\n")
    assert set(active(discover(workspace, trusted=True))) == {"top"}


def test_project_files_above_the_workspace_up_to_the_repository_root(
    tmp_path: Path, home: Path
) -> None:
    repo = tmp_path / "repo"
    sub = repo / "pkg" / "lib"
    sub.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    command(repo / ".claude" / "commands", "shared", "From the root.\n")
    command(repo / ".claude" / "commands", "near", "From the root.\n")
    command(sub / ".claude" / "commands", "near", "From the package.\n")
    command(tmp_path / ".claude" / "commands", "outside", "Above the repository.\n")
    catalog = discover(sub, trusted=True)
    assert set(active(catalog)) == {"shared", "near"}
    near = catalog.find("near")
    assert near is not None and near.description == "From the package."


def test_description_falls_back_to_the_first_line(workspace: Path) -> None:
    command(workspace / ".claude" / "commands", "plain", "\n# Explain the code\n\nMore.\n")
    found = discover(workspace, trusted=True).find("plain")
    assert found is not None and found.description == "Explain the code"


def test_unusable_files_are_skipped_with_a_notice_naming_them(
    workspace: Path, home: Path, tmp_path: Path
) -> None:
    commands = workspace / ".claude" / "commands"
    write(commands / "good.md", "Fine.\n")
    (commands / "latin1.md").write_bytes("caf\xe9\n".encode("latin-1"))
    write(commands / "unclosed.md", "---\ndescription: never closed\nBody.\n")
    write(commands / "badyaml.md", "---\ndescription: ok\n  nested: [unclosed\n---\nBody.\n")
    write(commands / "list.md", "---\n- a\n- b\n---\nBody.\n")
    write(commands / "huge.md", "x" * (256 * 1024 + 1))
    write(commands / "with space.md", "Name with a space.\n")
    (commands / "dir.md").mkdir()
    os.mkfifo(commands / "fifo.md")  # opening it must not block the start
    secret = write(tmp_path / "elsewhere" / "secret.md", "Outside every allowed root.\n")
    (commands / "outside.md").symlink_to(secret)
    (commands / "inside.md").symlink_to(commands / "good.md")  # a link that stays is followed
    catalog = discover(workspace, trusted=True)
    assert set(active(catalog)) == {"good", "inside"}
    reasons = {catalog.shown(s.path): s.reason for s in catalog.skipped}
    assert "not UTF-8 text (byte 0xe9" in reasons[".claude/commands/latin1.md"]
    assert "never closed" in reasons[".claude/commands/unclosed.md"]
    assert "not YAML" in reasons[".claude/commands/badyaml.md"]
    assert "not a mapping" in reasons[".claude/commands/list.md"]
    assert "over 256 KB" in reasons[".claude/commands/huge.md"]
    assert "not a command name" in reasons[".claude/commands/with space.md"]
    assert "not a regular file" in reasons[".claude/commands/fifo.md"]
    assert (
        "outside the workspace and your config directories"
        in reasons[".claude/commands/outside.md"]
    )
    assert ".claude/commands/dir.md" not in reasons  # a folder is a namespace, not a file
    notices = "\n".join(catalog.notices())
    for name in ("latin1.md", "unclosed.md", "huge.md", "fifo.md", "outside.md"):
        assert f"skipped .claude/commands/{name}: " in notices


def test_a_skill_linked_in_from_another_allowed_directory_is_read(
    workspace: Path, home: Path
) -> None:
    """Installers keep one copy in ~/.agents/skills and link it into each tool's folder."""
    original = skill(home / ".agents" / "skills", "shared", simple_skill("shared", "one copy"))
    (workspace / ".claude" / "skills").mkdir(parents=True)
    (workspace / ".claude" / "skills" / "shared").symlink_to(original.parent)
    catalog = discover(workspace, trusted=True)
    listed = [e for e in catalog.listed if e.definition.name == "shared"]
    assert [e.active for e in listed] == [True, False]
    assert catalog.skipped == ()


def test_unknown_keys_are_one_notice_not_an_error(workspace: Path) -> None:
    root = workspace / ".claude" / "commands"
    command(root, "a", "---\ndescription: A\nversion: 2\ncontext: fork\n---\nA.\n")
    command(root, "b", "---\ndescription: B\nversion: 3\n---\nB.\n")
    catalog = discover(workspace, trusted=True)
    assert set(active(catalog)) == {"a", "b"}
    notices = [n for n in catalog.notices() if "keys agentcli does not use" in n]
    assert notices == [
        "frontmatter keys agentcli does not use were ignored: version (2 files), context (1 file)"
    ]


@pytest.mark.parametrize("trusted", [True, False])
def test_a_project_file_grants_nothing_in_an_untrusted_workspace(
    workspace: Path, home: Path, trusted: bool
) -> None:
    command(workspace / ".claude" / "commands", "ship", "---\nallowed-tools: Bash(make:*)\n---\n")
    command(home / ".claude" / "commands", "mine", "---\nallowed-tools: Bash(make:*)\n---\n")
    catalog = discover(workspace, trusted=trusted)
    ship, mine = catalog.find("ship"), catalog.find("mine")
    assert ship is not None and mine is not None
    assert mine.grants == ("Bash(make *)",)  # the user's own file: always
    assert ship.grants == (("Bash(make *)",) if trusted else ())
    said = any("/ship grant nothing" in n for n in catalog.notices())
    assert said is not trusted


def test_a_file_mixing_dollar_zero_and_one_gets_a_notice(workspace: Path) -> None:
    command(workspace / ".claude" / "commands", "mixed", "From $0 to $1.\n")
    command(workspace / ".claude" / "commands", "old", "From $1 to $2.\n")
    notices = discover(workspace, trusted=True).notices()
    mixed = [n for n in notices if "uses both $0 and $1" in n]
    assert len(mixed) == 1 and mixed[0].startswith("/mixed (.claude/commands/mixed.md)")


def test_no_files_no_notices(workspace: Path) -> None:
    catalog = discover(workspace, trusted=True)
    assert catalog.listed == () and catalog.notices() == []
