"""Console-script entry point. `--version` answers before anything heavy is imported and the REPL
(no arguments) starts without loading the command-line parser: neither has anything to parse.
Everything else goes to the one command-line definition, `cli.py`."""

import atexit
import gc
import os
import sys

COMPLETION_VARIABLE = "_AGENTCLI_COMPLETE"
"""Set by the completion script `agentcli --install-completion` installs."""


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args == ["--version"]:
        from agentcli import __version__

        sys.stdout.write(f"agentcli {__version__}\n")
        return 0
    # Before any class is defined: dataclasses' methods compile from a kept cache (~90 ms).
    from agentcli.dataclass_code import install

    install()
    completing = COMPLETION_VARIABLE in os.environ  # the shell asks typer for completions
    if not args and not completing and sys.stdin is not None and sys.stdin.isatty():
        # The REPL's prompt must be up at once: skip importing the command-line parser.
        from agentcli.ui.repl.main import main as repl_main

        return repl_main()
    # Start-up builds hundreds of thousands of objects that live as long as the process (the
    # SDK alone spends ~7% of its import in the collector): collecting them is wasted work.
    # `run` and the REPL turn collection back on once started; the other commands are short.
    enabled = gc.isenabled()
    gc.disable()
    try:
        from agentcli.ui.cli import run_app

        code = run_app(args)
    finally:
        if enabled:
            gc.enable()
    if argv is None:  # the process's own command line: nothing runs after us in-process
        exit_without_teardown(code)
    return code


def exit_without_teardown(code: int) -> None:
    """End the process now, skipping the interpreter's teardown: unloading thousands of
    modules (the SDK's types, pydantic's schemas) and freeing every object start-up built took
    ~0.35 s after the answer was printed (`bench_snapshot`'s exit tail). What a normal exit
    does that matters still happens: the atexit handlers (temporary directories, finalizers)
    and flushing stdout and stderr; files and locks are the OS's to close. A normal exit
    instead (returns) when a non-daemon thread still runs, which the interpreter would wait
    for, or when the output cannot be flushed (a closed pipe), which it reports."""
    import threading  # here: `--version` answers without it (~5 ms of collections, functools)

    if any(t is not threading.main_thread() and not t.daemon for t in threading.enumerate()):
        return
    if not _flushed():
        return
    atexit._run_exitfuncs()
    _flushed()  # what an atexit handler printed
    os._exit(code)


def _flushed() -> bool:
    """Flush stdout and stderr (either may be None, without a console); False if one failed."""
    try:
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:
                stream.flush()
    except (OSError, ValueError):
        return False
    return True
