"""The profiling pass guarded like a timing round: host us, device us, the exposed overhead, the
per-op plot and every bound rest on a few profiled calls, so those calls are judged as a round
is, and taken again when they measured the machine instead of the call.

A take is judged on two signs:
- contended: while it ran, the profile's threads waited for a CPU or other processes took the
  cores (round_checks.waited and round_checks.contention: the rounds' own rules and limits);
- out of step: the profiled call ran far longer than the timed one, more than the profiler's
  own cost explains. The profiler adds a few microseconds to every op it records (measured at
  the run's start: env.json `launch_floors.profiler_op`), so a 13 us call of 6 ops reads 34 us
  profiled, and that is explained; a 246 us call whose profiled copy alone took 871 us is not
  (a quiet run read 31 us for it): an op inside a call cannot be longer than the call.

A take that shows neither is clean. Otherwise the profile is taken again, up to MAX_TAKES; one
still not clean keeps its figures, marked (profile_state, profile_reason), and no bound is
stated from it (suites/harness/derived.py).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from suites.harness.contention import LoadMeter, RoundLoad
from suites.harness.round_checks import CLEAN, CONTENDED, contention, waited

OUT_OF_STEP = "out_of_step"
MAX_TAKES = 3
# The profiled call may run this many times the timed one, plus the profiler's cost per op
# and a fixed allowance (the profiler's step bookkeeping): more is out of step. Quiet runs here
# read the profiled call 0.86-1.31x the timed one past the per-op cost at every size, and the
# per-op cost 2-6 us for aten ops, 4-10 us for a compiled call's ranges (dynamo's cache lookup,
# the compiled region), against 1.5-6 us for the probe's x.add_(1): hence PER_OP_SAFETY times
# the probe's figure, never less than MIN_OP_US.
OUT_OF_STEP_FACTOR = 1.5
PER_OP_SAFETY = 4.0
MIN_OP_US = 3.0
ALLOWANCE_US = 20.0
# Where the run did not measure the profiler's cost per op (a tool timing one variant): what a
# recorded op cost here, with shapes and memory recorded (2-10 us; docs/methodology.md).
DEFAULT_PROFILER_OP_US = 10.0


@dataclass(frozen=True)
class Judged:
    state: str   # clean | contended | out_of_step
    reason: str  # "" when clean

    @property
    def clean(self) -> bool:
        return self.state == CLEAN


def allowed_us(timed_us: float, ops: float, profiler_op_us: float) -> float:
    """The longest a profiled call of `ops` recorded ops may take and still be the timed call."""
    ops = ops if ops == ops else 0.0
    per_op = PER_OP_SAFETY * max(profiler_op_us, MIN_OP_US)
    return OUT_OF_STEP_FACTOR * timed_us + ops * per_op + ALLOWANCE_US


@dataclass(frozen=True)
class ProfileGuard:
    """What a profile is judged with: the run's load meter, the cores and threads, and the
    profiler's measured cost per op."""

    meter: LoadMeter
    cores: int
    threads: int
    profiler_op_us: float = DEFAULT_PROFILER_OP_US

    def judge(self, load: RoundLoad, host_us: float, timed_us: float, ops: float) -> Judged:
        busy = waited(load, self.threads) or contention([load], self.cores, self.threads)
        if busy:
            return Judged(CONTENDED, busy)
        why = out_of_step(host_us, timed_us, ops, self.profiler_op_us)
        return Judged(OUT_OF_STEP, why) if why else Judged(CLEAN, "")


def out_of_step(host_us: float, timed_us: float, ops: float, profiler_op_us: float) -> str:
    """Why a profiled call is out of step with its timed one ("" when it is not)."""
    if not (timed_us == timed_us and host_us == host_us):
        return ""
    limit = allowed_us(timed_us, ops, profiler_op_us)
    if host_us <= limit:
        return ""
    return (f"the profiled call took {host_us:.4g} us against {timed_us:.4g} us timed "
            f"({host_us / timed_us:.2g}x); the profiler's own cost explains up to {limit:.4g} us "
            f"({ops:g} ops at {profiler_op_us:.3g} us each measured, x{PER_OP_SAFETY:g}, on "
            f"{OUT_OF_STEP_FACTOR:g}x the call)")


def rejudged(stats, timed_us: float, profiler_op_us: float, call_us: float | None = None):
    """A row's clean profile (ProfileStats) judged again once its time per call is final (its
    clean rounds only, after a re-measure too): the takes were judged against the rounds'
    first reading; the same rule on the final figure marks it out of step where it is.
    `call_us` is the profiled call's length the take was judged on (CallProfile.call_us), where
    known; else the row's median host_us."""
    if stats is None or stats.profile_state != CLEAN:
        return stats
    span = call_us if call_us is not None and call_us == call_us else stats.host_us
    why = out_of_step(span, timed_us, stats.n_cpu_ops, profiler_op_us)
    return replace(stats, profile_state=OUT_OF_STEP, profile_reason=why) if why else stats


def profiler_op_us(floors: dict | None) -> float:
    """The profiler's cost per recorded op from env.json's launch floors, or the default."""
    found = ((floors or {}).get("profiler_op") or {}).get("extra_us")
    return float(found) if isinstance(found, (int, float)) and found > 0 else \
        DEFAULT_PROFILER_OP_US
