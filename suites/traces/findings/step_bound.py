"""What bounds each step: one bound per step (the host or the device, and on what), from one
decision tree, with the numbers that decided it; and the primary bound, the one most steps
share. (The word in steps.csv and in the findings' evidence is `verdict`; it is not a report's
faster/slower class.)

A GPU step is judged in its device window W (suites/traces/step_window.py):

1. The device waited for the host (host wait: idle with nothing queued) for at least half of W:
   host-bound. On what: the largest of the step's one-time set-up calls (initialisation),
   blocking calls (sync), data-loading ranges (data loading), collectives run by the host
   (CPU collectives), and the rest of its host span (launch: Python, dispatch, launch calls).
2. Else, if the device sat idle with work queued for longer than it was busy, it waited on
   something other than this host: host-bound on sync when the host blocked for half of W (it
   waited for work the trace does not show), else device-bound, waiting (an event, another
   stream or device).
3. Else device-bound, on the largest of computation, exposed communication and exposed memory
   copies (TraceLens's split, step_window.py).

A CPU step (the device is the CPU: compute ops are its kernels) is judged in its span: the
largest of the compute ops' self time (CPU compute), host collectives, data loading, set-up
calls and the rest (overhead: Python and dispatch). A host-only trace (a device whose activities
the trace lacks) gets no bound, nor a GPU step mostly idle whose host side the trace lacks (no
runtime calls, no launches linked): why the device waited cannot be told. Every step with a
bound gets exactly one code of BOUND_CODES.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from suites.traces.findings.codes import Code
from suites.traces.device_time import GPU, HOST_ONLY, OVERHEAD_BUSY
from suites.traces.steps import StepMetrics

# Host-bound when the device waited for the host at least this share of its window (the same
# threshold that makes a suite call overhead-bound).
HOST_BOUND_SHARE = OVERHEAD_BUSY
HOST, DEVICE = "host", "device"


@dataclass(frozen=True)
class StepBound:
    """What bounds one step, and the numbers that decided it."""

    code: Code
    side: str  # host | device
    kind: str  # what it is bound on, in words
    us: float  # the deciding part
    window_us: float  # the step's window it was judged in (StepMetrics.window_us)
    parts: dict  # name -> us: every part the decision compared

    @property
    def share(self) -> float:
        return self.us / self.window_us if self.window_us > 0 else float("nan")


_KIND_CODES = {
    "computation": Code.COMPUTE_BOUND, "CPU compute": Code.COMPUTE_BOUND,
    "communication": Code.COMM_BOUND, "CPU collectives": Code.COMM_BOUND,
    "memory copies": Code.COPY_BOUND, "waiting": Code.DEVICE_WAIT,
    "launch": Code.OVERHEAD_BOUND, "overhead": Code.OVERHEAD_BOUND, "sync": Code.SYNC_BOUND,
    "data loading": Code.DATA_BOUND, "initialisation": Code.INIT_BOUND,
}


def _bound(side: str, parts: dict, window_us: float, among: tuple[str, ...]) -> StepBound:
    kind = max(among, key=lambda k: parts[k])  # ties: the first named
    return StepBound(_KIND_CODES[kind], side, kind, parts[kind], window_us, parts)


def _host_parts(step: StepMetrics, span: float) -> tuple[dict, float]:
    """The host's named parts in a step, and what is left of `span` after them. The profiler's
    flush (profiler_artifacts.py) is none of them, nor in the rest: stated, never a bound."""
    host = step.host
    parts = {"initialisation": host.init_us, "sync": step.blocking_us,
             "data loading": host.data_us, "CPU collectives": host.collective_us}
    rest = max(0.0, span - sum(parts.values()) - step.flush_us)
    if step.flush_us > 0:
        parts["profiler flush"] = step.flush_us
    return parts, rest


def step_bound(step: StepMetrics, mode: str) -> StepBound | None:
    if mode == HOST_ONLY:
        return None
    span = step.window_us  # the window a step is judged in (StepMetrics.window_us)
    if mode != GPU:
        if span <= 0:
            return None
        parts, rest = _host_parts(step, span - step.device_us)
        parts = {"CPU compute": step.device_us, **parts, "overhead": rest}
        parts.pop("sync")
        parts.pop("profiler flush", None)  # a device sync: never in a CPU trace's steps
        return _bound(HOST, parts, span, tuple(parts))
    w = step.window
    if w is None or span <= 0:
        return None
    if w.host_wait_us >= HOST_BOUND_SHARE * span and not host_side(step):
        return None  # idle, and no launch to say whether the host or something else held it
    device = {"computation": w.computation_us, "communication": w.exposed_comm_us,
              "memory copies": w.exposed_memcpy_us}
    timing = {"busy": w.busy_us, "host wait": w.host_wait_us, "queued idle": w.queued_idle_us}
    if w.host_wait_us >= HOST_BOUND_SHARE * span:
        parts, rest = _host_parts(step, step.host_us)
        parts = {**parts, "launch": rest, **timing}
        return _bound(HOST, parts, span,
                        ("initialisation", "sync", "data loading", "CPU collectives", "launch"))
    if w.queued_idle_us > w.busy_us:
        parts = {**device, **timing, "sync": step.blocking_us, "waiting": w.queued_idle_us}
        if step.flush_us > 0:  # not in "sync": the profiler's (profiler_artifacts.py)
            parts["profiler flush"] = step.flush_us
        if step.blocking_us >= HOST_BOUND_SHARE * span:
            return _bound(HOST, parts, span, ("sync",))
        return _bound(DEVICE, parts, span, ("waiting",))
    return _bound(DEVICE, {**device, **timing}, span, tuple(device))


def host_side(step: StepMetrics) -> bool:
    """Whether the trace shows the host's side of a GPU step: its runtime calls, or launches
    linked to its activities. A trace of device activities alone (a GPU-only export) shows
    when the device was idle, never why."""
    return bool(step.runtime) or step.unlinked < step.n_kernels


@dataclass(frozen=True)
class PrimaryBound:
    """The bound most steps share, one step that shows it, and the steps that differ."""
    bound: StepBound
    step: StepMetrics
    steps: int  # steps with this bound's code
    of: int  # steps with a bound
    others: list  # [(step name, StepBound)] of the steps whose code differs


def primary_bound(steps: list[StepMetrics], mode: str) -> PrimaryBound | None:
    judged = [(s, b) for s in steps if (b := step_bound(s, mode)) is not None]
    if not judged:
        return None
    counts = Counter(b.code for _, b in judged)
    time = Counter()
    for _, b in judged:
        time[b.code] += b.window_us
    code = max(counts, key=lambda c: (counts[c], time[c]))  # most steps; then most time
    mine = sorted(((s, b) for s, b in judged if b.code == code), key=lambda sb: sb[1].window_us)
    step, bound = mine[len(mine) // 2]  # the median step of the bound
    return PrimaryBound(bound, step, len(mine), len(judged),
                        [(s.name, b) for s, b in judged if b.code != code])


def duration(us: float) -> str:
    if us >= 1e6:
        return f"{us / 1e6:.3g} s"
    if us >= 1e3:
        return f"{us / 1e3:.3g} ms"
    return f"{us:.3g} us"
