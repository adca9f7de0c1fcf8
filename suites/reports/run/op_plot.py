"""Where the time goes, per op: for each case and variant, a bar of one call's time split into
the run's top ops or kernels (from kernels.csv), the rest grouped, and the exposed overhead.

A bar is a share of the call's median: its device part, median - exposed overhead, divided
among the ops in proportion to their profiled time per call (the profile runs slower than the
timing pass, so its shares are used, not its microseconds); the exposed overhead on top,
hatched. One panel per (variant, dtype), cases along x, the same colour for an op everywhere.
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from kernels.base import DEFAULT_MODE, DTYPE_SHORT
from suites.reports.kit.plots import legend_columns, plt, save_png
from suites.traces.findings.training import split_mode

TOP = 6  # ops named in the legend; the rest are one "other ops" segment
OTHER, OVERHEAD = "other ops", "exposed overhead"
NAME_CHARS = 40  # GPU kernel names run to 100+ characters


def short(name: str) -> str:
    return name if len(name) <= NAME_CHARS else name[:NAME_CHARS - 1] + "…"


def op_shares(frame: pd.DataFrame, kernels: pd.DataFrame) -> pd.DataFrame:
    """Per (case_id, variant, op): its share of the call's median, the exposed overhead as
    one more op; ops outside the run's top TOP by summed share grouped as OTHER."""
    rows = frame.set_index(["case_id", "variant"])
    per_call = kernels.groupby(["case_id", "variant", "kernel"], sort=False)[
        "total_us_per_call"].sum().reset_index()
    per_call = per_call[per_call.set_index(["case_id", "variant"]).index.isin(rows.index)]
    totals = per_call.groupby(["case_id", "variant"])["total_us_per_call"].transform("sum")
    keys = pd.MultiIndex.from_frame(per_call[["case_id", "variant"]])
    median = rows["mean_us"].reindex(keys).to_numpy()
    overhead = rows["exposed_overhead_us"].reindex(keys).fillna(0).to_numpy()
    device_share = ((median - overhead) / median).clip(0, 1)
    per_call["share"] = per_call["total_us_per_call"] / totals.where(totals > 0) * device_share
    top = per_call.groupby("kernel")["share"].sum().nlargest(TOP).index
    per_call["op"] = per_call["kernel"].where(per_call["kernel"].isin(top), OTHER)
    shares = per_call.groupby(["case_id", "variant", "op"], sort=False)["share"].sum().reset_index()
    over = frame[frame["mean_us"] > 0].assign(
        op=OVERHEAD, share=(frame["exposed_overhead_us"] / frame["mean_us"]).clip(0, 1))
    over = over[over.set_index(["case_id", "variant"]).index.isin(keys)]
    return pd.concat([shares, over[["case_id", "variant", "op", "share"]].dropna()],
                     ignore_index=True)


def where_time_goes(frame: pd.DataFrame, kernels: pd.DataFrame, size_axis: str,
                    path: Path) -> Path | None:
    """The plot, or None when no ok row has a profile in kernels.csv."""
    shares = op_shares(frame, kernels)
    if shares.empty:
        return None
    present = set(shares["op"])
    ops = [o for o in shares.groupby("op")["share"].sum().sort_values(ascending=False).index
           if o not in (OTHER, OVERHEAD)] + [o for o in (OTHER, OVERHEAD) if o in present]
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    color = {op: colors[i % len(colors)] for i, op in enumerate(ops)}
    color.update({OTHER: "#bbbbbb", OVERHEAD: "#eeeeee"})
    variants = list(dict.fromkeys(frame.loc[frame.set_index(["case_id", "variant"]).index.isin(
        pd.MultiIndex.from_frame(shares[["case_id", "variant"]])), "variant"]))
    dtypes = list(dict.fromkeys(frame["dtype"]))
    fig, axes = plt.subplots(len(variants), len(dtypes), squeeze=False, sharey=True,
                             figsize=(5.5 * len(dtypes), 1.0))
    columns = legend_columns(fig, [short(o) for o in ops], 7, most=4)
    legend_rows = -(-len(ops) // columns)
    height = 1.6 * len(variants) + 1.2 + 0.2 * legend_rows
    fig.set_figheight(height)
    # Two lines: one line is wider than a single dtype's panel, and the figure would cut it.
    fig.suptitle("Where a call's time goes, per op\n(share of the time per call; hatched: exposed "
                 "host and launch overhead)", fontsize=10)
    for r, variant in enumerate(variants):
        for c, dtype in enumerate(dtypes):
            _panel(axes[r][c], frame, shares, variant, dtype, size_axis, ops, color,
                   labels=r == len(variants) - 1)  # case names under the last row only
            if c == 0:
                axes[r][c].set_ylabel(variant, fontsize=9)
            if r == 0:
                axes[r][c].set_title(DTYPE_SHORT.get(dtype, dtype), fontsize=9)
    handles = [plt.Rectangle((0, 0), 1, 1, facecolor=color[o], edgecolor="#888888",
                             hatch="//" if o == OVERHEAD else "") for o in ops]
    fig.legend(handles, [short(o) for o in ops], loc="lower center", ncol=columns,
               fontsize=7, frameon=False)
    # The legend below the panels, in the space tight_layout leaves it (inches to a fraction).
    fig.tight_layout(rect=(0, (0.2 * legend_rows + 0.1) / height, 1, 1 - 0.25 / height))
    return save_png(fig, path)


def case_tick(case_id: str) -> str:
    """A case's label under a bar: its id without the dtype (the panel's title says it), its
    training mode kept (`M64-N64-K64 fwd_bwd`)."""
    base, mode = split_mode(case_id)
    return base.rsplit("-", 1)[0] + ("" if mode == DEFAULT_MODE else f" {mode}")


def _panel(ax, frame, shares, variant, dtype, size_axis, ops, color, labels: bool) -> None:
    cases = frame[(frame["dtype"] == dtype)].sort_values(size_axis, kind="stable")
    cases = list(dict.fromkeys(cases["case_id"]))
    mine = shares[(shares["variant"] == variant) & shares["case_id"].isin(cases)]
    table = mine.pivot_table(index="case_id", columns="op", values="share", aggfunc="sum")
    table = table.reindex(index=cases, columns=[o for o in ops if o in table.columns]).fillna(0)
    bottom = [0.0] * len(cases)
    for op in table.columns:
        ax.bar(range(len(cases)), table[op], 0.7, bottom=bottom, color=color[op],
               edgecolor="#888888" if op == OVERHEAD else "white", linewidth=0.5,
               hatch="//" if op == OVERHEAD else "")
        bottom = [b + v for b, v in zip(bottom, table[op])]
    ax.set_ylim(0, 1.0)
    ax.set_xticks(range(len(cases)))
    ax.set_xticklabels([case_tick(c) for c in cases] if labels else [],
                       rotation=30, ha="right", fontsize=7)
    ax.tick_params(axis="y", labelsize=7)
