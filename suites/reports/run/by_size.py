"""The report's "each variant and dtype, size by size": per variant, where it is faster than the
baseline, equivalent, or slower, with the intervals from the timing rounds.

Each ok row's paired speedup and its 95% interval put it in one class of change
(suites/reports/kit/change.py, within SAME_WITHIN, 2%): faster, slower, equivalent or
inconclusive (the interval reaches across a bound: more rounds would tell). Consecutive sizes of one class
are told as one stretch:
"compile, fp32: slower at M64 to M256: 0.29x-0.64x; equivalent within 2% at M512 to M2048".
"""
from __future__ import annotations

import math

import pandas as pd

from kernels.base import DTYPE_SHORT
from suites.common.numbers import span, times
from suites.reports.kit.change import SAME_WITHIN, Change, phrase, row_changes
from suites.results.columns import Status


def _where(row, varying: list[str]) -> str:
    return "-".join(f"{p}{row[p]}" for p in varying)


def _stretch(cls: str, rows: pd.DataFrame, varying: list[str]) -> str:
    first, last = _where(rows.iloc[0], varying), _where(rows.iloc[-1], varying)
    where = first if len(rows) == 1 else f"{first} to {last}"
    if len(rows) == 1:
        r = rows.iloc[0]
        interval = ("" if math.isnan(r["speedup_low"])
                    else f" ({span(r['speedup_low'], r['speedup_high'])})")
        figure = f"{times(r['speedup'])}{interval}"
    else:
        figure = span(rows["speedup"].min(), rows["speedup"].max(), "x")
    if cls not in tuple(Change):  # not measured there: noisy, failed, incorrect or skipped
        return f"{cls} at {where}"
    return f"{phrase(cls, SAME_WITHIN)} at {where}: {figure}"


def _group_label(variant: str, family: str, dtype: str, choice: str) -> str:
    extra = f", {choice}" if choice else ""
    return f"{variant} ({family}), {DTYPE_SHORT.get(dtype, dtype)}{extra}"


def _choice(row, categorical: list[str]) -> str:
    return " ".join(f"{p}={row[p]}" for p in categorical)


def lines_by_size(frame: pd.DataFrame, size_axis: str, params: list[str],
                  baseline: str) -> list[str]:
    """One line per (variant, dtype, categorical choice) against the baseline, sizes in order."""
    ok = frame[(frame["status"] == Status.OK) & (frame["variant"] != baseline)
               & frame["speedup"].notna()]
    if ok.empty:
        return [f"No variant has a speedup against {baseline} (none ran ok with it)."]
    # A size the variant has no speedup at breaks its stretches, so "faster at M64 to M1024"
    # never covers an M256 that was not measured; variants with no speedup at all are left out.
    others = frame[frame["variant"].isin(ok["variant"]) & ~frame.index.isin(ok.index)]
    ok = pd.concat([ok, others])
    categorical = [p for p in params if p != size_axis
                   and not pd.api.types.is_numeric_dtype(frame[p].dropna())]
    # A row with no class says why: its status, or "not paired" for an ok row.
    unpaired = ["not paired" if status == Status.OK else status for status in ok["status"]]
    ok = ok.assign(_choice=[_choice(r, categorical) for _, r in ok.iterrows()],
                   _class=[why if cls is None else cls
                           for cls, why in zip(row_changes(ok), unpaired)])
    lines = []
    for (variant, dtype, choice), rows in ok.groupby(["variant", "dtype", "_choice"], sort=False):
        # The sizes that change within the group name its cases (M64, or S512-D64).
        numeric = [p for p in params if p not in categorical]
        varying = [p for p in numeric if rows[p].nunique() > 1] or [size_axis]
        if size_axis in varying and (rows.groupby(size_axis)[varying].nunique() <= 1).all().all():
            varying = [size_axis]  # a square sweep: the size axis names the case
        rows = rows.sort_values(varying, kind="stable")
        stretches, start = [], 0
        classes = rows["_class"].tolist()
        for i in range(1, len(rows) + 1):
            if i == len(rows) or classes[i] != classes[start]:
                stretches.append(_stretch(classes[start], rows.iloc[start:i], varying))
                start = i
        label = _group_label(variant, rows["family"].iloc[0], dtype, choice)
        lines.append(f"{label}: " + "; ".join(stretches))
    if (ok["_class"] == Change.INCONCLUSIVE).any():
        lines.append(f"inconclusive: the 95% interval reaches across a {SAME_WITHIN:.0%} bound, or only "
                     "one round paired the two; more rounds (timing.rounds) would tell")
    return lines
