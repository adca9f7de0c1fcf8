"""GEMMs of equal work at unequal speed: (M, N, K) = (141, 2048, 512) and (141, 512, 2048) cost
the same FLOPs, yet a library may pick a different kernel (tile, pipeline, split) for each, and
the rates differ. The series reads kernel names off the profile for this (part 1)."""
from __future__ import annotations

from suites.traces.findings.bounds import host_paced
from suites.traces.findings.codes import Code, Severity
from suites.traces.findings.core import Finding, FindingContext
from suites.traces.gemm_names import gemm_identity
from suites.traces.gemm_rates import equal_flop_rates

RATE_RATIO = 1.25  # below this, two shapes' rates are within the spread of kernel timings
# The slow shape's share of the device time below which a rate difference is not worth a line.
MIN_SHARE = 0.01


def kernel_label(names: tuple) -> str:
    """A short name for the kernel(s) that ran a shape: library, arch and tile."""
    labels = []
    for name in names:
        g = gemm_identity(name)
        parts = [g.library, g.arch, f"tile {g.tile}" if g.tile else ""] if g else []
        labels.append(" ".join(p for p in parts if p) or name[:40])
    return " + ".join(dict.fromkeys(labels))


def gemm_rates_differ(ctx: FindingContext):
    """One finding per profile: the equal-work pairs whose slow shape's time is worth a look
    (at least MIN_SHARE of the device time: a forward GEMM beside its transposed backward twin
    at 0.0002 GFLOP is not), the largest at stake said in full, the rest counted."""
    # Where the host sets the step's time, the saving is the device's, not the step's: no
    # advice (the BERT-small steps wait for the host 93% of the time).
    if ctx.profile is None or not ctx.on_gpu or host_paced(ctx):
        return
    device = sum(r["total_us_per_call"] for r in ctx.profile.kernel_rows())
    steps = max(1, len(ctx.profile.steps))
    pairs = []
    for rates in equal_flop_rates(ctx.profile.gemm_launches()):
        fast, slow = rates[0], rates[-1]
        if slow.tflops <= 0 or fast.tflops < RATE_RATIO * slow.tflops:
            continue
        # What running the slow shape at the fast one's rate would save, per step.
        at_stake = slow.us * (1 - slow.tflops / fast.tflops) / steps
        if device > 0 and slow.us / steps >= MIN_SHARE * device:
            pairs.append((at_stake, fast, slow, len(rates)))
    if not pairs:
        return
    pairs.sort(key=lambda p: -p[0])
    at_stake, fast, slow, shapes = pairs[0]
    same = fast.kernels == slow.kernels
    why = ("the same kernel ran both: its tiles fit the two shapes differently (tiles per "
           "wave, K-loop length)" if same else
           "the library chose a different kernel for each shape")
    more = (f"; {len(pairs) - 1} more pair(s) of equal work differ "
            f"({sum(p[0] for p in pairs[1:]):.3g} us a step at stake)" if len(pairs) > 1 else "")
    yield Finding(Code.GEMM_RATES_DIFFER, Severity.NOTICE,
                  f"GEMMs of equal work ({fast.flops / 1e9:.3g} GFLOP each) run at different "
                  f"rates: {fast.shape} (M x N x K) at {fast.tflops:.3g} TFLOP/s on "
                  f"{kernel_label(fast.kernels)}, {slow.shape} at {slow.tflops:.3g} TFLOP/s "
                  f"on {kernel_label(slow.kernels)} ({fast.tflops / slow.tflops:.2f}x): "
                  f"{why}; at the fast rate the slow one would save {at_stake:.3g} us "
                  f"a step{more}",
                  {"gflop": fast.flops / 1e9, "fast_shape": fast.shape,
                   "fast_tflops": fast.tflops, "fast_kernel": kernel_label(fast.kernels),
                   "slow_shape": slow.shape, "slow_tflops": slow.tflops,
                   "slow_kernel": kernel_label(slow.kernels),
                   "ratio": fast.tflops / slow.tflops, "shapes": shapes,
                   "at_stake_us_per_step": at_stake, "pairs": len(pairs)})
