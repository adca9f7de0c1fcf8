"""The first screen of the ladder report: at each block's reference shape, does a fused form pay
off against the block's baseline, and where does the baseline's time go.

From the ladder table (suites/reports/ladder/table.py): one line per (block, dtype, machine)
with each family's fastest ok variant classed by its 95% interval (suites/reports/kit/change.py),
the families with no result and why, the baseline's kernels and device time per call; a headline
naming the blocks where some family is faster; and a small plot of those speedups.
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from kernels import registry
from kernels.base import DEFAULT_MODE, DTYPE_SHORT
from suites.common.numbers import plain, span, times
from suites.reports.kit.change import SAME_WITHIN, Change, phrase, row_changes
from suites.reports.kit.plots import plt, save_png, times_ticks
from suites.results.columns import Status


def _mode(first) -> str:
    """` fwd_bwd`: a training mode as the lines name it; nothing for the default forward."""
    mode = first.get("mode", DEFAULT_MODE)
    return f" {mode}" if isinstance(mode, str) and mode != DEFAULT_MODE else ""


def _block(rows: pd.DataFrame) -> str:
    first = rows.iloc[0]
    where = " on " + first["machine"] if first.get("machine") else ""
    return f"{first['suite']} {DTYPE_SHORT.get(first['dtype'], first['dtype'])}{_mode(first)} " \
           f"at {first['shape']}{where}"


def _block_name(rows: pd.DataFrame) -> str:
    """`attention bf16`, `norm fp32 fwd_bwd`: a block, its dtype and mode (and machine), as the
    headline names it."""
    first = rows.iloc[0]
    name = f"{first['suite']} {DTYPE_SHORT.get(first['dtype'], first['dtype'])}{_mode(first)}"
    return name + (f" on {first['machine']}" if first.get("machine") else "")


def _baseline_name(suite: str) -> str:
    try:
        return registry.get_op(suite).baseline
    except registry.UnknownNameError:  # a run of a suite this version does not have
        return "eager"


def _paired(rows: pd.DataFrame) -> pd.DataFrame:
    """Every row with a speedup but the block's baseline itself (a faster variant of the
    baseline's family, attention's naive_inplace, is a row like any other)."""
    base = rows["suite"].map(_baseline_name)
    ok = rows[(rows["status"] == Status.OK) & rows["speedup"].notna() & (rows["variant"] != base)]
    return ok.assign(cls=row_changes(ok))


def _family(r) -> str:
    interval = "" if pd.isna(r.speedup_low) else f" ({span(r.speedup_low, r.speedup_high)})"
    who = r.variant if r.variant == r.family else f"{r.family} {r.variant}"
    return f"{who} {phrase(r.cls, SAME_WITHIN)}, {times(r.speedup)}{interval}"


def _baseline(rows: pd.DataFrame) -> str | None:
    name = _baseline_name(rows.iloc[0]["suite"])
    base = rows[(rows["variant"] == name) & (rows["status"] == Status.OK)]
    if base.empty:
        status = rows.loc[rows["variant"] == name, "status"]
        if len(status):
            return f"baseline {name} {status.iloc[0]}: no speedups"
        return (f"baseline {name}: its kernels are not in the table (its family's row shows a "
                "faster variant)")
    b = base.iloc[0]
    return (f"{b['variant']}: {plain(b['n_kernels'])} kernels per call, device work "
            f"{plain(b['device_us'])} us in a {plain(b['host_us'])} us host span")


def lines(table: pd.DataFrame) -> tuple[str, list[str]]:
    """(headline, one line per block)."""
    out, paying = [], []
    keys = [k for k in ("suite", "dtype", "mode", "machine") if k in table]
    groups = table.groupby(keys, sort=False)
    for _, rows in groups:
        paired = _paired(rows)
        parts = [_family(r) for r in paired.itertuples()]
        base = _baseline_name(rows.iloc[0]["suite"])
        missing = rows[(rows["variant"] != base) & ~rows.index.isin(paired.index)]
        parts += [f"{r.family} {r.status}" for r in missing.itertuples()]
        base = _baseline(rows)
        out.append(f"{_block(rows)}: " + "; ".join(parts + ([base] if base else [])))
        # Only a speedup whose interval clears the band counts: a point estimate, or one with
        # no interval, is not a win (a ladder said 6 of 6 blocks, the next 4 of 6).
        faster = paired[paired["cls"] == Change.FASTER]
        if len(faster):
            best = faster.loc[faster["speedup"].idxmax()]
            paying.append(f"{_block_name(rows)} ({best['variant']} {times(best['speedup'])}, "
                          f"{span(best['speedup_low'], best['speedup_high'])})")
    blocks = groups.ngroups
    if paying:
        head = (f"A fused form is faster, by its 95% interval, at the reference shape of "
                f"{len(paying)} of {blocks} block(s) and dtype(s): {', '.join(paying)}.")
    else:
        head = (f"No fused form is faster than its baseline, by its 95% interval, at any of the "
                f"{blocks} block(s) and dtype(s).")
    return head, out


def plot(table: pd.DataFrame, path: Path) -> Path | None:
    """Each block's families against its baseline: speedup and 95% interval, log scale."""
    paired = _paired(table)
    if paired.empty:
        return None
    labels = [f"{r.suite} {DTYPE_SHORT.get(r.dtype, r.dtype)}{_mode(r._asdict())}: {r.variant}"
              for r in paired.itertuples()]
    fig, ax = plt.subplots(figsize=(5.4, 0.32 * len(paired) + 1.0))
    ys = range(len(paired))
    errors = [(paired["speedup"] - paired["speedup_low"]).clip(lower=0).fillna(0),
              (paired["speedup_high"] - paired["speedup"]).clip(lower=0).fillna(0)]
    colors = {Change.FASTER: "#2a9d4b", Change.SLOWER: "#c0392b"}
    ax.barh(ys, paired["speedup"], xerr=errors, color=[colors.get(c, "#999999")
                                                       for c in paired["cls"]], capsize=2)
    ax.axvline(1.0, color="black", linewidth=0.8)
    ax.set_xscale("log", base=2)
    times_ticks(ax.xaxis)
    ax.set_yticks(list(ys))
    ax.set_yticklabels(labels, fontsize=7)
    ax.invert_yaxis()
    ax.tick_params(axis="x", labelsize=7)
    ax.set_xlabel("speedup over the block's baseline (green: faster, red: slower)", fontsize=7)
    fig.tight_layout()
    return save_png(fig, path, dpi=100)
