"""Findings about rows rather than profiles, made once the sweep is over: the peaks are final
(probed at both ends of the run) and every round has been judged.

- above_peak: a row faster than the measured roofline allows. The probe read low (it ran under
  load) or the op's model undercounts the work; either way the % roofline is not to be trusted.
- passes_disagree: the speedup (timing rounds) and the device-time ratio (profile pass) differ
  by more than 1.5x, so one pass saw another machine state or the profile's device time misses
  work the timing includes.
- kernel_speedup_differs (CUDA): the kernels alone gain more or less than a call's latency by
  more than 1.25x: the host path of a call (Python, a wrapper's checks, the launch) makes the
  difference, so a kernel is judged by the kernel speedup and a call by the speedup.
- rounds_dropped: an ok row some of whose rounds were not clean, and why, so a reader knows the
  figures came from fewer rounds than planned.
- slow_calls: what a caller pays (us/call, the mean over calls) well above the median call: a
  share of the calls pays a cost of the variant's own (a recompile, a guard miss, an allocator
  flush, a GC pass, every k-th call), which the median hides. Rounds in which every variant was
  slowed were the machine's and were dropped before (suites/harness/round_checks.py), so what
  is left is the variant's own; it is named here, never charged to the machine.
- two_states: a variant's own clean rounds in two groups far apart (suites/harness/two_states.py):
  its slow state is kept in its figures and named here, since the mix of states in a run may
  not be the mix in the next.
- page_faults_differ: a variant takes many more page faults a call than the baseline of its
  case (eager LayerNorm at T8192: 18-31k a call after the other variants ran): part of its time
  is the kernel mapping pages, which a warm process or another allocator may not pay.
- launch_floor (launch_floor.py): exposed overhead against the launch floors the run measured
  at its start (env.json), in ops' worth of dispatch.
"""
from __future__ import annotations

import math

from suites.traces.findings.codes import Code, Severity
from suites.traces.findings.core import Finding, Row, column_value, is_ok, step_failed
from suites.traces.findings.launch_floor import launch_floor
from suites.traces.findings.row_bound import marked
from suites.traces.findings.training import training_findings

PEAK_SLACK = 100.0   # % of the roofline above which a row is flagged
DISAGREE_FACTOR = 1.5
HOST_PATH_FACTOR = 1.25  # kernel speedup against speedup
# us/call this much above the median call: a share of the calls pays a cost of its own.
MEAN_OVER_MEDIAN = 1.10
# Page faults a call over the baseline's: this many times as many, and at least this many more
# (a fault costs ~0.1-0.5 us: a few hundred a call is noise next to any call that takes them).
FAULTS_FACTOR, FAULTS_MORE = 2.0, 500.0


def _finite(*values) -> bool:
    return all(v is not None and not (isinstance(v, float) and math.isnan(v)) for v in values)


def above_peak(row: Row):
    pct = column_value(row, "pct_peak")
    if is_ok(row) and _finite(pct) and pct > PEAK_SLACK:
        yield Finding(Code.ABOVE_PEAK, Severity.WARNING,
                      f"{pct:.0f}% of the measured roofline: faster than the peaks allow, so the "
                      "peak probe read low (a busy machine) or the op's model undercounts the "
                      "work; do not read this % roofline as an efficiency",
                      {"pct_peak": pct, "tflops": column_value(row, "tflops")})


def _apart(a, b) -> float:
    """How many times apart two positive ratios are (1 when equal); 0 when one is missing."""
    if not _finite(a, b) or a <= 0 or b <= 0:
        return 0.0
    return max(a / b, b / a)


def passes_disagree(row: Row):
    speedup, ratio = column_value(row, "speedup"), column_value(row, "device_ratio")
    apart = _apart(speedup, ratio)
    if apart > DISAGREE_FACTOR:
        yield Finding(Code.PASSES_DISAGREE, Severity.WARNING,
                      f"the timing rounds give a {speedup:.3g}x speedup but the profile pass's "
                      f"device time gives {ratio:.3g}x ({apart:.1f}x apart): one pass saw another "
                      "machine state, or the device time misses work the timing includes; the "
                      "speedup is the result, the device ratio is context",
                      {"speedup": speedup, "device_ratio": ratio})


def kernel_speedup_differs(row: Row):
    speedup, kernels = column_value(row, "speedup"), column_value(row, "kernel_speedup")
    apart = _apart(speedup, kernels)
    if is_ok(row) and apart > HOST_PATH_FACTOR:
        yield Finding(Code.KERNEL_SPEEDUP_DIFFERS, Severity.NOTICE,
                      f"the kernels alone give {kernels:.3g}x but a call's latency {speedup:.3g}x "
                      f"({apart:.2f}x apart): the host path of a call (Python, the wrapper's "
                      "checks, the launches) makes the difference; the kernel speedup judges the "
                      "kernels, the speedup what a caller waits for",
                      {"speedup": speedup, "kernel_speedup": kernels,
                       "kernel_us": column_value(row, "kernel_us"),
                       "median_us": column_value(row, "median_us")})


def slow_calls(row: Row):
    mean, median = column_value(row, "mean_us"), column_value(row, "median_us")
    share = column_value(row, "slow_calls")
    if not (is_ok(row) and _finite(mean, median) and median > 0) \
            or mean <= MEAN_OVER_MEDIAN * median:
        return
    some = (f"{share:.1%} of its calls are slow (over twice the median call)"
            if _finite(share) and share > 0 else "its calls spread far above the median")
    yield Finding(Code.SLOW_CALLS, Severity.WARNING,
                  f"{some}, adding {mean - median:.4g} us a call: us/call {mean:.4g} is "
                  f"{mean / median - 1:.0%} above the median call ({median:.4g} us). A cost of "
                  "the variant's own (a recompile, a guard miss, an allocator flush, a GC "
                  "pass): rounds that slowed every variant were the machine's and were left out",
                  {"mean_us": mean, "median_us": median, "slow_calls": share})


def rounds_dropped(row: Row):
    dropped, used = column_value(row, "rounds_dropped"), column_value(row, "rounds")
    if is_ok(row) and _finite(dropped, used) and dropped > 0:
        yield Finding(Code.ROUNDS_DROPPED, Severity.NOTICE,
                      f"{dropped:.0f} timing round(s) were not clean and were left out; the "
                      f"figures come from {used:.0f} clean round(s) (rounds.csv says why)",
                      {"rounds": used, "rounds_dropped": dropped})


def page_faults_differ(row: Row, base: Row | None):
    mine = column_value(row, "faults_per_call")
    theirs = column_value(base, "faults_per_call") if base is not None else None
    if not (is_ok(row) and _finite(mine, theirs)) or mine < max(FAULTS_FACTOR * theirs,
                                                                theirs + FAULTS_MORE):
        return
    yield Finding(Code.PAGE_FAULTS_DIFFER, Severity.NOTICE,
                  f"{mine:,.0f} page faults a call against the baseline's {theirs:,.0f}: part of "
                  "its time is the kernel mapping fresh pages (memory freed and taken again "
                  "every call); an allocator that keeps memory, or a warm process, may not pay it",
                  {"faults_per_call": mine, "baseline_faults_per_call": theirs})


def two_states(row: Row):
    slow, factor = column_value(row, "slow_state_rounds"), column_value(row, "slow_state_factor")
    used, mean = column_value(row, "rounds"), column_value(row, "mean_us")
    if not (is_ok(row) and _finite(slow, factor, used, mean)):
        return
    yield Finding(Code.TWO_STATES, Severity.WARNING,
                  f"two states: {slow:.0f} of its {used:.0f} clean rounds ran {factor:.2f}x "
                  f"slower than the others. A state of the variant's own (the other variants' "
                  f"rounds did not move with it), so both stay in its figures: us/call "
                  f"{mean:.4g} is their mix, as a caller would pay it; the mix may differ "
                  "from run to run",
                  {"slow_state_rounds": slow, "rounds": used, "slow_state_factor": factor})


ROW_DETECTORS = (above_peak, passes_disagree, kernel_speedup_differs, slow_calls,
                 rounds_dropped, two_states)
AGAINST_BASELINE = (passes_disagree, kernel_speedup_differs)
# What the detectors above emit: a resumed run drops these and finds them again over every row.
ROW_CODES = (Code.ABOVE_PEAK, Code.PASSES_DISAGREE, Code.KERNEL_SPEEDUP_DIFFERS,
             Code.SLOW_CALLS, Code.ROUNDS_DROPPED, Code.PAGE_FAULTS_DIFFER, Code.TWO_STATES,
             Code.LAUNCH_FLOOR,
             Code.BACKWARD_SHARE, Code.FUSION_PAYS_WHERE, Code.ACTIVATIONS_SAVED,
             Code.COMPILE_PARTITION)


def row_findings(rows: list[Row], suite: str, baseline: str,
                 floors: dict | None = None) -> list[dict]:
    """findings.csv rows for every row (its column values) the detectors flag; `floors`: the
    run's launch floors (env.json launch_floors), which launch_floor reads."""
    out = []
    bases = {column_value(r, "case_id"): r for r in rows if column_value(r, "variant") == baseline}
    for row in rows:
        case_id, variant = column_value(row, "case_id"), column_value(row, "variant")
        found = [f for detector in ROW_DETECTORS
                 if not (detector in AGAINST_BASELINE and variant == baseline)
                 for f in _guarded(detector, row)]
        if variant != baseline:
            found += _guarded(page_faults_differ, row, bases.get(case_id))
        found += _guarded(launch_floor, row, floors)
        out += [{"suite": suite, "case_id": case_id, "variant": variant, **f.as_row()}
                for f in marked(found, row)]
    try:
        across_modes = training_findings(rows, baseline)
    except Exception as exc:  # the other rows' findings stand; this step says it failed
        across_modes = [(rows[0], step_failed("row findings: training findings", exc))] \
            if rows else []
    out += [{"suite": suite, "case_id": column_value(row, "case_id"),
             "variant": column_value(row, "variant"), **f.as_row()} for row, f in across_modes]
    return out


def _guarded(detector, *rows) -> list[Finding]:
    """A detector's findings; one that raises is a step_failed finding naming it, so the other
    detectors, and the tables written after them, are not lost with it."""
    try:
        return list(detector(*rows))
    except Exception as exc:
        return [step_failed(f"row findings: detector {detector.__name__}", exc)]
