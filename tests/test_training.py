"""The training modes (issue 21): the mode axis in case ids and configs, what a Step runs and
resets outside the timed span, the gradient check against the float64 reference (a wrong
gradient is named), activation memory, and every variant that trains checked on the registry's
odd shapes, its gradients against the reference's (Triton under the interpreter here)."""
import pytest
import torch

from kernels import registry
from kernels.base import MODES, Case, Variant
from suites.common.errors import ConfigError
from suites.harness import grad_check
from suites.harness.training import Step, as_leaves, saved_bytes

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def _step(op_name: str, variant_name: str, case: Case) -> Step:
    op = registry.get_op(op_name)
    variant = registry.get_variant(op_name, variant_name)
    inputs = op.make_inputs(case, torch.Generator(device=DEVICE).manual_seed(11))
    leaves = as_leaves(inputs)
    forward = variant.training_prepare()(case, inputs)
    return Step(case.mode, forward, inputs, leaves, torch.Generator(device=DEVICE).manual_seed(2))


def _check(op_name, variant_name, case, baseline=None):
    variant = registry.get_variant(op_name, variant_name)
    with torch.enable_grad(), variant.scope():
        step = _step(op_name, variant_name, case)
        step()  # the first call (compiles forward and backward)
        base_err, base_grads = (None, None) if baseline is None else baseline
        return grad_check.check_step(registry.get_op(op_name), case, step, base_err, base_grads)


def _params():
    for op in registry.ops():
        for name in registry.variant_names(op.name):
            variant = registry.get_variant(op.name, name)
            if variant.training_prepare() is None:
                continue
            for dtype in ("float32", "bfloat16"):
                # A compile of forward and backward costs seconds on a CPU: fp32 checks it.
                if variant.family == "compile" and (dtype != "float32" or DEVICE == "cpu"
                                                    and op.name not in ("norm", "mlp")):
                    continue
                for case in op.test_cases(dtype, DEVICE, seed=3):
                    case = Case(case.op, case.params, case.dtype, case.device, case.seed,
                                "fwd_bwd")
                    yield pytest.param(op.name, name, case, id=f"{op.name}-{name}-{case.id}")


@pytest.mark.parametrize("op_name, variant_name, case", list(_params()))
def test_every_training_variant_matches_the_reference_gradients(op_name, variant_name, case):
    reason = registry.get_variant(op_name, variant_name).supports(case)
    if reason:
        pytest.skip(reason)
    check, errors, _ = _check(op_name, registry.get_op(op_name).baseline, case)
    assert check.passed, check.problem
    got, got_errors, bounds = _check(op_name, variant_name, case, (check.scaled_err, errors))
    assert got.passed, f"{op_name}/{variant_name} {case.id}: {got.problem}"
    assert set(got_errors) == set(errors) and all(got_errors[k] <= bounds[k] for k in errors)


def test_the_mode_is_in_the_case_id_past_the_default():
    case = Case.make("norm", {"T": 8, "D": 16, "norm": "rms"}, "float32", "cpu")
    assert case.id == "T8-D16-rms-fp32" and not case.trains
    trains = Case.make("norm", {"T": 8, "D": 16, "norm": "rms"}, "float32", "cpu",
                       mode="fwd_bwd")
    assert trains.id == "T8-D16-rms-fp32-fwd_bwd" and trains.trains
    assert MODES[0] == "fwd_nograd"


def test_suite_modes_are_checked_and_swept(tmp_path):
    from suites.config.compose import compose, resolved
    from suites.config.run_spec import build_run_spec

    given = {"suite": "norm", "device": "cpu", "suite.dtypes": ["float32"],
             "suite.axes": {"T": [8], "D": [16], "norm": ["rms"]}}
    spec = build_run_spec(resolved(compose(given)), tmp_path)
    assert [c.mode for c in spec.cases()] == ["fwd_nograd"]
    spec = build_run_spec(resolved(compose({**given, "suite.modes": ["fwd", "fwd_bwd"]})),
                          tmp_path)
    assert [c.id for c in spec.cases()] == ["T8-D16-rms-fp32-fwd", "T8-D16-rms-fp32-fwd_bwd"]
    for bad, said in ((["train"], "unknown mode 'train'"), ([], "empty list"),
                      (["fwd", "fwd"], "suite.modes")):
        with pytest.raises(ConfigError, match=said):
            build_run_spec(resolved(compose({**given, "suite.modes": bad})), tmp_path)


def test_a_step_resets_outside_the_call_and_bwd_runs_its_forward_there():
    """bwd: the forward runs in reset (outside the timed span), the call is the backward alone;
    every call starts from no gradient, so none accumulates into an earlier one."""
    forwards = []
    x = torch.nn.Parameter(torch.randn(4, 3))
    inputs = {"x": x}

    def forward():
        forwards.append(1)
        return (x * 2.0).sum(dim=1)

    step = Step("bwd", forward, inputs, ["x"], torch.Generator().manual_seed(0))
    step.reset()
    assert len(forwards) == 1 and x.grad is None
    step()
    assert len(forwards) == 1 and x.grad is not None  # the backward alone
    first = x.grad.clone()
    step.reset()
    step()
    assert torch.equal(x.grad, first)  # reset: not 2x, as an accumulated gradient would be
    step()  # no reset before it: the call does it (warm-up), forward included
    assert len(forwards) == 3 and torch.equal(x.grad, first)

    fwd = Step("fwd", forward, inputs, ["x"], torch.Generator().manual_seed(0))
    with torch.enable_grad():
        assert fwd().requires_grad


class _WrongWeightGrad(torch.autograd.Function):
    """RMSNorm whose weight gradient is off by 10%."""

    @staticmethod
    def forward(ctx, x, w):
        ctx.save_for_backward(x, w)
        return torch.nn.functional.rms_norm(x, (x.shape[-1],), w, 1e-6)

    @staticmethod
    def backward(ctx, dy):
        x, w = ctx.saved_tensors
        with torch.enable_grad():
            xd, wd = x.detach().requires_grad_(), w.detach().requires_grad_()
            y = torch.nn.functional.rms_norm(xd, (x.shape[-1],), wd, 1e-6)
            dx, dw = torch.autograd.grad(y, (xd, wd), dy)
        return dx, dw * 1.1


def test_a_wrong_gradient_is_incorrect_and_names_the_tensor():
    op = registry.get_op("norm")
    case = Case.make("norm", {"T": 37, "D": 45, "norm": "rms"}, "float32", "cpu",
                     mode="fwd_bwd")
    with torch.enable_grad():
        base, base_errors, _ = grad_check.check_step(op, case, _step("norm", "eager", case),
                                                     None, None)
        inputs = op.make_inputs(case, torch.Generator().manual_seed(11))
        leaves = as_leaves(inputs)
        wrong = Step("fwd_bwd", lambda: _WrongWeightGrad.apply(inputs["x"], inputs["weight"]),
                     inputs, leaves, torch.Generator().manual_seed(2))
        check, errors, _ = grad_check.check_step(op, case, wrong, base.scaled_err, base_errors)
    assert check.passed is False and check.problem.startswith("gradient of weight: max error")
    assert errors["x"] < 1e-5 < errors["weight"]


def test_activation_memory_is_what_backward_keeps():
    """The unfused norm keeps its intermediates for backward; F.layer_norm keeps less; the
    inputs themselves never count."""
    case = Case.make("norm", {"T": 64, "D": 96, "norm": "layer"}, "float32", "cpu", mode="fwd")
    with torch.enable_grad():
        eager, functional = (_step("norm", name, case) for name in ("eager", "functional"))
        (eager_mb, eager_n), (lib_mb, lib_n) = (saved_bytes(s.forward, s.inputs)
                                                for s in (eager, functional))
    assert eager_mb > lib_mb and eager_n >= 2
    assert eager_mb < 5 * 64 * 96 * 4 / 2 ** 20  # intermediates of (T, D), not more


def test_a_forward_only_variant_is_skipped_in_a_training_mode():
    from suites.harness.variant_passes import no_backward

    forward_only = Variant("mlp", "fwd_only", "triton", lambda case, inputs: None)
    case = Case.make("mlp", {"T": 8, "D": 16, "I": 32}, "float32", "cpu", mode="bwd")
    assert "has no backward" in no_backward(forward_only, case)
    assert no_backward(forward_only, Case.make("mlp", {"T": 8, "D": 16, "I": 32}, "float32",
                                                "cpu")) is None
    assert no_backward(registry.get_variant("norm", "triton"), case) is None  # it has one


def _row(case_id, variant, mean, low=None, high=None, act=None, saved=None, status="ok"):
    return {"case_id": case_id, "variant": variant, "status": status, "mean_us": mean,
            "speedup": None if low is None else (low + high) / 2, "speedup_low": low,
            "speedup_high": high, "activation_mb": act, "saved_tensors": saved}


def test_training_findings_across_the_modes_of_a_case():
    from suites.traces.findings.measured import row_findings

    rows = [_row("T64-fp32-fwd", "eager", 40.0, act=0.5, saved=5),
            _row("T64-fp32-bwd", "eager", 90.0),
            _row("T64-fp32-fwd_bwd", "eager", 120.0),
            _row("T64-fp32-fwd", "compile", 20.0, 1.8, 2.2, act=0.2, saved=2),
            _row("T64-fp32-bwd", "compile", 88.0, 0.9, 1.1),
            _row("T64-fp32-fwd_bwd", "compile", 100.0, 1.1, 1.3),
            _row("T64-fp32", "compile", 10.0, 1.5, 2.5)]  # inference: none of these findings
    found = {(f["case_id"], f["variant"], f["code"]): f["statement"]
             for f in row_findings(rows, "norm", "eager")}
    assert found[("T64-fp32-fwd_bwd", "eager", "backward_share")].startswith(
        "backward is 75% of the training step (90 us of 120 us")
    assert found[("T64-fp32-fwd_bwd", "compile", "fusion_pays_where")].startswith(
        "against the baseline it pays in forward only: forward 2x (1.8-2.2), backward 1x")
    assert found[("T64-fp32-fwd", "compile", "activations_saved")].startswith(
        "keeps 2 tensor(s), 0.2 MiB, for backward against the baseline's 5, 0.5 MiB: 0.3 MiB "
        "less")
    assert not any(case == "T64-fp32" for case, _, _ in found)


def test_the_report_says_where_training_time_goes():
    import pandas as pd
    from suites.reports.run.answer import training_lines
    from suites.traces.findings.measured import row_findings

    rows = [_row("T64-fp32-fwd", "eager", 40.0, act=0.5, saved=5),
            _row("T64-fp32-bwd", "eager", 90.0), _row("T64-fp32-fwd_bwd", "eager", 120.0),
            _row("T64-fp32-fwd", "compile", 20.0, 1.8, 2.2, act=0.2, saved=2),
            _row("T64-fp32-bwd", "compile", 88.0, 0.9, 1.1),
            _row("T64-fp32-fwd_bwd", "compile", 100.0, 1.1, 1.3)]
    frame = pd.DataFrame(rows).assign(mode=[r["case_id"].split("-")[-1] for r in rows])
    lines = training_lines(frame, pd.DataFrame(row_findings(rows, "norm", "eager")), "eager",
                           str)
    assert lines[0] == "training: backward is 75% of a training step for eager (1 case(s))"
    assert lines[1] == "training, compile: pays in forward only in 1 case(s)"
    assert lines[2].startswith("training, compile: keeps 2 tensor(s)")
    assert training_lines(frame.assign(mode="fwd_nograd"), pd.DataFrame(), "eager", str) == []
