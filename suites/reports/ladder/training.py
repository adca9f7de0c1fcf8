"""The ladder's training rungs: each block at its reference shape, per variant, what one training
step costs and where fusion pays, from the rows of the training modes (kernels/base.py MODES).

One row per (block, dtype, machine, variant) that ran a training mode at the chosen shape (the
same choice of shape as the ladder table: suites/reports/ladder/table.py):

- step_us: the variant's training step (fwd_bwd), us per call;
- backward share of the step, with a 95% interval: bwd / fwd_bwd where both rows are ok, else
  (fwd_bwd - fwd) / fwd_bwd. The two rows are different cases, timed in rounds of their own,
  so their errors are independent: the share's interval propagates each mean's 95% interval
  (half-width / 1.96 as its standard error) by the delta method, in logs for a ratio;
- the speedup against the block's baseline in each mode that ran (fwd, bwd, fwd_bwd), with its
  interval paired round by round within its case (the runner's figure), and where it pays: in
  forward, backward, both or neither (the interval clears the band, suites/reports/kit/change.py);
- activation memory: what autograd keeps for backward (activation_mb, saved_tensors: an exact
  count, no interval), and how much less than the baseline's.
"""
from __future__ import annotations

import math

import pandas as pd

from kernels.base import DTYPE_SHORT
from suites.common.numbers import plain, span, times
from suites.reports.kit.change import SAME_WITHIN, Change, classify
from suites.reports.ladder.loading import Collection
from suites.reports.ladder.table import choose_shape, shape_label, sorted_shapes
from suites.results.columns import Status

TRAINING_MODES = ("fwd", "bwd", "fwd_bwd")
Z95 = 1.959964

COLUMNS = ["suite", "machine", "dtype", "shape", "variant", "family", "status", "step_us",
           "backward_share", "backward_share_low", "backward_share_high", "share_from",
           "speedup_fwd", "speedup_fwd_low", "speedup_fwd_high",
           "speedup_bwd", "speedup_bwd_low", "speedup_bwd_high",
           "speedup_step", "speedup_step_low", "speedup_step_high", "pays",
           "activation_mb", "saved_tensors", "activation_saved_mb", "note"]


def _se(row) -> float:
    """The standard error of a row's mean us/call, from its 95% interval (NaN without one)."""
    low, high = row.get("mean_low_us", math.nan), row.get("mean_high_us", math.nan)
    return (high - low) / (2 * Z95) if high == high and low == low else math.nan


def _ok(row) -> bool:
    return row is not None and row["status"] == Status.OK and row["mean_us"] == row["mean_us"]


def backward_share(step, bwd, fwd) -> tuple[float, float, float, str]:
    """(share, low, high, from what) of the step that is backward; NaNs and "" without rows."""
    if not _ok(step):
        return math.nan, math.nan, math.nan, ""
    s, se_s = step["mean_us"], _se(step)
    if _ok(bwd):
        b, se_b = bwd["mean_us"], _se(bwd)
        share = b / s
        # A ratio of independent means: its log's variance is the sum of their squared CVs.
        sd_log = math.sqrt((se_b / b) ** 2 + (se_s / s) ** 2)
        return share, share * math.exp(-Z95 * sd_log), share * math.exp(Z95 * sd_log), "bwd"
    if _ok(fwd):
        f, se_f = fwd["mean_us"], _se(fwd)
        forward = f / s  # the share is 1 - forward share; the interval of f/s, in logs
        sd_log = math.sqrt((se_f / f) ** 2 + (se_s / s) ** 2)
        low, high = forward * math.exp(-Z95 * sd_log), forward * math.exp(Z95 * sd_log)
        return 1 - forward, 1 - high, 1 - low, "fwd_bwd - fwd"
    return math.nan, math.nan, math.nan, ""


def _speedup(row, baseline: bool) -> tuple[float, float, float]:
    """A variant's speedup and interval in one mode; NaNs for the baseline (the table says
    `baseline`) and for a row that is not ok."""
    if baseline or not _ok(row):
        return math.nan, math.nan, math.nan
    return row["speedup"], row["speedup_low"], row["speedup_high"]


def pays_where(fwd: tuple, bwd: tuple) -> str:
    """`forward and backward`, `forward only`, `backward only`, `neither half`, or "" when a
    half has no interval to judge by."""
    classes = [classify(low, high, SAME_WITHIN) if low == low and high == high else None
               for _, low, high in (fwd, bwd)]
    if None in classes:
        return ""
    faster = [half for half, c in zip(("forward", "backward"), classes) if c == Change.FASTER]
    if len(faster) == 2:
        return "forward and backward"
    return f"{faster[0]} only" if faster else "neither half"


def _rows_at(rows: pd.DataFrame, params: list[str], reference: dict) -> tuple[pd.DataFrame, str]:
    """The rows at the shape closest to the reference among those the training step (fwd_bwd)
    ran at, so the step and its halves are read at one shape; any shape when no step ran."""
    steps = rows[rows["mode"] == "fwd_bwd"]
    shape, _ = choose_shape(sorted_shapes(steps if len(steps) else rows, params), reference)
    at = rows
    for p, v in shape.items():
        at = at[at[p] == v]
    return at, shape_label(shape)


def _variant_row(suite: str, machine: str, dtype: str, shape: str, variant: str,
                 by_mode: dict, base_by_mode: dict, is_base: bool) -> dict:
    step, bwd, fwd = (by_mode.get(m) for m in ("fwd_bwd", "bwd", "fwd"))
    share, low, high, source = backward_share(step, bwd, fwd)
    speedups = {m: _speedup(by_mode.get(m), is_base) for m in TRAINING_MODES}
    first = next(iter(by_mode.values()))
    anchor = step if step is not None else first
    mib, saved = anchor.get("activation_mb", math.nan), anchor.get("saved_tensors", math.nan)
    base_step = base_by_mode.get("fwd_bwd", next(iter(base_by_mode.values()), None))
    # Activations are counted, not timed: a row too noisy to time still counted them.
    base_mib = base_step.get("activation_mb", math.nan) if base_step is not None else math.nan
    not_ok: dict[str, list[str]] = {}  # one note per status and reason, naming its modes
    for m, r in by_mode.items():
        if r["status"] != Status.OK:
            reason = r.get("reason")
            why = f"{r['status']} ({reason})" if isinstance(reason, str) and reason else r["status"]
            not_ok.setdefault(why, []).append(m)
    notes = [f"{', '.join(modes)}: {why}" for why, modes in not_ok.items()]
    return {"suite": suite, "machine": machine, "dtype": dtype, "shape": shape,
            "variant": variant, "family": first["family"],
            "status": anchor["status"], "step_us": step["mean_us"] if _ok(step) else math.nan,
            "backward_share": share, "backward_share_low": low, "backward_share_high": high,
            "share_from": source,
            **{f"speedup_{name}{end}": value
               for name, mode in (("fwd", "fwd"), ("bwd", "bwd"), ("step", "fwd_bwd"))
               for end, value in zip(("", "_low", "_high"), speedups[mode])},
            "pays": "" if is_base else pays_where(speedups["fwd"], speedups["bwd"]),
            "activation_mb": mib, "saved_tensors": saved,
            "activation_saved_mb": math.nan if is_base else base_mib - mib,
            "note": "; ".join(notes)}


def training_table(collection: Collection) -> pd.DataFrame:
    """The training rungs of every block in the collection (empty when no row trains)."""
    rows = collection.rows
    if "mode" not in rows:
        return pd.DataFrame(columns=COLUMNS)
    out = []
    trains = rows[rows["mode"].isin(TRAINING_MODES)]
    for name, info in collection.suites.items():
        mine = trains[trains["suite"] == name]
        for (machine, dtype), group in mine.groupby(["machine", "dtype"], sort=False):
            at, shape = _rows_at(group, info.params, info.reference)
            base_by_mode = {r["mode"]: r for _, r in at[at["variant"] == info.baseline].iterrows()}
            for variant, by_variant in at.groupby("variant", sort=False):
                by_mode = {r["mode"]: r for _, r in by_variant.iterrows()}
                out.append(_variant_row(name, machine, dtype, shape, variant, by_mode,
                                        base_by_mode, variant == info.baseline))
    table = pd.DataFrame(out, columns=COLUMNS)
    if len(table) and table["machine"].nunique() <= 1:
        table["machine"] = ""  # one machine: named in the banner, not on every row
    return table


def _block(rows: pd.DataFrame) -> str:
    first = rows.iloc[0]
    where = f" on {first['machine']}" if first["machine"] else ""
    return (f"{first['suite']} {DTYPE_SHORT.get(first['dtype'], first['dtype'])} at "
            f"{first['shape']}{where}")


def _share_text(row) -> str:
    if row["backward_share"] != row["backward_share"]:
        return ""
    low, high = row["backward_share_low"], row["backward_share_high"]
    interval = f" ({100 * low:.0f}-{100 * high:.0f}%)" if low == low and high == high else ""
    return f"backward is {row['backward_share']:.0%}{interval} of {row['variant']}'s step"


def _variant_text(row) -> str:
    parts = []
    if row["speedup_step"] == row["speedup_step"]:
        interval = (f" ({span(row['speedup_step_low'], row['speedup_step_high'])})"
                    if row["speedup_step_low"] == row["speedup_step_low"] else "")
        parts.append(f"{times(row['speedup_step'])}{interval} on the step")
    if row["pays"]:
        parts.append(f"pays in {row['pays']}" if row["pays"] != "neither half"
                     else "pays in neither half")
    saved = row["activation_saved_mb"]
    if saved == saved and abs(saved) >= 1 / 1024:
        parts.append(f"keeps {plain(row['saved_tensors'])} tensor(s), {plain(row['activation_mb'])} "
                     f"MiB: {plain(abs(saved))} MiB {'less' if saved > 0 else 'more'} than the "
                     "baseline")
    if not parts:  # not ok in every mode that ran (a skipped Triton variant on a CPU)
        return f"{row['variant']} {row['status']}"
    return f"{row['variant']} " + ", ".join(parts)


def lines(table: pd.DataFrame, baselines: dict[str, str]) -> list[str]:
    """One line per (block, dtype, machine): the baseline's backward share, then each other
    variant's step speedup, where it pays and the activations it saves."""
    out = []
    for _, rows in table.groupby(["suite", "dtype", "machine"], sort=False):
        base = rows[rows["variant"] == baselines.get(rows.iloc[0]["suite"], "eager")]
        head = [_share_text(r) for _, r in base.iterrows()]
        others = [_variant_text(r) for _, r in rows.iterrows() if r["variant"] not in
                  set(base["variant"])]
        out.append(f"training, {_block(rows)}: " + "; ".join(p for p in head + others if p))
    return out


HEADERS = {"suite": "block", "machine": "machine", "dtype": "dtype", "shape": "shape",
           "variant": "variant", "status": "status", "step_us": "step us",
           "backward_share": "backward share (95%)", "speedup_fwd": "fwd speedup",
           "speedup_bwd": "bwd speedup", "speedup_step": "step speedup", "pays": "pays in",
           "activation_mb": "activations MiB", "saved_tensors": "saved tensors",
           "activation_saved_mb": "MiB less than baseline", "note": "note"}
INTRO = ("Each block's training step (fwd_bwd) at its reference shape (or the closest run), per "
         "variant. Backward share: bwd us / fwd_bwd us (else 1 - fwd / fwd_bwd), two cases timed "
         "apart, its 95% interval by the delta method. Speedups against the block's baseline, in "
         "each mode that ran, with their 95% intervals paired round by round within the case; "
         "'pays in' names the halves (forward, backward) whose interval clears the 2% band. "
         "Activations: what autograd keeps for backward during one forward (inputs left out), an "
         "exact count.")


def _with_interval(value: float, low: float, high: float, write) -> str:
    if value != value:
        return "-"
    return write(value) + (f" ({span(low, high)})" if low == low and high == high else "")


def display(table: pd.DataFrame, baselines: dict[str, str]) -> tuple[pd.DataFrame, dict[str, str]]:
    """(the table as text cells, its headers): intervals beside their figures, the machine
    column only when the rows come from several."""
    shown = pd.DataFrame(index=table.index)
    for column in ("suite", "machine", "dtype", "shape", "variant", "status", "pays", "note"):
        shown[column] = table[column].fillna("").astype(str)
    shown["dtype"] = table["dtype"].map(lambda d: DTYPE_SHORT.get(d, d))
    shown["step_us"] = table["step_us"].map(plain)
    shown["backward_share"] = [
        "-" if r.backward_share != r.backward_share else
        f"{r.backward_share:.0%}" + (f" ({100 * r.backward_share_low:.0f}-"
                                     f"{100 * r.backward_share_high:.0f}%)"
                                     if r.backward_share_low == r.backward_share_low else "")
        for r in table.itertuples()]
    for name in ("fwd", "bwd", "step"):
        shown[f"speedup_{name}"] = [
            "baseline" if r.variant == baselines.get(r.suite) else
            _with_interval(getattr(r, f"speedup_{name}"), getattr(r, f"speedup_{name}_low"),
                           getattr(r, f"speedup_{name}_high"), times) for r in table.itertuples()]
    for column in ("activation_mb", "saved_tensors", "activation_saved_mb"):
        shown[column] = table[column].map(plain)
    headers = {k: v for k, v in HEADERS.items()
               if k != "machine" or table["machine"].astype(bool).any()}
    return shown, headers
