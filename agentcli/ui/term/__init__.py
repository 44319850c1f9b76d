"""What `agentcli run` and the REPL both draw on, or ask at, a terminal: untrusted text made
visible (`safe`), diffs (`diffs`), the pager (`pager`), the permission prompter (`prompter`) and
the log of internal errors (`errorlog`). A leaf of the UI: it imports nothing else of `ui`, so
`ui` (the command line, `run`) and `ui.repl` both build on it.
"""
