"""Is a timing round clean? Signs that a round measured the machine, not the variants.

A round's figure for a variant is the mean over its calls in that share (what a caller pays:
a cost paid by 1% of calls moves it by 1% of that cost); the median of the calls is kept beside
it. A sign of the machine drops the round for every variant of the case: the speedups are paired
per round, and a round kept for one variant and dropped for another would pair nothing. A sign
seen in one variant only is that variant's own behaviour (a recompile, a guard miss, an
allocator flush, a slow state of its own): it stays in its figures, and the findings name it.

- contended: the timing's threads waited for a CPU (another process held the cores: judged per
  thread), or other processes took the cores the timing needs (or, on a GPU, held the device,
  or its SM clock dropped, or a thermal limit, a hardware slowdown or the power brake held it
  down: a power cap the variant's own work reaches is its cost, named in rounds.csv, not the
  machine's), in any share of the round;
- stalled: in every variant's share of the round, many calls ran a scheduler tick or more
  (>= 1 ms) longer than the variant's fastest call and at least twice as long: with every core
  in one OpenMP team, a descheduled thread stalls the whole op until the scheduler runs it
  again. Stalls in one variant's shares only are its own cost;
- off: every variant of the round ran well away from its own typical (median) round, all in the
  same direction, slower or faster alike (a shared VM flips between states for hundreds of
  milliseconds; a boosted clock gives a round more than the machine usually has). Judged against
  the median round, never the fastest: a variant's own slow state is not reduced to its fast
  one, and one boosted round is not the yardstick of the others. With one variant in the case
  there is nothing to tell the two apart: its own off rounds count as the machine's;
- slow: the median is implausibly far below the rate the measured peaks allow for the op's size
  (a 64^3 matmul at 16 ms is a stall, not a kernel): that share only.

Pure functions of numbers, so each is tested on synthetic rounds (and the simulation bench,
suites/tools/estimators.py, feeds them noise models).
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field, replace

from suites.harness.contention import RoundLoad
from suites.harness.event_clock import CPU_RESOLUTION_US
from suites.harness.gpu_state import machine_limits

CLEAN, CONTENDED, STALLED, OFF, SLOW = "clean", "contended", "stalled", "off", "slow"

# Other processes may use the cores the timing leaves free, plus this much, before the round
# counts as contended: /proc/stat counts in 10 ms ticks, so a round of a few hundred ms reads
# +-0.1 core of nothing at all.
SPARE_CORES = 0.5
# /proc/stat counts in ticks (10 ms): over a few of them one tick more or less reads as half a
# core. A share shorter than this is judged only within its round's average, and a round shorter
# than twice this (a quick smoke run) not at all for CPU contention.
MIN_SHARE_WALL_S = 0.05
# The run-queue wait of one timing thread over the share's wall time (the sum over threads
# divided by their number: a fixed limit on the sum would be T times stricter with T threads): a
# quiet machine reads under 1%; one other busy process on a 2-core machine, 25-45% a thread.
WAIT_LIMIT = 0.05
GPU_MIN_CLOCK_RATIO = 0.7  # below this share of its max SM clock the GPU was throttled
STALL_MIN_US = 1000.0      # a stall is at least a scheduler tick (1 ms at 1000 Hz, 4 ms at 250 Hz)
STALL_SHARE = 0.2          # a round with this share of stalled calls or more is stalled
OFF_FACTOR = 1.25          # every variant this far from its median round, one way: off
# A clean call takes at most this many times what the op's model allows at the measured peaks,
# plus this much fixed cost (Python, dispatch, a dozen small ops): generous on purpose, since a
# slow variant is a finding, not a fault; only orders of magnitude mean a stall.
SLOW_FACTOR = 1000.0
SLOW_ALLOWANCE_US = 2000.0


@dataclass(frozen=True)
class Slot:
    """One variant's share of one round: its samples and what the machine did meanwhile."""

    variant: str
    round: int
    position: int  # its place in the round's order (rotated from round to round)
    samples_us: tuple[float, ...]  # microseconds per call, each sample `calls_per_sample` calls
    load: RoundLoad
    state: str = CLEAN
    reason: str = ""
    calls_per_sample: int = 1
    resolution_us: float = CPU_RESOLUTION_US  # the step of the clock each call was read with
    kernel_samples_us: tuple[float, ...] = ()  # CUDA: the share's calls queued back to back
    kernel_calls_per_sample: int = 1
    kernel_resolution_us: float = 0.0

    @property
    def median_us(self) -> float:
        return statistics.median(self.samples_us)

    @property
    def mean_us(self) -> float:
        """The round's figure: what a caller paid a call in this share."""
        return statistics.fmean(self.samples_us)

    @property
    def kernel_mean_us(self) -> float | None:
        """CUDA: the round's kernel figure (device time per call, calls queued back to back)."""
        return statistics.fmean(self.kernel_samples_us) if self.kernel_samples_us else None

    @property
    def faults_per_call(self) -> float | None:
        """Page faults a call in this share (its warm-up call included: it is where a variant
        pays for pages the previous variant left unmapped)."""
        faults = self.load.page_faults
        calls = self.latency_calls() + self.kernel_calls() + 1
        return None if faults is None else faults / calls

    def latency_calls(self) -> int:
        return len(self.samples_us) * self.calls_per_sample

    def kernel_calls(self) -> int:
        return len(self.kernel_samples_us) * self.kernel_calls_per_sample

    @property
    def clean(self) -> bool:
        return self.state == CLEAN


@dataclass(frozen=True)
class Limits:
    """What the checks compare with: the machine, the threads, and the op's plausible time."""

    cores: int
    threads: int
    model_us: dict[str, float] = field(default_factory=dict)  # variant -> roofline time, if known


def waited(load: RoundLoad, threads: int = 1) -> str:
    """Why one variant's share counts as contended by its threads' wait for a CPU ("" if not):
    judged per thread, so the limit means the same with 1 thread or 64."""
    if load.wait_frac is None:
        return ""
    per_thread = load.wait_frac / max(1, threads)
    if per_thread <= WAIT_LIMIT:
        return ""
    return (f"the timing's threads waited for a CPU for {per_thread:.0%} of the share's time "
            "each (another process held the cores)")


def contention(loads: list[RoundLoad], cores: int, threads: int) -> str:
    """Why a round counts as contended ("" when it does not), from its variants' loads."""
    reasons = []
    known = [(l.others_cores, l.wall_s) for l in loads if l.others_cores is not None]
    wall = sum(w for _, w in known)
    if wall >= 2 * MIN_SHARE_WALL_S:
        # The round's average, or any share long enough to be read on its own: contention in
        # one variant's share spoils the round's pairing for every variant.
        others = min(cores, max([sum(o * w for o, w in known) / wall]
                                + [o for o, w in known if w >= MIN_SHARE_WALL_S]))
        if others > cores - threads + SPARE_CORES:
            reasons.append(f"other processes kept {others:.1f} of {cores} cores busy "
                           f"(the timing uses {threads} thread{'s' * (threads != 1)})")
    throttled = max((l.throttled_frac or 0.0 for l in loads), default=0.0)
    if throttled > WAIT_LIMIT:
        reasons.append(f"the container's CPU quota throttled the timing for {throttled:.0%} of a "
                       "share (timing.threads above the quota, or other work in the container)")
    procs = max((l.gpu_other_processes or 0 for l in loads), default=0)
    if procs:
        reasons.append(f"{procs} other process{'es' * (procs != 1)} on the GPU")
    clocks = [l.sm_clock_ratio for l in loads if l.sm_clock_ratio is not None]
    if clocks and min(clocks) < GPU_MIN_CLOCK_RATIO:
        reasons.append(f"SM clock dropped to {min(clocks):.0%} of its maximum")
    limits = sorted({name for l in loads if l.clock_reasons
                     for name in machine_limits(l.clock_reasons)})
    if limits:
        lowest = min((l.sm_clock_mhz for l in loads if l.sm_clock_mhz), default=None)
        reasons.append("the GPU's clock was held down by " + ", ".join(limits)
                       + (f" (SM clock {lowest} MHz)" if lowest else ""))
    return "; ".join(reasons)


def stall(samples: tuple[float, ...], fastest_us: float, calls_per_sample: int = 1) -> str:
    """Why the samples look stalled by scheduler ticks ("" when they do not). A sample that is
    the mean of several calls carries a stall of one of them divided among them."""
    least = max(STALL_MIN_US / max(1, calls_per_sample), fastest_us)
    excess = [t - fastest_us for t in samples if t - fastest_us >= least]
    if not samples or len(excess) < STALL_SHARE * len(samples):
        return ""
    return (f"{len(excess)} of {len(samples)} calls stalled: +{statistics.median(excess) / 1e3:.1f}"
            f" ms (median) over the fastest call's {fastest_us:.4g} us")


def off(shifts: dict[str, float]) -> str:
    """Why a round is off ("" if not): `shifts` maps each variant to its round's figure over its
    median round. Every variant must have moved the same way, and the middle one by more than
    OFF_FACTOR: one variant alone moving is its own state."""
    if not shifts:
        return ""
    logs = [math.log(v) for v in shifts.values()]
    middle = statistics.median(logs)
    if abs(middle) <= math.log(OFF_FACTOR) or not (all(x > 0 for x in logs)
                                                   or all(x < 0 for x in logs)):
        return ""
    way = "slower" if middle > 0 else "faster"
    factor = math.exp(abs(middle))
    who = "the variant" if len(shifts) == 1 else f"all {len(shifts)} variants"
    return (f"{who} ran {factor:.2f}x {way} than in {'its' if len(shifts) == 1 else 'their'} "
            "median round: a machine state")


def slow(median_us: float, model_us: float | None) -> str:
    if not model_us or median_us <= SLOW_FACTOR * model_us + SLOW_ALLOWANCE_US:
        return ""
    return (f"median {median_us:.4g} us is {median_us / model_us:,.0f}x what the measured peaks "
            f"allow for this size ({model_us:.3g} us)")


def judge(slots: list[Slot], limits: Limits) -> list[Slot]:
    """The slots of one case, each with its state and reason. Contended drops a whole round;
    then slow marks one share; then stalled and off drop whole rounds, judged on the shares
    neither slow nor in a round already dropped."""
    rounds = sorted({s.round for s in slots})
    why: dict[int, tuple[str, str]] = {}
    own: dict[int, str] = {}  # id(slot) -> its own wait, where that is what dropped the round
    for r in rounds:
        shares = [s for s in slots if s.round == r]
        waits = {id(s): (s.variant, w) for s in shares if (w := waited(s.load, limits.threads))}
        reason = contention([s.load for s in shares], limits.cores, limits.threads)
        if waits:
            own.update({k: w for k, (_, w) in waits.items()})
            first, wait = next(iter(waits.values()))
            # Each share says its own wait; a share that did not wait says whose did.
            reason = reason or f"dropped with its round: {first}'s share waited ({wait})"
        if reason:
            why[r] = (CONTENDED, reason)
    too_slow = {id(s): reason for s in slots if s.round not in why
                and (reason := slow(s.median_us, limits.model_us.get(s.variant)))}
    rest = [s for s in slots if s.round not in why and id(s) not in too_slow]
    fastest = _fastest_calls(rest)
    for r in rounds:
        if r not in why and (reason := _stalled_round([s for s in rest if s.round == r],
                                                      fastest)):
            why[r] = (STALLED, reason)
    centre = _median_rounds([s for s in rest if s.round not in why])
    for r in rounds:
        if r not in why and (reason := off({s.variant: s.mean_us / centre[s.variant]
                                            for s in rest if s.round == r})):
            why[r] = (OFF, reason)
    judged = []
    for s in slots:
        state, reason = why.get(s.round, (CLEAN, ""))
        if state == CONTENDED and id(s) in own:
            reason = own[id(s)]
        if s.round not in why and id(s) in too_slow:
            state, reason = SLOW, too_slow[id(s)]
        judged.append(replace(s, state=state, reason=reason))
    return judged


def _fastest_calls(slots: list[Slot]) -> dict[str, float]:
    fastest: dict[str, float] = {}
    for s in slots:
        fastest[s.variant] = min(fastest.get(s.variant, math.inf), min(s.samples_us))
    return fastest


def _stalled_round(group: list[Slot], fastest: dict[str, float]) -> str:
    """Stalls in every variant's share of the round: the machine's ("" otherwise)."""
    reasons = [stall(s.samples_us, fastest[s.variant], s.calls_per_sample) for s in group]
    if not group or not all(reasons):
        return ""
    return reasons[0] if len(group) == 1 else f"every variant's calls stalled ({reasons[0]})"


def _median_rounds(slots: list[Slot]) -> dict[str, float]:
    """Each variant's median round figure, over the rounds given."""
    figures: dict[str, list[float]] = {}
    for s in slots:
        figures.setdefault(s.variant, []).append(s.mean_us)
    return {v: statistics.median(f) for v, f in figures.items()}
