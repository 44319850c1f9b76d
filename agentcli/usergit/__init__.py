"""git for the user: branches, verified commits and the repository's state, in the user's own
repository (`agentcli run --branch/--commit`, `/commit`, `/branch`, the REPL's status line).

This is not agentcli's own git (`agentcli.owngit`: snapshots, checkpoints and undo in a private
git dir, which never writes to the repository). Here agentcli writes to the repository on the
user's behalf, so the user's git config applies (their identity, their signing, their filters)
and, in a workspace they trust, the repository's own hooks run as they would for `git commit`.
In a workspace they have not trusted, nothing the repository configures runs (hooks, the
repository's own filter drivers, fsmonitor, signing programs), and a notice says what was left
out. What agentcli asks the repository for its own sake (the status line) goes through owngit's
hardened calls.

- `message`: the commit message from the task (summary, evidence, trailers); no git at all;
- `repository`: the repository opened with GitPython, the git commands run in it, its state;
- `commit`: `commit_files`, the importable commit API (the session, `/commit` and `agentcli
  batch` use it): exactly the given files, the user's index left as it was for the rest;
- `branch`: `create_branch`: a new branch from HEAD (or a start point), switched to;
- `status`: the branch and the number of changed files, for the status line (no GitPython).

GitPython is imported only by `repository.open_repository`, when one of these operations runs:
its import costs 0.2-0.4 s here, ~1 s under load (it runs `git version` as it loads), which no
command that does not branch or commit pays.
"""
