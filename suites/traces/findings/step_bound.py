"""What bounds each step: one bound per step (the host or the device, and on what), with the
numbers that decided it, the runner-up and whether it was a close call; and the primary bound,
the one most steps share. (The word in steps.csv and in the findings' evidence is `verdict`; it
is not a report's faster/slower class.)

A GPU step is judged in its device window W (suites/traces/step_window.py), whose time is split
into parts that add up to W:

    computation, communication, memory copies   the device's work (TraceLens's split, exposed)
    waiting                                      idle with work queued (an event, another
                                                 stream or device)
    host wait                                    idle with nothing queued: the device waited
                                                 for the host; split by what the host did
                                                 meanwhile (host_wait.py): set-up, sync, CPU
                                                 collectives, data loading, host code, launch

The largest part bounds the step (host wait taken whole, against each of the device's parts: a
step whose device waited for the host 43% of W and computed 36% is host-bound, whatever the
device's busy total), named by its largest cause (host-bound on data loading, on launch...).
Idle with work queued while the host blocked for half of W is the host's sync (it waited for
work the trace does not show). The runner-up is the next part, always stated; within MARGIN of
W it is a close call, and the verdict says so rather than flip on a hair.

A CPU step (the device is the CPU: compute ops are its kernels) is judged in its span: the
largest of the compute ops' self time (CPU compute), host collectives, data loading, set-up
calls and the rest (Python and dispatch: overhead), with its runner-up the same way. A host-only
trace (a device whose activities the trace lacks) gets no bound, nor a GPU step mostly idle whose
host side the trace lacks (no runtime calls, no launches linked): why the device waited cannot
be told. Every step with a bound gets exactly one code of BOUND_CODES.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from suites.traces.findings.codes import Code
from suites.traces.device_time import GPU, HOST_ONLY, OVERHEAD_BUSY
from suites.traces.op_kinds import is_stream_wait_api
from suites.traces.steps import StepMetrics

# Host-bound when the device waited for the host at least this share of its window (the same
# threshold that makes a suite call overhead-bound).
HOST_BOUND_SHARE = OVERHEAD_BUSY
HOST, DEVICE = "host", "device"
# Two parts closer than this share of the window are a close call: said, with both numbers.
MARGIN = 0.05
HOST_CAUSES = ("initialisation", "sync", "allocation", "CPU collectives", "data loading",
               "host code", "launch")
# A CPU step's time outside its compute ops and named host ranges: what an overhead-bound CPU
# step is bound on, and said by that name wherever it is the runner-up.
CPU_REST = "Python and dispatch"


@dataclass(frozen=True)
class StepBound:
    """What bounds one step, and the numbers that decided it."""

    code: Code
    side: str  # host | device
    kind: str  # what it is bound on, in words
    us: float  # the deciding part
    window_us: float  # the step's window it was judged in (StepMetrics.window_us)
    parts: dict  # name -> us: every part the decision compared
    runner_up: str = ""  # the next part, in words ("" when nothing else took time)
    runner_up_us: float = 0.0
    contest_us: float = float("nan")  # the winning part's time in the contest (host wait whole)

    @property
    def close(self) -> bool:
        """A close call: the runner-up within MARGIN of the window."""
        return bool(self.runner_up) and (
            self.contest_us - self.runner_up_us < MARGIN * self.window_us)

    @property
    def share(self) -> float:
        return self.us / self.window_us if self.window_us > 0 else float("nan")


_KIND_CODES = {
    "computation": Code.COMPUTE_BOUND, "CPU compute": Code.COMPUTE_BOUND,
    "communication": Code.COMM_BOUND, "CPU collectives": Code.COMM_BOUND,
    "memory copies": Code.COPY_BOUND, "waiting": Code.DEVICE_WAIT,
    "launch": Code.OVERHEAD_BOUND, CPU_REST: Code.OVERHEAD_BOUND, "sync": Code.SYNC_BOUND,
    "data loading": Code.DATA_BOUND, "initialisation": Code.INIT_BOUND,
    "host code": Code.HOST_CODE_BOUND, "allocation": Code.OVERHEAD_BOUND,
}


def _bound(side: str, parts: dict, window_us: float, among: tuple[str, ...]) -> StepBound:
    """The largest of `among` (ties: the first named); the next is the runner-up."""
    ranked = sorted(among, key=lambda k: -parts[k])
    kind = ranked[0]
    runner = next((k for k in ranked[1:] if parts[k] > 0), "")
    return StepBound(_KIND_CODES[kind], side, kind, parts[kind], window_us, parts,
                     runner, parts[runner] if runner else 0.0, parts[kind])


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


def cause_words(cause: str, ops_recorded: bool = True) -> str:
    """A host cause as prose says it: "launch" is the rest of the host's time, Python and
    dispatch with the launch calls (a cuDNN plan built inside an op is in it too); in a trace
    without ops, only that the launches came late."""
    if cause != "launch":
        return cause
    return ("Python, dispatch, launch" if ops_recorded else
            "late launches, the trace recording no ops to say why")


def _cause_said(cause: str, step: StepMetrics) -> str:
    """A host cause as a runner-up says it: the program's own code by its range's name."""
    if cause == "host code" and step.host_code_names:
        return f"host code: {step.host_code_names[0]}"
    return cause_words(cause, step.n_cpu_ops > 0)


def _largest_cause(causes: dict) -> str:
    return max(HOST_CAUSES, key=lambda k: causes.get(k, 0.0))


def step_bound(step: StepMetrics, mode: str) -> StepBound | None:
    if mode == HOST_ONLY:
        return None
    span = step.window_us  # the window a step is judged in (StepMetrics.window_us)
    if mode != GPU:
        if span <= 0:
            return None
        parts, rest = _host_parts(step, span - step.device_us)
        parts = {"CPU compute": step.device_us, **parts, CPU_REST: rest}
        parts.pop("sync")
        parts.pop("profiler flush", None)  # a device sync: never in a CPU trace's steps
        return _bound(HOST, parts, span, tuple(parts))
    w = step.window
    # Queued idle before the trace's first recorded activity is not known to be waiting (the
    # device may have run work the trace does not hold): said, and the step judged in the rest
    # of its window.
    unrecorded = unrecorded_us(step)
    span -= unrecorded
    if w is None or span <= 0:
        return None
    device = {"computation": w.computation_us, "communication": w.exposed_comm_us,
              "memory copies": w.exposed_memcpy_us, "waiting": w.queued_idle_us - unrecorded}
    timing = {"busy": w.busy_us, "host wait": w.host_wait_us, "queued idle": w.queued_idle_us}
    if unrecorded > 0:
        timing["unrecorded"] = unrecorded
    causes = {k: step.host_wait_parts.get(k, 0.0) for k in HOST_CAUSES}
    if not step.host_wait_parts:
        causes["launch"] = w.host_wait_us
    parts = {**device, **timing, **{f"host wait: {k}": us for k, us in causes.items() if us > 0},
             "sync": step.blocking_us}
    if step.flush_us > 0:  # not in "sync": the profiler's (profiler_artifacts.py)
        parts["profiler flush"] = step.flush_us
    contest = {**device, "host wait": w.host_wait_us}
    ranked = sorted(contest, key=lambda k: -contest[k])
    top = ranked[0]
    runner = next((k for k in ranked[1:] if contest[k] > 0), "")
    seen_host = host_side(step)
    if top == "host wait" and not seen_host:
        return None  # idle most, and no launch to say whether the host or something else held it
    if runner == "host wait":
        runner_words = (f"host wait ({_cause_said(_largest_cause(causes), step)})" if seen_host
                        else "idle (no launches recorded)")
    else:
        runner_words = runner
    runner_us = contest[runner] if runner else 0.0
    if top == "host wait":
        kind = _largest_cause(causes)
        contest_us = contest[top]
        # The next part may be another host cause: a step 90% set-up and 9% launch gaps has
        # launch next, not a device part of 0.1%; two causes are weighed one against the other.
        second = max((k for k in HOST_CAUSES if k != kind), key=lambda k: causes.get(k, 0.0))
        if causes.get(second, 0.0) > runner_us:
            runner_words = f"host wait ({_cause_said(second, step)})"
            runner_us = causes[second]
            contest_us = causes[kind]
        return StepBound(_KIND_CODES[kind], HOST, kind, causes[kind], span,
                         {**parts, kind: causes[kind]}, runner_words, runner_us, contest_us)
    if (top == "waiting" and step.blocking_us >= HOST_BOUND_SHARE * span
            and not held_by_stream_wait(step)):
        return StepBound(_KIND_CODES["sync"], HOST, "sync", step.blocking_us, span, parts,
                         runner_words, runner_us, contest[top])
    return StepBound(_KIND_CODES[top], DEVICE, top, contest[top], span, parts, runner_words,
                     runner_us, contest[top])


def held_by_stream_wait(step: StepMetrics) -> bool:
    """Whether a stream's wait for an event comes before the step's blocking calls: the device's
    queued idle is then that wait's (device waiting), and the host's sync only waits behind it
    (sglang's decode: a hipStreamWaitEvent, then a 463 ms copy)."""
    first_block = min((c.ts for c in step.blocking_calls), default=float("inf"))
    return any(is_stream_wait_api(c.name) and c.ts < first_block for c in step.runtime)


def unrecorded_us(step: StepMetrics) -> float:
    """The step's queued idle before the trace's first recorded device activity, left out of
    its judgement (StepMetrics.unrecorded_us); none where the host blocked through most of it
    (a wait that the sync verdict reads)."""
    w = step.window
    if w is None:
        return 0.0
    unrecorded = min(step.unrecorded_us, w.queued_idle_us)
    return 0.0 if step.blocking_us >= HOST_BOUND_SHARE * unrecorded else unrecorded


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
    judged_ids = {id(s) for s, _ in judged}
    # Steps left unjudged because the trace has no host side to say why their device idled:
    # where they outnumber the judged ones, a verdict would rest on the few (no verdict; the
    # no_verdict finding says why).
    blind = [s for s in steps if id(s) not in judged_ids and s.window is not None
             and s.window_us > 0 and not host_side(s)]
    if not judged or len(blind) > len(judged):
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
