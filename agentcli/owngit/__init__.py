"""agentcli's own git: every git command agentcli runs for itself (artifact-version snapshots,
undo checkpoints, undo) and nothing else.

The repository may be hostile: a cloned project whose `.git/config` names programs (fsmonitor,
hooks, filters, diff drivers, pagers, signing programs, includes of work-tree files…), or a
`.git` the model wrote into a workspace that was not a repository. None of that may run with
agentcli's rights. So git is never run in the repository's git dir: `repo` works in a private
git dir whose alternates borrow the repository's objects, `command` starts git with a scrubbed
environment and command-line settings that turn every program off, and `discover` finds the
repository by reading files as data. Whether a workspace is a repository at all is decided once,
when a session starts (`find_repo`), and that decision is passed down, never re-made.
"""

from agentcli.owngit.command import GitError
from agentcli.owngit.decision import RepoDecision, decide
from agentcli.owngit.repo import OwnRepo, TreeEntry, find_repo

__all__ = ["GitError", "OwnRepo", "RepoDecision", "TreeEntry", "decide", "find_repo"]
