"""An MCP server that never works: `crash` exits at start with a message on stderr, `hang`
writes one line on stderr and then never answers."""

from __future__ import annotations

import sys
import time

if __name__ == "__main__":
    if sys.argv[1:] == ["crash"]:
        print("broken server: cannot read its settings (exit 3)", file=sys.stderr, flush=True)
        sys.exit(3)
    print("broken server: waiting for something that never comes", file=sys.stderr, flush=True)
    while True:
        time.sleep(60)
