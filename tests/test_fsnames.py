"""The forms of a file name that is not UTF-8 (`agentcli.fsnames`): each is lossless, and the
ones that leave the process are valid where they go (the model's JSON)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from agentcli.fsnames import for_model, from_model
from agentcli.instructions import system_prompt
from agentcli.messages import Message, TextBlock, ToolResultBlock

# Names as Linux allows them: any bytes but NUL and `/`.
NAMES = st.binary(min_size=1, max_size=12).filter(lambda b: b"\0" not in b and b"/" not in b)


@given(NAMES)
def test_the_model_form_is_valid_unicode_and_maps_back_to_the_bytes(raw: bytes) -> None:
    name = os.fsdecode(raw)
    shown = for_model(name)
    shown.encode("utf-8")  # no lone surrogate left
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        back = from_model(shown)
        assert back is not None and os.fsencode(back) == raw
    else:
        assert shown == name  # a UTF-8 name is shown as it is


def test_the_model_form_spells_bytes_as_bash_and_python_do() -> None:
    assert for_model(os.fsdecode(b"caf\xe9 \xff.txt")) == "caf\\xe9 \\xff.txt"
    assert for_model("ascii only \\x41") == "ascii only \\x41"
    assert for_model("\ud800 lone") == "\\ud800 lone"  # not from a file name: still escaped


def test_only_escapes_of_bytes_that_are_not_utf8_are_read_back() -> None:
    assert from_model("plain.txt") is None
    assert from_model("\\x41.txt") is None  # an ASCII byte is never escaped by for_model
    assert from_model("caf\\xc3\\xa9.txt") is None  # that is "café.txt", shown as itself
    assert from_model("\\xFF.txt") == "\udcff.txt"
    assert from_model("dir\\xfe/a\\xff") == "dir\udcfe/a\udcff"


def test_blocks_we_build_serialize_as_valid_unicode() -> None:
    listing = "a.txt\n" + os.fsdecode(b"\xff.txt")
    message = Message(
        role="user",
        content=(ToolResultBlock(tool_use_id="t1", content=listing), TextBlock(text=listing)),
    )
    wire = json.dumps(message.to_wire(), ensure_ascii=False).encode("utf-8")
    assert wire.count(b"a.txt\\n\\\\xff.txt") == 2


def test_the_system_prompt_names_a_workspace_that_is_not_utf8_validly(tmp_path: Path) -> None:
    workspace = Path(os.fsdecode(os.fsencode(tmp_path) + b"/ws-\xff"))
    workspace.mkdir()
    (workspace / "AGENTS.md").write_text("Be brief.\n")
    prompt = system_prompt(workspace)
    prompt.encode("utf-8")
    assert "ws-\\xff" in prompt and "Be brief." in prompt
