"""Whether a workspace is a git repository: decided once, when a session starts.

The decision is made from where the user started, before the model has written anything, and
then passed down to everything that snapshots, checkpoints or undoes. Files that appear later
(a `.git` the model writes into a workspace that was not a repository) change nothing for the
rest of the session: its snapshots stay file-tree hashes and its checkpoints keep their copies.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from agentcli.owngit.repo import OwnRepo, find_repo


@dataclass(frozen=True, slots=True)
class RepoDecision:
    workspace: Path
    """The session's workspace (resolved)."""
    repo: OwnRepo | None
    """Its repository, or None: the workspace is hashed and checkpointed as plain files."""

    def repo_for(self, workspace: Path) -> OwnRepo | None:
        """The repository for `workspace`: this decision for the session's own workspace; for
        another one (a checkpoint recorded elsewhere, as `undo --task ID` may name), a decision
        made now for that workspace alone."""
        if workspace.resolve() == self.workspace:
            return self.repo
        return find_repo(workspace)


def decide(workspace: Path) -> RepoDecision:
    """Decide, now, whether `workspace` is in a git repository (see `find_repo`)."""
    return RepoDecision(workspace=workspace.resolve(), repo=find_repo(workspace))
