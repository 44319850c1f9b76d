"""The MCP servers this process runs, each connection held by a task on one event loop of the
hub's own, in a daemon thread.

The servers outlive any one `asyncio.run` of the caller (`agentcli run` builds its session before
its event loop exists; the REPL's sessions come and go), so they live on a loop that is theirs:
a tool call from the session's loop is handed over (`call`) and awaited there, and cancelling it
cancels the call. Servers start in parallel; each has its startup timeout, and one that fails
(cannot start, exits, hangs, a `${VAR}` not set) is reported with its name and the tail of its
stderr, which goes to a file of its own, never to agentcli's stdout or stderr. A server that
dies later fails the calls made to it, and is reported once. `close` (registered to run at
exit) stops every server: a stdio server's process group gets SIGTERM while the SDK closes its
stdin, and SIGKILL if anything of it is left after a grace period.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextlib
import signal
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from agentcli.mcp import client, groups
from agentcli.mcp.config import ConfiguredServer, MissingVariable, expand

STDERR_TAIL_CHARS = 1500
ALIVE = ("starting", "ready")
CLOSE_WAIT_S = 8.0
WAIT_POLL_S = 0.02
"""How long `close` waits for every server to stop (the SDK escalates to SIGKILL within ~4 s)."""


@dataclass(frozen=True, slots=True)
class ServerProblem:
    """A server that failed to start or died: what the user is told."""

    server: str
    source: str
    error: str
    stderr_tail: str

    def message(self) -> str:
        tail = f"; its stderr ends:\n{_indent(self.stderr_tail)}" if self.stderr_tail else ""
        return f"MCP server {self.server} ({self.source}): {self.error}{tail}"


Reporter = Callable[[ServerProblem], None]


class NotRunning(Exception):
    """The server is not running (it died or was stopped): a call to it was not sent."""


@dataclass(kw_only=True)
class Server:
    """One configured server and what became of it."""

    config: ConfiguredServer
    status: str = "starting"
    """starting, ready, failed (never started) or stopped (died, or was stopped)."""
    error: str = ""
    tools: list[client.RemoteTool] = field(default_factory=list)
    reporters: list[Reporter] = field(default_factory=list)
    """Who hears of it dying (each session that uses it)."""
    reported: bool = False
    connection: client.Connection | None = None
    errlog: IO[str] | None = None
    pgid: int | None = None
    """A stdio server's process group (`groups.find_group`), when found."""
    started: concurrent.futures.Future[None] = field(default_factory=concurrent.futures.Future)
    stop: asyncio.Event | None = None
    task: asyncio.Task[None] | None = None

    @property
    def name(self) -> str:
        return self.config.name

    def stderr_tail(self) -> str:
        if self.errlog is None:
            return ""
        try:
            self.errlog.flush()
            self.errlog.seek(0)
            text = self.errlog.read()
        except (OSError, ValueError):
            return ""
        return text.strip()[-STDERR_TAIL_CHARS:]

    def problem(self) -> ServerProblem:
        return ServerProblem(
            server=self.name,
            source=self.config.source,
            error=self.error,
            stderr_tail=self.stderr_tail(),
        )


class McpHub:
    """The running MCP servers of this process (see the module docstring)."""

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self.servers: dict[str, Server] = {}
        self._retired: list[Server] = []
        """Servers replaced by a new start (stopped, closed with the rest)."""

    def start(self, configs: Sequence[ConfiguredServer], workspace: Path) -> list[Server]:
        """Start the servers not already running with the same configuration (in parallel;
        returns at once: `wait` for them)."""
        loop = self._running_loop()
        chosen = []
        with self._lock:
            for config in configs:
                current = self.servers.get(config.name)
                if current is not None and current.config == config and current.status in ALIVE:
                    chosen.append(current)
                    continue
                if current is not None:  # changed, failed or died: a new one in its place
                    self._retired.append(current)
                    loop.call_soon_threadsafe(_set_stop, current)
                    if current.pgid is not None:
                        groups.signal_group(current.pgid, signal.SIGTERM)
                server = Server(config=config)
                self.servers[config.name] = server
                loop.call_soon_threadsafe(self._launch, server, workspace)
                chosen.append(server)
        return chosen

    @staticmethod
    def wait(servers: Sequence[Server]) -> None:
        """Block until each server is ready or has failed (each within its startup timeout).
        Ctrl-C or SIGTERM meanwhile raises KeyboardInterrupt here, where nothing is half
        done (a sleep, not a lock's wait: interrupted there, `threading` can fail with
        "release unlocked lock"); the servers still starting are stopped at exit (`close`)."""
        with _sigterm_interrupts():
            while not all(server.started.done() for server in servers):
                time.sleep(WAIT_POLL_S)

    def _running_loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                thread = threading.Thread(target=loop.run_forever, name="agentcli-mcp", daemon=True)
                thread.start()
                self._loop, self._thread = loop, thread
                atexit.register(self.close)
            return self._loop

    def _launch(self, server: Server, workspace: Path) -> None:
        server.stop = asyncio.Event()
        timeout = server.config.entry.startup_timeout_s
        server.task = asyncio.get_running_loop().create_task(self._serve(server, workspace))
        asyncio.get_running_loop().call_later(timeout, self._give_up, server, timeout)

    async def _serve(self, server: Server, workspace: Path) -> None:
        assert server.stop is not None
        entry = server.config.entry
        try:
            expanded = expand(entry)
            if entry.transport == "stdio":
                # Kept until the hub closes: a failed server's stderr tail is read after it ended.
                server.errlog = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")
            await client.serve(
                expanded,
                cwd=workspace,
                errlog=server.errlog,
                startup_timeout_s=entry.startup_timeout_s,
                on_ready=lambda connection: self._ready(server, connection),
                stop=server.stop,
            )
            self._ended(server, "")
        except MissingVariable as exc:
            self._ended(server, str(exc))
        except Exception as exc:
            self._ended(server, client.describe(exc))

    def _ready(self, server: Server, connection: client.Connection) -> None:
        if server.started.done():  # given up on meanwhile: too late
            assert server.stop is not None
            server.stop.set()
            return
        server.connection = connection
        server.tools = connection.tools
        if server.errlog is not None:
            server.pgid = groups.find_group(server.errlog)
        server.status = "ready"
        server.started.set_result(None)

    def _give_up(self, server: Server, timeout: float) -> None:
        """The startup timeout passed: the session goes on without the server now (its
        connection attempt is torn down by `client.serve`'s own deadline)."""
        if server.started.done():
            return
        server.status = "failed"
        server.error = f"it did not start within {timeout:g} s"
        server.started.set_result(None)
        if server.errlog is not None:
            server.pgid = groups.find_group(server.errlog)
        if server.pgid is not None:  # stop it now, not after the SDK's grace for a clean exit
            groups.signal_group(server.pgid, signal.SIGTERM)

    def _ended(self, server: Server, error: str) -> None:
        """The connection is over: stopped on purpose (`error` empty), failed or died."""
        server.connection = None
        if not server.started.done():
            server.status = "failed"
            server.error = error or "it stopped before it was ready"
            server.started.set_result(None)
        elif server.status == "ready":
            stopping = server.stop is not None and server.stop.is_set()
            server.status = "stopped"
            if not stopping:  # died: the next call says so, and reports it
                server.error = error or "it stopped"

    async def call(
        self, server: Server, tool: str, arguments: dict[str, Any], timeout_s: float
    ) -> client.Reply:
        """Call `tool` on `server` from any event loop (cancelling the caller cancels the
        call); raises NotRunning (nothing was sent) or the `client` errors. A server found gone
        is reported once, from the caller's thread."""
        connection, loop = server.connection, self._loop
        if connection is None or loop is None:
            self._report_once(server)
            raise NotRunning(server.error or "it was stopped")
        future = asyncio.run_coroutine_threadsafe(connection.call(tool, arguments, timeout_s), loop)
        try:
            return await asyncio.wrap_future(future)
        except client.ServerGone:
            server.connection = None
            server.status = "stopped"
            server.error = "it stopped while a call was running"
            self._report_once(server)
            raise

    @staticmethod
    def _report_once(server: Server) -> None:
        if server.reported or server.status == "failed":
            return  # a start failure was reported when the session started
        server.reported = True
        problem = server.problem()
        for report in list(server.reporters):
            with contextlib.suppress(Exception):
                report(problem)

    def close(self) -> None:
        """Stop every server and the hub's loop (at exit; idempotent: the hub can start servers
        again afterwards)."""
        with self._lock:
            loop, thread = self._loop, self._thread
            self._loop = self._thread = None
            servers = [*self.servers.values(), *self._retired]
            self.servers, self._retired = {}, []
        if loop is None or thread is None:
            return
        for server in servers:  # one still starting has no group noted yet
            if server.pgid is None and server.errlog is not None:
                server.pgid = groups.find_group(server.errlog)
        pgids = [server.pgid for server in servers if server.pgid is not None]
        for server in servers:
            server.reporters.clear()
        for pgid in pgids:  # at once: a server may take seconds to notice its stdin closed
            groups.signal_group(pgid, signal.SIGTERM)
        stopping = asyncio.run_coroutine_threadsafe(_stop_all(servers), loop)
        with contextlib.suppress(Exception):
            stopping.result(timeout=CLOSE_WAIT_S)
        for pgid in pgids:  # and whatever the server started and left behind
            groups.end_group(pgid)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=1.0)
        if not thread.is_alive():
            loop.close()
        atexit.unregister(self.close)
        for server in servers:
            if server.errlog is not None:
                server.errlog.close()


@contextlib.contextmanager
def _sigterm_interrupts() -> Iterator[None]:
    """SIGTERM as Ctrl-C while this runs (in the main thread: elsewhere signals are not ours),
    so a `kill` while servers start stops them too instead of leaving them behind."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGTERM)
    if previous is not signal.SIG_DFL:  # someone (the run's task) handles it already
        yield
        return

    def interrupt(_signum: int, _frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _set_stop(server: Server) -> None:
    if server.stop is not None:
        server.stop.set()


async def _stop_all(servers: Sequence[Server]) -> None:
    for server in servers:
        if server.stop is not None:
            server.stop.set()
    tasks = [server.task for server in servers if server.task is not None]
    await asyncio.gather(*tasks, return_exceptions=True)


def _indent(text: str) -> str:
    return "\n".join(f"    {line}" for line in text.splitlines())


_HUB: McpHub | None = None


def process_hub() -> McpHub:
    """The hub of this process (the REPL's sessions share it: a server stays up across them)."""
    global _HUB
    if _HUB is None:
        _HUB = McpHub()
    return _HUB
