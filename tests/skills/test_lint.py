"""`agentcli skills lint [PATH]`: one line per problem on stdout, exit 1 when there is any; the
agentskills.io spec for SKILL.md files, the command format for every file."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.inprocess import decoded, run_in_process
from tests.skills.layout import command, everyday, simple_skill, skill, write


def lint(workspace: Path, *args: str) -> tuple[int, list[str], str]:
    done = decoded(run_in_process("skills", "lint", *args, cwd=workspace, env={}))
    return done.returncode, done.stdout.splitlines(), done.stderr


def test_the_anchors_files_pass_except_what_other_tools_refuse(workspace: Path, home: Path) -> None:
    everyday(workspace, home)
    code, lines, err = lint(workspace)
    # Claude Code reads this hint; it is not YAML, so the spec's own tools refuse the file.
    assert lines == [
        ".claude/commands/fix-issue.md: the frontmatter is not YAML (line 2, column 31: "
        "expected <block end>, but found '['); read with its plain values quoted (quote them "
        "in the file: other tools refuse it)"
    ]
    assert code == 1 and "6 files checked: 1 problem" in err


def test_a_clean_tree_exits_0(workspace: Path, home: Path) -> None:
    skill(workspace / ".agents" / "skills", "ok-skill", simple_skill("ok-skill", "Fine."))
    command(home / ".claude" / "commands", "ok", "---\ndescription: Fine\n---\nDo $1.\n")
    code, lines, err = lint(workspace)
    assert (code, lines) == (0, []) and "2 files checked: no problems" in err


SPEC_BREAKERS = {
    "Bad--Name": ("---\nname: Bad--Name\ndescription: d\n---\n", "lowercase letters"),
    "long": (f"---\nname: {'a' * 65}\ndescription: d\n---\n", "over 64 characters"),
    "other": ("---\nname: mismatch\ndescription: d\n---\n", "does not match its directory"),
    "nodesc": ("---\nname: nodesc\n---\n", "`description` is missing"),
    "bigdesc": (f"---\nname: bigdesc\ndescription: {'d' * 1025}\n---\n", "over 1024"),
    "compat": (
        f"---\nname: compat\ndescription: d\ncompatibility: {'c' * 501}\n---\n",
        "`compatibility` is not 1 to 500",
    ),
    "meta": ("---\nname: meta\ndescription: d\nmetadata: [1]\n---\n", "`metadata` is not a"),
    "nofront": ("Just text.\n", "needs frontmatter"),
    "tools": ("---\nname: tools\ndescription: d\nallowed-tools: Bash(a:*) Gr*p\n---\n", "Gr*p"),
    "types": (
        "---\nname: types\ndescription: d\nuser-invocable: sometimes\neffort: huge\n---\n",
        "`user-invocable` is not true or false",
    ),
    "unknown": ("---\nname: unknown\ndescription: d\ncolour: blue\n---\n", "unknown frontmatter"),
    "mixed": ("---\nname: mixed\ndescription: d\n---\n$0 then $1\n", "uses both $0 and $1"),
}


@pytest.mark.parametrize("directory", sorted(SPEC_BREAKERS))
def test_each_spec_problem_is_one_line(workspace: Path, directory: str) -> None:
    text, needle = SPEC_BREAKERS[directory]
    skill(workspace / ".agents" / "skills", directory, text)
    code, lines, _err = lint(workspace)
    assert code == 1
    assert any(needle in line for line in lines), lines
    assert all(line.startswith(f".agents/skills/{directory}/SKILL.md: ") for line in lines)


def test_unreadable_files_and_bad_names_are_problems(workspace: Path) -> None:
    commands = workspace / ".claude" / "commands"
    (commands).mkdir(parents=True)
    (commands / "latin1.md").write_bytes(b"caf\xe9")
    write(commands / "two words.md", "x")
    write(commands / "open.md", "---\nkey: value\n")
    code, lines, _err = lint(workspace)
    assert code == 1
    assert sorted(lines) == [
        ".claude/commands/latin1.md: it is not UTF-8 text (byte 0xe9 at offset 3)",
        ".claude/commands/open.md: its frontmatter (from the first line `---`) is never closed",
        ".claude/commands/two words.md: /two words is not a command name (letters, digits, "
        "`_`, `.`, `-`)",
    ]


def test_a_path_checks_that_file_or_tree_only(workspace: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "my-skills"
    skill(elsewhere, "good", simple_skill("good", "Fine."), {"references/notes.md": "# no front"})
    skill(elsewhere, "bad", "---\nname: bad\n---\n")
    write(elsewhere / "cmd.md", "---\nmodel: [1]\n---\n")
    code, lines, err = lint(workspace, str(elsewhere))
    assert code == 1 and "3 files checked" in err  # references/ are not commands
    assert sorted(Path(line.split(": ")[0]).name for line in lines) == ["SKILL.md", "cmd.md"]
    one_code, one_lines, _ = lint(workspace, str(elsewhere / "good"))
    assert (one_code, one_lines) == (0, [])
    missing = lint(workspace, str(tmp_path / "nope"))
    assert missing[0] == 1 and "no such file or directory" in missing[1][0]


def test_strict_refuses_keys_outside_the_spec(workspace: Path) -> None:
    skill(
        workspace / ".agents" / "skills",
        "ext",
        simple_skill("ext", "d", **{"argument-hint": "<file>", "disable-model-invocation": "true"}),
    )
    assert lint(workspace)[0] == 0
    code, lines, _err = lint(workspace, "--strict")
    assert code == 1 and len(lines) == 2
    assert "`argument-hint` is not in the agentskills.io spec" in lines[0]


def test_an_escape_in_a_name_reaches_the_terminal_escaped(workspace: Path) -> None:
    write(workspace / ".claude" / "commands" / "x\x1b[31m.md", "x")
    _code, lines, _err = lint(workspace)
    assert "\x1b" not in "".join(lines) and "\\x1b" in lines[0]
