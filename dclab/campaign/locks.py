"""Exclusive locks on files beside what they guard: one merge into a destination at a time
(``merge.py``), and one process running a campaign's runs at a time (``campaign_lock``:
each run starts by emptying its directory, so two processes with the same run to do would
destroy each other's data). A flock, so a killed holder releases it; the holder's pid is
written into the file for messages; the file is removed on release, and a waiter that
locked a file removed meanwhile tries again on the new one."""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

from ..files import kind_of
from .store import StoreError


class Busy(StoreError):
    """The lock is held and the caller would not wait; ``holder`` is its pid as written."""

    def __init__(self, lock: Path, holder: str):
        super().__init__(f"{lock} is held by process {holder}")
        self.lock, self.holder = lock, holder


def _holder(fd: int) -> str:
    try:
        return os.pread(fd, 32, 0).decode(errors="replace").strip() or "?"
    except OSError:
        return "?"


@contextlib.contextmanager
def held(lock: Path, wait: bool = True, on_wait: Callable[[], None] | None = None) -> Iterator[None]:
    """Holds an exclusive flock on ``lock`` (a regular file it makes when missing). A holder
    there: with ``wait`` it waits (``on_wait`` called once if it has to), else raises
    [`Busy`]. A path that is not a regular file is refused (StoreError): nothing is
    written through a link, FIFO or device."""
    waited = False
    while True:
        try:
            fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o644)
        except OSError as e:
            raise StoreError(f"cannot lock {lock}: {e.strerror or e}") from None
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise StoreError(f"cannot lock {lock}: it is {kind_of(st.st_mode)}, not a lock file dclab made")
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                if not wait:
                    raise Busy(lock, _holder(fd)) from None
                if on_wait is not None and not waited:
                    on_wait()
                waited = True
                fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                now = os.lstat(lock)
            except FileNotFoundError:
                now = None
            if now is not None and (now.st_ino, now.st_dev) == (st.st_ino, st.st_dev):
                break
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)  # the holder removed it while we waited: lock the new one
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(lock)  # while still holding it
        fcntl.flock(fd, fcntl.LOCK_UN)  # explicitly: a forked child may share this descriptor
        os.close(fd)


CAMPAIGN_LOCK = "campaign.lock"


@contextlib.contextmanager
def campaign_lock(directory: Path) -> Iterator[None]:
    """Holds the lock of the campaign whose results are in ``directory`` (beside its store),
    or raises [`Busy`] at once: a second process running the same campaign is refused, not
    queued, since what it planned to run may be stored by the first meanwhile."""
    with held(directory / CAMPAIGN_LOCK, wait=False):
        yield
