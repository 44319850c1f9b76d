"""The OS sandbox for shell commands (Linux: Landlock, plus namespaces where allowed).

- `runner.LandlockSandbox`: the `CommandSandbox` the shell tool runs commands through;
- `exec`: the helper process that confines itself, then execs the command;
- `landlock`, `namespaces`: the kernel interfaces (ctypes);
- `support`: what this kernel can enforce (`probe_support`, `sandbox_report` for doctor);
- `explain`: telling the model that a failure came from the sandbox.

This package's `__init__` stays empty of imports: the helper imports it before every command.
"""
