"""The session core: the one place sessions are opened, resumed, locked, recovered, undone,
listed and exported, and where the ConversationManager is built. `agentcli run`, the REPL and
the `sessions` / `undo` commands all call it; the UI turns flags into `Settings`, calls these,
and renders what comes back. Nothing under `agentcli/ui/` touches the journal (`store`),
recovery or checkpoints itself.

- `records`: reading recorded sessions (list, show, export) and undoing a task's changes; no
  model, no pydantic, so `sessions list` and `undo` start fast;
- `opening`: creating a session, or resuming one (its lock first, then crash recovery), and
  letting go of it;
- `build`: the composition root, from `Settings` to a ready ConversationManager.

The submodules are imported by name (nothing is re-exported here), so a command loads only
what it uses.
"""
