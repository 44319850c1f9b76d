"""Skill and command files in the shapes people have them (the frontmatter, placeholders and
shell lines of Claude Code's `.claude/commands` and `.claude/skills`, the agentskills.io
SKILL.md with its references and scripts, and Codex's `~/.codex/prompts`), written where each
tool keeps them."""

from __future__ import annotations

from pathlib import Path

# Claude Code: a command granting git commands and reading the repository's state first.
COMMIT_PUSH_PR = """\
---
allowed-tools: Bash(git checkout -b:*), Bash(git add:*), Bash(git status:*), Bash(git commit:*)
description: Commit, push, and open a PR
---

## Context

- Current git status: !`git status --short`
- Current branch: !`git branch --show-current`

## Your task

Based on the above changes, create a single commit with an appropriate message.
"""

# Claude Code: a namespaced command (`git/commit.md` is /git:commit) with a YAML-list hint.
GIT_COMMIT = """\
---
description: Commit the staged changes
argument-hint: [message]
---
Commit the staged changes with the message: $ARGUMENTS
"""

# Claude Code before 2026: `$1`, `$2`, and a hint that is not YAML (Claude Code reads it).
FIX_ISSUE = """\
---
argument-hint: [issue-number] [priority]
description: Fix a GitHub issue
---
Fix issue #$1 with priority $2. Follow the coding standards.
"""

# agentskills.io: a skill with its own files (read on demand).
PDF_SKILL = """\
---
name: pdf
description: Extract text and tables from PDF files, fill forms, merge PDFs. Use for PDFs.
license: Proprietary. LICENSE.txt has complete terms
---

# PDF Processing Guide

For advanced features, see REFERENCE.md. To fill a form, read references/FORMS.md.
Run scripts/extract.py with the file: ${CLAUDE_SKILL_DIR}/scripts/extract.py $ARGUMENTS
"""

CODE_REVIEW_SKILL = """\
---
name: code-review
description: Review code for bugs, security and style. Use when asked to review a change.
metadata:
  author: example-org
  version: "1.0"
---
Review the change carefully. List real bugs first.
"""

# Codex: a prompt with 1-based placeholders and a literal dollar.
DRAFTPR_PROMPT = """\
---
description: Prep a branch, commit, and open a draft PR
argument-hint: BRANCH=<name> TITLE=<title>
---
Create a branch named `$1`, then open a draft PR titled "$2" ($$5 budget).
"""


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def command(root: Path, name: str, text: str) -> Path:
    """`root/NAME.md` (`git:commit` → `root/git/commit.md`)."""
    return write(root.joinpath(*name.split(":")).with_suffix(".md"), text)


def skill(root: Path, name: str, text: str, files: dict[str, str] | None = None) -> Path:
    """`root/NAME/SKILL.md` and the files beside it."""
    for relative, content in (files or {}).items():
        write(root / name / relative, content)
    return write(root / name / "SKILL.md", text)


def simple_skill(name: str, description: str, body: str = "Do it well.", **keys: str) -> str:
    extra = "".join(f"{key}: {value}\n" for key, value in keys.items())
    return f"---\nname: {name}\ndescription: {description}\n{extra}---\n{body}\n"


def everyday(workspace: Path, home: Path) -> None:
    """A project and a user with the anchors' files in their usual places."""
    claude = workspace / ".claude"
    command(claude / "commands", "commit-push-pr", COMMIT_PUSH_PR)
    command(claude / "commands", "git:commit", GIT_COMMIT)
    command(claude / "commands", "fix-issue", FIX_ISSUE)
    skill(
        claude / "skills",
        "pdf",
        PDF_SKILL,
        {
            "REFERENCE.md": "# Reference\npypdfium2 renders pages.\n",
            "references/FORMS.md": "# Forms\nFill fields in order.\n",
            "scripts/extract.py": "print('text')\n",
        },
    )
    skill(workspace / ".agents" / "skills", "code-review", CODE_REVIEW_SKILL)
    command(home / ".codex" / "prompts", "draftpr", DRAFTPR_PROMPT)
