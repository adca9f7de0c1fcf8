"""What is specific to the attention block: its cost model, what its eager forms run (from the
profile), and SDPA backends that a device lacks. Correctness of every variant is in
test_variants.py, generated from the registry."""
import math
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from kernels import registry
from kernels.base import Case
from suites.harness.case_run import measure
from suites.results.columns import Status
from suites.traces.findings import FindingContext, run_detectors
from suites.traces.findings.codes import BOUND_CODES, Code
from specs import PROFILE, run_spec

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
TINY = {"B": 1, "H": 2, "S": 37, "D": 16}
# The variants that pin one backend, written out: the test checks the registry's pinning.
PINNED = {"sdpa_math": SDPBackend.MATH, "sdpa_efficient": SDPBackend.EFFICIENT_ATTENTION,
          "sdpa_flash": SDPBackend.FLASH_ATTENTION, "sdpa_cudnn": SDPBackend.CUDNN_ATTENTION}


def _case(dtype="float32", sizes=TINY) -> Case:
    return Case.make("attention", sizes, dtype, DEVICE)


def _measure(variant: str, tmp_path: Path, case: Case | None = None):
    case = case or _case()
    spec = run_spec(tmp_path, case, [variant], profile=PROFILE)
    outcome = measure(registry.get_op("attention"), registry.get_variant("attention", variant),
                      case, spec, baseline_err=None)
    # Noisy (a busy machine spoiled the timing) still ran, checked and profiled: what these
    # tests read.
    assert outcome.row.status in (Status.OK, Status.NOISY, Status.SKIPPED), outcome.row.reason
    return outcome


def test_cost_model_for_the_series_shape():
    op = registry.get_op("attention")
    case = _case("bfloat16", {"B": 8, "H": 16, "S": 1024, "D": 64})
    assert case.id == "B8-H16-S1024-D64-bf16"
    assert op.flops(case) == 4 * 8 * 16 * 1024**2 * 64 * 0.5  # causal: half the square
    ideal = 4 * 8 * 16 * 1024 * 64 * 2  # q, k, v, out in bf16
    assert op.bytes_ideal(case) == ideal == 64 * 2**20
    scores = 8 * 16 * 1024**2 * 2  # one pass over the (B, H, S, S) scores: 256 MiB
    assert op.bytes_moved(case, "naive") == op.bytes_unfused(case) == ideal + 10 * scores
    assert op.bytes_moved(case, "naive_inplace") == ideal + 8 * scores
    assert op.bytes_moved(case, "compile") == ideal + 4 * scores
    for fused in ("sdpa_flash", "sdpa_efficient", "sdpa_cudnn", "triton_flash"):
        assert op.bytes_moved(case, fused) == ideal
    assert op.bytes_moved(case, "sdpa") is None and op.bytes_moved(case, "sdpa_math") is None


def test_inplace_differs_only_in_masked_fill(tmp_path):
    naive = _measure("naive", tmp_path).profile.ops_per_call()
    inplace = _measure("naive_inplace", tmp_path).profile.ops_per_call()
    # Out of place, aten::masked_fill runs as aten::clone (a full copy of the scores) and then
    # the same aten::masked_fill_ that the in-place form calls directly.
    assert naive["aten::masked_fill"] == naive["aten::clone"] == naive["aten::masked_fill_"] == 1
    assert inplace["aten::masked_fill_"] == 1
    assert "aten::masked_fill" not in inplace and "aten::clone" not in inplace
    extra = {name for name in naive if naive[name] != inplace.get(name)}
    assert extra <= {"aten::masked_fill", "aten::clone", "aten::copy_", "aten::empty_like",
                     "aten::empty", "aten::expand", "aten::as_strided"}
    assert naive["aten::copy_"] == inplace.get("aten::copy_", 0) + 1  # the clone's copy
    # The causal mask is built once in prepare, never inside the timed call.
    for ops in (naive, inplace):
        assert not {"aten::ones", "aten::triu", "aten::tril", "aten::fill_"} & set(ops)


def test_sdpa_row_records_the_backend_that_ran(tmp_path):
    row = _measure("sdpa", tmp_path).row
    assert row.status in ("ok", "noisy") and row.profile.backend  # on this CPU: flash
    assert _measure("sdpa_math", tmp_path).row.profile.backend == "math"


@pytest.mark.skipif(DEVICE != "cpu", reason="a CPU's SDPA backends")
@pytest.mark.parametrize("variant", ["sdpa", "sdpa_flash", "sdpa_math"])
def test_sdpa_rows_on_a_cpu_have_kernels_device_time_and_a_bound(variant, tmp_path):
    """A CPU's SDPA is CPU work, its flash backend (the _for_cpu kernel) as the math one: the
    row counts its compute ops and their time as the eager rows do, and gets a CPU bound."""
    outcome = _measure(variant, tmp_path)
    assert outcome.row.profile.n_kernels > 0 and outcome.row.profile.device_us > 0
    found = {f.code for f in run_detectors(FindingContext(profile=outcome.profile))}
    assert len(found & set(BOUND_CODES)) == 1
    assert Code.NO_VERDICT not in found and Code.FAT_LEAF_OP not in found


def _backend_runs(backend, case: Case) -> bool:
    x = torch.randn(1, 1, 16, case["D"], device=case.device).to(case.torch_dtype)
    try:
        with sdpa_kernel(backend):
            F.scaled_dot_product_attention(x, x, x, is_causal=True)
        return True
    except RuntimeError:
        return False


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_missing_sdpa_backends_are_skipped_with_a_reason(dtype, tmp_path):
    case = _case(dtype)
    missing = []
    for name, backend in PINNED.items():
        reason = registry.get_variant("attention", name).supports(case)
        if _backend_runs(backend, case):
            assert reason is None, f"{name}: {reason}"
        else:
            assert reason and backend.name in reason and DEVICE in reason
            missing.append(name)
    if DEVICE == "cpu":  # what this CPU build has: math and a flash-style C++ kernel
        assert set(missing) == {"sdpa_efficient", "sdpa_cudnn"}
    for name in missing:  # a row, not an exception
        row = _measure(name, tmp_path, case).row
        assert row.status == Status.SKIPPED and "no kernel" in row.reason


def test_triton_flash_refuses_head_dims_it_cannot_hold():
    big = Case.make("attention", {**TINY, "D": 256}, "float32", "cuda")
    assert "D=256" in registry.get_variant("attention", "triton_flash").supports(big)


def test_the_chunked_reference_is_the_whole_one_and_fits_the_largest_grid_case():
    from kernels.causal_reference import SCORES_BYTES, causal_attention
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, 3, 37, 8, generator=g, dtype=torch.float64) for _ in range(3))
    scores = q @ k.transpose(-2, -1) / math.sqrt(8)
    whole = scores.masked_fill(torch.ones(37, 37, dtype=torch.bool).triu(1), float("-inf"))
    whole = torch.softmax(whole, -1) @ v
    for budget in (1, 2 * 3 * 37 * 8 * 5, SCORES_BYTES):  # one row, 5 rows, all at once
        assert torch.allclose(causal_attention(q, k, v, budget), whole, rtol=0, atol=1e-12)
    # B4 H32 S8192, the CUDA grid's largest: a score chunk of 256 MiB, not 68.7 GB.
    rows = SCORES_BYTES // (4 * 32 * 8192 * 8)
    assert rows == 32 and 4 * 32 * rows * 8192 * 8 <= SCORES_BYTES
