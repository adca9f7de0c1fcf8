"""gpu_check section `kernels`: kernel time of each Triton kernel against its library
counterpart, at the issue's target shapes, in bf16.

Kernel time, not latency: the calls are queued back to back with L2 flushed between them and
no host sync in between (`timing.kernel_samples`, triton.testing.do_bench's method), so a
wrapper's Python does not count against the kernel. Each side is the op's registered variant
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
from suites.harness.correctness import compare
from suites.harness.variant_passes import pass_scope

SECTION = "kernels"
BUDGET_S = 0.3         # device time per variant's samples, after its first calls
SAMPLES = (10, 300)    # fewest and most back-to-back calls per variant


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


def kernel_us(call, flush) -> tuple[float, int]:
    """(median device us per call, samples): a short probe sizes the run to BUDGET_S."""
    probe = sorted(timing.kernel_samples(call, 3, flush))[1]
    n = timing.sample_count(timing.Budget(BUDGET_S, *SAMPLES), probe)
    return statistics.median(timing.kernel_samples(call, n, flush)), n


def _measure(bench: Bench, case: Case, inputs, name: str, flush, library_out):
    """One variant's row fields, and its output (the library's is kept for the comparison)."""
    variant = registry.get_variant(bench.op, name)
    reason = variant.supports(case)
    if reason:
        return {"status": "skipped", "error": reason}, None
    op = registry.get_op(bench.op)
    with pass_scope(variant):
        call = variant.prepare(case, inputs)
        out = call()  # compile, autotune
        timing.sync(case.device_type)
        median, n = kernel_us(call, flush)
    row = {"variant": name, "kernel_us": median, "n_samples": n,
           "tflops": op.flops(case) / median / 1e6}
    if library_out is not None:
        check = compare(out, library_out.double(), case.dtype, None)
        row["diff_vs_library"] = check.scaled_err
        if check.problem:
            row.update(status="failed", error=f"disagrees with {bench.library}: {check.problem}")
    return row, out


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
    library = name == bench.library
    if not library and "library_us" not in state:
        return {"status": "failed", "error": f"no {bench.library} time to compare with"}
    row, out = _measure(bench, state["case"], state["inputs"], name, flush,
                        None if library else state.get("library_out"))
    if library and "kernel_us" in row:
        state.update(library_us=row["kernel_us"], library_out=out)
    elif "kernel_us" in row:
        row["ratio"] = state["library_us"] / row["kernel_us"]  # > 1: Triton is faster
        if row.get("status", "ok") == "ok":
            state.setdefault("ratios", {})[name] = row["ratio"]
    return row


def _target(bench: Bench, state: dict, device: str | None) -> dict:
    if device is None:
        return {"status": "skipped", "error": "no CUDA", "target": bench.target}
    ratios = state.get("ratios", {})
    if not ratios:
        return {"status": "failed", "error": "no Triton variant was timed", "target": bench.target}
    best = max(ratios, key=ratios.get)
    met = ratios[best] >= bench.target
    return {"status": "ok" if met else "failed", "best": best, "ratio": ratios[best],
            "target": bench.target,
            "error": None if met else f"{best} at {ratios[best]:.2f}x of {bench.library}, "
                                      f"target {bench.target}x"}


def _release(state: dict) -> None:
    """Free the bench's tensors before the next one (the long-context inputs are ~1 GB)."""
    state.clear()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
