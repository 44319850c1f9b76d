"""What the REPL drives: the live session the session core opens for `agentcli run` too, with a
terminal prompter instead of the non-interactive one and the REPL's view as its events. The
Anthropic client it uses is the one warmed in the background while the user typed, if any
(`session.clients.warm_model`).

This module is heavy (pydantic, the loop, the tools); the REPL imports it in the background
while the user types the first message.
"""

from __future__ import annotations

from agentcli.events import EventSink, Notice
from agentcli.permissions import Prompter
from agentcli.session.build import open_live
from agentcli.session.clients import ModelFactory
from agentcli.session.live import LiveSession
from agentcli.session.options import SessionOptions
from agentcli.ui.run import announce_untrusted


def open_repl_session(
    options: SessionOptions,
    events: EventSink,
    prompter: Prompter,
    *,
    model_factory: ModelFactory | None = None,
) -> LiveSession:
    """A new session with what the REPL was started with (and /model, /mode since), or the
    recorded one `--resume ID` / `--continue` name."""
    return open_live(
        options,
        events=events,
        prompter=prompter,
        # On the REPL's console, not raw stderr under the prompt.
        say=lambda notice: events(Notice(level="warning", message=notice)),
        announce=lambda settings: announce_untrusted(settings, events),
        model_factory=model_factory,
    )
