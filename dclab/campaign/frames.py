"""A result store as pandas DataFrames, for analyses and figures of one's own.

``runs_frame(src)`` has one row per run, ``flows_frame(src)`` one row per flow. ``src`` is a
campaign name (its store ``campaign_dir(name)/store.sqlite``), a path to a store file (a
``Path``, or a string with a ``/`` or ending in ``.sqlite``), or a ``Store``; ``where`` is
an SQL condition on the runs table, as in ``Store.rows``. A store named by path or campaign
is opened read-only (``open_existing``): reading never creates, migrates or changes one, and
``where`` runs on a read-only connection. A missing store or anything else raises
``NotAStore``; a store written by a newer dclab ``StoreTooNew``, a damaged one
``StoreDamaged`` (all ``StoreError``, a ValueError).

Columns of ``runs_frame``:

- the generic columns of the runs table: ``run_key``, ``campaign``, ``experiment``,
  ``sweep``, ``param``, ``value`` (as written), ``value_num`` (float), ``stack``, ``cc``,
  ``host_config``, ``rep``, ``seed`` (nullable integer), ``ok`` (bool), ``error``,
  ``machine``, ``started_at`` and ``finished_at`` (datetimes), ``run_dir``;
- ``metrics.NAME`` per metric, ``options.NAME`` per experiment option, ``scenario.FIELD``
  per scenario field and ``environment.KEY`` per environment entry. A dict is flattened
  with dots (``metrics.pdcp.rx.timer_expiries``,
  ``environment.host_settings.net.core.rmem_max``); a list is kept as JSON text
  (``scenario.bw`` is ``"[20.0, 20.0]"``, ``metrics.downloads``). A run that lacks a key
  has a missing value there.

Columns of ``flows_frame``: the flows table (``flow``, ``stack``, ``cc``, ``bearer``,
``port``, ``mean_mbps``, ``goodput_mbps``, ``bytes``, ``completion_s``, ``ok``), each
with its run's ``run_key``, ``campaign``, ``experiment``, ``sweep``, ``param``, ``value``,
``value_num``, ``host_config``, ``rep`` and ``ok_run``, so flows group by sweep value
without a merge.

A flattened column holds one type: bools become ``boolean``, integers ``Int64``, numbers
``float64``, strings ``str``; a column whose runs disagree (e.g. a number in one run, a
string in another) is kept as JSON text, so every frame writes to Parquet.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd  # type: ignore[import-untyped]

from ..files import JsonObject
from .store import FLOW_COLUMNS, NotAStore, Store, StoreError, campaign_dir, open_existing

RUN_COLUMNS = ["run_key", "campaign", "experiment", "sweep", "param", "value", "value_num", "stack", "cc",
               "host_config", "rep", "seed", "ok", "error", "machine", "started_at", "finished_at", "run_dir"]
FLOW_RUN_COLUMNS = ["run_key", "campaign", "experiment", "sweep", "param", "value", "value_num", "host_config", "rep"]
FLOW_OWN_COLUMNS = ["flow"] + FLOW_COLUMNS[2:]
JSON_ORDER = ["metrics", "options", "scenario", "environment"]  # the store's JSON columns, as they appear
GENERIC_DTYPES = {"value_num": "float64", "rep": "int64", "seed": "Int64", "ok": "bool"}
FLOW_DTYPES = {"port": "Int64", "mean_mbps": "float64", "goodput_mbps": "float64", "bytes": "Int64",
               "completion_s": "float64", "ok": "boolean", "ok_run": "bool", "value_num": "float64", "rep": "int64"}


def open_source(src: str | Path | Store) -> Store:
    """The store ``src`` names (see the module docstring), opened read-only unless ``src``
    is a Store already; NotAStore if there is none."""
    if isinstance(src, Store):
        return src
    if isinstance(src, str) and "/" not in src and not src.endswith(".sqlite"):
        path = campaign_dir(src) / "store.sqlite"
        if not path.is_file():
            raise NotAStore(f"no result store for campaign {src!r} at {path} (has it run yet?)")
        return open_existing(path)
    return open_existing(Path(src))


def flatten(prefix: str, obj: Any, out: JsonObject) -> None:
    """Dicts by dotted key, lists as JSON text, scalars as they are."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            flatten(f"{prefix}.{k}", v, out)
    elif isinstance(obj, list):
        out[prefix] = json.dumps(obj, default=str)
    else:
        out[prefix] = obj


def _missing(v: Any) -> bool:
    return v is None or (isinstance(v, float) and v != v)


def _one_type(values: list[Any]) -> pd.Series:
    """A flattened column with one dtype (module docstring), from its values as stored."""
    kinds = {bool if isinstance(v, bool) else int if isinstance(v, int) else float if isinstance(v, float)
             else str if isinstance(v, str) else object for v in values if not _missing(v)}
    col = pd.Series(values, dtype=object)
    if not kinds:
        return col.astype("float64")
    if kinds == {bool}:
        return col.astype("boolean")
    if kinds == {int}:
        return col.astype("Int64")
    if kinds <= {int, float}:
        return col.astype("float64")
    if kinds == {str}:
        return col.astype("str")
    return pd.Series([None if _missing(v) else json.dumps(v, default=str) for v in values], dtype="str")


def runs_frame(src: str | Path | Store, where: str = "1") -> pd.DataFrame:
    """One row per run of the store ``src`` matching ``where`` (columns: module docstring)."""
    records, names = [], dict.fromkeys(RUN_COLUMNS)  # names in order of first appearance
    for r in open_source(src).rows(where):
        rec = {c: r[c] for c in RUN_COLUMNS}
        for c in JSON_ORDER:
            flatten(c, r[c], rec)
        names.update(dict.fromkeys(rec))
        records.append(rec)
    data = {c: pd.Series([rec[c] for rec in records], dtype=object) for c in RUN_COLUMNS}
    data |= {c: _one_type([rec.get(c) for rec in records]) for c in list(names)[len(RUN_COLUMNS):]}
    return _generic_dtypes(pd.DataFrame(data), GENERIC_DTYPES)


def flows_frame(src: str | Path | Store, where: str = "1") -> pd.DataFrame:
    """One row per flow of the runs of ``src`` matching ``where``, with its run's
    identifying columns (module docstring)."""
    records = []
    for r in open_source(src).rows(where):
        run = {c: r[c] for c in FLOW_RUN_COLUMNS} | {"ok_run": r["ok"]}
        for f in r["flows"]:
            records.append(run | {"flow": f["name"]} | {c: f.get(c) for c in FLOW_OWN_COLUMNS[1:]})
    cols = FLOW_RUN_COLUMNS + ["ok_run"] + FLOW_OWN_COLUMNS
    return _generic_dtypes(pd.DataFrame.from_records(records, columns=cols), FLOW_DTYPES)


def _generic_dtypes(df: pd.DataFrame, dtypes: dict[str, str]) -> pd.DataFrame:
    for c, t in dtypes.items():
        if c in df.columns:
            df[c] = df[c].astype(t)
    for c in ("started_at", "finished_at"):
        if c in df.columns:
            df[c] = pd.to_datetime(df[c], format="ISO8601", errors="coerce")
    for c in df.columns:
        if df[c].dtype == object and all(v is None or isinstance(v, str) for v in df[c]):
            df[c] = df[c].astype("str")
    return df


__all__ = ["runs_frame", "flows_frame", "open_source", "NotAStore", "StoreError"]
