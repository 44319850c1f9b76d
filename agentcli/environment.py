"""The environment a command gets: without agentcli's credentials always, and, sandboxed,
without anything that looks like a secret.

A sandboxed command's environment is scrubbed of every variable whose name matches a secret
pattern (`*TOKEN*`, `*SECRET*`, `*_KEY`, `*PASSWORD*`, cloud credentials, …, plus the user's
`sandbox.env_scrub` patterns), except those `sandbox.env_keep` names. The helper process that
starts the command runs with the scrubbed environment too, so no process the command can see
holds a secret (agentcli itself is outside the command's PID namespace).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Mapping

OWN_CREDENTIALS = frozenset({"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"})
"""agentcli's own credentials: no program it starts (the model's commands, acceptance checks,
its own git), sandboxed or not, ever sees them."""
_claimed: set[str] = set()


def claim_credential(name: str) -> None:
    """Make `name` one of agentcli's own credentials for the rest of the process: a provider
    calls this when a session will send that variable's value to a model server (e.g.
    `OPENAI_API_KEY` with `--provider openai`). On another provider it may be the key of the
    user's own program, so it is not claimed up front."""
    _claimed.add(name.upper())


def own_credentials() -> frozenset[str]:
    return OWN_CREDENTIALS | _claimed


SECRET_PATTERNS = (
    *("*TOKEN*", "*SECRET*", "*PASSWORD*", "*PASSWD*", "*PASSPHRASE*", "*CREDENTIAL*"),
    *("*_KEY", "*_KEY_ID", "*APIKEY*", "*API_KEY*", "*PRIVATE_KEY*", "*_AUTH", "*AUTH_HEADER*"),
    *("AWS_*", "AZURE_*", "GOOGLE_APPLICATION_CREDENTIALS", "GCLOUD_*", "CLOUDSDK_*"),
    *("SSH_AUTH_SOCK", "SSH_AGENT_PID", "GPG_AGENT_INFO", "KRB5CCNAME", "VAULT_*"),
    *("DOCKER_AUTH_CONFIG", "NPM_CONFIG__AUTH*", "PGPASS*", "MYSQL_PWD", "DATABASE_URL"),
)
"""Names (case-insensitive shell patterns) of variables a sandboxed command never gets."""


def without_own_credentials(env: Mapping[str, str]) -> dict[str, str]:
    own = own_credentials()
    return {k: v for k, v in env.items() if k.upper() not in own}


def is_secret(name: str, extra: Iterable[str] = ()) -> bool:
    upper = name.upper()
    return upper in own_credentials() or any(
        fnmatch.fnmatchcase(upper, pattern.upper()) for pattern in (*SECRET_PATTERNS, *extra)
    )


def scrubbed(
    env: Mapping[str, str], *, extra: Iterable[str] = (), keep: Iterable[str] = ()
) -> dict[str, str]:
    """`env` without secrets (see the module docstring); `keep` names stay, unless they are
    agentcli's own credentials."""
    patterns = tuple(extra)
    kept = {name.upper() for name in keep} - own_credentials()
    return {k: v for k, v in env.items() if k.upper() in kept or not is_secret(k, patterns)}
