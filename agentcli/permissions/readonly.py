"""The built-in read-only commands: which programs, with which options, run without asking.

They still run inside the read-only OS sandbox, which is what keeps them from writing; this list
only decides whether to ask. So it is a small allow-list of plain programs, each with the
options it may take, in one table. Anything else asks: an unknown option (including an
abbreviated long option: `--pr` would be `--pre` to a GNU-style parser, so long options count
only spelled out in full), an option that runs a program, writes a file or never ends
(`rg --pre`, `sort -o`, `find -exec`, `tail -f`, `git diff --output`), a word bash computes,
a redirection into a file, a glob that could expand into an option of a program that has
dangerous ones, or an assignment prefix.

Each program's options are a `Syntax`, read getopt_long style (`agentcli.permissions.options`):
a value is never taken for an option or a path, nor an option for a value.
"""

from __future__ import annotations

import re

from agentcli.permissions.options import Syntax, operands, takes_next_word
from agentcli.permissions.shell_command import SimpleCommand


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_COLOR = _words("--color --colour")
PROGRAMS: dict[str, Syntax] = {
    "ls": Syntax(
        flags="aAbBcCdfFgGhHiklLmnNopqQrRsStuUvxXZ1",
        valued="ITw",
        long_flags=_words(
            "--all --almost-all --author --escape --ignore-backups --directory --dired"
            " --file-type --full-time --group-directories-first --no-group --human-readable"
            " --si --dereference --dereference-command-line --inode --kibibytes --literal"
            " --numeric-uid-gid --hide-control-chars --show-control-chars --quote-name"
            " --reverse --recursive --size --context --zero"
        ),
        long_valued=_words(
            "--block-size --format --hide --ignore --indicator-style --quoting-style --sort"
            " --time --time-style --tabsize --width"
        ),
        long_optional=_COLOR | _words("--classify --hyperlink"),
    ),
    "cat": Syntax(
        flags="AbeEnstTuv",
        long_flags=_words(
            "--show-all --number-nonblank --show-ends --number --squeeze-blank --show-tabs"
            " --show-nonprinting"
        ),
    ),
    "head": Syntax(
        flags="qvz",
        valued="nc",
        long_flags=_words("--quiet --silent --verbose --zero-terminated"),
        long_valued=_words("--lines --bytes"),
        digits=True,
    ),
    # No -f/-F/--follow/--retry/-s/--pid: following a file never ends.
    "tail": Syntax(
        flags="qvz",
        valued="nc",
        long_flags=_words("--quiet --silent --verbose --zero-terminated"),
        long_valued=_words("--lines --bytes"),
        digits=True,
        globs=False,
    ),
    "wc": Syntax(
        flags="cmlLw",
        long_flags=_words("--bytes --chars --lines --max-line-length --words"),
        long_valued=_words("--total"),
    ),
    "grep": Syntax(
        flags="iyvwxclLnhHoqsrREFGPaIzZbTU",
        valued="efmABCdD",
        long_flags=_words(
            "--ignore-case --no-ignore-case --invert-match --word-regexp --line-regexp"
            " --count --files-with-matches --files-without-match --line-number"
            " --no-filename --with-filename --only-matching --quiet --silent --no-messages"
            " --recursive --dereference-recursive --extended-regexp --fixed-strings"
            " --basic-regexp --perl-regexp --text --null-data --null --byte-offset"
            " --initial-tab --line-buffered"
        ),
        long_valued=_words(
            "--regexp --file --max-count --after-context --before-context --context"
            " --include --exclude --exclude-dir --exclude-from --binary-files --devices"
            " --directories --label"
        ),
        long_optional=_COLOR,
        digits=True,
    ),
    # Never --pre, --pre-glob, --hostname-bin, -z/--search-zip (they run programs); no -r
    # (--replace) either: `-rnz` would be a replacement text, not grep's `-r -n -z`.
    "rg": Syntax(
        flags="iSsnNlcvwxFHoqLaUP0uh",
        valued="efgtTmABCjMEd",
        long_flags=_words(
            "--ignore-case --smart-case --case-sensitive --line-number --no-line-number"
            " --files-with-matches --files-without-match --count --count-matches"
            " --invert-match --word-regexp --line-regexp --fixed-strings --with-filename"
            " --no-filename --only-matching --quiet --follow --text --multiline"
            " --multiline-dotall --pcre2 --null --unrestricted --hidden --no-ignore"
            " --no-ignore-vcs --no-ignore-parent --no-ignore-dot --files --type-list --column"
            " --no-heading --heading --json --vimgrep --stats --trim --passthru"
            " --no-messages --byte-offset --glob-case-insensitive --no-config --sort-files"
            " --one-file-system"
        ),
        long_valued=_words(
            "--regexp --file --glob --iglob --type --type-not --max-count --after-context"
            " --before-context --context --threads --max-columns --encoding --replace"
            " --max-depth --max-filesize --sort --sortr --ignore-file --engine"
            " --path-separator --context-separator --field-match-separator"
        ),
        long_optional=_COLOR,
        globs=False,
    ),
    "pwd": Syntax(flags="LP", max_operands=0),
    "stat": Syntax(
        flags="Lft",
        valued="c",
        long_flags=_words("--dereference --file-system --terse"),
        long_valued=_words("--format --printf"),
    ),
    "basename": Syntax(
        flags="az",
        valued="s",
        long_flags=_words("--multiple --zero"),
        long_valued=_words("--suffix"),
    ),
    "dirname": Syntax(flags="z", long_flags=_words("--zero")),
    "nl": Syntax(
        flags="p",
        valued="bdfhilnsvw",
        long_flags=_words("--no-renumber"),
        long_valued=_words(
            "--body-numbering --section-delimiter --footer-numbering --header-numbering"
            " --line-increment --join-blank-lines --number-format --number-separator"
            " --starting-line-number --number-width"
        ),
        max_operands=1,
    ),
    # A second operand is the output file.
    "uniq": Syntax(
        flags="cdDiuz",
        valued="fsw",
        long_flags=_words("--count --repeated --ignore-case --unique --zero-terminated"),
        long_valued=_words("--skip-fields --skip-chars --check-chars"),
        long_optional=_words("--all-repeated --group"),
        max_operands=1,
        globs=False,
    ),
    "cut": Syntax(
        flags="nsz",
        valued="bcdf",
        long_flags=_words("--complement --only-delimited --zero-terminated"),
        long_valued=_words("--bytes --characters --delimiter --fields --output-delimiter"),
    ),
    "tr": Syntax(
        flags="cCdst",
        long_flags=_words("--complement --delete --squeeze-repeats --truncate-set1"),
        max_operands=2,
    ),
    # Never -o/--output, -T/--temporary-directory, --compress-program.
    "sort": Syntax(
        flags="bdfgiMhnRrsuVcCmz",
        valued="ktS",
        long_flags=_words(
            "--ignore-leading-blanks --dictionary-order --ignore-case --general-numeric-sort"
            " --ignore-nonprinting --month-sort --human-numeric-sort --numeric-sort"
            " --random-sort --reverse --version-sort --stable --unique --merge"
            " --zero-terminated"
        ),
        long_valued=_words("--key --field-separator --buffer-size --parallel --sort"),
        long_optional=_words("--check"),
        globs=False,
    ),
    "which": Syntax(flags="as"),
    "uname": Syntax(
        flags="asnrvmpio",
        long_flags=_words(
            "--all --kernel-name --nodename --kernel-release --kernel-version --machine"
            " --processor --hardware-platform --operating-system"
        ),
        max_operands=0,
    ),
}
"""Plain read-only programs and the options each may take. `echo`, `true` and `false` take
any words (bash's builtins print or ignore them); `find`, `sed` and `git` are read below."""

ANY_ARGUMENTS = frozenset({"echo", "true", "false"})

FIND_GLOBAL = Syntax(flags="HLP", valued="DO")
"""find's options before the starting points (`-O3`: an attached level)."""
FIND_TESTS = _words(
    "-name -iname -path -ipath -wholename -iwholename -regex -iregex -lname -ilname -type"
    " -xtype -size -perm -user -group -uid -gid -links -inum -samefile -newer -mtime -mmin"
    " -atime -amin -ctime -cmin -used -maxdepth -mindepth -regextype -printf -fstype"
    " -newermt -newerct -newerat -newermm -newercc -newerBt -context"
)
"""find predicates that take one value."""
FIND_PREDICATES = _words(
    "-print -print0 -ls -prune -quit -true -false -empty -readable -writable -executable"
    " -nouser -nogroup -depth -xdev -mount -noleaf -daystart -follow -not -and -or -a -o !"
    " ( ) ,"
)
"""find predicates and operators without a value. Never -exec, -execdir, -ok, -okdir,
-delete, -fprint, -fprint0, -fprintf or -fls (they run programs or write files)."""

SED_PRINT_LINES = re.compile(r"[0-9]+(,[0-9]+)?p")
"""The only sed allowed: `sed -n 'Np'` or `sed -n 'N,Mp'` (a `w` or `e` command writes or
runs)."""

GIT_SUBCOMMANDS: dict[str, Syntax] = {
    "status": Syntax(
        flags="sbvz",
        attached="u",
        long_flags=_words(
            "--short --branch --long --verbose --no-column --ahead-behind --no-ahead-behind"
            " --renames --no-renames --show-stash"
        ),
        long_optional=_words("--porcelain --untracked-files --ignored --column --find-renames"),
        globs=False,
    ),
    "diff": Syntax(
        flags="puRwbaz",
        attached="MCU",
        long_flags=_words(
            "--patch --no-patch --raw --stat --numstat --shortstat --name-only --name-status"
            " --summary --cached --staged --no-color --color-words --ignore-space-change"
            " --ignore-all-space --ignore-blank-lines --text --minimal --patience --histogram"
            " --exit-code --quiet --check --no-renames --full-index --no-prefix --merge-base"
            " --binary"
            " --ignore-cr-at-eol --ignore-space-at-eol"
        ),
        long_valued=_words("--diff-filter --stat-width --src-prefix --dst-prefix"),
        long_optional=_COLOR
        | _words("--unified --word-diff --find-renames --abbrev --dirstat --relative"),
        globs=False,
    ),
    "log": Syntax(
        flags="puiEFzcm",
        valued="nSG",
        attached="MCU",
        long_flags=_words(
            "--oneline --all --graph --no-decorate --stat --shortstat --numstat --name-only"
            " --name-status --patch --no-patch --abbrev-commit --no-abbrev-commit --reverse"
            " --first-parent --merges --no-merges --follow --relative-date"
            " --regexp-ignore-case --extended-regexp --fixed-strings --left-right"
            " --cherry-pick --topo-order --date-order --author-date-order --no-color"
            " --full-diff --simplify-by-decoration --ancestry-path --source --no-renames"
            " --no-walk --cc --summary --binary"
        ),
        long_valued=_words(
            "--max-count --skip --since --after --until --before --author --committer --grep"
            " --date --diff-filter"
        ),
        long_optional=_COLOR
        | _words("--decorate --branches --tags --remotes --word-diff --find-renames --abbrev")
        | _words("--unified"),
        digits=True,
        globs=False,
    ),
    "show": Syntax(
        flags="psu",
        attached="U",
        long_flags=_words(
            "--stat --shortstat --numstat --name-only --name-status --patch --no-patch"
            " --oneline --abbrev-commit --no-abbrev-commit --no-color --quiet --summary"
            " --binary"
        ),
        long_valued=_words("--diff-filter"),
        long_optional=_COLOR | _words("--unified --word-diff --abbrev"),
        globs=False,
    ),
}
"""`git status|diff|log|show` and their options, only right after `git`: an option before the
subcommand (`-c`, `-C`, `--git-dir`, `--work-tree`, `--exec-path`, `-p`) never qualifies.
Never `--output`, `--ext-diff`, `--textconv`, `--no-index`, `--show-signature`."""
GIT_FORMATS = _words("--format --pretty")
"""git log/show formats: fine unless a placeholder verifies a signature (`%G?` runs gpg)."""


def is_read_only_part(part: SimpleCommand) -> bool:
    """Is this simple command a built-in read-only command with allowed options only?"""
    if part.assignments or not part.argv or part.file_writes or any(part.computed):
        return False
    name, args = part.name, list(part.argv[1:])
    globbed = list(part.globbed[1:] or (False,) * len(args))
    if part.globbed[:1] == (True,):
        return False
    if name in ANY_ARGUMENTS:
        return True
    if name in PROGRAMS:
        return operands(PROGRAMS[name], args, globbed) is not None
    if name == "find":
        return _find_read_only(args, globbed)
    if name == "sed":
        return _sed_read_only(args, globbed)
    if name == "git":
        return _git_read_only(args, globbed)
    return False


def _find_read_only(args: list[str], globbed: list[bool]) -> bool:
    if any(globbed):
        return False  # a file named `-delete` would become an action
    index = 0
    while index < len(args) and args[index].startswith("-") and args[index] not in FIND_TESTS:
        if args[index] in FIND_PREDICATES:
            break
        taken = takes_next_word(FIND_GLOBAL, args[index])
        if taken is None:
            return False
        index += 2 if taken else 1
    while index < len(args) and not _find_expression(args[index]):
        index += 1  # starting points
    while index < len(args):
        arg = args[index]
        if arg in FIND_TESTS:
            index += 2
            if index > len(args):
                return False
        elif arg in FIND_PREDICATES:
            index += 1
        else:
            return False
    return True


def _find_expression(word: str) -> bool:
    return word.startswith("-") or word in ("!", "(", ")", ",")


def _sed_read_only(args: list[str], globbed: list[bool]) -> bool:
    if len(args) < 2 or args[0] != "-n" or not SED_PRINT_LINES.fullmatch(args[1]):
        return False
    files = args[2:]
    return not any(globbed[2:]) and not any(f.startswith("-") for f in files)


def _git_read_only(args: list[str], globbed: list[bool]) -> bool:
    if not args or args[0] not in GIT_SUBCOMMANDS:
        return False
    sub = args[0]
    syntax = GIT_SUBCOMMANDS[sub]
    rest, rest_globbed = args[1:], globbed[1:]
    if sub in ("log", "show"):
        # A format is fine unless it verifies signatures (`%G?` runs gpg).
        kept = []
        for word, glob in zip(rest, rest_globbed, strict=True):
            name, equals, value = word.partition("=")
            if name in GIT_FORMATS and equals and "%G" not in value:
                continue
            kept.append((word, glob))
        rest, rest_globbed = [w for w, _ in kept], [g for _, g in kept]
    found = operands(syntax, rest, rest_globbed)
    if found is None:
        return False
    # `git diff /a /b` (a path outside the repository) is `git diff --no-index`.
    return sub != "diff" or not any(_leaves(path) for path in found)


def _leaves(path: str) -> bool:
    """Does `path` name something outside the working directory (`/abs`, `../x`)?"""
    return path.startswith("/") or ".." in path.split("/")
