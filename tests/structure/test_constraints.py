"""The lock CI and the README's test command install from (`constraints.txt`, refreshed by
`.ci/lock`) pins every dependency `pyproject.toml` declares, at a version its bounds admit: a
dependency added (or a bound changed) without refreshing the lock fails here, not in a fresh
install weeks later."""

from __future__ import annotations

import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

CHECKOUT = Path(__file__).resolve().parents[2]


def pinned() -> dict[str, Version]:
    found: dict[str, Version] = {}
    for line in (CHECKOUT / "constraints.txt").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        name, sep, version = line.partition("==")
        assert sep, f"constraints.txt pins exact versions only: {line!r}"
        found[canonicalize_name(name)] = Version(version)
    return found


def declared() -> list[Requirement]:
    project = tomllib.loads((CHECKOUT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    return [
        Requirement(text) for text in [*project["dependencies"], *extras["test"], *extras["ray"]]
    ]


def test_every_declared_dependency_is_pinned_within_its_bounds() -> None:
    pins = pinned()
    problems = []
    for requirement in declared():
        name = canonicalize_name(requirement.name)
        if name not in pins:
            problems.append(f"{requirement.name} is not in constraints.txt")
        elif not requirement.specifier.contains(pins[name], prereleases=True):
            problems.append(f"{requirement.name}=={pins[name]} is outside {requirement.specifier}")
    assert problems == [], "run .ci/lock: " + "; ".join(problems)


def test_the_lock_holds_no_agentcli_and_no_duplicates() -> None:
    names = [
        canonicalize_name(line.partition("==")[0])
        for line in (CHECKOUT / "constraints.txt").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    assert "agentcli" not in names
    assert len(names) == len(set(names))


def test_ci_and_the_readme_install_the_tests_from_the_lock() -> None:
    ci = (CHECKOUT / ".ci" / "run").read_text()
    readme = (CHECKOUT / "README.md").read_text()
    command = "pip install -e '.[test]' -c constraints.txt"
    assert command in ci and command in readme
