"""Terminal plumbing for the REPL: signal handlers on the event loop, and a quiet terminal
(no echo) while a task runs."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
from collections.abc import Callable, Iterator


@contextlib.contextmanager
def signal_handler(
    loop: asyncio.AbstractEventLoop, sig: signal.Signals, handler: Callable[[], object]
) -> Iterator[None]:
    try:
        loop.add_signal_handler(sig, handler)
    except (NotImplementedError, RuntimeError, ValueError):  # not the main thread / platform
        yield
        return
    try:
        yield
    finally:
        loop.remove_signal_handler(sig)


@contextlib.contextmanager
def quiet_terminal(*, enabled: bool) -> Iterator[None]:
    """Echo off while a task runs (Ctrl-C still raises SIGINT); discard type-ahead after."""
    if not enabled or not sys.stdin.isatty():
        yield
        return
    import termios

    fd = sys.stdin.fileno()
    try:
        saved = termios.tcgetattr(fd)
        quiet = list(saved)
        quiet[3] &= ~termios.ECHO
        termios.tcsetattr(fd, termios.TCSANOW, quiet)
    except termios.error:
        yield
        return
    try:
        yield
    finally:
        with contextlib.suppress(termios.error):
            termios.tcsetattr(fd, termios.TCSANOW, saved)
            termios.tcflush(fd, termios.TCIFLUSH)
