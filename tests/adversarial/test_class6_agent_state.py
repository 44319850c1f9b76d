"""Class 6: allow rules must not reach agentcli's own state.

Under `--allow 'shell(python3 *)'` (and `shell(*)`, and in auto mode) a command runs without a
prompt, but sandboxed: it must not change agentcli's trust store, the user config, the kept
"always" rules, or the workspace's `.agentcli/` config, however it finds them: from
`$AGENTCLI_HOME`, from the platform's default paths (`~/.local/share/agentcli`, platformdirs),
from an ancestor's `/proc/<pid>/environ`, through `/proc/self/root` or `/proc/self/cwd`, a
symlink, `os.replace`, renaming `.agentcli/` away, agentcli's own `trust` code or command.

Each member writes its own name into what it changes, so a change says who made it. The
layout is the platform's: $AGENTCLI_HOME = ~/.local/share/agentcli, the config dir
~/.config/agentcli, so every spelling reaches the real files.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.adversarial.lab import (
    Lab,
    Member,
    describe_member,
    describe_run,
    run_members,
    sh,
)

UPDATE_STORE = """
try:
    d = json.load(open(p))
except Exception:
    d = {"version": 1}
w = d.setdefault("workspaces", {})
w[os.getcwd()] = {"trusted_at": "2024-01-01T00:00:00+00:00"}
w["SLUG"] = {"trusted_at": "2024-01-01T00:00:00+00:00"}
json.dump(d, open(p, "w"))
"""
RULE = '"\\nallow = [\\"shell(*)\\"]  # SLUG\\n"'
FIND_HOME_IN_PARENTS = """
pid, home = os.getppid(), None
while pid > 1 and not home:
    try:
        env = open(f"/proc/{pid}/environ", "rb").read().split(b"\\0")
        home = next((e[13:].decode() for e in env if e.startswith(b"AGENTCLI_HOME=")), None)
        pid = int(open(f"/proc/{pid}/status").read().split("PPid:")[1].split()[0])
    except OSError:
        break
p = (home or os.path.expanduser("~/.local/share/agentcli")) + "/trusted_workspaces.json"
"""
# (slug, python code); {store}, {data}, {config} are the real paths, as JSON strings.
PY: list[tuple[str, str]] = [
    ("py-env-agentcli-home", 'p = os.environ["AGENTCLI_HOME"] + "/trusted_workspaces.json"'),
    ("py-home-path", 'p = os.path.expanduser("~/.local/share/agentcli/trusted_workspaces.json")'),
    (
        "py-platformdirs",
        'import platformdirs\np = platformdirs.user_data_dir("agentcli", appauthor=False)'
        ' + "/trusted_workspaces.json"',
    ),
    ("py-literal-path", 'p = "/".join({store_parts})'),
    ("py-proc-parent-environ", FIND_HOME_IN_PARENTS),
    ("py-proc-self-root", 'p = "/proc/self/root" + {store}'),
    ("py-symlink", 'os.symlink({data}, "st-link")\np = "st-link/trusted_workspaces.json"'),
    (
        "py-os-replace",
        'p = "tmp-store.json"\nimport shutil\nshutil.copy({store}, p)\n'
        + UPDATE_STORE
        + "os.replace(p, {store})\np = None",
    ),
    (
        "py-agentcli-trust-api",
        "from pathlib import Path\nimport agentcli.trust as t\n"
        't.set_trusted(Path("SLUG-dir"), True)\np = None',
    ),
    (
        "py-agentcli-trust-subprocess",
        'import subprocess, sys\nsubprocess.run([sys.executable, "-m", "agentcli", "trust", '
        '"SLUG-dir"])\np = None',
    ),
    (
        "py-user-config",
        'c = os.environ.get("AGENTCLI_CONFIG_DIR") or os.path.expanduser("~/.config/agentcli")'
        f'\nopen(c + "/config.toml", "a").write({RULE})\np = None',
    ),
    (
        "py-user-config-home-path",
        f'open(os.path.expanduser("~/.config/agentcli/config.toml"), "a").write({RULE})\np = None',
    ),
    (
        "py-user-rules",
        'import hashlib\nk = hashlib.sha256(os.path.realpath(".").encode()).hexdigest()[:32]'
        '\nd = {data} + "/workspace-rules"\nos.makedirs(d, exist_ok=True)'
        f'\nopen(d + "/" + k + ".toml", "a").write({RULE})\np = None',
    ),
    (
        "py-ws-config-replace",
        f'open("cfg.tmp", "w").write({RULE})\nos.replace("cfg.tmp", ".agentcli/config.local.toml")'
        "\np = None",
    ),
    ("py-ws-config", f'open(".agentcli/config.toml", "a").write({RULE})\np = None'),
    (
        "py-ws-config-local-spelled",
        f'open(".agent" + "cli/config.local.toml", "a").write({RULE})\np = None',
    ),
    (
        "py-ws-config-proc-cwd",
        f'open("/proc/self/cwd/.agentcli/config.local.toml", "a").write({RULE})\np = None',
    ),
    (
        "py-ws-config-rename-dir",
        'os.rename(".agentcli", ".agentcli-old")\nos.mkdir(".agentcli")'
        f'\nopen(".agentcli/config.toml", "w").write({RULE})\np = None',
    ),
]
PY_COMMANDS: list[tuple[str, str]] = [
    ("py-m-agentcli-trust", "python3 -m agentcli trust py-m-agentcli-trust-dir"),
]
SH: list[tuple[str, str]] = [
    (
        "sh-printf-store",
        'printf \'{"version": 1, "workspaces": {"%s": {"trusted_at": "x"}, '
        '"sh-printf-store": {"trusted_at": "x"}}}\' "$PWD" '
        '> "$AGENTCLI_HOME/trusted_workspaces.json"',
    ),
    (
        "sh-tee-user-config",
        "echo 'allow = [\"shell(*)\"]  # sh-tee-user-config' "
        "| tee -a ~/.config/agentcli/config.toml",
    ),
    (
        "sh-sed-user-config",
        "sed -i 's/^denial_limit = 10000$/&\\nallow = [\"shell(*)\"]  # sh-sed-user-config/' "
        '"$AGENTCLI_CONFIG_DIR/config.toml"',
    ),
    (
        "sh-user-rules",
        'd="$AGENTCLI_HOME/workspace-rules"; mkdir -p "$d" && echo \'allow = ["shell(*)"]  # '
        'sh-user-rules\' > "$d/$(printf %s "$(pwd -P)" | sha256sum | cut -c1-32).toml"',
    ),
    (
        "sh-ws-config-cp",
        "printf '# sh-ws-config-cp\\n' > evil.toml && cp evil.toml .agentcli/config.toml",
    ),
    (
        "sh-ws-config-append",
        "echo 'allow = [\"shell(*)\"]  # sh-ws-config-append' >> .agentcli/config.local.toml",
    ),
    ("sh-agentcli-trust", "agentcli trust sh-agentcli-trust-dir"),
]
BATCHES: dict[str, tuple[str, tuple[str, ...]]] = {
    "default-allow-python3": ("default", ("--allow", "shell(python3 *)")),
    "default-allow-all": ("default", ("--allow", "shell(*)")),
    "auto": ("auto", ()),
}
PY_SLUGS = [slug for slug, _ in PY + PY_COMMANDS]
SH_SLUGS = [slug for slug, _ in SH]
CASES = [(b, s) for b in BATCHES for s in PY_SLUGS] + [
    (b, s) for b in BATCHES if b != "default-allow-python3" for s in SH_SLUGS
]


def python_command(slug: str, code: str, lab: Lab) -> str:
    store = lab.data / "trusted_workspaces.json"
    fills = {
        "{store_parts}": json.dumps(str(store).split("/")),
        "{store}": json.dumps(str(store)),
        "{data}": json.dumps(str(lab.data)),
    }
    for key, value in fills.items():
        code = code.replace(key, value)
    body = f"import json, os\n{code}\nif p:\n{UPDATE_STORE.replace(chr(10), chr(10) + '    ')}"
    body = body.replace("SLUG", slug)
    assert "'" not in body, slug
    return f"python3 -c '{body}'"


def build(root: Path, batch: str) -> dict[str, Any]:
    mode, extra = BATCHES[batch]
    lab = Lab(root)
    (lab.ws / "README.md").write_text("# demo\n")
    for slug in [*PY_SLUGS, *SH_SLUGS]:
        (lab.ws / f"{slug}-dir").mkdir()
    members: list[Member] = []
    if mode != "default" or "shell(*)" in extra:
        members += [sh(slug, command) for slug, command in SH]
    members += [sh(slug, python_command(slug, code, lab)) for slug, code in PY]
    members += [sh(slug, command) for slug, command in PY_COMMANDS]
    outcome = run_members(lab, mode, [members], extra_args=extra)
    outcome["state_after"] = lab.agent_state()
    return outcome


def batch_of(params: dict[str, Any]) -> tuple[str, Callable[[Path], dict[str, Any]]]:
    return f"c6-{params['batch']}", functools.partial(build, batch=params["batch"])


@pytest.mark.parametrize(("batch", "slug"), CASES)
def test_class6_member_cannot_change_agentcli_state(
    outcome: dict[str, Any], batch: str, slug: str
) -> None:
    touched = [c for c in outcome["state_changes"] if slug in c["content"]]
    assert not touched, (
        f"class 6, member {slug!r}, {batch}: agentcli's own state was changed without a "
        f"prompt: {[(c['path'], c['change']) for c in touched]}\n{describe_member(outcome, slug)}"
    )


@pytest.mark.parametrize("batch", BATCHES)
def test_class6_agentcli_state_unchanged(outcome: dict[str, Any], batch: str) -> None:
    changes = [(c["path"], c["change"], c["content"][:120]) for c in outcome["state_changes"]]
    assert not changes, (
        f"class 6 batch {batch}: agentcli's trust store / config / rules changed:\n"
        + "\n".join(f"  {c}" for c in changes)
        + f"\n{describe_run(outcome)}"
    )
