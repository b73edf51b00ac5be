"""Shared fixtures: root checks and a pair of namespaces joined by a veth pair (the
kernel path, no dcemu), for endpoint tests that do not need the emulator."""

from __future__ import annotations

import os
import subprocess

import pytest

from dclab.netns import Namespaces, veth_link

SERVER, CLIENT = "198.18.0.1", "198.18.0.2"


def pytest_collection_modifyitems(config, items):
    slow_ok = os.environ.get("DCLAB_SLOW") == "1"
    for item in items:
        if "root" in item.keywords and os.geteuid() != 0:
            item.add_marker(pytest.mark.skip(reason="needs root"))
        if "slow" in item.keywords and not slow_ok:
            item.add_marker(pytest.mark.skip(reason="slow: set DCLAB_SLOW=1"))


@pytest.fixture
def veth_pair():
    """Two namespaces (server, client) joined by veth, 198.18.0.1 <-> 198.18.0.2."""
    with Namespaces() as ns, veth_link(ns, SERVER, CLIENT):
        yield ns


@pytest.fixture
def certs(tmp_path):
    from dclab.certs import make_certs

    return make_certs(tmp_path / "certs", SERVER)


def start_in(ns: str, cmd: list[str], log) -> subprocess.Popen:
    return subprocess.Popen(["ip", "netns", "exec", ns, *cmd], stdout=log, stderr=subprocess.STDOUT)
