"""The correctness pass: refill the inputs in place with a fresh random draw, call, and compare
with a float64 reference. Low-precision rule (flash-attention / Liger style): a variant passes if
its error is at most twice eager's error in the same dtype, plus a small dtype floor."""
from __future__ import annotations

import torch

from kernels.base import Call, Case, Inputs, Op
from suites.results.row import Check

# Error is measured per output row (the last dimension) as max |out - ref| / max |ref| over the
# row, and the worst row counts: scale-free, so one floor fits every shape, and an error confined
# to rows of small values (late query rows of causal attention are ~1/sqrt(i)) is not averaged
# away by rows of large ones. Rows whose values are all near zero are measured against a
# thousandth of the output's largest value instead.
FLOOR = {"float32": 1e-5, "float16": 1e-3, "bfloat16": 8e-3}
# The baseline is checked against a fixed bound: generous, it only catches a broken reference.
BASELINE_BOUND = {"float32": 1e-4, "float16": 1e-2, "bfloat16": 5e-2}


def refill(inputs: Inputs, fresh: Inputs) -> None:
    """Copy a fresh draw into the same tensors: a prepared call (a compiled graph, a module holding
    the weights) keeps pointing at them, and must compute the new answer, not a remembered one."""
    with torch.no_grad():
        for name, tensor in inputs.items():
            tensor.copy_(fresh[name])


def _worst_row_error(diff: torch.Tensor, ref: torch.Tensor) -> float:
    if diff.numel() == 0:
        return 0.0
    width = diff.shape[-1] if diff.dim() else 1
    diff_rows, ref_rows = diff.reshape(-1, width), ref.abs().reshape(-1, width)
    floor = max(ref_rows.max().item() * 1e-3, 1e-30)
    scale = ref_rows.max(dim=1).values.clamp_min(floor)
    return (diff_rows.max(dim=1).values / scale).max().item()


def compare(out: torch.Tensor, ref: torch.Tensor, dtype: str, baseline_err: float | None) -> Check:
    if out.shape != ref.shape:
        nan = float("nan")
        return Check(nan, nan, nan, nan,
                     f"output shape {tuple(out.shape)} != reference shape {tuple(ref.shape)}")
    diff = (out.double() - ref).abs()
    max_abs = diff.max().item()
    rel = (diff.norm() / (ref.norm() or 1.0)).item()
    scaled = _worst_row_error(diff, ref)
    if baseline_err is None:
        tolerance = BASELINE_BOUND[dtype]
    else:
        tolerance = 2.0 * baseline_err + FLOOR[dtype]
    if not torch.isfinite(out).all():
        return Check(max_abs, rel, scaled, tolerance, "output has NaN or Inf")
    problem = "" if scaled <= tolerance else (f"max error {scaled:.2e} (relative to the row's "
                                              f"max |ref|) exceeds tolerance {tolerance:.2e}")
    return Check(max_abs, rel, scaled, tolerance, problem)


def check_call(op: Op, case: Case, inputs: Inputs, call: Call, baseline_err: float | None,
               generator: torch.Generator) -> Check:
    """Refill `inputs` (the tensors `call` reads) with a fresh draw, then compare."""
    refill(inputs, op.make_inputs(case, generator))
    with torch.no_grad():
        return compare(call(), op.reference(case, inputs), case.dtype, baseline_err)
