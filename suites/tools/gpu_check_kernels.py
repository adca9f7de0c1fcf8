"""gpu_check section `kernels`: kernel time of each Triton kernel against its library
counterpart, at the issue's target shapes, in bf16.

Kernel time, not latency: the calls are queued back to back with L2 flushed between them and
no host sync in between (`timing.kernel_share`, triton.testing.do_bench's method), so a
wrapper's Python does not count against the kernel. A Triton variant and the library are timed
in interleaved rounds (ROUNDS of them, the order rotated), so their ratio is paired per round
and has a 95% interval; a target is met when the interval's low end clears it (the best
variant picked by that low end, not by its point: the best of several point ratios is biased
up, a winner's curse). Each side is the op's registered variant
(kernels/*.py), prepared as the harness prepares it (its scope pins the SDPA backend), so a new
variant such as matmul_add's `triton_tma` is timed by being registered. A Triton output must
agree with the library's (the harness's bound for a baseline) or its row fails: a fast wrong
kernel is no result. The targets (issue 11): GEMM+bias >= 0.9x cuBLAS addmm at 4096^3, flash
forward >= 0.8x SDPA flash at B8 H16 S1024 D64 and at S8192 D128; each is a row of its own,
met by the best Triton variant of the bench.
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass

import torch

from kernels import registry
from kernels.base import Case
from suites.harness import timing
from suites.common.numbers import span
from suites.harness.correctness import compare
from suites.harness.event_clock import mean_floor
from suites.results.intervals import mean_interval, paired_speedup
from suites.harness.variant_passes import pass_scope

SECTION = "kernels"
BUDGET_S = 0.3         # device time per variant (per pairing), over its rounds
SAMPLES = (10, 300)    # fewest and most samples per variant, over its ROUNDS rounds


@dataclass(frozen=True)
class Bench:
    name: str
    op: str
    params: dict
    library: str                 # the library variant the Triton ones are measured against
    tritons: tuple[str, ...]     # Triton variants; one not registered is a skipped row
    target: float | None = None  # library kernel time / Triton kernel time, at least


# The targets first: a deadline cuts the informative ones.
BENCHES = (
    Bench("gemm_bf16_4096", "matmul_add", {"M": 4096, "N": 4096, "K": 4096}, "addmm",
          ("triton", "triton_tma"), 0.9),
    Bench("flash_B8_H16_S1024_D64", "attention", {"B": 8, "H": 16, "S": 1024, "D": 64},
          "sdpa_flash", ("triton_flash",), 0.8),
    # B4 H32: the CUDA grid's long-context heads; q, k, v and out are 268 MB each in bf16.
    Bench("flash_B4_H32_S8192_D128", "attention", {"B": 4, "H": 32, "S": 8192, "D": 128},
          "sdpa_flash", ("triton_flash",), 0.8),
    Bench("linear_T8192_IN4096_OUT4096", "linear", {"T": 8192, "IN": 4096, "OUT": 4096},
          "eager", ("triton",)),
    Bench("layernorm_T16384_D4096", "norm", {"T": 16384, "D": 4096, "norm": "layer"},
          "functional", ("triton",)),
    Bench("rmsnorm_T16384_D4096", "norm", {"T": 16384, "D": 4096, "norm": "rms"},
          "functional", ("triton",)),
    Bench("mlp_T8192_D768_I3072", "mlp", {"T": 8192, "D": 768, "I": 3072}, "eager",
          ("triton_geglu", "triton_fused")),
)


ROUNDS = 5  # rounds of the library and a Triton variant, alternating: a ratio with an interval


def _share() -> timing.Budget:
    return timing.Budget(BUDGET_S / ROUNDS, max(1, SAMPLES[0] // ROUNDS),
                         max(1, SAMPLES[1] // ROUNDS))


@dataclass
class Timed:
    """One variant's kernel figures over the rounds, and the clock's floor on their mean (a
    step over sqrt(calls): no interval of zero width)."""
    figures: list[float]
    step_us: float = 0.0
    calls: int = 0

    def floor(self) -> float:
        return mean_floor(self.step_us, self.calls)

    def row(self) -> dict:
        mean, low, high = mean_interval(self.figures, floor=self.floor())
        return {"kernel_us": mean, "kernel_low_us": low, "kernel_high_us": high}


def kernel_rounds(calls: dict, flush) -> dict[str, Timed]:
    """name -> its kernel figures (us per call), one in each of ROUNDS rounds: `calls` maps a
    name to (its call, its variant), each timed in its own variant's scope (an SDPA backend
    pinned), in an order rotated from round to round."""
    timed = {name: Timed([]) for name in calls}
    names = list(calls)
    for r in range(ROUNDS):
        for name in names[r % len(names):] + names[:r % len(names)]:
            call, variant = calls[name]
            with pass_scope(variant):
                call()  # the other's data and code are in the caches: one untimed call
                share = timing.kernel_share(call, _share(), flush)
            mine = timed[name]
            mine.figures.append(statistics.fmean(share.times_us))
            mine.step_us = max(mine.step_us, share.resolution_us)
            mine.calls += len(share.times_us) * share.calls
    return timed


def _measure(bench: Bench, case: Case, inputs, name: str, flush, library: dict | None):
    """One variant's row fields, and its output and call (the library's are kept for the
    comparison and the paired rounds). `library`: None for the library itself."""
    variant = registry.get_variant(bench.op, name)
    reason = variant.supports(case)
    if reason:
        return {"status": "skipped", "error": reason}, None, None
    op = registry.get_op(bench.op)
    with pass_scope(variant):
        call = variant.prepare(case, inputs)
        out = call()  # compile, autotune
        timing.sync(case.device_type)
    if library is None:  # its own rounds; a Triton variant's ratio pairs it again, per round
        row = {"variant": name, **kernel_rounds({name: (call, variant)}, flush)[name].row()}
    else:
        timed = kernel_rounds({bench.library: (library["call"], library["variant"]),
                               name: (call, variant)}, flush)
        lib, mine = timed[bench.library], timed[name]
        floor = sum(t.floor() / statistics.fmean(t.figures) for t in (lib, mine)
                    if statistics.fmean(t.figures) > 0)
        paired = paired_speedup(dict(enumerate(lib.figures)), dict(enumerate(mine.figures)),
                                floor)
        # > 1: Triton is faster; its interval paired per round
        row = {"variant": name, **mine.row(), "ratio": paired.speedup,
               "ratio_low": paired.low, "ratio_high": paired.high}
    row["tflops"] = op.flops(case) / row["kernel_us"] / 1e6
    if library is not None:
        check = compare(out, library["out"].double(), case.dtype, None)
        row["diff_vs_library"] = check.scaled_err
        if check.problem:
            row.update(status="failed", error=f"disagrees with {bench.library}: {check.problem}")
    return row, out, call


def items(device: str | None, flush_spec=None):
    """(item, work) pairs: each bench's library variant, its Triton variants, its target.
    `device` None: no device to time on (every row skipped)."""
    flush = (timing.l2_flusher(flush_spec, torch.device(device).type)
             if device is not None and flush_spec is not None else None)
    for bench in BENCHES:
        known = registry.variant_names(bench.op)
        state: dict = {}  # the bench's case, inputs, library time and output, as they come
        for name in (bench.library, *bench.tritons):
            item = f"{bench.name} {name}"
            if name not in known:
                yield item, lambda: {"status": "skipped", "error": "variant not registered"}
            elif device is None:
                yield item, lambda: {"status": "skipped", "error": "no CUDA"}
            else:
                yield item, lambda b=bench, n=name, s=state: _work(b, n, s, device, flush)
        if bench.target is not None:
            yield f"{bench.name} target", lambda b=bench, s=state: _target(b, s, device)
        _release(state)  # runs when the next bench is asked for: this one is done


def _work(bench: Bench, name: str, state: dict, device: str, flush):
    if "case" not in state:
        case = Case.make(bench.op, bench.params, "bfloat16", device, seed=0)
        generator = torch.Generator(device=device).manual_seed(0)
        state.update(case=case, inputs=registry.get_op(bench.op).make_inputs(case, generator))
    is_library = name == bench.library
    if not is_library and "library" not in state:
        return {"status": "failed", "error": f"no {bench.library} time to compare with"}
    row, out, call = _measure(bench, state["case"], state["inputs"], name, flush,
                              None if is_library else state["library"])
    if is_library and "kernel_us" in row:
        state["library"] = {"call": call, "out": out,
                            "variant": registry.get_variant(bench.op, name)}
    elif "ratio" in row and row.get("status", "ok") == "ok":
        state.setdefault("ratios", {})[name] = (row["ratio"], row["ratio_low"], row["ratio_high"])
    return row


def _target(bench: Bench, state: dict, device: str | None) -> dict:
    """Met when the best Triton variant's paired ratio has its 95% interval's low end at the
    target or above; the best is the one with the highest low end."""
    if device is None:
        return {"status": "skipped", "error": "no CUDA", "target": bench.target}
    ratios = state.get("ratios", {})
    if not ratios:
        return {"status": "failed", "error": "no Triton variant was timed", "target": bench.target}
    best = max(ratios, key=lambda name: _low(ratios[name]))
    ratio, low, high = ratios[best]
    met = _low(ratios[best]) >= bench.target
    shown = f"{ratio:.2f}x (95% interval {span(low, high, 'x')})"
    return {"status": "ok" if met else "failed", "best": best, "ratio": ratio,
            "ratio_low": low, "ratio_high": high, "target": bench.target,
            "error": None if met else f"{best} at {shown} of {bench.library}: the interval's "
                                      f"low end is under the target {bench.target}x"}


def _low(ratio: tuple[float, float, float]) -> float:
    """An interval's low end; the point where there is no interval (never the larger)."""
    point, low, _ = ratio
    return point if low != low else min(point, low)


def _release(state: dict) -> None:
    """Free the bench's tensors before the next one (the long-context inputs are ~1 GB)."""
    state.clear()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
