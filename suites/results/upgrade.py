"""Run folders written by an older fusebench, brought up to this one's schema as they are read:
the one place that knows what an older folder lacks, so that no report, compare, collect or
resume asks how old a run is.

run.json's `schema_version` (journal.py writes it) names the schema a folder's files follow. A
folder without one is version 0: written before the field existed, by main up to commit 8cd45f5
(tests/fixtures/run_folders/schema_v0 is one) or by anything older, which may lack columns that
came later: a row's `reason`, the timing-round, profile and compile metrics, kernels.csv's GEMM
and occupancy details. Each step brings a table from one version to the next, filling what the
older version did not write as empty (NaN for a number, None for text), as a row with nothing
to say there would hold it. A file an older run never wrote (optree.csv, rounds.csv, samples.csv,
run.json) is read as any missing file is: an empty table, or none (reader.py).
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable

import pandas as pd

NAN = float("nan")

from suites.results.columns import KERNEL_DETAIL_COLUMNS, METRICS, empty
from suites.results.journal import MEASUREMENTS_CSV, SCHEMA_VERSION
from suites.results.tables import KERNELS_CSV

# measurements.csv's columns a row may be read without: every metric, and the identity a reader
# can do without (the block's name, the device, which env.json says too). The others (the key,
# status, family, dtype and the op's parameters) are required by the readers that use them.
MEASUREMENT_COLUMNS = ("op", "device", *(c.name for c in METRICS))
# Per table, the columns its current schema has and a reader may find missing in an older run.
SCHEMA_COLUMNS = {MEASUREMENTS_CSV: MEASUREMENT_COLUMNS, KERNELS_CSV: KERNEL_DETAIL_COLUMNS}


def with_empty(frame: pd.DataFrame, names) -> pd.DataFrame:
    """`frame` with each column of `names` it lacks, empty, after its own columns."""
    return frame.assign(**{n: _empty(n) for n in names if n not in frame.columns})


def _empty(name: str):
    return empty(name) if name in MEASUREMENT_COLUMNS else None


def _from_0(name: str, frame: pd.DataFrame) -> pd.DataFrame:
    """Version 0 to 1: the columns added over the versions before schema_version (version 1 has
    the same columns as the last of them, main at 8cd45f5)."""
    return with_empty(frame, SCHEMA_COLUMNS[name]) if name in SCHEMA_COLUMNS else frame


def _from_1(name: str, frame: pd.DataFrame) -> pd.DataFrame:
    """Version 1 to 2: a row's time per call became the mean over calls (mean_us, what a caller
    pays) with its interval; version 1 summarised a row by the median of its calls. That median
    is the only time per call such a run has, so it stands in as the row's mean_us (the
    interval, slow_calls and faults_per_call stay empty): an old run's us/call is its median,
    and its speedups stay as it computed them. rounds.csv is left as written: compare sees
    which figure each side's rounds hold and uses one figure for both."""
    if name == MEASUREMENTS_CSV and "median_us" in frame.columns:
        # Filled empty by the step from 0 (which adds every column of today), or not there.
        median = pd.to_numeric(frame["median_us"], errors="coerce")  # garbled: the reader says
        written = frame["mean_us"] if "mean_us" in frame.columns else median * NAN
        frame = frame.assign(mean_us=pd.to_numeric(written, errors="coerce").fillna(median))
    return with_empty(frame, SCHEMA_COLUMNS[name]) if name in SCHEMA_COLUMNS else frame


def _from_2(name: str, frame: pd.DataFrame) -> pd.DataFrame:
    """Version 2 to 3: kernel us became a measurement of the rounds (with its interval and a
    paired kernel speedup with its own), and a sample may cover several calls (calls/sample).
    No run of version 2 measured kernel time in rounds: the new columns stay empty."""
    return with_empty(frame, SCHEMA_COLUMNS[name]) if name in SCHEMA_COLUMNS else frame


def _from_3(name: str, frame: pd.DataFrame) -> pd.DataFrame:
    """Version 3 to 4: a case may train (mode, gradient errors, activation memory). Every row
    of version 3 is an inference forward: mode fwd_nograd, the training columns empty."""
    if name != MEASUREMENTS_CSV:
        return with_empty(frame, SCHEMA_COLUMNS[name]) if name in SCHEMA_COLUMNS else frame
    frame = with_empty(frame, SCHEMA_COLUMNS[name])
    return frame.assign(mode=frame["mode"].where(frame["mode"].notna(), "fwd_nograd"))


def _from_4(name: str, frame: pd.DataFrame) -> pd.DataFrame:
    """Version 4 to 5: a compile variant's training rows say how its graph was partitioned
    (partition_saved, partition_saved_mb, recomputed_ops, recomputed, bwd_graphs,
    bwd_graph_ops), and every compile row what dynamo and Inductor did (graph_breaks,
    recompiles, inductor_kernels). No run of version 4 read them: the new columns stay
    empty."""
    return with_empty(frame, SCHEMA_COLUMNS[name]) if name in SCHEMA_COLUMNS else frame


def _from_5(name: str, frame: pd.DataFrame) -> pd.DataFrame:
    """Version 5 to 6: a row's bound states the ridge and the bandwidth it was judged against
    (ridge, roof_gbps), and its profile is judged like a timing round (profile_state,
    profile_reason, profile_takes). A run of version 5 judged neither: the columns stay empty,
    and its bound stands as it wrote it."""
    return with_empty(frame, SCHEMA_COLUMNS[name]) if name in SCHEMA_COLUMNS else frame


# version -> the step from it to the next one.
STEPS: dict[int, Callable[[str, pd.DataFrame], pd.DataFrame]] = {0: _from_0, 1: _from_1,
                                                                  2: _from_2, 3: _from_3,
                                                                  4: _from_4, 5: _from_5}


def upgrade(name: str, frame: pd.DataFrame, version: int) -> pd.DataFrame:
    """Table `name` of a run folder of schema `version`, as this version writes it."""
    for step in range(version, SCHEMA_VERSION):
        frame = STEPS[step](name, frame)
    return frame


def schema_version(state: dict | None, run_json: Path) -> tuple[int, str | None]:
    """The folder's schema version from its run.json (`state`: None when there is none or it is
    not readable: version 0), and what is wrong with the field, if anything."""
    found = (state or {}).get("schema_version", 0)
    if not isinstance(found, int) or isinstance(found, bool) or found < 0:
        return 0, (f"{run_json}: schema_version {found!r} is not a version (edited or garbled): "
                   "read as a run from before versions (0)")
    if found > SCHEMA_VERSION:
        return found, (f"{run_json}: schema_version {found}, written by a newer fusebench than "
                       f"this one (which reads up to {SCHEMA_VERSION}): what it added is ignored")
    return found, None
