"""The OS sandbox for commands (Linux: Landlock, user/mount/PID/IPC/network namespaces, seccomp).

- `profile`: the profiles a permission decision gives a command (read-only, workspace-write,
  unconfined) — the vocabulary the policy, the shell tool and the checks share;
- `runner.OsSandbox`: the `CommandSandbox` that turns a profile into the helper's options, once
  per session deciding what commands see (readable, writable, hidden paths);
- `environment`: the environment commands get (secrets scrubbed);
- `bootstrap`: how the helper is started (its modules travel in its argv);
- `exec`: the helper: namespaces, mounts, a PID 1 that reaps and stops leftovers, then the
  command; `landlock`, `namespaces`, `seccomp`: the kernel interfaces (ctypes);
- `support`: what this kernel can enforce (`probe_support`, `sandbox_report` for doctor);
- `explain`: telling the model that a failure came from the sandbox.

This package's `__init__` stays empty of imports.
"""
