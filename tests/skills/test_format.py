"""The file format: frontmatter keys and their types, `allowed-tools` as agentcli rules, and
every substitution (including the shell-quoting of arguments in shell lines)."""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from agentcli.model_spec import Effort
from agentcli.permissions.rules import parse_rule
from agentcli.permissions.shell import parse_command
from agentcli.skills.frontmatter import BrokenFrontmatter, parse, split_tools
from agentcli.skills.grants import grants, rule_text
from agentcli.skills.substitute import (
    Arguments,
    ShellLine,
    Text,
    mixes_zero_and_one,
    pieces,
    substituted,
)

SKILL_DIR = Path("/skills/pdf")


def test_every_known_key_is_read_typed() -> None:
    front, body = parse(
        "---\n"
        "name: pdf\n"
        "description: Work with PDFs.\n"
        "when_to_use: When a .pdf is mentioned.\n"
        "argument-hint: <file> [pages]\n"
        "allowed-tools:\n  - Bash(pdftotext:*)\n  - Read\n"
        "model: haiku\n"
        "effort: low\n"
        "disable-model-invocation: true\n"
        "user-invocable: false\n"
        "license: MIT\n"
        "compatibility: Needs poppler\n"
        "metadata:\n  author: me\n  version: '2'\n"
        "---\n"
        "Body.\n"
    )
    assert body == "Body.\n"
    assert (front.name, front.description, front.when_to_use) == (
        "pdf",
        "Work with PDFs.",
        "When a .pdf is mentioned.",
    )
    assert front.argument_hint == "<file> [pages]"
    assert front.allowed_tools == ("Bash(pdftotext:*)", "Read")
    assert (front.model, front.effort) == ("haiku", Effort.LOW)
    assert front.disable_model_invocation and not front.user_invocable
    assert (front.license, front.compatibility) == ("MIT", "Needs poppler")
    assert dict(front.metadata) == {"author": "me", "version": "2"}
    assert front.unknown == () and front.unused == () and front.problems == ()


def test_no_frontmatter_is_all_body() -> None:
    front, body = parse("Just a prompt with --- inside.\n---\n")
    assert not front.present and body == "Just a prompt with --- inside.\n---\n"


def test_claude_codes_hints_that_are_not_yaml_are_read() -> None:
    front, _ = parse("---\nargument-hint: [pr-number] [priority]\ndescription: Fix: it\n---\n")
    assert front.argument_hint == "[pr-number] [priority]"
    assert front.description == "Fix: it"
    assert front.problems and "not YAML" in front.problems[0]
    listed, _ = parse("---\nargument-hint: [message]\n---\n")
    assert listed.argument_hint == "[message]" and listed.problems == ()


def test_wrong_types_are_problems_and_ignored() -> None:
    front, _ = parse(
        "---\nuser-invocable: maybe\neffort: extreme\nallowed-tools: 3\nname: [a]\n"
        "metadata: {a: 1}\n---\n"
    )
    assert front.user_invocable and front.effort is None and front.allowed_tools == ()
    assert front.name is None
    joined = " | ".join(front.problems)
    for needle in ("user-invocable", "effort: extreme", "allowed-tools", "`name`", "metadata"):
        assert needle in joined


def test_unknown_and_unused_keys_are_told_apart() -> None:
    front, _ = parse("---\ncontext: fork\nagent: Explore\nversion: 1\nargument_hint: x\n---\n")
    assert front.unused == ("context", "agent")
    assert front.unknown == ("version",)
    assert front.argument_hint == "x"  # Codex's spelling of the key


@pytest.mark.parametrize(
    "text",
    ["---\ndescription: x\n", "---\n- a\n---\n", "---\na: b\n  c: [d\n---\n"],
)
def test_broken_frontmatter(text: str) -> None:
    with pytest.raises(BrokenFrontmatter):
        parse(text)


@pytest.mark.parametrize(
    ("written", "entries"),
    [
        ("Bash(git add:*), Bash(git status:*)", ["Bash(git add:*)", "Bash(git status:*)"]),
        ("Bash(git:*) Bash(jq:*) Read", ["Bash(git:*)", "Bash(jq:*)", "Read"]),
        ("Bash(git commit -m:*),Edit", ["Bash(git commit -m:*)", "Edit"]),
    ],
)
def test_allowed_tools_split_as_claude_code_and_the_spec_write_them(
    written: str, entries: list[str]
) -> None:
    assert split_tools(written) == entries


@pytest.mark.parametrize(
    ("entry", "rule", "subject", "allowed"),
    [
        ("Bash(git add:*)", "shell", "git add src/a.py", True),
        ("Bash(git add:*)", "shell", "git add", True),
        ("Bash(git add:*)", "shell", "git push", False),
        ("Bash(npm run test)", "shell", "npm run test", True),
        ("Read", "read", "src/a.py", True),
        ("Grep", "read", "anything", True),
        ("Edit", "write", "src/a.py", True),
        ("MultiEdit", "write", "src/a.py", True),
        ("mcp__github__create_issue", "mcp__github__create_issue", "*", True),
    ],
)
def test_allowed_tools_become_agentcli_rules(
    entry: str, rule: str, subject: str, allowed: bool
) -> None:
    parsed = parse_rule(rule_text(entry), "test")
    assert parsed.matches(rule, subject) is allowed


def test_an_entry_that_is_no_rule_is_a_problem_not_a_grant() -> None:
    rules, problems = grants(("Bash(make:*)", "Bad*Name"))
    assert rules == ("Bash(make *)",)
    assert len(problems) == 1 and "Bad*Name" in problems[0]


ARGS = Arguments.parse('fix "the login bug" 42')


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("All: $ARGUMENTS", 'All: fix "the login bug" 42'),
        ("First: $ARGUMENTS[0], second: $ARGUMENTS[1]", "First: fix, second: the login bug"),
        ("$1 / $2 / $3 / $4", "fix / the login bug / 42 / "),
        ("$0 is the first too", "fix is the first too"),
        ("Dir: ${AGENTCLI_SKILL_DIR} and ${CLAUDE_SKILL_DIR}", "Dir: /skills/pdf and /skills/pdf"),
        ("Costs $$5", "Costs $$5"),
    ],
)
def test_substitutions_in_text(body: str, expected: str) -> None:
    assert substituted(body, ARGS, SKILL_DIR)[0] == Text(expected)


def test_only_one_digit_is_a_placeholder() -> None:
    assert substituted("$10 and $1", ARGS, SKILL_DIR) == [Text("$10 and fix")]


def test_codex_prompts_write_a_dollar_as_two() -> None:
    assert substituted("Costs $$5 for $1", ARGS, SKILL_DIR, dollars=True) == [
        Text("Costs $5 for fix")
    ]


def test_arguments_are_appended_when_the_body_uses_none() -> None:
    assert substituted("Review the code.\n", ARGS, SKILL_DIR) == [
        Text("Review the code."),
        Text('\n\nARGUMENTS: fix "the login bug" 42'),
    ]
    assert substituted("Review the code.", Arguments.parse(""), SKILL_DIR) == [
        Text("Review the code.")
    ]


def test_dollar_zero_with_dollar_one_is_noticed() -> None:
    assert mixes_zero_and_one("from $0 to $1")
    assert not mixes_zero_and_one("from $1 to $2")
    assert not mixes_zero_and_one("only $0 and $ARGUMENTS[1]")


def test_shell_lines_inline_and_fenced() -> None:
    body = "Status: !`git status`\nnot!`this` nor `!that`\n```!\nls\npwd\n```\nEnd\n"
    assert pieces(body) == [
        Text("Status: "),
        ShellLine("git status"),
        Text("\nnot!`this` nor `!that`\n"),
        ShellLine("ls\npwd", block=True),
        Text("End\n"),
    ]


def test_an_argument_never_becomes_a_shell_line() -> None:
    hostile = Arguments.parse("!`rm -rf ~`")
    assert substituted("Say $ARGUMENTS", hostile, SKILL_DIR) == [Text("Say !`rm -rf ~`")]


def test_arguments_in_shell_lines_are_one_quoted_word() -> None:
    hostile = Arguments.parse("'x; rm -rf ~' $(id) `id`")
    done = substituted("!`echo $1 $2 $3`", hostile, SKILL_DIR)
    assert done == [ShellLine("echo 'x; rm -rf ~' '$(id)' '`id`'")]
    # bash itself runs one echo, with the words as they were typed.
    shell_line = done[0]
    assert isinstance(shell_line, ShellLine)
    out = subprocess.run(["bash", "-c", shell_line.command], capture_output=True, text=True)
    assert out.stdout == "x; rm -rf ~ $(id) `id`\n"
    parsed = parse_command(shell_line.command)
    assert parsed.ok and len(parsed.parts) == 1 and parsed.parts[0].name == "echo"


@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00")))
@example("x; rm -rf ~")
@example("a' b")
@example("$(touch pwned)")
def test_any_argument_stays_one_word_in_a_shell_line(argument: str) -> None:
    """The oracle is shlex's own reading of the command, not the quoting code: the argument
    comes back as exactly one word, unchanged."""
    quoted = shlex.quote(argument)
    done = substituted("!`printf %s $ARGUMENTS[0]`", Arguments(quoted, (argument,)), SKILL_DIR)
    assert len(done) == 1 and isinstance(done[0], ShellLine)
    assert shlex.split(done[0].command) == ["printf", "%s", argument]
