"""The interactive REPL (`agentcli` with no arguments). `main.main` starts it; see `app.py`
for how it works. Importing this package is cheap: it imports nothing (the heavy parts load in
the background after the prompt is up)."""
