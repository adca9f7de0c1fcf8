"""The checks of a run folder's files, each said in one line for the readers' banner: a table
cut inside a row, fewer or more rows than run.json counted when the run wrote them whole, values
that are not numbers, an env.json that cannot be read. The reader (reader.py) runs them on the
bytes it read; nothing here reads a table again."""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from suites.results.columns import numeric
from suites.results.journal import COMPLETE, MEASUREMENTS_CSV, RUN_JSON
from suites.results.table_reading import CSV_ERRORS, NUMBERS, parse

ENV_JSON = "env.json"
# The env.json keys readers use and the JSON type each must have; a key of another type (an
# edited or garbled file) is left out, as if not recorded, and the banner says so.
ENV_TYPES = {"timing": dict, "rounds": dict, "peaks": dict, "peak_probes": list,
             "reference": dict, "suite": str, "device": str, "created": str, "gpu": str,
             "cpu": str, "threads": int}


def ends_cut(data: bytes) -> bool:
    """A table whose last byte is not a line end was cut inside its last row (a full disk, or a
    copy that stopped): pandas reads the partial row as a row, its missing fields as empty."""
    return data[-1:] not in (b"", b"\n")


def last_byte_cut(file: Path) -> bool:
    """ends_cut for a file not read whole: its last byte alone."""
    try:
        with open(file, "rb") as f:
            f.seek(-1, 2)
            return f.read(1) != b"\n"
    except OSError:  # empty (seek before the start), missing or unreadable
        return False


def not_numbers(name: str, data: bytes, frame: pd.DataFrame) -> int:
    """Values in numeric columns that are not numbers (garbled), counted on the text itself: a
    number the reader then rejected (an impossible value) is said apart, not here."""
    try:
        raw = parse(data, dtype=str, keep_default_na=False)
    except CSV_ERRORS:
        return 0
    columns = NUMBERS.get(name) or (numeric(raw.columns) if name == MEASUREMENTS_CSV else ())
    return sum(int(((raw[c].str.strip() != "")
                    & pd.to_numeric(raw[c], errors="coerce").isna()).sum())
               for c in columns if c in raw and c in frame)


def env_checked(file: Path, data: bytes | None) -> tuple[dict, str | None]:
    """env.json's keys of the right type, and what was wrong with the file (None: nothing, or
    no file: the folder's problems name that)."""
    if data is None:
        return {}, None
    try:
        env = json.loads(data.decode())
    except ValueError as exc:
        return {}, f"{file}: not readable JSON ({type(exc).__name__}): machine, versions and " \
                   "peaks unknown"
    if not isinstance(env, dict):
        return {}, f"{file}: a JSON {type(env).__name__}, not an object: machine, versions " \
                   "and peaks unknown"
    wrong = [k for k, kind in ENV_TYPES.items() if k in env and env[k] is not None
             and not (isinstance(env[k], kind) and not isinstance(env[k], bool))]
    if not wrong:
        return env, None
    return {k: v for k, v in env.items() if k not in wrong}, \
        f"{file}: {', '.join(wrong)} of the wrong type (edited or garbled): left out"


def row_count(folder: Path, name: str, frame: pd.DataFrame, state: dict | None) -> str | None:
    """A table with fewer or more rows than run.json counted when the run wrote it whole."""
    if not state or state.get("state") != COMPLETE:
        return None
    counted = state.get("rows") or {}
    expected = counted.get(name) if isinstance(counted, dict) else None
    if expected is None and name == MEASUREMENTS_CSV:
        expected = state.get("done")
    if expected is None:
        return None
    if not isinstance(expected, int) or isinstance(expected, bool):
        return (f"{folder / RUN_JSON}: its row count for {name} is not a whole number (edited "
                "or garbled): the rows cannot be checked")
    if len(frame) != expected:
        return (f"{folder / name}: holds {len(frame)} rows where run.json counted {expected} "
                "written: cut or edited")
    return None
