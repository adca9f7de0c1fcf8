"""The correctness pass: call, and compare with a float64 reference computed from the same
inputs. Low-precision rule (flash-attention / Liger style): a variant passes if its error is at
most twice eager's error in the same dtype, plus a small dtype floor.

The harness checks a variant on the inputs it was prepared with, which stay as they are for
its timing and profile (kernels/api.py's contract: set-up derived from the inputs, such as a
transposed weight, is allowed). What it must not do is return a result computed once: the output
of the call before the checked one is overwritten with NaN, so a call that hands back an
earlier tensor without recomputing it fails, with that reason (no call is added to the pass:
the harness gives the last warm-up call's output). A test of a kernel's
plumbing may refill the inputs in place first, to see that the call reads them, not a copy."""
from __future__ import annotations

import torch

from dataclasses import replace

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
    """Copy a fresh draw into the same tensors: a prepared call that reads them (a compiled graph,
    a module holding the weights) must compute the new answer, not a remembered one."""
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


def compare(out: torch.Tensor, ref: torch.Tensor, dtype: str, baseline_err: float | None,
            floor: float | None = None) -> Check:
    """`floor`: instead of the dtype's, for a kernel whose arithmetic is known to be looser
    (gpu_check_configs.TF32X3_FLOOR)."""
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
        tolerance = 2.0 * baseline_err + (FLOOR[dtype] if floor is None else floor)
    if not torch.isfinite(out).all():
        return Check(max_abs, rel, scaled, tolerance, "output has NaN or Inf")
    problem = "" if scaled <= tolerance else (f"max error {scaled:.2e} (relative to the row's "
                                              f"max |ref|) exceeds tolerance {tolerance:.2e}")
    return Check(max_abs, rel, scaled, tolerance, problem)


def check_call(op: Op, case: Case, inputs: Inputs, call: Call, baseline_err: float | None,
               refill_from: torch.Generator | None = None, earlier=None,
               floor: float | None = None) -> Check:
    """Call and compare with the reference on `inputs` (the tensors `call` reads). `earlier`:
    the output of the call before (else one more call makes it), overwritten first; with
    `refill_from`, the inputs are refilled with a fresh draw from it first (tests of a kernel's
    plumbing); `floor`: as compare's."""
    if refill_from is not None:
        refill(inputs, op.make_inputs(case, refill_from))
    with torch.no_grad():
        if earlier is None:
            earlier = call()
        poisoned = _poison(earlier, inputs)
        out = call()
        check = compare(out, op.reference(case, inputs), case.dtype, baseline_err, floor)
    if poisoned and not check.passed and _shares_storage(out, earlier):
        check = replace(check, problem=REMEMBERED)
    return check


REMEMBERED = ("the call returned a tensor of an earlier call without computing it again (its "
              "values were overwritten between two calls and came back as they were): a call "
              "must compute each time; a result computed in prepare is timed as doing nothing")


def _shares_storage(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()


def _poison(out, inputs: Inputs) -> bool:
    """Overwrite a floating output with NaN, unless it shares memory with an input (an in-place
    variant: its inputs must stay as they are). Whether it did."""
    if not isinstance(out, torch.Tensor) or not out.is_floating_point() or out.numel() == 0:
        return False
    if any(_shares_storage(out, t) for t in inputs.values() if isinstance(t, torch.Tensor)):
        return False
    out.fill_(float("nan"))
    return True
