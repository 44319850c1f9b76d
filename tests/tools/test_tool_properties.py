"""Property-based tests: exact edit matching (and line endings) and the parallel scheduler."""

from __future__ import annotations

import asyncio
import itertools
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import Field

from agentcli.errors import ToolError, ToolErrorKind
from agentcli.messages import ToolUseBlock
from agentcli.permissions import NonInteractivePrompter, PermissionMode
from agentcli.permissions.basic import ModePolicy
from agentcli.store import MemoryJournal
from agentcli.tools.base import Resources, Risk, Tool, ToolContext, ToolInput, ToolOutput
from agentcli.tools.edit_match import apply_edit, find_all
from agentcli.tools.runtime import ToolRuntime

# --- edit matching --------------------------------------------------------------------------

words = st.sampled_from(["a", "b", "ab", "ba", "  a", "", "x y"])
documents = st.lists(words, min_size=1, max_size=12).map(lambda lines: "\n".join(lines) + "\n")


@settings(max_examples=400, deadline=None)
@given(
    doc=documents,
    span=st.tuples(st.integers(0, 200), st.integers(1, 20)),
    new=st.text(alphabet="abz\n", max_size=8),
    crlf=st.booleans(),
    replace_all=st.booleans(),
)
def test_edit_replaces_exactly_what_matched(
    doc: str, span: tuple[int, int], new: str, crlf: bool, replace_all: bool
) -> None:
    start = span[0] % len(doc)
    old = doc[start : start + span[1]]
    newline = "\r\n" if crlf else "\n"
    in_file = doc.replace("\n", newline)
    old_in_file, new_in_file = old.replace("\n", newline), new.replace("\n", newline)
    positions = find_all(in_file, old_in_file)
    try:
        edit = apply_edit(in_file, old, new, replace_all=replace_all, newline=newline, shown="f")
    except ToolError as exc:
        if old == new:
            assert exc.kind is ToolErrorKind.INVALID_ARGUMENTS
            return
        assert exc.kind is ToolErrorKind.CONFLICT and not replace_all
        assert len(positions) > 1 and f"occurs {len(positions)} times" in exc.message
        return
    assert old != new and (replace_all or len(positions) == 1)
    expected = in_file.replace(old_in_file, new_in_file, -1 if replace_all else 1)
    assert edit.text == expected
    assert edit.first_line == in_file.count("\n", 0, positions[0]) + 1
    if crlf:  # no bare LF is ever introduced into a CRLF file
        assert edit.text.count("\n") == edit.text.count("\r\n")
    if not replace_all:  # everything outside the matched span is untouched
        at = positions[0]
        assert edit.text[:at] == in_file[:at]
        assert edit.text[at + len(new_in_file) :] == in_file[at + len(old_in_file) :]


@settings(max_examples=200, deadline=None)
@given(doc=documents, old=st.text(alphabet="abcq \n\t", min_size=1, max_size=30))
def test_a_missing_match_is_explained_never_a_crash(doc: str, old: str) -> None:
    if old in doc:
        return
    with pytest.raises(ToolError) as info:
        apply_edit(doc, old, "new", replace_all=False, newline="\n", shown="f")
    assert info.value.kind is ToolErrorKind.NOT_FOUND
    assert info.value.message.startswith("old_string was not found in f.")


# --- the scheduler --------------------------------------------------------------------------

RESOURCE_NAMES = ["file:/w/a", "file:/w/b", "file:/w/sub/c", "tree:/w/sub", "tree:/w", "db:x"]


def overlap(a: str, b: str) -> bool:
    """Oracle for resource overlap, written independently of Resources.conflicts_with."""
    kind_a, path_a = a.split(":", 1)
    kind_b, path_b = b.split(":", 1)
    if "db" in (kind_a, kind_b):
        return a == b
    under_b = path_a == path_b or path_a.startswith(path_b + "/")
    under_a = path_b == path_a or path_b.startswith(path_a + "/")
    return a == b or (kind_b == "tree" and under_b) or (kind_a == "tree" and under_a)


def conflict(x: Resources, y: Resources) -> bool:
    if x.exclusive or y.exclusive:
        return True
    return any(overlap(w, r) for w in x.writes for r in y.reads | y.writes) or any(
        overlap(w, r) for w in y.writes for r in x.reads | x.writes
    )


resources = st.one_of(
    st.just(Resources(exclusive=True)),
    st.builds(
        Resources,
        reads=st.frozensets(st.sampled_from(RESOURCE_NAMES), max_size=2),
        writes=st.frozensets(st.sampled_from(RESOURCE_NAMES), max_size=2),
    ),
)


@settings(max_examples=300)
@given(a=resources, b=resources)
def test_conflicts_are_symmetric_and_match_the_oracle(a: Resources, b: Resources) -> None:
    assert a.conflicts_with(b) == b.conflicts_with(a) == conflict(a, b)


class StepInput(ToolInput):
    index: int = Field(description="position in the batch")


class Step(Tool[StepInput]):
    name = "step"
    description = "records when it starts and ends"
    input_model = StepInput
    risk = Risk.READ

    def __init__(self, plan: list[tuple[Resources, float]]) -> None:
        self.plan = plan
        self.clock = itertools.count()
        self.spans: dict[int, tuple[int, int]] = {}
        self.running = 0
        self.max_running = 0

    def resources(self, args: StepInput, ctx: ToolContext) -> Resources:
        return self.plan[args.index][0]

    async def call(self, args: StepInput, ctx: ToolContext) -> ToolOutput:
        begin = next(self.clock)
        self.running += 1
        self.max_running = max(self.max_running, self.running)
        await asyncio.sleep(self.plan[args.index][1])
        self.running -= 1
        self.spans[args.index] = (begin, next(self.clock))
        return ToolOutput(text=f"step {args.index}")


@settings(max_examples=60, deadline=None)
@given(
    plan=st.lists(
        st.tuples(resources, st.sampled_from([0.0, 0.0005, 0.002])), min_size=1, max_size=8
    ),
    bound=st.integers(1, 4),
)
def test_scheduler_orders_conflicts_bounds_concurrency_and_keeps_proposal_order(
    tmp_path_factory: pytest.TempPathFactory, plan: list[tuple[Resources, float]], bound: int
) -> None:
    workspace = tmp_path_factory.mktemp("sched")
    tool = Step(plan)
    runtime = ToolRuntime(
        [tool],
        ctx=ToolContext(workspace=workspace, data_dir=Path(workspace) / "data"),
        policy=ModePolicy(mode=PermissionMode.YOLO),
        prompter=NonInteractivePrompter(),
        journal=MemoryJournal(),
        events=lambda _e: None,
        max_parallel=bound,
    )
    blocks = [ToolUseBlock(id=f"t{i}", name="step", input={"index": i}) for i in range(len(plan))]

    async def run() -> list[str]:
        records = runtime.propose(blocks)
        await runtime.execute(blocks, records)
        return [r.result_text for r in records]

    results = asyncio.run(run())
    assert results == [f"step {i}" for i in range(len(plan))]
    assert tool.max_running <= bound
    for i, j in itertools.combinations(range(len(plan)), 2):
        if conflict(plan[i][0], plan[j][0]):
            assert tool.spans[i][1] < tool.spans[j][0], f"call {j} overlapped earlier call {i}"
