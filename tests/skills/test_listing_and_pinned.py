"""What the model is told of the skills (the system prompt's capped list) and what a compaction
re-sends of the skills it used (capped per skill and in all)."""

from __future__ import annotations

from pathlib import Path

from agentcli.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock
from agentcli.skills.catalog import discover
from agentcli.skills.listing import UNKNOWN_WINDOW_CHARS, budget, listing
from agentcli.skills.pinned import (
    MAX_TOKENS_EACH,
    MAX_TOKENS_TOTAL,
    invoked_skills,
    resend_after_compaction,
)
from tests.skills.layout import command, everyday, simple_skill, skill


def test_the_list_names_each_model_invocable_skill_and_command(workspace: Path, home: Path) -> None:
    everyday(workspace, home)
    skills = workspace / ".claude" / "skills"
    skill(
        skills,
        "secret",
        simple_skill("secret", "Never offered.", **{"disable-model-invocation": "true"}),
    )
    skill(
        skills,
        "helper",
        simple_skill("helper", "Only for the model.", **{"user-invocable": "false"}),
    )
    text = listing(discover(workspace, trusted=True), 200_000).text
    assert "- pdf: Extract text and tables from PDF files" in text
    assert "- code-review: Review code for bugs" in text
    assert "- git:commit: Commit the staged changes" in text
    assert "- helper: Only for the model." in text
    assert "secret" not in text
    assert "draftpr" not in text  # a Codex prompt is the user's to run


def test_the_cap_is_two_percent_of_the_window_or_8000_characters() -> None:
    assert budget(200_000) == 16_000  # 2% of 200K tokens at 4 characters a token
    assert budget(1_000_000) == 80_000
    assert budget(None) == UNKNOWN_WINDOW_CHARS == 8000


def test_what_does_not_fit_is_left_out_and_counted(workspace: Path) -> None:
    root = workspace / ".agentcli" / "skills"
    for number in range(40):
        skill(root, f"s{number:02d}", simple_skill(f"s{number:02d}", "d" * 900))
    listed = listing(discover(workspace, trusted=True), 10_000)  # 800 characters: a few fit
    assert len(listed.text) <= budget(10_000)
    assert listed.left_out and len(listed.left_out) + listed.text.count("\n- ") == 40
    notice = listed.notice()
    assert notice is not None and notice.startswith(f"{len(listed.left_out)} skills left out")
    unknown = listing(discover(workspace, trusted=True), None)
    assert len(unknown.text) <= 8000 and unknown.left_out


def test_no_skill_no_section(workspace: Path) -> None:
    command(
        workspace / ".claude" / "commands",
        "only-mine",
        "---\ndisable-model-invocation: true\n---\nX\n",
    )
    listed = listing(discover(workspace, trusted=True), 200_000)
    assert listed.text == "" and listed.notice() is None


def _skill_text(name: str, size: int) -> str:
    return f'<skill name="{name}" directory="/s/{name}">\n{"x" * size}\n</skill>'


def test_compaction_resends_each_used_skill_newest_first() -> None:
    history = [
        Message.user(_skill_text("pdf", 100) + "\n\nthen do this"),
        Message(role="assistant", content=(ToolUseBlock(id="t1", name="skill", input={}),)),
        Message(
            role="user",
            content=(ToolResultBlock(tool_use_id="t1", content=_skill_text("review", 50)),),
        ),
        Message.user("notes first\n\n" + _skill_text("pdf", 200)),
    ]
    pinned = resend_after_compaction(history)
    assert [p.name for p in pinned] == ["pdf", "review"]
    assert pinned[0].text == _skill_text("pdf", 200)  # the latest, without the words around it
    assert pinned[1].text == _skill_text("review", 50)


def test_compaction_caps_each_skill_and_the_total() -> None:
    history = [Message.user(_skill_text(f"s{n}", 30_000)) for n in range(8)]
    pinned = resend_after_compaction(history)
    assert all(p.tokens <= MAX_TOKENS_EACH for p in pinned)
    assert "cut at 5000 tokens" in pinned[0].text
    assert sum(p.tokens for p in pinned) <= MAX_TOKENS_TOTAL
    assert [p.name for p in pinned] == ["s7", "s6", "s5", "s4", "s3"]


def test_an_error_result_or_plain_text_is_no_skill() -> None:
    history = [
        Message(
            role="user",
            content=(ToolResultBlock(tool_use_id="t", content=_skill_text("x", 5), is_error=True),),
        ),
        Message(role="user", content=(TextBlock(text='talk about <skill name="y"> inline'),)),
    ]
    assert invoked_skills(history) == []
