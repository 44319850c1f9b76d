"""Class 7d (issue 26): the differential test over every place agentcli reads a file it did not
write (`own_readers.READERS`: instruction files at every level, the config files, `.mcp.json`,
`.gitmodules`, `@path`, `read_file`, `edit_file`, `write_file`, a `grep` path, `glob`, and what
snapshots, checkpoints, undo, recovery, `--accept tests`, own git and the REPL read).

Each place gets the same files: a named pipe, a link to `/dev/zero`, a link to
`/proc/self/environ`, a link out of the workspace, a 2 GiB sparse file, and two controls (a
plain file, a link to a file inside). Whatever the place:
- it returns (a pipe never blocks it: the alarm would fail the test), within bounded memory
  (`memory_cap`);
- nothing of a hostile file reaches the model or the user, and its content is never used;
- where it says what it refused, it names the file and why;
- a control is read as before.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.adversarial.own_files import CONTROLS, HOSTILE, memory_cap, plant, release_fifos
from tests.adversarial.own_readers import READERS, Place, place_for

REASONS = ("not a regular file", "outside", "over the", "link", "kernel", "not read")
REFUSED = ("skipped", "is not read", "not a regular file", "over the", "never followed")
CASES = [
    (name, kind)
    for name, reader in READERS.items()
    for kind in (*HOSTILE, *CONTROLS)
    if kind not in reader.skip
]


@pytest.mark.timeout(20, method="signal")
@pytest.mark.parametrize(("reader", "kind"), CASES, ids=[f"{r}-{k}" for r, k in CASES])
def test_every_own_read_refuses_what_it_must_and_reads_what_it_should(
    tmp_path: Path, reader: str, kind: str
) -> None:
    spec = READERS[reader]
    ws, repo, config, where = place_for(spec, tmp_path)
    planted = plant(
        where / spec.rel, kind, outside=tmp_path / "outside", inside=where / "docs", body=spec.body
    )
    try:
        with memory_cap():
            seen = spec.run(Place(ws, repo, config, planted.path, planted.content))
    finally:
        release_fifos(tmp_path)
        release_fifos(config)
    if kind in CONTROLS:
        assert seen.read, f"{reader}: the control ({kind}) was not read; told: {seen.told!r}"
        refused = [r for r in REFUSED if r in seen.told]
        assert refused == [], f"{reader}: the control ({kind}) was refused: {seen.told!r}"
        return
    leaked = planted.secret is not None and (
        planted.secret in seen.text or planted.secret in seen.told
    )
    assert not leaked, f"{reader}: the content of a {kind} reached the model or the user"
    if spec.refuses:
        assert not seen.read, f"{reader}: a {kind} was used as if it were the file"
    if spec.tells:
        named = planted.path.name in seen.told
        assert named and any(r in seen.told for r in REASONS), (
            f"{reader}: a {kind} was refused without saying which file and why: {seen.told!r}"
        )
