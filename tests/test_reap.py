"""The adapters' one run-and-reap (endpoints/base.py ``run_and_reap``): every process ends,
each reader sees its output, the ones past the deadline are killed and said so."""

from __future__ import annotations

import subprocess
import threading
import time

import pytest

from dclab.endpoints.base import run_and_reap


class Lines(threading.Thread):
    def __init__(self, proc: subprocess.Popen[str]) -> None:
        super().__init__(daemon=True)
        self.proc, self.lines = proc, []

    def run(self) -> None:
        assert self.proc.stdout is not None
        self.lines = [x.strip() for x in self.proc.stdout]


def test_processes_past_the_deadline_are_killed_and_the_rest_read_to_the_end():
    t0 = time.monotonic()
    ran = run_and_reap([["echo", "one"], ["sh", "-c", "echo two; exec sleep 30"], ["printf", "3\\n4\\n"]],
                       t0 + 0.5, Lines, {"PATH": "/usr/bin:/bin"}, subprocess.PIPE, subprocess.DEVNULL)
    assert time.monotonic() - t0 < 5, "the sleeper was killed at the deadline, not waited for"
    assert ran.killed == {1} and all(p.poll() is not None for p in ran.procs)
    assert [r.lines for r in ran.readers] == [["one"], ["two"], ["3", "4"]]
    assert ran.spawned == sorted(ran.spawned) and len(ran.spawned) == 3 and ran.spawned[0] >= t0


def test_an_exception_while_starting_leaves_no_process_running():
    started: list[subprocess.Popen[str]] = []

    def reader(p: subprocess.Popen[str]) -> Lines:
        started.append(p)
        if len(started) == 2:
            raise RuntimeError("reader broke")
        return Lines(p)

    with pytest.raises(RuntimeError, match="reader broke"):
        run_and_reap([["sleep", "30"], ["sleep", "30"]], time.monotonic() + 60, reader, {"PATH": "/usr/bin:/bin"},
                     subprocess.PIPE, subprocess.DEVNULL)
    assert len(started) == 2 and all(p.poll() is not None for p in started)
