"""Run directories: every file written whole (temporary file, then rename), so a crash
leaves either the old content or the new, never half."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from ..paths import RUNS


def default_out(kind: str) -> Path:
    return RUNS / f"{kind}-{time.strftime('%Y%m%d-%H%M%S')}"


def new_run_dir(path: Path | None, kind: str) -> Path:
    out = Path(path) if path else default_out(kind)
    if out.exists() and any(out.iterdir()):
        raise FileExistsError(f"--out: {out} exists and is not empty; choose another directory")
    out.mkdir(parents=True, exist_ok=True)
    return out


def write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    tmp.replace(path)


def write_json(path: Path, data: object) -> None:
    write_atomic(path, json.dumps(data, indent=2, default=str) + "\n")
