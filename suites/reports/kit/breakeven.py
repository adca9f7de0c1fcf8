"""Compile break-even: how many calls before torch.compile's one-off cost is won back.

Per case and compile-family variant: the cost is compile_ms (the first call minus one warm call,
from measurements.csv), the saving per call is baseline median - compile median, and the calls
to break even are cost / saving. A compile that is slower per call never pays off.
"""
from __future__ import annotations

import math

import pandas as pd

from kernels.base import DTYPE_SHORT
from suites.results.columns import Status

NAN = float("nan")
COLUMNS = ["suite", "case_id", "dtype", "variant", "choice", "flops", "compile_ms", "baseline_us",
           "compile_us", "saved_us", "calls", "verdict"]
NEVER = "never (compile is slower per call)"


def _repaid_after(compile_ms: float, saved_us: float) -> tuple[float, str]:
    """The calls after which compile has repaid its first call, and that outcome in words (the
    table's `verdict` column: after N calls, never, or why it was not measured)."""
    if math.isnan(compile_ms) or math.isnan(saved_us):
        return NAN, "not measured"
    if saved_us <= 0:
        return NAN, NEVER
    calls = compile_ms * 1000.0 / saved_us
    whole = math.ceil(calls)
    return calls, f"after {whole:,} call{'' if whole == 1 else 's'}"


def breakeven_table(rows: pd.DataFrame, suite: str, baseline: str) -> pd.DataFrame:
    base = rows[rows["variant"] == baseline].set_index("case_id")
    out = []
    for row in rows[rows["family"] == "compile"].itertuples():
        b = base.loc[row.case_id] if row.case_id in base.index else None
        entry = {"suite": suite, "case_id": row.case_id, "dtype": row.dtype, "variant": row.variant,
                 "choice": row.choice, "flops": row.flops, "compile_ms": NAN, "baseline_us": NAN,
                 "compile_us": NAN, "saved_us": NAN, "calls": NAN}
        if row.status != Status.OK:
            entry["verdict"] = f"compile {row.status}"
        elif b is None or b["status"] != Status.OK:
            entry["verdict"] = f"baseline {'not run' if b is None else b['status']}"
        else:
            entry.update(compile_ms=row.compile_ms, baseline_us=b["mean_us"],
                         compile_us=row.mean_us, saved_us=b["mean_us"] - row.mean_us)
            entry["calls"], entry["verdict"] = _repaid_after(entry["compile_ms"], entry["saved_us"])
        out.append(entry)
    table = pd.DataFrame(out, columns=COLUMNS)
    # Smallest to largest per dtype: merged reruns otherwise leave their cases at the end.
    dtype_order = {d: i for i, d in enumerate(dict.fromkeys(table["dtype"]))}
    table = table.assign(_d=table["dtype"].map(dtype_order))
    return table.sort_values(["_d", "flops"], kind="stable").drop(columns="_d").reset_index(drop=True)


def _phrase(row) -> str:
    if row["verdict"] == NEVER:
        return f"never pays off at {row['case_id']} (slower per call)"
    return f"pays for itself {row['verdict']} at {row['case_id']}"


def _sentence(variant: str, group: pd.DataFrame) -> str:
    group = group.sort_values("flops", kind="stable")
    measured = group[group["verdict"].str.startswith("after") | (group["verdict"] == NEVER)]
    unmeasured = ", ".join(dict.fromkeys(group.drop(measured.index)["verdict"]))
    if measured.empty:
        return f"{variant} was not measured ({unmeasured})"
    pays = int(measured["calls"].notna().sum())
    if len(measured) > 1 and pays == 0:
        parts = [f"{variant} never pays off: slower per call at all {len(measured)} shapes"]
    else:
        largest, smallest = measured.iloc[-1], measured.iloc[0]
        parts = [f"{variant} {_phrase(largest)}"]
        if len(measured) > 1:
            parts.append(f"never at the smallest shape ({smallest['case_id']}, slower per call)"
                         if smallest["verdict"] == NEVER else
                         f"{smallest['verdict']} at the smallest shape ({smallest['case_id']})")
            parts.append(f"it pays off at {pays} of {len(measured)} shapes")
    if unmeasured:
        parts.append(f"not measured at {len(group) - len(measured)} shape(s) ({unmeasured})")
    return "; ".join(parts)


def sentences(table: pd.DataFrame) -> list[str]:
    """Per (variant, dtype, choice): the verdict at the largest measured shape, and at the
    smallest, e.g. `compile pays for itself after 12,400 calls at T2048-...; never at the
    smallest shape (T128-..., slower per call); it pays off at 2 of 3 shapes`."""
    return [_sentence(f"{variant} ({' '.join(filter(None, (choice, DTYPE_SHORT.get(dtype, dtype))))})",
                      group)
            for (variant, dtype, choice), group in table.groupby(["variant", "dtype", "choice"],
                                                                  sort=False)]
