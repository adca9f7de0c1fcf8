"""Every registered variant, checked against the float64 reference on a small odd shape, in every
dtype it supports; generated from the registry, so a new variant is tested without a new test.
Triton variants run under TRITON_INTERPRET=1 on machines without CUDA."""
import pytest
import torch

from kernels import registry
from kernels.base import Case
from kernels.triton.runtime import unavailable_reason
from suites.harness.correctness import check_call

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
DTYPES = ("float32", "float16", "bfloat16")


def _params():
    for op_name in registry.op_names():
        for name in registry.variant_names(op_name):
            variant = registry.get_variant(op_name, name)
            for dtype in DTYPES:
                # A compile costs seconds on a CPU: one dtype is enough to check the wrapper.
                if variant.family == "compile" and dtype != "float32" and DEVICE == "cpu":
                    continue
                yield pytest.param(op_name, name, dtype, id=f"{op_name}-{name}-{dtype}")


def _case(op_name: str, dtype: str) -> Case:
    op = registry.get_op(op_name)
    assert op.test_shape, f"op {op_name} needs a test_shape"
    return Case.make(op_name, op.test_shape, dtype, DEVICE, seed=3)


def _run(op_name, variant_name, case, baseline_err=None):
    op = registry.get_op(op_name)
    variant = registry.get_variant(op_name, variant_name)
    generator = torch.Generator(device=DEVICE).manual_seed(11)
    inputs = op.make_inputs(case, generator)
    with variant.scope():
        call = variant.prepare(case, inputs)
        call()  # the first call (compiles); the check below runs on a fresh draw
        return check_call(op, case, inputs, call, baseline_err, generator)


@pytest.mark.parametrize("op_name, variant_name, dtype", list(_params()))
def test_variant_matches_float64_reference(op_name, variant_name, dtype):
    variant = registry.get_variant(op_name, variant_name)
    case = _case(op_name, dtype)
    if variant.family == "triton":
        reason = unavailable_reason(case.device_type, for_timing=False)
        if reason:
            pytest.skip(reason)
    else:
        reason = variant.supports(case)
        if reason:
            pytest.skip(reason)
    baseline = _run(op_name, registry.get_op(op_name).baseline, case)
    assert baseline.passed, baseline.reason
    check = _run(op_name, variant_name, case, baseline.scaled_err)
    assert check.passed, f"{op_name}/{variant_name} {dtype}: {check.reason}"
    assert check.scaled_err <= check.tolerance
