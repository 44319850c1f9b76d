"""Parsing shell commands for permission decisions.

A command string becomes a `ParsedCommand`: the simple commands it runs at top level (every
part of `&&`, `||`, `;`, `|`, newlines, subshells, `if`/`for`/`while` bodies), the commands
nested in substitutions, and the features that make a narrow rule unsafe to apply
(`$(…)`, backticks, `<(…)`, redirection into files, assigning parameter expansions, computed
command names, function definitions, here-documents that expand). Parsing uses `bashlex`; a
string it cannot parse is marked as such and never matches a narrow rule.
"""

from __future__ import annotations

import contextlib
import re
import shlex
import signal
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

# Output redirection targets that write nothing to the file system.
HARMLESS_TARGETS = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr"})
_INPUT_REDIRECTS = frozenset({"<", "<<", "<<-", "<<<", "<&"})
_QUOTED_HEREDOC = re.compile(r"<<(-?)([ \t]*)(['\"])([A-Za-z_][A-Za-z0-9_]*)\3")
_SIMPLE_PARAMETER = re.compile(r"^(?:[A-Za-z_][A-Za-z0-9_]*|[0-9]|[@*#?$!-])$")


@dataclass(frozen=True, slots=True)
class SimpleCommand:
    """One simple command: leading `VAR=value` assignments, then argv."""

    assignments: tuple[str, ...]
    argv: tuple[str, ...]
    globbed: tuple[bool, ...] = ()
    """Per argv word: does it contain an unquoted glob (`*`, `?`, `[`) or brace expansion
    (`{a,b}`) the shell expands into other words?"""
    file_writes: tuple[str, ...] = ()
    """Targets of output redirections into files (not /dev/null or a file descriptor), the
    command's own and those of the compound commands around it (`{ ...; } > FILE`)."""
    file_reads: tuple[str, ...] = ()
    """Files its input is redirected from (`< FILE`, `<> FILE`), its own and those of the
    compound commands around it (`for ...; done < FILE`)."""

    @property
    def text(self) -> str:
        """What rule patterns are matched against: the words, unquoted, joined by spaces."""
        return " ".join((*self.assignments, *self.argv))

    @property
    def name(self) -> str:
        return self.argv[0] if self.argv else ""

    def has_glob(self) -> bool:
        return any(self.globbed)


@dataclass(slots=True)
class ParsedCommand:
    source: str
    parts: list[SimpleCommand] = field(default_factory=list)
    """Simple commands the shell runs at top level, in order."""
    nested: list[SimpleCommand] = field(default_factory=list)
    """Simple commands inside substitutions and function bodies."""
    unsafe: list[str] = field(default_factory=list)
    """Why no narrow rule may match this command (empty when a narrow rule may)."""
    error: str | None = None
    """Why parsing failed (then `parts` is empty)."""

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def narrow_matchable(self) -> bool:
        """True when matching every part against narrow rules says what the command does."""
        return self.ok and not self.unsafe and bool(self.parts)

    def commands(self) -> list[SimpleCommand]:
        return [*self.parts, *self.nested]


def parse_command(source: str) -> ParsedCommand:
    """Parse `source`; never raises (a failure is recorded in `error`)."""
    parsed = ParsedCommand(source=source)
    if "\x00" in source:
        parsed.error = "the command contains a NUL byte"
        return parsed
    if "$'" in source or '$"' in source:
        # bashlex misreads ANSI-C and locale quoting, which can spell any name.
        parsed.unsafe.append("$'…' quoting")
    if not source.strip():
        parsed.error = "the command is empty"
        return parsed
    rewritten, quoted_heredocs = _unquote_heredoc_delimiters(source)
    bashlex = _bashlex()
    try:
        with _time_limit(PARSE_TIME_LIMIT_S):
            trees = bashlex.parse(rewritten)
    except _ParseTimeout:
        parsed.error = f"the command took bashlex over {PARSE_TIME_LIMIT_S:g}s to parse"
        return parsed
    except Exception as exc:  # bashlex raises several unrelated types, including NotImplemented
        parsed.error = f"the command cannot be parsed ({type(exc).__name__}: {exc})"
        return parsed
    walker = _Walker(rewritten, parsed, quoted_heredocs)
    for tree in trees:
        walker.walk(tree, nested=False)
    if _has_comment(rewritten, trees):
        # bashlex drops comments; where it and bash disagree on one, a command could hide.
        walker.unsafe("a comment")
    return parsed


PARSE_TIME_LIMIT_S = 2.0
"""bashlex has had input that makes it loop forever (see `_bashlex`); a parse running longer
than this (a 50 kB command takes ~0.5 s) is given up, so the command is unparsable: it asks."""


class _ParseTimeout(Exception):
    pass


@contextlib.contextmanager
def _time_limit(seconds: float) -> Iterator[None]:
    """Raise `_ParseTimeout` in the block after `seconds`: SIGALRM interrupts a pure-Python loop.

    The permission check runs on the main thread's event loop, so a parser stuck in a loop would
    freeze the agent past Ctrl-C. Signals only reach the main thread, and the process has one
    interval timer: elsewhere, or while something else uses the timer, no limit is set.
    """
    if threading.current_thread() is not threading.main_thread() or any(
        signal.getitimer(signal.ITIMER_REAL)
    ):
        yield
        return

    def on_alarm(signum: int, frame: Any) -> None:
        raise _ParseTimeout

    previous = signal.signal(signal.SIGALRM, on_alarm)
    try:
        signal.setitimer(signal.ITIMER_REAL, seconds)
        try:
            yield
        finally:
            # The one-shot alarm may still fire up to here (then the parse counts as too slow);
            # the handler is put back whatever happens.
            signal.setitimer(signal.ITIMER_REAL, 0)
    finally:
        signal.signal(signal.SIGALRM, previous)


_BASHLEX: Any = None


def _bashlex() -> Any:
    """Import bashlex on first use, with its `${` bug closed.

    Imported lazily: bashlex builds its LALR tables at import (~0.5 s), which commands that
    never classify a shell command (and `run` before its first request) should not pay.

    bashlex 0.18 loops forever, growing memory, on a word holding `${` with no `}` after it
    (`echo ${`): `_paramexpand` takes `str.find`'s -1 as the end and restarts the word at 0.
    Bash calls that a bad substitution, so it is raised as a parse error here, and the command
    is never narrowly matched.
    """
    global _BASHLEX
    if _BASHLEX is None:
        import bashlex
        import bashlex.errors
        import bashlex.subst

        paramexpand = bashlex.subst._paramexpand

        def guarded(parserobj: Any, string: str, sindex: int) -> Any:
            brace = sindex + 1
            if string[brace : brace + 1] == "{" and string.find("}", brace + 1) == -1:
                raise bashlex.errors.ParsingError("bad substitution: no closing '}'", string, brace)
            return paramexpand(parserobj, string, sindex)

        bashlex.subst._paramexpand = guarded
        _BASHLEX = bashlex
    return _BASHLEX


_LEAVES = frozenset(
    {"word", "assignment", "operator", "pipe", "reservedword", "redirect", "heredoc", "tilde"}
)


def _has_comment(source: str, trees: list[Any]) -> bool:
    """Is there a `#` outside every word, operator and here-document bashlex parsed?"""
    if "#" not in source:
        return False
    covered = [False] * len(source)
    stack = list(trees)
    while stack:
        node = stack.pop()
        if node.kind in _LEAVES:
            start, end = node.pos
            covered[start:end] = [True] * (end - start)
        for name in ("parts", "list", "redirects", "command", "output", "heredoc"):
            child = getattr(node, name, None)
            if isinstance(child, list):
                stack.extend(child)
            elif child is not None and hasattr(child, "kind"):
                stack.append(child)
    return any(char == "#" and not covered[i] for i, char in enumerate(source))


def _unquote_heredoc_delimiters(source: str) -> tuple[str, frozenset[int]]:
    """bashlex cannot read `<<'EOF'`; write it as `<< EOF ` (same length, so positions hold)
    and return where each such delimiter starts, to treat those here-documents as quoted."""
    starts: set[int] = set()

    def unquote(match: re.Match[str]) -> str:
        starts.add(match.start(4))
        return f"<<{match.group(1)}{match.group(2)} {match.group(4)} "

    return _QUOTED_HEREDOC.sub(unquote, source), frozenset(starts)


class _Walker:
    def __init__(self, source: str, parsed: ParsedCommand, quoted_heredocs: frozenset[int]) -> None:
        self.source = source
        self.parsed = parsed
        self.quoted_heredocs = quoted_heredocs
        # Redirections of the compound commands being walked: they apply to every command
        # inside (`{ echo x; } > .git/config` writes with echo's output).
        self.outer_writes: tuple[str, ...] = ()
        self.outer_reads: tuple[str, ...] = ()

    def unsafe(self, why: str) -> None:
        if why not in self.parsed.unsafe:
            self.parsed.unsafe.append(why)

    def walk(self, node: Any, *, nested: bool) -> None:
        kind = node.kind
        if kind == "command":
            self.command(node, nested=nested)
            return
        if kind in ("commandsubstitution", "processsubstitution"):
            self.unsafe(
                "command substitution" if kind == "commandsubstitution" else "process substitution"
            )
            self.walk(node.command, nested=True)
            return
        if kind == "function":
            self.unsafe("function definition")
            nested = True
        elif kind == "redirect":
            self.redirect(node)
            return
        elif kind == "word":
            self.word_parts(node)
            return
        outer = (self.outer_writes, self.outer_reads)
        for child in getattr(node, "redirects", None) or ():
            self.record(self.redirect(child))
        try:
            for child in (*getattr(node, "parts", ()), *getattr(node, "list", ())):
                self.walk(child, nested=nested)
        finally:
            self.outer_writes, self.outer_reads = outer

    def record(self, redirected: tuple[str, str] | None) -> None:
        """Note a compound command's redirection for the commands inside it."""
        if redirected is not None:
            direction, target = redirected
            if direction in ("write", "both"):
                self.outer_writes = (*self.outer_writes, target)
            if direction in ("read", "both"):
                self.outer_reads = (*self.outer_reads, target)

    def command(self, node: Any, *, nested: bool) -> None:
        assignments: list[str] = []
        argv: list[str] = []
        globbed: list[bool] = []
        writes, reads = list(self.outer_writes), list(self.outer_reads)
        for part in node.parts:
            if part.kind == "assignment" and not argv:
                self.word_parts(part)
                assignments.append(part.word)
            elif part.kind in ("word", "assignment"):
                self.word_parts(part)
                raw = self.source[part.pos[0] : part.pos[1]]
                bare = _unquoted(raw)
                if not argv and (part.parts or any(c in bare for c in "*?[{$`")):
                    self.unsafe("a computed command name")
                if "{" in bare and "," in bare:
                    self.unsafe("brace expansion")
                argv.append(part.word)
                globbed.append(any(c in bare for c in "*?[") or ("{" in bare and "," in bare))
            elif part.kind == "redirect":
                redirected = self.redirect(part)
                if redirected is not None:
                    direction, target = redirected
                    if direction in ("write", "both"):
                        writes.append(target)
                    if direction in ("read", "both"):
                        reads.append(target)
        command = SimpleCommand(
            assignments=tuple(assignments),
            argv=tuple(argv),
            globbed=tuple(globbed),
            file_writes=tuple(writes),
            file_reads=tuple(reads),
        )
        (self.parsed.nested if nested else self.parsed.parts).append(command)

    def word_parts(self, word: Any) -> None:
        for part in getattr(word, "parts", ()):
            if part.kind == "parameter":
                if not _SIMPLE_PARAMETER.match(getattr(part, "value", "") or ""):
                    self.unsafe("a parameter expansion with operators")
            elif part.kind != "tilde":
                self.walk(part, nested=True)

    def redirect(self, node: Any) -> tuple[str, str] | None:
        """Record what a redirection does; return the file it reads or writes, if any, and
        which of the two (`read`, `write` or `both`)."""
        output = node.output
        heredoc = getattr(node, "heredoc", None)
        if heredoc is not None:
            delimiter = self.source[output.pos[0] : output.pos[1]]
            quoted = output.pos[0] in self.quoted_heredocs or any(q in delimiter for q in "'\"\\")
            if not quoted and re.search(r"\$|`", heredoc.value):
                self.unsafe("a here-document that expands")
            return None
        if isinstance(output, (int, str)) or output is None:
            return None  # a file-descriptor duplication such as 2>&1, or closing one: >&-
        self.word_parts(output)
        if node.type in _INPUT_REDIRECTS:
            # `<<<` reads a word, `<&` a descriptor; only `<` opens a file.
            return ("read", str(output.word)) if node.type == "<" else None
        if output.word in HARMLESS_TARGETS or output.word == "-":
            return None
        self.unsafe("redirection into a file")
        return ("both" if node.type == "<>" else "write", str(output.word))


def _unquoted(raw: str) -> str:
    """The characters of a raw word that are outside quotes and not backslash-escaped."""
    out: list[str] = []
    quote = ""
    escaped = False
    for char in raw:
        if escaped:
            escaped = False
        elif char == "\\" and quote != "'":
            escaped = True
        elif quote:
            if char == quote:
                quote = ""
        elif char in "'\"":
            quote = char
        else:
            out.append(char)
    return "".join(out)


def rough_commands(source: str) -> list[SimpleCommand]:
    """A best-effort split of a command bashlex could not parse, for deny and destructive
    checks only (never to allow anything): cut at every operator, then shell-split."""
    commands = []
    for segment in re.split(r"[;&|\n()`<>{}]|\$\(", source):
        try:
            words = shlex.split(segment, comments=False)
        except ValueError:
            words = segment.split()
        assignments = []
        while words and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", words[0]):
            assignments.append(words.pop(0))
        if words or assignments:
            commands.append(SimpleCommand(assignments=tuple(assignments), argv=tuple(words)))
    return commands
