"""The correctness pass: refill the inputs in place with a fresh random draw, call, and compare
with a float64 reference. Low-precision rule (flash-attention / Liger style): a variant passes if
its error is at most twice eager's error in the same dtype, plus a small dtype floor."""
from __future__ import annotations

from dataclasses import dataclass

import torch

from kernels.base import Call, Case, Inputs, Op

# Error is measured as max |out - ref| / max |ref| (scale-free, so one floor fits every shape).
FLOOR = {"float32": 1e-5, "float16": 1e-3, "bfloat16": 8e-3}
# The baseline is checked against a fixed bound: generous, it only catches a broken reference.
BASELINE_BOUND = {"float32": 1e-4, "float16": 1e-2, "bfloat16": 5e-2}


@dataclass(frozen=True)
class Check:
    max_abs_err: float
    rel_err: float  # ||out - ref|| / ||ref||
    scaled_err: float  # max_abs_err / max |ref|: what the pass rule compares
    tolerance: float  # the bound on scaled_err this variant had to meet
    passed: bool
    reason: str


def refill(inputs: Inputs, fresh: Inputs) -> None:
    """Copy a fresh draw into the same tensors: a prepared call (a compiled graph, a module holding
    the weights) keeps pointing at them, and must compute the new answer, not a remembered one."""
    with torch.no_grad():
        for name, tensor in inputs.items():
            tensor.copy_(fresh[name])


def compare(out: torch.Tensor, ref: torch.Tensor, dtype: str, baseline_err: float | None) -> Check:
    if out.shape != ref.shape:
        return Check(float("nan"), float("nan"), float("nan"), float("nan"), False,
                     f"output shape {tuple(out.shape)} != reference shape {tuple(ref.shape)}")
    diff = (out.double() - ref).abs()
    scale = ref.abs().max().item() or 1.0
    max_abs = diff.max().item()
    rel = (diff.norm() / (ref.norm() or 1.0)).item()
    scaled = max_abs / scale
    if baseline_err is None:
        tolerance = BASELINE_BOUND[dtype]
    else:
        tolerance = 2.0 * baseline_err + FLOOR[dtype]
    if not torch.isfinite(out).all():
        return Check(max_abs, rel, scaled, tolerance, False, "output has NaN or Inf")
    passed = scaled <= tolerance
    reason = "" if passed else (f"max error {scaled:.2e} (relative to max |ref|) exceeds "
                                f"tolerance {tolerance:.2e}")
    return Check(max_abs, rel, scaled, tolerance, passed, reason)


def check_call(op: Op, case: Case, inputs: Inputs, call: Call, baseline_err: float | None,
               generator: torch.Generator) -> Check:
    """Refill `inputs` (the tensors `call` reads) with a fresh draw, then compare."""
    refill(inputs, op.make_inputs(case, generator))
    with torch.no_grad():
        return compare(call(), op.reference(inputs), case.dtype, baseline_err)
