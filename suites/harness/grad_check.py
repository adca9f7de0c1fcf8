"""The correctness pass of a training mode: the forward's output and every input's gradient
against the float64 reference's, by the forward's rule (correctness.py): per tensor, the worst
row's error relative to that row's largest reference value; the baseline against a fixed bound,
every other variant against twice the baseline's error for that tensor plus the dtype's floor.

Two things differ from the forward, both for what backward does to rounding: the dtype's floor
is GRAD_FLOOR_FACTOR times the forward's (a gradient is a longer chain: dW sums over every row,
and softmax's backward subtracts two near-equal terms), and a row of a gradient whose values are
all near zero is measured against a hundredth of the tensor's largest value (the forward: a
thousandth): the first query row of causal attention has dq = 0 exactly in float64, by
cancellation, and a float32 kernel's 1e-7 there would otherwise read as a 1e-4 error.

One forward and one backward on the step's own path (grad mode on: a compiled variant is checked
in the graph it is timed in), the gradient fed to backward the step's own; the reference runs
op.reference on float64 copies of the inputs that require grad, and backward with the same
gradient in float64. A wrong gradient is an incorrect row naming the tensor.
"""
from __future__ import annotations

import torch

from kernels.base import Case, Inputs, Op
from suites.harness.correctness import BASELINE_BOUND, FLOOR, compare
from suites.harness.training import Step, grad_output
from suites.results.row import Check


def reference_gradients(op: Op, case: Case, inputs: Inputs, leaves: list[str],
                        grad: torch.Tensor) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """The float64 reference's output and its gradients for the `leaves` inputs."""
    exact = {name: t.detach().double().requires_grad_(name in leaves)
             if isinstance(t, torch.Tensor) and t.is_floating_point() else t
             for name, t in inputs.items()}
    with torch.enable_grad():
        ref = op.reference(case, exact)
        if not ref.requires_grad:
            raise RuntimeError(f"{op.name}'s reference is not differentiable (computed under "
                               "no_grad or detached): no reference gradient to check against")
        ref.backward(grad.double())
    return ref.detach(), {name: exact[name].grad for name in leaves}


def grad_errors(got: dict[str, torch.Tensor | None],
                exact: dict[str, torch.Tensor]) -> dict[str, float]:
    """Per tensor, the scaled error (inf where the variant left no gradient)."""
    out = {}
    for name, ref in exact.items():
        value = got.get(name)
        if value is None or ref is None or value.shape != ref.shape:
            out[name] = float("inf")
        elif not torch.isfinite(value).all():
            out[name] = float("nan")
        else:
            out[name] = worst_row_error((value.double() - ref).abs(), ref)
    return out


GRAD_FLOOR_FACTOR = 4.0
NEAR_ZERO_ROW = 1e-2  # of the tensor's largest |value|


def worst_row_error(diff: torch.Tensor, ref: torch.Tensor) -> float:
    """As correctness's, per row of the last dimension, with NEAR_ZERO_ROW for empty rows."""
    if diff.numel() == 0:
        return 0.0
    width = diff.shape[-1] if diff.dim() else 1
    diff_rows, ref_rows = diff.reshape(-1, width), ref.abs().reshape(-1, width)
    floor = max(ref_rows.max().item() * NEAR_ZERO_ROW, 1e-30)
    scale = ref_rows.max(dim=1).values.clamp_min(floor)
    return (diff_rows.max(dim=1).values / scale).max().item()


def tolerances(dtype: str, leaves, baseline: dict[str, float] | None) -> dict[str, float]:
    if baseline is None:
        return {name: BASELINE_BOUND[dtype] for name in leaves}
    floor = GRAD_FLOOR_FACTOR * FLOOR[dtype]
    return {name: 2.0 * baseline.get(name, 0.0) + floor for name in leaves}


def check_step(op: Op, case: Case, step: Step, baseline_err: float | None,
               baseline_grads: dict[str, float] | None
               ) -> tuple[Check, dict[str, float], dict[str, float]]:
    """(the forward's check, each gradient's error, each gradient's tolerance); the check's
    problem names the first gradient over its bound."""
    step.reset()
    with torch.enable_grad():
        out = step.forward()
        if step.grad is None:
            step.grad = grad_output(out, step.generator)
        torch.autograd.backward(out, step.grad)
    got = step.gradients()
    ref, exact = reference_gradients(op, case, step.inputs, step.leaves, step.grad)
    step.reset()
    check = compare(out.detach(), ref, case.dtype, baseline_err)
    errors = grad_errors(got, exact)
    bounds = tolerances(case.dtype, step.leaves, baseline_grads)
    if check.passed:
        for name in step.leaves:
            err = errors[name]
            if err != err or err > bounds[name]:
                problem = (f"gradient of {name}: none (no backward reached it)"
                           if err == float("inf") else
                           f"gradient of {name}: NaN or Inf" if err != err else
                           f"gradient of {name}: max error {err:.2e} (relative to the row's max "
                           f"|ref|) exceeds tolerance {bounds[name]:.2e}")
                check = Check(check.max_abs_err, check.rel_err, check.scaled_err,
                              check.tolerance, problem)
                break
    return check, errors, bounds


def errors_text(errors: dict[str, float]) -> str:
    """`x 1.2e-06, weight 3.1e-06`: the grad_errors column."""
    return ", ".join(f"{name} {err:.2g}" for name, err in errors.items())
