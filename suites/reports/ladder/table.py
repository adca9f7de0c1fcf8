"""The ladder table: each block at its reference shape, per dtype and mode, one row per variant
family.

The reference shape (env.json `reference`) is the series' shape, which a CPU grid often does not
reach; then the run shape closest to it stands in, by the smallest sum of |log(size / ref)|
over the parameters (a factor of 2 off counts the same whichever way and whichever axis), and
the table says so. A family with several variants (attention's sdpa_*) shows its fastest ok one.
"""
from __future__ import annotations

import math

import pandas as pd

from kernels.base import DEFAULT_MODE, FAMILIES, as_value, params_id
from suites.reports.ladder.loading import Collection, SuiteInfo
from suites.common.numbers import plain, times
from suites.results.columns import Status

# A shape with another value of a categorical parameter (LayerNorm for RMSNorm) is never the
# closest to a reference: it is a different computation, not a different size.
_OTHER_CHOICE = 1e6

COLUMNS = ["suite", "machine", "dtype", "mode", "shape", "shape_note", "family", "variant", "status", "n_kernels",
           "device_us", "host_us", "mean_us", "speedup", "speedup_low", "speedup_high",
           "device_ratio", "note"]
_NUMBERS = ["n_kernels", "device_us", "host_us", "mean_us", "speedup", "speedup_low",
            "speedup_high", "device_ratio"]
DISAGREE = 1.5  # speedup and device ratio this far apart: the two passes saw different things


def shape_label(shape: dict) -> str:
    """M4096-N4096-K4096, T1024-D768-rms: a case id without its dtype."""
    return params_id(shape.items())


def _distance(a, b) -> float:
    if isinstance(a, str) or isinstance(b, str):
        return 0.0 if a == b else _OTHER_CHOICE
    return abs(math.log(a / b))


def log_distance(shape: dict, reference: dict) -> float:
    common = [p for p in reference if p in shape]
    return sum(_distance(shape[p], reference[p]) for p in common) if common else math.inf


def choose_shape(shapes: list[dict], reference: dict) -> tuple[dict, str]:
    """(shape to show, note). `shapes` in the order to prefer on a tie (the caller passes them
    largest first: between two equally distant shapes the bigger one says more about the
    reference's regime, which is bigger than a CPU grid)."""
    if not reference:
        return shapes[0], "no reference shape recorded (env.json); largest shape run"
    wanted = {p: as_value(v) for p, v in reference.items()}
    for shape in shapes:
        if shape == wanted:
            return shape, "reference shape"
    best = min(shapes, key=lambda s: log_distance(s, wanted))  # min keeps the first on a tie
    return best, f"reference shape {shape_label(wanted)} not run; closest: {shape_label(best)}"


def sorted_shapes(rows: pd.DataFrame, params: list[str]) -> list[dict]:
    """Distinct shapes, largest first (by FLOPs, then by the sizes themselves)."""
    by_size = rows.drop_duplicates(params).assign(_f=rows["flops"].fillna(0))
    by_size = by_size.sort_values(["_f"] + params, ascending=False, kind="stable")
    return [{p: as_value(r[p]) for p in params} for _, r in by_size.iterrows()]


def _family_row(rows: pd.DataFrame) -> tuple[pd.Series, str]:
    ok = rows[(rows["status"] == Status.OK) & rows["mean_us"].notna()]
    if ok.empty:  # nothing ran: show why, with the first variant's status
        others = ", ".join(rows["variant"].iloc[1:])
        return rows.iloc[0], (f"also not run: {others}" if others else "")
    best = ok.loc[ok["mean_us"].idxmin()]
    if len(ok) == 1:
        return best, ""
    others = ", ".join(f"{r.variant} {plain(r.mean_us)} us" for r in ok.itertuples()
                       if r.variant != best["variant"])
    return best, f"fastest of {len(ok)} ok ({others})"


def _pass_notes(row) -> list[str]:
    """Where the speedup must not be read alone: unpaired, or contradicted by the profile pass."""
    notes = []
    if row["status"] == Status.OK and not row.get("paired", True):
        notes.append("speedup unpaired: its baseline comes from another run (ratio of the "
                     "times per call)")
    s, d = row["speedup"], row["device_ratio"]
    if s == s and d == d and s > 0 and d > 0 and max(s / d, d / s) > DISAGREE:
        notes.append(f"passes disagree: timing {times(s)}, profile device time {times(d)}")
    return notes


def suite_rows(rows: pd.DataFrame, info: SuiteInfo) -> list[dict]:
    out = []
    # Each mode is another computation (a training step is not a forward): its own rows, shape
    # and fastest variant. A row that names no mode (another tool's table) is a forward.
    rows = rows.assign(mode=rows["mode"].fillna(DEFAULT_MODE) if "mode" in rows else DEFAULT_MODE)
    for (dtype, mode), by_mode in rows.groupby(["dtype", "mode"], sort=False):
        shape, shape_note = choose_shape(sorted_shapes(by_mode, info.params), info.reference)
        at = by_mode
        for p, v in shape.items():
            at = at[at[p] == v]
        families = list(FAMILIES) + sorted(set(at["family"]) - set(FAMILIES))
        for family in families:
            group = at[at["family"] == family]
            if group.empty:
                continue  # the block has no variant of this family (linear has no library)
            row, note = _family_row(group)
            if row["status"] != Status.OK and row["reason"]:
                note = f"{row['reason']}" + (f"; {note}" if note else "")
            note = "; ".join(n for n in (note, *_pass_notes(row)) if n)
            # Only an ok row's numbers are results: a noisy row's are in its reason (the note).
            shown = {c: row[c] if row["status"] == Status.OK else math.nan for c in _NUMBERS}
            out.append({"suite": info.name, "machine": "", "dtype": dtype, "mode": mode,
                        "shape": shape_label(shape),
                        "shape_note": shape_note, "family": family, "variant": row["variant"],
                        "status": row["status"], **shown, "note": note})
    return out


def ladder_table(collection: Collection) -> pd.DataFrame:
    out = []
    for name, info in collection.suites.items():
        out += suite_rows(collection.rows[collection.rows["suite"] == name], info)
    return pd.DataFrame(out, columns=COLUMNS)
