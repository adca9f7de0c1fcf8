"""Overhead crossover, per (variant, dtype) of a suite.

1. A two-parameter model of time per call (us/call): t = a + flops / R, a fixed cost per call
   (Python, dispatch, launches) plus work at a throughput R. Fitted by least squares on the
   relative error, sum(((a + b*flops) - t) / t)^2 with b = 1/R: dividing each equation by its t
   makes it an ordinary linear least-squares problem, and keeps a 10 ms shape from drowning the
   10 us shapes that carry the overhead. A negative a (noise, or a grid that never reaches the
   overhead-bound regime) has no meaning, so a is clamped to 0 and b refitted alone; a
   non-positive b (time falling with work) leaves only the constant.
2. Where device time overtakes host time: on a GPU, the host queues kernels ahead, so a call is
   launch-bound until the device work outlasts the host work. Found between the first two
   consecutive shapes (by FLOPs) where device_us - host_us goes from negative to positive,
   interpolating log(FLOPs) against log(device_us / host_us), which is linear when device time
   grows as a power of the work and host time stays flat.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from suites.common.numbers import sci
from suites.traces.device_time import on_gpu
from suites.results.columns import Status

NAN = float("nan")
TWO_SIZES = "two sizes: exact by construction, untested"
FIT_COLUMNS = ["suite", "variant", "dtype", "choice", "n_shapes", "overhead_us", "tflops", "balance_flops",
               "max_rel_err", "fit_note", "crossover_flops", "crossover"]

# A fit whose worst point is further off than this is not shown as one ("no fit"): a ladder
# printed fits 54% off their points.
MAX_FIT_ERROR = 0.25

@dataclass(frozen=True)
class Fit:
    overhead_us: float       # a
    tflops: float            # R in TFLOP/s (inf when the fit found no dependence on work)
    max_rel_err: float       # max |pred - t| / t over the points
    note: str = ""

    def predict(self, flops):
        per_flop_us = 1e-6 / self.tflops if self.tflops else math.inf  # us per FLOP = 1/R
        return self.overhead_us + np.asarray(flops, dtype=float) * per_flop_us


def fit_overhead(flops, times_us) -> Fit | None:
    """None with fewer than two distinct work sizes (the two parameters are not identifiable)."""
    f, t = np.asarray(flops, dtype=float), np.asarray(times_us, dtype=float)
    keep = np.isfinite(f) & np.isfinite(t) & (t > 0) & (f > 0)
    f, t = f[keep], t[keep]
    if len(np.unique(f)) < 2:
        return None
    note = ""
    (a, b), *_ = np.linalg.lstsq(np.column_stack([1 / t, f / t]), np.ones_like(t), rcond=None)
    if a < 0:
        # d/db sum((b f/t - 1)^2) = 0
        a, b = 0.0, float(np.sum(f / t) / np.sum((f / t) ** 2))
        note = "overhead clamped to 0: the free fit gave a negative one"
    if b <= 0:
        # d/da sum((a/t - 1)^2) = 0
        a, b = float(np.sum(1 / t) / np.sum(1 / t**2)), 0.0
        note = "time does not grow with work here: constant fit"
    if not note and len(np.unique(f)) == 2:
        note = TWO_SIZES
    fit = Fit(float(a), 1e-6 / b if b > 0 else math.inf, NAN, note)
    return Fit(fit.overhead_us, fit.tflops, float(np.max(np.abs(fit.predict(f) - t) / t)), note)


def _crossing_x(x0, x1, y0, y1) -> float:
    return x0 + (x1 - x0) * (0 - y0) / (y1 - y0)


def crossover(flops, device_us, host_us, labels=None) -> tuple[float, str]:
    """(FLOPs where device time overtakes host time, or nan; a phrase saying where)."""
    frame = pd.DataFrame({"f": flops, "d": device_us, "h": host_us,
                          "label": labels if labels is not None else [""] * len(flops)})
    frame = frame.dropna(subset=["f", "d", "h"]).sort_values("f", kind="stable")
    if frame.empty:
        return NAN, "not profiled (profile=off, or no device or host times)"
    f, d, h = (frame[c].to_numpy(float) for c in ("f", "d", "h"))
    diff, names = d - h, list(frame["label"])
    if diff[0] >= 0:
        return NAN, f"from the smallest shape ({names[0]})" if names[0] else "from the smallest shape"
    for i in range(len(f) - 1):
        if diff[i] < 0 <= diff[i + 1]:
            if min(d[i], d[i + 1], h[i], h[i + 1]) > 0:
                y0, y1 = math.log(d[i] / h[i]), math.log(d[i + 1] / h[i + 1])
            else:  # a zero time has no log: interpolate the difference instead
                y0, y1 = diff[i], diff[i + 1]
            x = math.exp(_crossing_x(math.log(f[i]), math.log(f[i + 1]), y0, y1))
            between = f" (between {names[i]} and {names[i + 1]})" if names[i] else ""
            return x, f"at {sci(x)} FLOPs{between}"
    return NAN, "never within the grid"


def fit_table(rows: pd.DataFrame, suite: str) -> tuple[pd.DataFrame, dict[tuple, Fit]]:
    """One row per (variant, dtype, choice) of a suite's ok rows (the choice of categorical
    parameters: another norm is another computation, not another size); and the fits, for the
    plot, by the same key."""
    ok = rows[(rows["status"] == Status.OK) & rows["mean_us"].notna()]
    out, fits = [], {}
    for (variant, dtype, choice), group in ok.groupby(["variant", "dtype", "choice"], sort=False):
        fit = fit_overhead(group["flops"], group["mean_us"])
        host = group["host_us"]
        if not on_gpu(group["device"].iloc[0]):
            # On a CPU the compute ops run inside the host span: compare compute with the
            # host time outside them (the overhead), not with the span that contains them.
            host = host - group["device_us"]
        x, where = crossover(group["flops"].to_numpy(), group["device_us"].to_numpy(),
                             host.to_numpy(), list(group["case_id"]))
        row = {"suite": suite, "variant": variant, "dtype": dtype, "choice": choice,
               "n_shapes": int(group["flops"].nunique()), "crossover_flops": x, "crossover": where}
        if fit is None:
            row.update(overhead_us=NAN, tflops=NAN, balance_flops=NAN, max_rel_err=NAN,
                       fit_note="fewer than two sizes: no fit")
        elif fit.max_rel_err > MAX_FIT_ERROR:  # a line that misses its points says nothing
            row.update(overhead_us=NAN, tflops=NAN, balance_flops=NAN,
                       max_rel_err=fit.max_rel_err,
                       fit_note=f"no fit: the best line misses a point by "
                                f"{fit.max_rel_err:.0%} (over {MAX_FIT_ERROR:.0%}): time per "
                                "call is not a fixed cost plus work at one rate here")
        else:
            fits[(variant, dtype, choice)] = fit
            # The work at which the fixed cost is half the call: a * R.
            balance = fit.overhead_us * 1e6 * fit.tflops if math.isfinite(fit.tflops) else NAN
            # No dependence on work: no rate to state (a CSV cell never holds inf).
            rate = fit.tflops if math.isfinite(fit.tflops) else NAN
            row.update(overhead_us=fit.overhead_us, tflops=rate, balance_flops=balance,
                       max_rel_err=fit.max_rel_err, fit_note=fit.note)
        out.append(row)
    return pd.DataFrame(out, columns=FIT_COLUMNS), fits
