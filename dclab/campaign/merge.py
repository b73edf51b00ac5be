"""Merging result stores (campaign shards, a cluster's stores): one destination at a time
(a lock beside it), every source and the destination checked first, a new destination
built beside its path and moved in whole."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from ..files import output_file
from .locks import held
from .store import Store, StoreError, inspect_store


@contextlib.contextmanager
def merge_lock(dest: Path, on_wait: Callable[[], None] | None = None) -> Iterator[None]:
    """Holds ``DEST.lock`` beside `dest` (waiting for another holder; `on_wait` is called
    once if it has to), so merges into one destination run one at a time."""
    with held(dest.with_name(dest.name + ".lock"), on_wait=on_wait):
        yield


def merge_stores(dest: Path, srcs: Sequence[Path], on_wait: Callable[[], None] | None = None
                 ) -> tuple[list[tuple[Path, int]], int]:
    """Merges the stores `srcs` into `dest`, creating it; returns how many runs each added
    and how many `dest` holds. Every source and an existing `dest` are checked first (a
    dclab store of a schema this dclab reads, with sound pages), so a refused merge writes
    nothing. Merges into one `dest` run one at a time (merge_lock). A new `dest` is built
    beside it and moved in once every source is in and its pages check sound: a failed
    merge leaves no destination, and no reader sees a half-merged one. Into an existing
    `dest`, each source is added in one transaction. Any refusal or failure is a
    StoreError whose message starts with "cannot merge"."""
    dest = Path(dest)
    if os.path.lexists(dest) and not dest.exists():
        raise StoreError(f"cannot merge into {dest}: it is a symlink to nothing; dclab does not write through it")
    for src in srcs:
        if dest.exists() and os.path.exists(src) and os.path.samefile(src, dest):
            raise StoreError(f"cannot merge: {src} is the destination itself")
        try:
            inspect_store(src)  # every source first: a refused merge makes no destination
        except StoreError as e:
            raise StoreError(f"cannot merge: {e}") from None
    if dest.exists():
        try:
            inspect_store(dest)
        except StoreError as e:
            raise StoreError(f"cannot merge into {dest}: {e}") from None
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise StoreError(f"cannot merge into {dest}: cannot make {dest.parent}: {e.strerror or e}") from None
    counts: list[tuple[Path, int]] = []
    with merge_lock(dest, on_wait):
        try:
            if not os.path.lexists(dest):
                with output_file(dest, "merge destination") as tmp:
                    try:
                        target = Store(tmp)
                        for src in srcs:
                            counts.append((src, target.merge(src)))
                        target.check()
                        total = len(target.keys())
                    except StoreError as e:  # named as the destination the user gave, not its temporary
                        raise StoreError(str(e).replace(str(tmp), str(dest))) from None
                    finally:  # SQLite removes them as the last connection closes; after a crash, too
                        for suffix in ("-wal", "-shm", "-journal"):
                            tmp.with_name(tmp.name + suffix).unlink(missing_ok=True)
                return counts, total
            inspect_store(dest)  # again, now that no other merge can change it
            target = Store(dest)
            for src in srcs:
                counts.append((src, target.merge(src)))
            return counts, len(target.keys())
        except StoreError as e:
            done = "".join(f"; {src} was merged before ({n} run(s) added)" for src, n in counts) if dest.exists() else ""
            raise StoreError(f"cannot merge into {dest}: {e}{done}") from None
        except (OSError, ValueError) as e:  # FileRefused is a ValueError
            raise StoreError(f"cannot merge into {dest}: {e}") from None
