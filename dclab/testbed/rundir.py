"""Run directories: every file written whole (temporary file, then rename), so a crash
leaves either the old content or the new, never half."""

from __future__ import annotations

import json
import time
from pathlib import Path

from pydantic_core import to_jsonable_python

from ..files import FileRefused, check_output_dir, write_output
from ..paths import RUNS


def default_out(kind: str) -> Path:
    return RUNS / f"{kind}-{time.strftime('%Y%m%d-%H%M%S')}"


def new_run_dir(path: Path | None, kind: str) -> Path:
    """The run directory (made): ``path`` or runs/KIND-TIME. FileRefused (files.py) if
    it is not an empty directory or nothing, or cannot be made."""
    out = check_output_dir(Path(path) if path else default_out(kind), "--out")
    try:
        if out.exists() and any(out.iterdir()):
            raise FileRefused(f"--out: {out} exists and is not empty; choose another directory")
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise FileRefused(f"--out: cannot make the run directory {out}: {e.strerror or e}") from None
    return out


def write_atomic(path: Path, text: str) -> None:
    write_output(path, text, str(path.name))


def write_json(path: Path, data: object) -> None:
    """``data`` as JSON; records (pydantic models) as their fields, anything else JSON
    cannot hold (a path) as its text."""
    write_atomic(path, json.dumps(to_jsonable_python(data, fallback=str), indent=2) + "\n")
