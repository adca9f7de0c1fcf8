"""What an interrupted run already measured, read back to be kept when it is resumed.

The journal writes a case's rows together (journal.py), so a case is either in the tables with
all its rows or not at all (what its profiles give follows its rows: a kill in between leaves it
without its kernels, findings and op tree rows); the cases found whole are kept as they are and
not measured again.
A case with only some of its rows (a kill while the tables were being written whole) is
measured again and its partial rows dropped. Findings across rows (`cross_row_codes`: the
runner passes findings/rows.py's ROW_CODES) are dropped too: the resumed run finds them again
over every row. The folder is read through reader.py, so a run of an older version is resumed
with its tables brought up to this one's schema."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from suites.results.columns import KEY
from suites.results.reader import RunFolder
from suites.results.row import ResultRow
from suites.results.tables import (FINDINGS_CSV, KERNELS_CSV, MEASUREMENTS_CSV, OPTREE_CSV,
                                   ROUNDS_CSV, SAMPLES_CSV, param_columns)


@dataclass
class Previous:
    cases: set[str] = field(default_factory=set)  # case ids kept whole
    rows: list[ResultRow] = field(default_factory=list)
    tables: dict[str, list[dict]] = field(default_factory=dict)  # file name -> kept records


def read_previous(folder: Path, variants_per_case: int, cross_row_codes=()) -> Previous:
    """The whole cases of an interrupted run in `folder`; an empty Previous if it wrote none."""
    run = RunFolder(folder)
    if not (run.folder / MEASUREMENTS_CSV).exists():
        return Previous()
    frame = run.measurements.drop_duplicates(list(KEY), keep="last")
    counts = frame.groupby("case_id")["variant"].nunique()
    whole = set(counts[counts == variants_per_case].index)
    kept = frame[frame["case_id"].isin(whole)]
    params = param_columns(kept)
    rows = [ResultRow.from_record(r, params) for r in kept.to_dict("records")]
    read = {SAMPLES_CSV: run.samples, ROUNDS_CSV: run.rounds, KERNELS_CSV: run.kernels,
            FINDINGS_CSV: run.findings, OPTREE_CSV: run.optree}
    tables = {}
    for name, table in read.items():
        table = pd.DataFrame(columns=list(KEY)) if table is None or "case_id" not in table \
            else table
        table = table[table["case_id"].isin(whole)]
        if name == FINDINGS_CSV:
            table = table[~table["code"].isin([str(c) for c in cross_row_codes])]
        tables[name] = table.to_dict("records")
    return Previous(whole, rows, tables)
