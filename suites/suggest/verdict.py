"""The replay's one judgement: does the microbenchmark reproduce the model, and, where it does
not, what the row's own numbers say of why. Pure functions of the row suggest.csv holds, so the
replay (replay.py), the console (page.py) and the audit (audit.py) decide it alike.

The verdict reads the 95% interval of trace / replay, never its point: within 1.5x either way
at both ends, it reproduces; past 1.5x at both ends, the model ran it slower (or faster) than
alone; an interval that crosses an edge cannot tell, and the replay states no time.

A cause is said only where its evidence stands in the same row:
- strided_views: the model ran it slower, and the group's notes count inputs the trace recorded
  as strided views (`strided_inputs`; the replay builds them contiguous);
- profiler_cost: the model ran it slower (a CPU trace: its op spans hold the profiler's work),
  and the recorded ops per call times the profiler's measured cost per op, taken off the trace's
  time, leaves the model and the replay within 1.5x at every end of the replay's interval and
  of the cost's (a cost known only roughly explains nothing).
Nothing else: a model that ran faster than alone has no number here that says why, so only its
ratio and interval are said.
"""
from __future__ import annotations

import math
from typing import Mapping

APART = 1.5  # the model and the replay disagree past this factor either way

REPRODUCES = "reproduces"
SLOWER = "slower_in_model"
FASTER = "faster_in_model"
UNDECIDED = "undecided"        # the interval crosses 1.5x (or 1/1.5x): too wide to tell
NOISY = "noisy"                # too few clean rounds: the harness's word for it
NOT_REPLAYED = "not_replayed"  # no replay on this machine, or it failed
STATED = (REPRODUCES, SLOWER, FASTER)  # the verdicts whose row states a replay time

STRIDED = "strided_views"
PROFILER = "profiler_cost"


def _number(value) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return math.nan
    return number


def ratio_interval(trace_us: float, low_us: float, high_us: float) -> tuple[float, float]:
    """trace / replay at the ends of the replay's interval; NaN at an end the replay's interval
    leaves open (a low end at or below zero: rounds too far apart to bound it)."""
    low = trace_us / high_us if high_us > 0 else math.nan
    high = trace_us / low_us if low_us > 0 else math.nan
    return low, high


def verdict(ratio_low: float, ratio_high: float) -> str:
    """REPRODUCES, SLOWER, FASTER or UNDECIDED from the interval of trace / replay."""
    if not (math.isfinite(ratio_low) and math.isfinite(ratio_high)):
        return UNDECIDED
    if 1 / APART <= ratio_low and ratio_high <= APART:
        return REPRODUCES
    if ratio_low > APART:
        return SLOWER
    if ratio_high < 1 / APART:
        return FASTER
    return UNDECIDED


def without_profiler(row: Mapping) -> tuple[float, float]:
    """trace / replay once the profiler's cost for the recorded ops is taken off the trace's
    time: its lowest (the most cost, the slowest replay) and highest (NaN where a number is
    missing)."""
    trace = _number(row.get("trace_us_per_instance"))
    ops = _number(row.get("profiled_ops_per_call"))
    least = trace - ops * _number(row.get("profiler_us_per_op_high"))
    most = trace - ops * _number(row.get("profiler_us_per_op_low"))
    low_us, high_us = _number(row.get("replay_low_us")), _number(row.get("replay_high_us"))
    return (least / high_us if high_us > 0 else math.nan,
            most / low_us if low_us > 0 else math.nan)


def cause_of(row: Mapping) -> str:
    """The cause the row's numbers carry, or "" (see the module's docstring)."""
    if row.get("replay_verdict") != SLOWER:
        return ""
    low, high = without_profiler(row)
    if math.isfinite(low) and math.isfinite(high) and 1 / APART <= low and high <= APART:
        return PROFILER
    if _number(row.get("strided_inputs")) > 0:
        return STRIDED
    return ""


def cause_words(row: Mapping) -> str:
    """The cause with its numbers ("" without one)."""
    found = cause_of(row)
    if found == STRIDED:
        return (f"{_number(row['strided_inputs']):g} of its inputs were strided views in the "
                "model (the group's notes); the replay's are contiguous")
    if found == PROFILER:
        ops, cost = _number(row["profiled_ops_per_call"]), _number(row["profiler_us_per_op"])
        low, high = without_profiler(row)
        return (f"the profiler's cost: {ops:.3g} recorded ops a call x {cost:.3g} us an op "
                f"({_number(row['profiler_us_per_op_low']):.3g} to "
                f"{_number(row['profiler_us_per_op_high']):.3g}, measured here) = "
                f"{ops * cost:.4g} us of the trace's "
                f"{_number(row['trace_us_per_instance']):.4g} us; without it x{low:.2f} to "
                f"x{high:.2f}")
    return ""


def verdict_words(row: Mapping) -> str:
    """What the verdict says, with the interval it rests on ("" for one that rests on none)."""
    low = _number(row.get("trace_over_replay_low"))
    high = _number(row.get("trace_over_replay_high"))
    span = f"x{low:.2f} to x{high:.2f}"
    said = {REPRODUCES: f"reproduces ({span}, within {APART:g}x either way)",
            SLOWER: f"the model ran it slower than alone ({span})",
            FASTER: f"the model ran it faster than alone ({span})",
            UNDECIDED: (f"no time stated: trace / replay {span} crosses the {APART:g}x edge: "
                        "it cannot tell whether the replay reproduces the model")}
    return said.get(row.get("replay_verdict"), "")
