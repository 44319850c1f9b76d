"""`agentcli batch TASKS.jsonl`: many tasks, each in a checkout of its own, each run as a real
`agentcli run` process (the batch never runs the agent loop itself), on this machine or a Ray
cluster.

- `taskfile`: the task file's lines (SWE-bench's field names), checked before anything runs;
- `plan`: the options, the output directory, repositories reached, and what each task needs
  (skip, start, resume from its journal, retry);
- `workspace`: checkouts with GitPython (a worktree of a local repository, a clone of a URL)
  and the task's diff from its base commit;
- `setup`: a task's setup commands, in the OS sandbox;
- `runner`: one task on a worker: checkout, setup, `agentcli run`, its result and diff;
- `ledger`: what the workers share (the cost budget, model-request slots, the interrupt);
- `gate`: the proxy that holds a model-request slot per request in flight;
- `engine_local`, `engine_ray`: the two ways tasks are scheduled;
- `output`: `results.jsonl`, `preds.json`, the summary;
- `run`: a batch from start to end, and its exit code (what the user sees of it is the UI's:
  `ui/batch_progress.py`, through `run.BatchView`).

The layers point down: the batch uses the session core (`session.records`, to find a task's
session in its journal), the sandbox and the config, never the UI; nothing outside it imports
it but the command line (`ui/batch_command.py`), and only when the command runs.
"""
