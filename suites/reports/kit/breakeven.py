"""Compile break-even: how many calls before torch.compile's one-off cost is won back. The one
rule, read by the run report's answer and the ladder alike.

Per case and compile-family variant: the cost is compile_ms (the first call minus one warm call,
from measurements.csv), the saving per call is baseline mean - compile mean, and the calls to
break even are cost / saving. A saving counts only where the compile is faster by its paired
interval (suites/reports/kit/change.py, the report's class of the row): a difference of means
inside the noise repays nothing. Slower by its interval: never; neither: not faster per call by
its interval, so no count of calls is stated.
"""
from __future__ import annotations

import math

import pandas as pd

from kernels.base import DTYPE_SHORT
from suites.reports.kit.change import Change, SAME_WITHIN, classify
from suites.results.columns import Status

NAN = float("nan")
COLUMNS = ["suite", "case_id", "dtype", "variant", "choice", "flops", "compile_ms", "baseline_us",
           "compile_us", "saved_us", "change", "calls", "verdict"]
NEVER = "never (compile is slower per call)"
NOT_FASTER = "not faster per call by its interval"


def _repaid_after(compile_ms: float, saved_us: float, change: Change) -> tuple[float, str]:
    """The calls after which compile has repaid its first call, and that outcome in words (the
    table's `verdict` column: after N calls, never, not faster by its interval, or why it was
    not measured). `change` is the compile row's class against the baseline."""
    if math.isnan(compile_ms) or math.isnan(saved_us):
        return NAN, "not measured"
    if change == Change.SLOWER:
        return NAN, NEVER
    if change != Change.FASTER or saved_us <= 0:
        return NAN, NOT_FASTER
    calls = compile_ms * 1000.0 / saved_us
    whole = math.ceil(calls)
    return calls, f"after {whole:,} call{'' if whole == 1 else 's'}"


def change_of(row) -> Change:
    """The compile row's class by its paired interval (the report's rule); inconclusive without
    one (a baseline from another run: no pairing, no interval)."""
    low, high = (float(getattr(row, k, NAN)) for k in ("speedup_low", "speedup_high"))
    return classify(low, high, SAME_WITHIN)


def breakeven_table(rows: pd.DataFrame, suite: str, baseline: str) -> pd.DataFrame:
    base = rows[rows["variant"] == baseline].set_index("case_id")
    out = []
    for row in rows[rows["family"] == "compile"].itertuples():
        b = base.loc[row.case_id] if row.case_id in base.index else None
        entry = {"suite": suite, "case_id": row.case_id, "dtype": row.dtype, "variant": row.variant,
                 "choice": row.choice, "flops": row.flops, "compile_ms": NAN, "baseline_us": NAN,
                 "compile_us": NAN, "saved_us": NAN, "change": "", "calls": NAN}
        if row.status != Status.OK:
            entry["verdict"] = f"compile {row.status}"
        elif b is None or b["status"] != Status.OK:
            entry["verdict"] = f"baseline {'not run' if b is None else b['status']}"
        else:
            entry.update(compile_ms=row.compile_ms, baseline_us=b["mean_us"],
                         compile_us=row.mean_us, saved_us=b["mean_us"] - row.mean_us)
            entry["change"] = str(change_of(row))
            entry["calls"], entry["verdict"] = _repaid_after(entry["compile_ms"], entry["saved_us"],
                                                             change_of(row))
        out.append(entry)
    table = pd.DataFrame(out, columns=COLUMNS)
    # Smallest to largest per dtype: merged reruns otherwise leave their cases at the end.
    dtype_order = {d: i for i, d in enumerate(dict.fromkeys(table["dtype"]))}
    table = table.assign(_d=table["dtype"].map(dtype_order))
    return table.sort_values(["_d", "flops"], kind="stable").drop(columns="_d").reset_index(drop=True)


def measured(table: pd.DataFrame) -> pd.DataFrame:
    """The rows whose break-even was judged (both rows ok and timed): repaid after N calls,
    never, or not faster by the interval."""
    return table[table["verdict"].str.startswith("after")
                 | table["verdict"].isin([NEVER, NOT_FASTER])]


def repaid(table: pd.DataFrame) -> pd.Series:
    """Whether each row repays its first call: faster by its interval, with a count of calls."""
    return table["calls"].notna()


def _phrase(row) -> str:
    if row["verdict"] == NEVER:
        return f"never pays off at {row['case_id']} (slower per call)"
    if row["verdict"] == NOT_FASTER:
        return f"does not pay for itself at {row['case_id']} ({NOT_FASTER})"
    return f"pays for itself {row['verdict']} at {row['case_id']}"


def _smallest(row) -> str:
    if row["verdict"] == NEVER:
        return f"never at the smallest shape ({row['case_id']}, slower per call)"
    if row["verdict"] == NOT_FASTER:
        return f"not at the smallest shape ({row['case_id']}, {NOT_FASTER})"
    return f"{row['verdict']} at the smallest shape ({row['case_id']})"


def _sentence(variant: str, group: pd.DataFrame) -> str:
    group = group.sort_values("flops", kind="stable")
    judged = measured(group)
    unmeasured = ", ".join(dict.fromkeys(group.drop(judged.index)["verdict"]))
    if judged.empty:
        return f"{variant} was not measured ({unmeasured})"
    pays = int(repaid(judged).sum())
    if len(judged) > 1 and pays == 0 and (judged["verdict"] == NEVER).all():
        parts = [f"{variant} never pays off: slower per call at all {len(judged)} shapes"]
    else:
        largest, smallest = judged.iloc[-1], judged.iloc[0]
        parts = [f"{variant} {_phrase(largest)}"]
        if len(judged) > 1:
            parts.append(_smallest(smallest))
            parts.append(f"it pays off at {pays} of {len(judged)} shapes")
    if unmeasured:
        parts.append(f"not measured at {len(group) - len(judged)} shape(s) ({unmeasured})")
    return "; ".join(parts)


def sentences(table: pd.DataFrame) -> list[str]:
    """Per (variant, dtype, choice): the verdict at the largest measured shape, and at the
    smallest, e.g. `compile pays for itself after 12,400 calls at T2048-...; never at the
    smallest shape (T128-..., slower per call); it pays off at 2 of 3 shapes`."""
    return [_sentence(f"{variant} ({' '.join(filter(None, (choice, DTYPE_SHORT.get(dtype, dtype))))})",
                      group)
            for (variant, dtype, choice), group in table.groupby(["variant", "dtype", "choice"],
                                                                  sort=False)]
