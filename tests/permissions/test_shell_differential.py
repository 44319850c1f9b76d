"""The shell parser against bash itself.

Each command runs under the real `bash -c` with a PATH holding only stub programs, every one a
tiny script that appends its argv as one JSON line to a log, and with every bash builtin
disabled (`enable -n`, from `BASH_ENV`), so `echo`, `printf`, `test`, `[`, `exec`, `eval`,
`command`, `read`... run the stubs too: the log is exactly what bash executed. The oracle is
bash: whenever the parse says a command is narrowly matchable, bash must have run exactly the
argv lists of its parts (in order when the order is determined; a word the parse marks as a
glob stands for the one or more words bash expands it to). Commands the parse marks unsafe or
unparsable are only checked to be marked. A hypothesis variant builds commands from a small
grammar of words, quoting, escapes, line continuations, operators and redirections.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import subprocess
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from agentcli.permissions.shell import ParsedCommand, SimpleCommand, parse_command

BASH = shutil.which("bash")
PERL = shutil.which("perl")
pytestmark = pytest.mark.skipif(not (BASH and PERL), reason="needs bash and perl")

STUB = r"""#!PERL
my @w = ($ENV{STUB_NAME} // ($0 =~ s{.*/}{}r), @ARGV);
my $line = "[" . join(",", map {
    my $s = $_;
    $s =~ s/(["\\])/\\$1/g;
    $s =~ s/([\x00-\x1f\x7f-\xff])/sprintf("\\u%04x", ord($1))/ge;
    "\"$s\""
} @w) . "]\n";
open(my $fh, ">>", $ENV{STUB_LOG}) or die "log: $!";
syswrite($fh, $line);
exit($w[0] eq "false" ? 1 : 0);
"""
"""Logs its argv as JSON, one byte per character (\\u00XX), in one write (pipelines and
background jobs log concurrently)."""

PRELUDE = """\
for _b in $(enable); do case $_b in enable) ;; *) enable -n "$_b";; esac; done
command_not_found_handle() { STUB_NAME="$1" @STUB@ "${@:2}"; }
"""
"""Disables every builtin, and logs a program that does not exist like the stubs do."""
PROGRAMS = (
    *("echo", "ls", "cat", "rm", "rg", "git", "grep", "printf", "true", "false", "test", "["),
    *("pwd", "cd", "exec", "command", "eval", "wait", "read", "A=1", "kill", "time"),
)
FILES = ("a.py", "b.py", "c.txt", "sub/d.py", "sub/e.txt")


@dataclass(frozen=True)
class Bash:
    root: Path

    def run(self, command: str) -> list[list[str]]:
        """What bash executed for `command`: one argv per program run, in the order run."""
        log = self.root / f"log-{os.getpid()}"
        log.unlink(missing_ok=True)
        env = {
            "PATH": str(self.root / "bin"),
            "HOME": str(self.root / "home"),
            "BASH_ENV": str(self.root / "prelude.sh"),
            "STUB_LOG": str(log),
            "LC_ALL": "C",
        }
        # Every process bash starts inherits `alive`'s write end, and its read end sees EOF
        # only when the last of them has exited: background jobs included, even those whose
        # output goes elsewhere (`a 2>&1 | b &`), which waiting for stdout to close missed.
        done, alive = os.pipe()
        try:
            subprocess.run(
                [str(BASH), "-c", command],
                cwd=self.root / "work",
                env=env,
                capture_output=True,
                stdin=subprocess.DEVNULL,
                pass_fds=(alive,),
                timeout=30,
                check=False,
            )
            os.close(alive)
            alive = -1
            ready, _, _ = select.select([done], [], [], 30)
            assert ready and os.read(done, 1) == b"", f"{command!r}: a job outlived 30 s"
        finally:
            os.close(done)
            if alive != -1:
                os.close(alive)
        if not log.exists():
            return []
        lines = log.read_text(encoding="utf-8").splitlines()
        log.unlink()
        return [[_as_str(word) for word in json.loads(line)] for line in lines]


def _as_str(word: str) -> str:
    """The stub wrote one character per byte; the parser speaks UTF-8 text."""
    return word.encode("latin-1").decode("utf-8", "surrogateescape")


@pytest.fixture(scope="module")
def bash(tmp_path_factory: pytest.TempPathFactory) -> Bash:
    root = tmp_path_factory.mktemp("bash")
    (root / "bin").mkdir()
    stub = root / "stub"
    stub.write_text(STUB.replace("PERL", str(PERL)))
    stub.chmod(0o755)
    for name in PROGRAMS:
        (root / "bin" / name).symlink_to(stub)
    (root / "prelude.sh").write_text(PRELUDE.replace("@STUB@", str(stub)))
    (root / "home").mkdir()
    for name in FILES:
        (root / "work" / name).parent.mkdir(parents=True, exist_ok=True)
        (root / "work" / name).write_text("")
    return Bash(root)


def runs(part: SimpleCommand, argv: Sequence[str]) -> bool:
    """Does `argv` (what bash ran) fit `part`: equal words, and one or more words where the
    parse marked a glob?"""
    words = list(zip(part.argv, part.globbed or (False,) * len(part.argv), strict=True))

    def fits(i: int, j: int) -> bool:
        if i == len(words):
            return j == len(argv)
        word, globbed = words[i]
        if not globbed:
            return j < len(argv) and argv[j] == word and fits(i + 1, j + 1)
        return any(fits(i + 1, k) for k in range(j + 1, len(argv) + 1))

    return fits(0, 0)


def _matchings(parts: list[SimpleCommand], ran: list[list[str]]) -> Iterator[None]:
    """Yields once for every way to pair each run argv with a distinct part."""
    if not ran:
        yield None
        return
    for index, part in enumerate(parts):
        if runs(part, ran[0]):
            yield from _matchings(parts[:index] + parts[index + 1 :], ran[1:])


def check(bash: Bash, command: str, how: str) -> ParsedCommand:
    """Run `command` under bash when the parse says it is narrowly matchable, and compare.
    `how`: `sequential` (bash runs every part, in order), `concurrent` (every part, in any
    order: pipelines, `&`), `branching` (some parts, any number of times: `||`, if, loops)."""
    parsed = parse_command(command)
    if not parsed.narrow_matchable:
        return parsed
    assert not parsed.nested, "a narrowly matchable command has no nested commands"
    parts = [part for part in parsed.parts if part.argv]
    ran = bash.run(command)
    shown = f"{command!r}: parsed {[p.argv for p in parts]}, bash ran {ran}"
    if how == "sequential":
        assert len(ran) == len(parts), shown
        assert all(runs(p, argv) for p, argv in zip(parts, ran, strict=True)), shown
    elif how == "concurrent":
        assert len(ran) == len(parts), shown
        assert next(_matchings(parts, ran), "none") is None, shown
    else:
        assert all(any(runs(p, argv) for p in parts) for argv in ran), shown
    return parsed


SEQUENTIAL = [
    "echo a b",
    "e\\cho a",
    "ec'h'o \"a b\" c",
    "echo a'b c'\"x\"y",
    'echo "a\\"b" \'c\\d\' "e\\\\f" "g\\$h" "i\\`j" "k\\l"',
    "echo \\a\\ b \\\\ \\' \\\"",
    "\\ls",
    '"ls" -la',
    "'l's",
    "echo '' \"\" x",
    "echo é ü",
    "echo\ta\t\tb",
    "echo 'a\nb' \"c\nd\"",
    "echo '*' \"?\" \\[ '{a,b}' \\{a,b\\} {a\\,b} '~' \\~ \"~\" '$x' \\$x",
    "echo {} {a} a{}b",
    "echo a=b c=d --x=y",
    "echo -n -e x",
    "echo a#b c# 'd #e'",
    "echo ls#x",
    "echo a2>/dev/null b",
    "echo a # comment && rm -rf x",
    "ls # && rm -rf x",
    "echo x #comment\necho y",
    "echo a &&# comment\necho b",
    "echo a\\ #x",
    "echo a\\;#x; echo b",
    'echo "a"#x #y',
    "echo x;echo y",
    "echo x && echo y",
    "echo x\necho y\n",
    "echo x &&\necho y",
    "echo x;",
    # Backslash-newline: bash joins the words around it; tree-sitter alone would not.
    "echo a\\\nb",
    "echo a \\\n  b",
    "rg x --p\\\nre=sh",
    "ec\\\nho x",
    'echo "a\\\nb"',
    "echo 'a\\\nb'",
    "echo a\\\\\necho b",
    "echo a\\\\\\\nb",
    "echo x \\\n# not a comment in bash? yes it is\necho y",
    "echo a\\\n#b",
    "(echo a; echo b)",
    "{ echo a; echo b; }",
    "! echo a",
    "echo a; ! echo b",
    "A=1",
    "A=1; echo x",
    "A=1 B='x y' echo x",
    "A=1 echo x",
    'A"=1" echo x',
    "echo x > /dev/null",
    "echo x 2>&1",
    "echo x 2>/dev/null y",
    "echo x 2>/dev/null y > /dev/null z",
    "> /dev/null echo x",
    "echo x >&2",
    "echo x >&-",
    "echo x 1>&2 3>&-",
    "echo x </dev/null",
    "echo x >|/dev/null",
    "echo x &>/dev/null",
    "echo x &>>/dev/null",
    "(echo a) 2>/dev/null",
    "{ echo a; } >/dev/null",
    "exec echo a",
    "command echo x",
    "eval echo x",
    "cat <<'EOF'\n$(rm -rf x)\n`id`\nEOF",
    "cat <<EOF\nplain text\nEOF\necho after",
    "cat <<-EOF\n\tx\n\tEOF\necho after",
    'cat <<"EOF" && echo after\nbody $x\nEOF',
    "cat <<\\EOF\n$x\nEOF",
    "cat <<EOF\nEOF\necho after",
    "cat <<EOF\nx\\\nEOF\necho hidden\nEOF",
    "[ -f a.py ]",
    "[ ! -f x -a -n 'y z' ]",
    "[ a == b* ]",
    "test -f a.py",
    "ls *.py",
    "ls [ab].py ?.py",
    "ls nomatch* sub/*",
    "echo [ a]b",
]

CONCURRENT = [
    "echo x | cat",
    "echo x |& cat",
    "echo x & echo y",
    "echo a &\necho b",
    "echo x |\ncat",
    "echo a | cat | ls",
    "cat <<EOF | cat\nx\nEOF",
    "echo a && echo b | cat",
    "echo a > /dev/null && echo b < /dev/null | cat 2>/dev/null",
]

BRANCHING = [
    "if true; then echo a; else echo b; fi",
    "if false; then echo a; elif true; then echo b; fi",
    "while false; do echo a; done",
    "for x in a b; do echo y; done",
    "for x in *.py; do echo y; done",
    "case a in a) echo a;; b) echo b;; esac",
    "case a in *) echo x;; esac",
    "true || echo no",
    "false || echo yes",
    "false && echo no",
    "echo a && (echo b || echo c)",
    "until true; do echo x; done",
    "[ a = b ] && echo x || echo y",
]

UNSAFE = [
    "time echo x",
    "coproc echo x",
    "echo a | time cat",
    "[[ -f x ]] && echo y",
    "[ a < b ]",
    "[ a=b ]",
    "[ \\( a \\) ]",
    "[ -z $(echo) ]",
    "(( 1 )) && echo y",
    "echo $((1+2))",
    "echo $[1]",
    "echo <(echo x)",
    "echo $'a'",
    'echo $"a"',
    'echo $x ${x} "$x"',
    "echo a$",
    "echo ~ ~/x",
    "echo x=~/a a:~",
    "A=~/x echo y",
    "A=$x echo y",
    "echo a{b,c}",
    "echo {1..3}",
    "echo --pre{=a.sh,=a.sh}",
    "echo x > out",
    "echo x >> out",
    "echo x &> out",
    "echo x >& out",
    "echo x 1<> out",
    "echo x > $out",
    "cat <<EOF\n$x\nEOF",
    "cat <<EOF\n`echo hi`\nEOF",
    "cat <<EOF\nx\n EOF\necho hidden\nEOF",
    "cat <<EOF\nx\nEOF \necho hidden\nEOF",
    "cat <<E'O'F\nx\nEOF",
    "echo {fd}>/dev/null",
    "echo ?(a)",
    "echo @(a|b)",
    "f() { echo x; }; f",
    "function f { echo x; }",
    "export A=1; echo x",
    "declare -a x=(1 2)",
    "x=(1 2)",
    "a[1]=x echo y",
    "1a=1 echo x",
    "ls#x",
    "(echo a)#x\necho b",
    "echo $(echo)#x; echo b",
    "echo a\\\tb",
    "echo a\rb",
    "echo { }",
    "$CMD -la",
    "e$X evil",
    "echo `echo x`",
    "echo $(echo x)",
    'echo "$(echo x)"',
    "echo ${X:=--output=pwned}",
    "echo 'unterminated",
    "echo a;;",
    "ls &&",
    "echo a\\",
    "for ((i=0; i<1; i++)); do echo x; done",
    "select x in a; do echo x; done",
    "echo a |",
    "case a in a) echo a;& esac",
    "echo \x00x",
]


@pytest.mark.parametrize("command", SEQUENTIAL)
def test_sequential_commands_run_exactly_their_parts(bash: Bash, command: str) -> None:
    assert check(bash, command, "sequential").narrow_matchable, parse_command(command)


@pytest.mark.parametrize("command", CONCURRENT)
def test_concurrent_commands_run_exactly_their_parts(bash: Bash, command: str) -> None:
    assert check(bash, command, "concurrent").narrow_matchable, parse_command(command)


@pytest.mark.parametrize("command", BRANCHING)
def test_branching_commands_run_only_their_parts(bash: Bash, command: str) -> None:
    assert check(bash, command, "branching").narrow_matchable, parse_command(command)


@pytest.mark.parametrize("command", UNSAFE)
def test_commands_bash_computes_are_marked(command: str) -> None:
    assert not parse_command(command).narrow_matchable


# The hypothesis variant: words from pieces bash reads differently (quotes, escapes, globs,
# braces, `~`, `#`, `$`, backslash-newlines), joined into commands by operators.
NAMES = ("echo", "ls", "cat", "printf")
PLAIN = st.text(alphabet="abcxyz019-=.,:@%+/", min_size=1, max_size=4)
QUOTABLE = "ab *?[]{},~#$`\"\\;&|<>()\n\t'"
PIECES = st.one_of(
    PLAIN,
    st.text(alphabet=QUOTABLE.replace("'", ""), max_size=4).map(lambda s: f"'{s}'"),
    st.text(alphabet="ab *?[]{},~#'\n;&|<>()", max_size=4).map(lambda s: f'"{s}"'),
    st.sampled_from(['"\\$"', '"\\""', '"\\\\"', '"\\`"', '"\\a"', '"a\\\nb"']),
    st.sampled_from(list(QUOTABLE)).map(lambda c: "\\" + c),
    st.sampled_from(["*", "?", "[ab]", "{a,b}", "{1..2}", "~", "#", "$x", "$'a'", "a\\\nb"]),
)
WORDS = st.lists(PIECES, min_size=1, max_size=3).map("".join)
SPACES = st.sampled_from([" ", "  ", "\t", " \\\n", "\\\n "])
REDIRECTS = st.sampled_from(
    ["", " >/dev/null", " 2>&1", " 2>/dev/null", " </dev/null", " >&2", " >/dev/null x"]
)
ASSIGNMENTS = st.sampled_from(["", "A=1 ", "A='x y' ", "A=a\\ b ", "A=\\~ "])
HEREDOC_LINES = st.sampled_from(
    ["x", "$x", "EOF ", " EOF", "\tEOF", "EOFx", "a\\", "'EOF'", "echo x", "#"]
)


@st.composite
def simple_commands(draw: st.DrawFn) -> str:
    name = draw(st.sampled_from(NAMES))
    spelled = draw(st.sampled_from([name, f"'{name}'", f'"{name[0]}"{name[1:]}', "\\" + name]))
    words = draw(st.lists(WORDS, max_size=4))
    text = draw(ASSIGNMENTS) + spelled
    for word in words:
        text += draw(SPACES) + word
    return text + draw(REDIRECTS)


@st.composite
def heredocs(draw: st.DrawFn) -> str:
    """`cat <<EOF` with a body that may hold lines bash does not take for the delimiter."""
    operator = draw(st.sampled_from(["<<", "<<-", "<< "]))
    delimiter = draw(st.sampled_from(["EOF", "'EOF'", '"EOF"', "\\EOF"]))
    body = "".join(line + "\n" for line in draw(st.lists(HEREDOC_LINES, max_size=3)))
    end = draw(st.sampled_from(["EOF", "\tEOF"]))
    return f"cat {operator}{delimiter}\n{body}{end}\n" + draw(simple_commands())


@st.composite
def commands(draw: st.DrawFn) -> tuple[str, str]:
    first = draw(simple_commands() | heredocs())
    text, how = first, "sequential"
    for _ in range(draw(st.integers(0, 2))):
        operator = draw(st.sampled_from([";", " && ", "\n", " || ", " | ", " & ", " # x\n"]))
        if operator.strip() in ("|", "&"):
            how = "concurrent" if how == "sequential" else how
        if operator.strip() == "||":
            how = "branching"
        text += operator + draw(simple_commands())
    wrap = draw(st.sampled_from(["{}", "( {} )", "{{ {}; }}", "! {}"]))
    if wrap == "! {}" and text != first:
        how = "branching"  # `! a && b` negates `a` only: `b` does not run
    return wrap.format(text), how


@settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(commands())
# Once failed: the first job's output goes to `printf`, so bash's stdout closed before the
# stub for the first job had logged its run (see `Bash.run`).
@example(
    (
        "A=1 \"c\"at \\\n#\\\n .\"\"'?\n \"'\t'>~<,' \\\n\"?}~\" 2>&1 | 'printf' '*'"
        "  :x:-[ab]\\|\\\n x.cc-\t'''a><'\\} </dev/null & A=\\~ 'ls' >/dev/null x",
        "concurrent",
    )
)
# A word starting with `%` in command position is a job specification: bash runs `fg`.
@example(("echo 0 # \\\n%", "sequential"))
def test_generated_commands_run_what_the_parse_says(bash: Bash, generated: tuple[str, str]) -> None:
    command, how = generated
    check(bash, command, how)


@pytest.mark.parametrize("command", ["%", "%1", "'%'", '"%x"', "%+ &", "echo a; %- arg"])
def test_a_job_specification_is_never_narrowly_matched(bash: Bash, command: str) -> None:
    """bash takes a command word starting with `%` (quoted too) for `fg WORD`: no program of
    that name runs, so no narrow rule may say what the command does (found by the generator:
    `echo 0 # \\` then `%` on the next line)."""
    parsed = parse_command(command)
    assert not parsed.narrow_matchable
    assert any("job specification" in why for why in parsed.unsafe)
    assert not any(argv[0].startswith("%") for argv in bash.run(command))
