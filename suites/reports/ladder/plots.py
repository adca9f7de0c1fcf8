"""The ladder's two plots per suite, in the run report's style (the kit's panels and legend,
suites/reports/kit/plots.py): time per call against work with the fitted overhead curves, and
the measured roofline."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.lines import Line2D

from kernels.base import DTYPE_SHORT
from suites.common.numbers import plain
from suites.common.roofline import moved_bytes
from suites.reports.kit.plots import panels, plt, save_png, save_with_legend
from suites.reports.ladder.fits import Fit

MARKERS = ("o", "s", "^", "D", "v", "P")
PEAK_STYLES = ("--", ":", "-.")


def _colors(variants) -> dict[str, str]:
    cycle = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    return {v: cycle[i % len(cycle)] for i, v in enumerate(dict.fromkeys(variants))}


def fit_plot(ok: pd.DataFrame, fits: dict[tuple[str, str], Fit], suite: str, path: Path) -> Path:
    """`ok`: the suite's ok rows; `fits`: (variant, dtype, choice) -> Fit (absent where none)."""
    fig, dtype_axes = panels(ok, f"{suite}: time per call vs work; lines: fit overhead + FLOPs / R")
    width, height = fig.get_size_inches()
    fig.set_size_inches(max(width, 8.0), height)  # one dtype: room for the title and legend
    labels = (ok["variant"] + " " + ok["choice"]).str.strip()
    colors = _colors(labels)
    for dtype, ax in dtype_axes:
        rows = ok[ok["dtype"] == dtype]
        grid = np.geomspace(rows["flops"].min() / 2, rows["flops"].max() * 2, 100)
        for (variant, choice), group in rows.groupby(["variant", "choice"], sort=False):
            label = f"{variant} {choice}".strip()
            ax.scatter(group["flops"], group["mean_us"], color=colors[label], label=label,
                       zorder=3)
            fit = fits.get((variant, dtype, choice))
            if fit is not None:
                ax.plot(grid, fit.predict(grid), color=colors[label], linewidth=1, alpha=0.8)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("FLOPs per call")
        ax.set_ylabel("time per call (us)")
        ax.set_title(DTYPE_SHORT.get(dtype, dtype))
        ax.grid(True, which="both", alpha=0.3)
    return save_with_legend(fig, path)


def own_intensity(ok: pd.DataFrame) -> pd.Series:
    """Each row's FLOPs over the bytes its own form moves: the intensity its bound was judged
    at (suites/common/roofline.py), so a point sits on the side of the ridge its bound names."""
    return pd.Series([r["flops"] / moved_bytes(r["bytes"], r.get("bytes_moved"))
                      for _, r in ok.iterrows()], index=ok.index, dtype=float)


def _x_range(ok: pd.DataFrame, peaks: dict) -> tuple[float, float]:
    lo, hi = ok["_intensity"].min(), ok["_intensity"].max()
    dram = peaks.get("copy_gbps")
    # DRAM's roof and each cache's drawn above it (a cache probe under DRAM's is never a roof)
    bandwidths = [dram] + [gbps for _, gbps in peaks.get("cache_copy_gbps") or []
                           if gbps > dram] if dram else []
    for peak in (peaks.get("matmul_tflops") or {}).values():
        for bandwidth in bandwidths:  # each roof's knee (a ridge), even with no point near it
            ridge = peak * 1e3 / bandwidth
            lo, hi = min(lo, ridge), max(hi, ridge)
    return lo / 3, hi * 3


def _legend(ax, colors: dict, dtypes: list) -> None:
    """Colour = variant, marker = dtype: one entry each (not one per pair), plus the roofs; on
    the right, since a roofline's top-left and top-right corners both hold data."""
    handles, labels = ax.get_legend_handles_labels()  # the roof lines
    dots = [Line2D([], [], marker="o", linestyle="", color=c) for c in colors.values()]
    shapes = [Line2D([], [], marker=MARKERS[i % len(MARKERS)], linestyle="", color="gray")
              for i in range(len(dtypes))]
    ax.legend(dots + shapes + handles,
              list(colors) + [DTYPE_SHORT.get(d, d) for d in dtypes] + labels,
              loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize=8, frameon=False)


def roofline_plot(ok: pd.DataFrame, peaks: dict, suite: str, path: Path) -> Path:
    """Achieved TFLOP/s against FLOP per byte, one point per ok row; the roofs are the peaks
    measured on the machine: a flat line per dtype (matmul) and the copy bandwidth slope."""
    ok = ok[ok["tflops"].notna() & (ok["tflops"] > 0)]
    ok = ok.assign(_intensity=own_intensity(ok))
    ok = ok[np.isfinite(ok["_intensity"]) & (ok["_intensity"] > 0)]
    fig, ax = plt.subplots(figsize=(9.5, 5))
    ax.set_title(f"{suite}: roofline (measured peaks of this machine)")
    colors = _colors(ok["variant"])
    dtypes = list(dict.fromkeys(ok["dtype"]))
    for (variant, dtype), group in ok.groupby(["variant", "dtype"], sort=False):
        ax.scatter(group["_intensity"], group["tflops"], color=colors[variant], zorder=3,
                   marker=MARKERS[dtypes.index(dtype) % len(MARKERS)])
    x = np.geomspace(*_x_range(ok, peaks), 100)
    for i, (dtype, peak) in enumerate((peaks.get("matmul_tflops") or {}).items()):
        ax.axhline(peak, color="black", linewidth=1, linestyle=PEAK_STYLES[i % len(PEAK_STYLES)],
                   label=f"peak {DTYPE_SHORT.get(dtype, dtype)} {plain(peak)} TFLOP/s")
    if peaks.get("copy_gbps"):
        bandwidth = peaks["copy_gbps"]
        # The slope ends where it meets the highest flat roof (the classic roofline's knee).
        top = max((peaks.get("matmul_tflops") or {}).values(), default=ok["tflops"].max() * 2)
        slope = x * bandwidth / 1e3  # GB/s x FLOP/byte = GFLOP/s
        ax.plot(x[slope <= top], slope[slope <= top], color="gray", linewidth=1,
                label=f"copy {plain(bandwidth)} GB/s x intensity")
        # The caches' roofs: a working set that fits one is judged against its bandwidth.
        for fits, gbps in peaks.get("cache_copy_gbps") or []:
            if gbps > bandwidth:
                slope = x * gbps / 1e3
                ax.plot(x[slope <= top], slope[slope <= top], color="gray", linewidth=0.8,
                        linestyle=":",
                        label=f"cache (to {fits / 2**20:.3g} MiB) {plain(gbps)} GB/s")
    ax.set_xlim(x[0], x[-1])
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (FLOP per byte the variant moves)")
    ax.set_ylabel("achieved TFLOP/s")
    ax.grid(True, which="both", alpha=0.3)
    _legend(ax, colors, dtypes)
    fig.tight_layout()
    return save_png(fig, path)
