"""The README against the code: short, every command it names exists (make targets in the
Makefile, dclab subcommands and options in click's tree, as tests/test_tutorials.py checks
the tutorials), and its citation agrees with CITATION.cff and the package's version."""

from __future__ import annotations

import re
import shlex
import tomllib
from pathlib import Path

import click
import pytest
import yaml

from tests.test_tutorials import check_dclab, resolve

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()


def make_targets() -> set[str]:
    text = (ROOT / "Makefile").read_text()
    phony = {t for line in re.findall(r"^\.PHONY:(.*)$", text, re.M) for t in line.split()}
    return phony | set(re.findall(r"^([a-z][a-z-]*):", text, re.M))


def named(program: str) -> list[list[str]]:
    """Each command the README names for ``program``: in `backticks` and in ```sh blocks."""
    inline = re.findall(rf"`({program} [^`]*)`", README)
    blocks = [line.split("#", 1)[0].strip() for b in re.findall(r"```sh\n(.*?)```", README, re.S)
              for line in b.splitlines()]
    return [shlex.split(c) for c in inline + blocks if c.startswith(program + " ")]


def test_the_readme_is_short():
    assert len(README.splitlines()) < 250


def test_every_make_target_it_names_exists():
    targets = make_targets()
    commands = named("make")
    assert {"demo", "test", "docs"} <= {c[1] for c in commands}
    for c in commands:
        assert c[1] in targets, f"README names `make {c[1]}`, which the Makefile lacks"


def test_every_dclab_command_it_names_exists():
    commands = named("dclab")
    assert len(commands) >= 10
    for c in commands:
        cmd, rest, _ = resolve(c[1:])
        if not (isinstance(cmd, click.Group) and not rest):  # prose may name a family: `dclab campaign`
            check_dclab(c[1:])
    with pytest.raises(AssertionError):  # the check is not a formality
        check_dclab(["run", "no-such-experiment"])


def test_the_citation_matches_citation_cff_and_the_package():
    [bib] = re.findall(r"```bibtex\n(.*?)```", README, re.S)
    field = dict(re.findall(r"^\s*(\w+)\s*=\s*\{+(.*?)\}+,?$", bib, re.M))
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert field["version"] == str(cff["version"]) == version
    assert field["title"] == cff["title"]
    assert field["author"] == cff["authors"][0]["name"]
    assert field["license"] == cff["license"]
