"""Esc interrupts a running task, as Ctrl-C does.

While a task runs the terminal is not in prompt-toolkit's hands, so nothing reads keys: the
watcher puts the terminal in non-canonical mode (keys arrive one by one; Ctrl-C still raises
SIGINT) and reads the input on the event loop. A lone Esc byte (an arrow key's sequence also
starts with Esc, but arrives as several bytes at once) sends this process SIGINT, so Esc takes
exactly Ctrl-C's path: one press cancels, and the REPL's count of presses holds. Ctrl-T shows or
hides the todo list. Any other key is discarded, as type-ahead during a task always is. After
Esc the interrupted message is back at the prompt, to edit or send again (Ctrl-C leaves the
prompt empty, as before). It steps aside (`paused`) while a permission question reads the
keyboard.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import Callable, Iterator

ESC = b"\x1b"
CTRL_T = b"\x14"


class EscapeWatcher:
    """Reads the terminal while a task runs; Esc interrupts the task."""

    def __init__(self, *, enabled: bool, on_ctrl_t: Callable[[], None] | None = None) -> None:
        self.enabled = enabled
        self.on_ctrl_t = on_ctrl_t
        self._fd: int | None = None
        self._pressed = False

    def take_pressed(self) -> bool:
        """Whether Esc interrupted the task (asked once, when the task was cancelled)."""
        pressed, self._pressed = self._pressed, False
        return pressed

    def start(self) -> None:
        self._pressed = False
        if not self.enabled or self._fd is not None or not sys.stdin.isatty():
            return
        fd = sys.stdin.fileno()
        if _set_canonical(fd, on=False):
            try:
                asyncio.get_running_loop().add_reader(fd, self._read)
            except (RuntimeError, OSError, ValueError):
                _set_canonical(fd, on=True)
                return
            self._fd = fd

    def stop(self) -> None:
        fd = self._fd
        if fd is None:
            return
        self._fd = None
        with contextlib.suppress(RuntimeError, OSError, ValueError):
            asyncio.get_running_loop().remove_reader(fd)
        _set_canonical(fd, on=True)

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """Give the keyboard to someone else (a permission question) for a while."""
        was_on = self._fd is not None
        self.stop()
        try:
            yield
        finally:
            if was_on:
                self.start()

    def _read(self) -> None:
        if self._fd is None:
            return
        try:
            data = os.read(self._fd, 1024)
        except OSError:
            return
        if data == ESC:
            self._pressed = True
            os.kill(os.getpid(), signal.SIGINT)
        elif CTRL_T in data and self.on_ctrl_t is not None:
            self.on_ctrl_t()


def _set_canonical(fd: int, *, on: bool) -> bool:
    """Line-at-a-time input (on) or key by key (off), the rest of the terminal's mode kept as
    it is (echo is someone else's: the REPL turns it off while a task runs)."""
    import termios

    try:
        mode = termios.tcgetattr(fd)
        if on:
            mode[3] |= termios.ICANON
        else:
            mode[3] &= ~termios.ICANON
            mode[6][termios.VMIN] = 1
            mode[6][termios.VTIME] = 0
        termios.tcsetattr(fd, termios.TCSANOW, mode)
    except termios.error:
        return False
    return True
