"""What the REPL drives: the live session the session core opens for `agentcli run` too, with a
terminal prompter instead of the non-interactive one and the REPL's view as its events. The
Anthropic client it uses is the one warmed in the background while the user typed, if any
(`session.clients.warm_model`).

This module is heavy (pydantic, the loop, the tools); the REPL imports it in the background
while the user types the first message.
"""

from __future__ import annotations

from agentcli.config import untrusted_notice
from agentcli.events import EventSink, Notice
from agentcli.permissions import Prompter
from agentcli.session.build import open_live
from agentcli.session.clients import ModelFactory
from agentcli.session.live import LiveSession
from agentcli.session.options import SessionOptions
from agentcli.settings import Settings


def open_repl_session(
    options: SessionOptions,
    events: EventSink,
    prompter: Prompter,
    *,
    model_factory: ModelFactory | None = None,
) -> LiveSession:
    """A new session with what the REPL was started with (and /model, /mode since), or the
    recorded one `--resume ID` / `--continue` name."""

    def say(notice: str) -> None:  # on the REPL's console, not raw stderr under the prompt
        events(Notice(level="warning", message=notice))

    def announce(settings: Settings) -> None:
        """What an untrusted workspace's config could not set, said once per session."""
        if (notice := untrusted_notice(settings)) is not None:
            say(notice)

    return open_live(
        options,
        events=events,
        prompter=prompter,
        say=say,
        announce=announce,
        model_factory=model_factory,
    )
