"""MkDocs hook (mkdocs.yml, `hooks:`): pages that must not drift from the code are filled
in at build time. A page names what it wants with a marker line:

    <!-- generated: scenario-fields -->   every field of dclab's Scenario (dclab/scenario.py)
    <!-- generated: dcemu-limits -->      every bound of dcemu's scenario file (LIMITS in
                                          emu/src/config/validate/mod.rs, what `dcemu limits` prints)
    <!-- generated: cli-reference -->     every `dclab` command with its options (dclab/cli/reference.py)

A marker that names nothing known, or a source that cannot be read, fails the build."""

from __future__ import annotations

import re
import sys
import types
import typing
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
# The checkout's own dclab, not one installed elsewhere (an editable install of another tree).
sys.path.insert(0, str(ROOT))

MARKER = re.compile(r"^<!-- generated: ([a-z-]+) -->$", re.M)
LIMITS_RS = ROOT / "emu" / "src" / "config" / "validate" / "mod.rs"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _num(x: float, sep: str = ",") -> str:
    """Whole numbers in full (1,000,000, not 1e+06); others as Python's shortest form."""
    return f"{int(x):,}".replace(",", sep) if float(x).is_integer() else f"{x:g}"


def _default(field: Any) -> str:
    from pydantic_core import PydanticUndefined

    d = field.default
    if d is PydanticUndefined:
        return "required"
    if d is None:
        return "none"
    if isinstance(d, bool):
        return "true" if d else "false"
    if isinstance(d, list):
        return "[" + ", ".join(_num(x, "") if isinstance(x, int | float) else str(x) for x in d) + "]"
    if isinstance(d, int | float):
        return _num(d, "")  # as it is written in a file
    return str(d)


def _type(t: Any) -> str:
    """A field's type as a reader says it: `list of float`, `12, 16 or 18`, `float or none`."""
    origin, args = typing.get_origin(t), typing.get_args(t)
    if origin is typing.Annotated:
        return _type(args[0])
    if origin is typing.Literal:
        words = [f"`{a}`" for a in args]
        return ", ".join(words[:-1]) + " or " + words[-1] if len(words) > 1 else words[0]
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_type(a) for a in args)
    if origin is list:
        return "list of " + _type(args[0])
    if t is type(None):
        return "none"
    return {"StrictBool": "bool", "PosixPath": "path", "Path": "path"}.get(getattr(t, "__name__", ""), getattr(t, "__name__", str(t)))


def _bounds(name: str, field: Any) -> str:
    from dclab.scenario import RANGES

    if name in RANGES:
        lo, hi = RANGES[name]
        return f"{_num(lo)} to {_num(hi)}" + (", each of 1 to 8 values" if typing.get_origin(field.annotation) is list else "")
    ge = next((m.ge for m in field.metadata if getattr(m, "ge", None) is not None), None)
    le = next((m.le for m in field.metadata if getattr(m, "le", None) is not None), None)
    return f"{_num(ge)} to {_num(le)}" if ge is not None and le is not None else ""


def scenario_fields() -> str:
    from pydantic import PlainSerializer

    from dclab.scenario import Scenario

    rows = ["| field | type | default | range | meaning |", "|---|---|---|---|---|"]
    for name, field in Scenario.model_fields.items():
        # A field kept parsed (the link) is written as what it serializes to.
        ser = next((m for m in field.metadata if isinstance(m, PlainSerializer)), None)
        t = ser.return_type if ser is not None else field.annotation
        rows.append(f"| `{name}` | {_cell(_type(t))} | `{_cell(_default(field))}` | {_bounds(name, field)} | "
                    f"{_cell(field.description or '')} |")
    return "\n".join(rows)


def dcemu_limits() -> str:
    src = LIMITS_RS.read_text()
    consts = {m[0]: float(m[1].replace("_", "")) for m in re.findall(r"const (\w+): f64 = ([\d_.eE+-]+);", src)}
    block = re.search(r"pub const LIMITS: &\[\(&str, f64, f64\)\] = &\[(.*?)\];", src, re.S)
    if not block:
        raise ValueError(f"{LIMITS_RS}: no LIMITS table")

    def value(text: str) -> float:
        text = text.strip()
        return consts[text] if text in consts else float(text.replace("_", ""))

    rows = ["| field | lowest | highest |", "|---|---|---|"]
    entries = re.findall(r'\("([\w.]+)",\s*([^,]+),\s*([^)]+)\)', block.group(1))
    if not entries:
        raise ValueError(f"{LIMITS_RS}: LIMITS is empty")
    for name, lo, hi in entries:
        rows.append(f"| `{name}` | {_num(value(lo))} | {_num(value(hi))} |")
    return "\n".join(rows)


def cli_reference() -> str:
    from dclab.cli import app
    from dclab.cli.reference import markdown

    return markdown(app)


GENERATORS = {"scenario-fields": scenario_fields, "dcemu-limits": dcemu_limits, "cli-reference": cli_reference}


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    def fill(m: re.Match[str]) -> str:
        name = m.group(1)
        if name not in GENERATORS:
            raise ValueError(f"{page.file.src_path}: unknown generated block {name!r} (known: {', '.join(GENERATORS)})")
        return GENERATORS[name]()

    return MARKER.sub(fill, markdown)
