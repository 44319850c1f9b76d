"""`python -m agentcli` runs the same entry point as the console script."""

from agentcli.ui.entry import main

raise SystemExit(main())
