"""The report's plots, one PNG each: time per call vs size, speedup vs the baseline, where the
time goes (per op: suites/reports/run/op_plot.py), kernels per call, peak memory per call, and the
first screen's small speedup plot (`answer`)."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from kernels.base import DTYPE_SHORT, as_value
from suites.reports.kit.plots import panels, plt, save_png, save_with_legend, times_ticks
from suites.reports.run.op_plot import case_tick, where_time_goes
from suites.results.columns import Status


def series_label(frame: pd.DataFrame, size_axis: str, params: list[str]):
    """A line per variant, and per value of any parameter that varies independently of the
    size axis (matmul_add's N and K follow M, so they do not split its lines)."""
    per_size = frame.groupby(["variant", "dtype", size_axis])
    others = [p for p in params if p != size_axis and (per_size[p].nunique() > 1).any()]
    # A training mode is another computation: its own line (`compile fwd_bwd`), named as such.
    modes = "mode" in frame and frame["mode"].nunique() > 1

    def label(row) -> str:
        extra = " ".join(f"{p}={as_value(row[p])}" for p in others)
        mode = row["mode"] if modes else ""
        return f"{row['variant']} {mode} {extra}".strip().replace("  ", " ")

    return label


def _lines(frame, size_axis, params, value, ax, log_y=True):
    label = series_label(frame, size_axis, params)
    for name, group in frame.assign(series=frame.apply(label, axis=1)).groupby("series", sort=False):
        group = group.sort_values(size_axis)
        ax.plot(group[size_axis], group[value], marker="o", label=name)
        band = group[["mean_low_us", "mean_high_us"]].gt(0).all(axis=1)
        if value == "mean_us" and band.any():  # an older run has no interval to draw
            ax.fill_between(group[size_axis], group["mean_low_us"], group["mean_high_us"],
                            where=band, alpha=0.15)
    ax.set_xscale("log", base=2)
    if log_y:
        ax.set_yscale("log")
    ax.set_xlabel(size_axis)
    ax.grid(True, which="both", alpha=0.3)


def _against_size(frame, size_axis, params, column: str, title: str, ylabel: str,
                  path: Path) -> Path:
    """A panel per dtype, a line per variant: `column` against the size axis, log-log."""
    fig, dtype_axes = panels(frame, title)
    for dtype, ax in dtype_axes:
        _lines(frame[frame["dtype"] == dtype], size_axis, params, column, ax)
        ax.set_title(DTYPE_SHORT.get(dtype, dtype))
        ax.set_ylabel(ylabel)
    return save_with_legend(fig, path)


def time_vs_size(frame, size_axis, params, path: Path) -> Path:
    return _against_size(frame, size_axis, params, "mean_us",
                         "Time per call (mean over calls; band: its 95% interval)",
                         "time per call (us)", path)


def peak_memory(frame, size_axis, params, path: Path) -> Path:
    return _against_size(frame, size_axis, params, "peak_mem_mb",
                         "Peak memory per call (allocated beyond the inputs)", "peak MiB per call",
                         path)


def speedup(frame, size_axis, params, baseline: str, path: Path) -> Path:
    fig, dtype_axes = panels(frame, f"Speedup over {baseline} (paired per timing round)")
    for dtype, ax in dtype_axes:
        _lines(frame[frame["dtype"] == dtype], size_axis, params, "speedup", ax)
        ax.set_yscale("log", base=2)  # 2x faster and 2x slower are the same distance from 1
        times_ticks(ax.yaxis)
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.set_title(DTYPE_SHORT.get(dtype, dtype))
        ax.set_ylabel(f"speedup over {baseline} (x)")
    return save_with_legend(fig, path)


def _bars(frame, size_axis, ax, stacks: list[tuple[str, str]], fractions: bool):
    cases = list(dict.fromkeys(frame.sort_values(size_axis)["case_id"]))
    variants = list(dict.fromkeys(frame["variant"]))
    width = 0.8 / max(1, len(variants))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for v, variant in enumerate(variants):
        rows = frame[frame["variant"] == variant].set_index("case_id").reindex(cases)
        xs = [i + v * width for i in range(len(cases))]
        bottom = [0.0] * len(cases)
        total = sum(rows[c].fillna(0) for c, _ in stacks) if fractions else None
        for s, (column, hatch) in enumerate(stacks):
            values = rows[column].fillna(0)
            values = (values / total.where(total > 0)).fillna(0) if fractions else values
            ax.bar(xs, values, width, bottom=bottom, color=colors[v % len(colors)],
                   hatch=hatch, edgecolor="white", alpha=1.0 if s == 0 else 0.45,
                   label=variant if s == 0 else None)
            bottom = [b + val for b, val in zip(bottom, values)]
    ax.set_xticks([i + 0.4 - width / 2 for i in range(len(cases))])
    ax.set_xticklabels([case_tick(c) for c in cases], rotation=30, ha="right", fontsize=7)


def breakdown(frame, size_axis, path: Path) -> Path:
    fig, dtype_axes = panels(frame, "Where a call's time goes: device work (solid) vs exposed host "
                                 "and launch overhead (pale), share of the median", 4.5)
    data = frame.assign(device_part=frame["mean_us"] - frame["exposed_overhead_us"])
    for dtype, ax in dtype_axes:
        _bars(data[data["dtype"] == dtype], size_axis, ax,
              [("device_part", ""), ("exposed_overhead_us", "//")], fractions=True)
        ax.set_ylim(0, 1.0)
        ax.set_ylabel("share of time per call")
        ax.set_title(DTYPE_SHORT.get(dtype, dtype))
    return save_with_legend(fig, path)


def kernels_per_call(frame, size_axis, path: Path) -> Path:
    fig, dtype_axes = panels(frame, "Kernels per call (from the profiled trace)")
    for dtype, ax in dtype_axes:
        _bars(frame[frame["dtype"] == dtype], size_axis, ax, [("n_kernels", "")], fractions=False)
        ax.set_ylabel("kernels per call")
        ax.set_title(DTYPE_SHORT.get(dtype, dtype))
    return save_with_legend(fig, path)


def answer(frame, size_axis, params, baseline: str, path: Path) -> Path:
    """The first screen's plot, small: each variant's speedup over the baseline against size,
    its 95% interval as a bar, one line per (variant, dtype), 1x drawn."""
    fig, ax = plt.subplots(figsize=(5.4, 3.0))
    rows = frame[(frame["variant"] != baseline) & frame["speedup"].notna()]
    rows = rows.assign(series=rows.apply(series_label(frame, size_axis, params), axis=1))
    styles = {d: s for d, s in zip(dict.fromkeys(rows["dtype"]), ("-", "--", ":", "-."))}
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    hues = {v: colors[i % len(colors)] for i, v in enumerate(dict.fromkeys(frame["variant"]))}
    for (series, variant, dtype), group in rows.groupby(["series", "variant", "dtype"],
                                                         sort=False):
        group = group.sort_values(size_axis)
        errors = [(group["speedup"] - group["speedup_low"]).clip(lower=0).fillna(0),
                  (group["speedup_high"] - group["speedup"]).clip(lower=0).fillna(0)]
        ax.errorbar(group[size_axis], group["speedup"], yerr=errors, marker="o", markersize=3,
                    linestyle=styles[dtype], color=hues[variant], capsize=2, linewidth=1.2,
                    label=f"{series} {DTYPE_SHORT.get(dtype, dtype)}")
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)  # 2x faster and 2x slower are the same distance from 1
    times_ticks(ax.yaxis)
    ax.set_xlabel(size_axis, fontsize=8)
    ax.set_ylabel(f"speedup over {baseline}", fontsize=8)
    ax.tick_params(labelsize=7)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, frameon=False, loc="center left", bbox_to_anchor=(1.0, 0.5))
    fig.tight_layout()
    return save_png(fig, path, dpi=100)


def write_plots(frame: pd.DataFrame, size_axis: str, params: list[str], baseline: str,
                out_dir: Path, kernels: pd.DataFrame | None = None) -> list[Path]:
    ok = frame[frame["status"] == Status.OK]
    if ok.empty:
        return []
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = [time_vs_size(ok, size_axis, params, out_dir / "time_vs_size.png"),
             speedup(ok, size_axis, params, baseline, out_dir / "speedup.png")]
    if ok["device_us"].notna().any():
        per_op = None if kernels is None else where_time_goes(ok, kernels, size_axis,
                                                                 out_dir / "where_time_goes.png")
        # Without kernels.csv, the split of each call into device work and overhead alone.
        paths.append(per_op or breakdown(ok, size_axis, out_dir / "breakdown.png"))
        paths.append(kernels_per_call(ok, size_axis, out_dir / "kernels_per_call.png"))
    if "peak_mem_mb" in ok and (ok["peak_mem_mb"] > 0).any():
        paths.append(peak_memory(ok[ok["peak_mem_mb"] > 0], size_axis, params,
                                 out_dir / "peak_memory.png"))
    return paths
