"""What the search tools (`grep`, `glob`) leave out: files a `read(...)` rule keeps from the model.

`read_file` on a file under `deny read(GLOB)` is refused, so a search must neither print its
lines nor list its path. A file under `ask read(GLOB)` is left out too (a search over the whole
workspace is not the moment to ask about each such file), unless the user was asked about the
search itself, because its root is under an ask rule, and said yes. Yolo mode ignores ask rules,
as the policy does. `RulePolicy.search_screen` builds the screen; it matches paths with the
rules' own matcher, so every file `read_file` would deny (or ask about) is left out. So is
everything in a directory a rule's glob names (`read(*.key)` and a directory `old.key/`), as
ripgrep, given the glob as an exclusion, skips that directory whole.

What the model is told never depends on the withheld files: a count of withheld matches would
let it learn a secret file's contents one regex at a time. The notice names the rules that may
withhold files under the search root, whether or not any matched.
"""

from __future__ import annotations

from dataclasses import dataclass

from agentcli.globs import globs_under, rg_glob
from agentcli.permissions.rules import Rule


@dataclass(frozen=True, slots=True)
class SearchScreen:
    """The files one search must leave out of its results (none by default)."""

    denied: tuple[Rule, ...] = ()
    """`read(...)` deny rules: their files are never searched nor listed."""
    asking: tuple[Rule, ...] = ()
    """`read(...)` ask rules whose files this search leaves out (read_file asks for them)."""

    @property
    def rules(self) -> tuple[Rule, ...]:
        return (*self.denied, *self.asking)

    def withholds(self, path: str) -> bool:
        """Must a result naming `path` (as read_file's permission target would) be left out?
        Yes when a rule covers it or one of the directories it is in: ripgrep skips a
        directory a glob matches as a whole, and so does the screen, so the two agree."""
        rules = self.rules
        if not rules:
            return False
        candidate = path
        while candidate:
            if any(rule.matches("read", candidate) for rule in rules):
                return True
            candidate = candidate.rpartition("/")[0]
        return False

    def rg_excludes(self, base: str) -> list[str]:
        """ripgrep arguments that skip the withheld files when rg runs in `base` (a
        workspace-relative directory, `.` the workspace). A first line of defence only: a rule
        ripgrep cannot express exactly is caught afterwards by `withholds`."""
        flags: list[str] = []
        for rule in self.rules:
            for glob in globs_under(rule.pattern, base):
                flags += ["--glob", "!" + rg_glob(glob)]
        return flags

    def notice(self, root: str) -> str:
        """What to tell the model about the rules that may withhold files under the directory
        `root`, or "" when none may."""
        lines = []
        denied = [r.text for r in self.denied if _may_apply(r, root)]
        asking = [r.text for r in self.asking if _may_apply(r, root)]
        if denied:
            lines.append(
                f"(files matching {', '.join(denied)} are left out of search results: "
                "the user denied reading them)"
            )
        if asking:
            lines.append(
                f"(files matching {', '.join(asking)} are left out of search results: the user "
                "is asked before they are read; read_file one by its path to ask)"
            )
        return "\n".join(lines)


def _may_apply(rule: Rule, root: str) -> bool:
    return rule.matches("read", root) or bool(globs_under(rule.pattern, root))
