"""Every registered variant, checked against the float64 reference on a small odd shape (with
every choice of a categorical parameter), in every dtype it supports; generated from the
registry, so a new variant is tested without a new test. A variant that cannot run on a case
says so through its own `supports`, the rule the harness uses too. Triton variants run under
TRITON_INTERPRET=1 on machines without CUDA."""
import pytest
import torch

from kernels import registry
from suites.harness.correctness import check_call

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
DTYPES = ("float32", "float16", "bfloat16")


def _params():
    for op in registry.ops():
        for name in registry.variant_names(op.name):
            variant = registry.get_variant(op.name, name)
            for dtype in DTYPES:
                # A compile costs seconds on a CPU: one dtype is enough to check the wrapper.
                if variant.family == "compile" and dtype != "float32" and DEVICE == "cpu":
                    continue
                for case in op.test_cases(dtype, DEVICE, seed=3):
                    yield pytest.param(op.name, name, case, id=f"{op.name}-{name}-{case.id}")


def _run(op_name, variant_name, case, baseline_err=None):
    op = registry.get_op(op_name)
    variant = registry.get_variant(op_name, variant_name)
    generator = torch.Generator(device=DEVICE).manual_seed(11)
    inputs = op.make_inputs(case, generator)
    with variant.scope():
        call = variant.prepare(case, inputs)
        call()  # the first call (compiles); the check below runs on a fresh draw
        return check_call(op, case, inputs, call, baseline_err, refill_from=generator)


@pytest.mark.parametrize("op_name, variant_name, case", list(_params()))
def test_variant_matches_float64_reference(op_name, variant_name, case):
    reason = registry.get_variant(op_name, variant_name).supports(case)
    if reason:
        pytest.skip(reason)
    baseline = _run(op_name, registry.get_op(op_name).baseline, case)
    assert baseline.passed, baseline.problem
    check = _run(op_name, variant_name, case, baseline.scaled_err)
    assert check.passed, f"{op_name}/{variant_name} {case.id}: {check.problem}"


def test_every_op_has_test_cases_for_every_choice():
    for op in registry.ops():
        cases = op.test_cases("float32", DEVICE)
        expected = 1
        for values in op.choices.values():
            expected *= len(values)
        assert len(cases) == expected and len({c.id for c in cases}) == expected, op.name
