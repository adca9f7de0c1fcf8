"""Is a timing round clean? Four independent signs that it measured the machine, not the kernel.

- contended: the timing's threads waited for a CPU (another process held the cores), or other
  processes took the cores the timing needs (or, on a GPU, held the device, or its SM clock
  dropped) during the round;
- stalled: many calls ran a scheduler tick or more (>= 1 ms) longer than the variant's fastest
  call and at least twice as long: with every core in one OpenMP team, a descheduled thread
  stalls the whole op until the scheduler runs it again, so the samples pile up at multiples of
  the tick (4 ms at 250 Hz) whatever the op's own time;
- off: the round's median is well above the variant's fastest round (only slower counts: the
  machine can steal time from a round, it cannot give a kernel more than it has). A shared VM
  flips between states for hundreds of milliseconds (a 64^3 matmul at 9.2 us, then 12.2 us,
  with nothing visible in /proc): a run that spent most rounds in the slow state would report
  it as the kernel's time, so the fastest round, not the typical one, is the reference;
- slow: the median is implausibly far below the rate the measured peaks allow for the op's size
  (a 64^3 matmul at 16 ms is a stall, not a kernel).

Contention is judged per share (its threads' own wait for a CPU) and per round (other
processes' load, which every variant of the round shared); the rest per variant, against its
other rounds. Pure functions of numbers, so each is tested on synthetic rounds.
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass, field, replace

from suites.harness.contention import RoundLoad

CLEAN, CONTENDED, STALLED, OFF, SLOW = "clean", "contended", "stalled", "off", "slow"

# Other processes may use the cores the timing leaves free, plus this much, before the round
# counts as contended: /proc/stat counts in 10 ms ticks, so a round of a few hundred ms reads
# +-0.1 core of nothing at all.
SPARE_CORES = 0.5
# /proc/stat counts in ticks (10 ms): over a few of them one tick more or less reads as half a
# core. A share shorter than this is judged only within its round's average, and a round shorter
# than twice this (a quick smoke run) not at all for CPU contention.
MIN_SHARE_WALL_S = 0.05
# The threads' run-queue wait, summed, over the share's wall time: a quiet machine reads under
# 1%; one other busy process on a 2-core machine timed with 2 threads, 50-90%.
WAIT_LIMIT = 0.05
GPU_MIN_CLOCK_RATIO = 0.7  # below this share of its max SM clock the GPU was throttled
STALL_MIN_US = 1000.0      # a stall is at least a scheduler tick (1 ms at 1000 Hz, 4 ms at 250 Hz)
STALL_SHARE = 0.2          # a round with this share of stalled calls or more is stalled
OFF_FACTOR = 1.25          # a round this much slower than the variant's fastest round is off
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
    samples_us: tuple[float, ...]
    load: RoundLoad
    state: str = CLEAN
    reason: str = ""

    @property
    def median_us(self) -> float:
        return statistics.median(self.samples_us)

    @property
    def clean(self) -> bool:
        return self.state == CLEAN


@dataclass(frozen=True)
class Limits:
    """What the checks compare with: the machine, the threads, and the op's plausible time."""

    cores: int
    threads: int
    model_us: dict[str, float] = field(default_factory=dict)  # variant -> roofline time, if known


def waited(load: RoundLoad) -> str:
    """Why one variant's share counts as contended by its threads' wait for a CPU ("" if not)."""
    if load.wait_frac is None or load.wait_frac <= WAIT_LIMIT:
        return ""
    return (f"the timing's threads waited for a CPU for {load.wait_frac:.0%} of the share's time "
            "(summed over threads: another process held the cores)")


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
    procs = max((l.gpu_other_processes or 0 for l in loads), default=0)
    if procs:
        reasons.append(f"{procs} other process{'es' * (procs != 1)} on the GPU")
    clocks = [l.sm_clock_ratio for l in loads if l.sm_clock_ratio is not None]
    if clocks and min(clocks) < GPU_MIN_CLOCK_RATIO:
        reasons.append(f"SM clock dropped to {min(clocks):.0%} of its maximum")
    return "; ".join(reasons)


def stall(samples: tuple[float, ...], fastest_us: float) -> str:
    """Why the samples look stalled by scheduler ticks ("" when they do not)."""
    excess = [t - fastest_us for t in samples if t - fastest_us >= max(STALL_MIN_US, fastest_us)]
    if not samples or len(excess) < STALL_SHARE * len(samples):
        return ""
    return (f"{len(excess)} of {len(samples)} calls stalled: +{statistics.median(excess) / 1e3:.1f}"
            f" ms (median) over the fastest call's {fastest_us:.4g} us")


def off(median_us: float, fastest_us: float) -> str:
    if median_us <= OFF_FACTOR * fastest_us:
        return ""
    return (f"round median {median_us:.4g} us is {median_us / fastest_us:.2f}x the variant's "
            f"fastest round ({fastest_us:.4g} us)")


def slow(median_us: float, model_us: float | None) -> str:
    if not model_us or median_us <= SLOW_FACTOR * model_us + SLOW_ALLOWANCE_US:
        return ""
    return (f"median {median_us:.4g} us is {median_us / model_us:,.0f}x what the measured peaks "
            f"allow for this size ({model_us:.3g} us)")


def judge(slots: list[Slot], limits: Limits) -> list[Slot]:
    """The slots of one case, each with its state and reason; the first sign found wins, in the
    order contended (the share's own wait first, then the round's load), slow, stalled, off (the
    later ones compare a round with the clean rest)."""
    by_round: dict[int, list[Slot]] = {}
    for s in slots:
        by_round.setdefault(s.round, []).append(s)
    contended = {r: contention([s.load for s in group], limits.cores, limits.threads)
                 for r, group in by_round.items()}
    judged = []
    for s in slots:
        reason = waited(s.load) or contended[s.round]
        state = CONTENDED if reason else CLEAN
        if not reason and (reason := slow(s.median_us, limits.model_us.get(s.variant))):
            state = SLOW
        judged.append(replace(s, state=state, reason=reason))
    return [_judge_variant(s, judged) for s in judged]


def _judge_variant(slot: Slot, judged: list[Slot]) -> Slot:
    """Stalls and off rounds, against the variant's other rounds that are still clean."""
    if not slot.clean:
        return slot
    mine = [s for s in judged if s.variant == slot.variant and s.clean]
    fastest = min(t for s in mine for t in s.samples_us)
    if reason := stall(slot.samples_us, fastest):
        return replace(slot, state=STALLED, reason=reason)
    if reason := off(slot.median_us, min(s.median_us for s in mine)):
        return replace(slot, state=OFF, reason=reason)
    return slot
