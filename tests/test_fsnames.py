"""The forms of a file name that is not UTF-8 (`agentcli.fsnames`): each is lossless, and the
ones that leave the process are valid where they go (the model's JSON, SQLite's TEXT, UTF-8
JSON output)."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from agentcli.fsnames import for_model, from_db, from_model, json_text, to_db
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


@given(NAMES)
def test_the_journal_keeps_any_name_and_finds_it_again(raw: bytes) -> None:
    name = os.fsdecode(b"/ws/" + raw)
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE sessions (workspace TEXT NOT NULL)")
    conn.execute("INSERT INTO sessions VALUES (?)", (to_db("/ws/other"),))
    conn.execute("INSERT INTO sessions VALUES (?)", (to_db(name),))
    found = conn.execute("SELECT workspace FROM sessions WHERE workspace = ?", (to_db(name),))
    assert [from_db(row[0]) for row in found] == [name]


def test_a_utf8_name_is_stored_as_text_as_before() -> None:
    assert to_db("/ws/café") == "/ws/café"
    assert to_db(os.fsdecode(b"/ws/\xff")) == b"/ws/\xff"


def test_json_output_keeps_the_exact_string_and_is_writable_as_utf8() -> None:
    value = {"changed_files": [os.fsdecode(b"\xff.txt"), "café"]}
    text = json_text(value, indent=2)
    text.encode("utf-8")
    assert "café" in text and "\\udcff.txt" in text
    assert json.loads(text) == value
    assert os.fsencode(json.loads(text)["changed_files"][0]) == b"\xff.txt"


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
