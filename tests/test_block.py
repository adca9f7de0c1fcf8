"""What is particular to the decoder block; tests/test_variants.py already checks every variant
against the float64 reference. Triton runs under TRITON_INTERPRET=1 on machines without CUDA."""
import pytest
import torch

from kernels import block, registry
from kernels.base import Case
from kernels.triton import runtime as triton_runtime
from specs import PROFILE, run_spec
from suites.harness.case_run import measure
from suites.results.columns import Status
from suites.traces.findings import FindingContext, run_detectors
from suites.traces.findings.codes import BOUND_CODES, Code

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
OP = block.DecoderBlockOp()  # a fresh instance: the registered one is not needed here


def _case(dtype="float32", **sizes):
    return Case.make("block", {**OP.test_shape, **sizes}, dtype, DEVICE, seed=3)


def _inputs(case, seed=0):
    return OP.make_inputs(case, torch.Generator(device=DEVICE).manual_seed(seed))


def _refill(inputs, case, seed):
    """What the correctness pass does: copy a fresh draw into the same tensors."""
    with torch.no_grad():
        for name, fresh in _inputs(case, seed).items():
            inputs[name].copy_(fresh)


@pytest.mark.skipif(DEVICE != "cpu", reason="a CPU's SDPA inside the block")
def test_the_eager_block_on_a_cpu_gets_its_bound(tmp_path):
    """The eager block calls F.scaled_dot_product_attention: on a CPU its _for_cpu kernel is
    CPU work, so the row has kernels, device time and one bound, never "not profiled"."""
    case = _case()
    spec = run_spec(tmp_path, case, ["eager"], profile=PROFILE)
    outcome = measure(registry.get_op("block"), registry.get_variant("block", "eager"), case,
                      spec)
    assert outcome.row.status in (Status.OK, Status.NOISY), outcome.row.reason
    assert outcome.profile.analysis.mode == "cpu"
    assert outcome.row.profile.n_kernels > 0 and outcome.row.profile.device_us > 0
    found = {f.code for f in run_detectors(FindingContext(profile=outcome.profile))}
    assert len(found & set(BOUND_CODES)) == 1 and Code.NO_VERDICT not in found


def test_flops_model():
    case = Case.make("block", {"B": 2, "S": 16, "D": 64, "H": 4, "I": 96}, "float32", "cpu")
    T = 32  # B * S tokens
    qkv = 2 * T * 64 * 192  # 2*T*D*3D
    attn = 0.5 * 4 * 2 * 4 * 16 ** 2 * 16  # causal half of 4*B*H*S^2*(D/H)
    wo = 2 * T * 64 * 64  # 2*T*D*D
    mlp = 6 * T * 64 * 96  # 6*T*D*I
    assert OP.flops(case) == qkv + attn + wo + mlp == 2_293_760
    weights = 3 * 64 * 64 + 64 * 64 + 3 * 64 * 96 + 2 * 64
    assert OP.bytes_ideal(case) == 4 * (2 * T * 64 + weights)
    assert OP.bytes_unfused(case) > OP.bytes_moved(case, "triton") > OP.bytes_ideal(case)


def test_heads_must_divide_D():
    with pytest.raises(ValueError, match="D=60 is not divisible by H=7"):
        _inputs(_case(H=7))


def test_eager_module_reads_the_input_tensors():
    """The module reads the input tensors, not copies: refilled in place, it computes the new
    answer."""
    case = _case()
    inputs = _inputs(case)
    module, (x,) = block._parts(case, inputs)
    shared = {"norm1": module.norm1, "w_qkv": module.qkv.weight, "w_o": module.o.weight,
              "norm2": module.norm2, "w_gate": module.gate.weight, "w_up": module.up.weight,
              "w_down": module.down.weight}
    assert all(p.data_ptr() == inputs[k].data_ptr() for k, p in shared.items())
    with torch.no_grad():
        before = module(x).clone()
        _refill(inputs, case, seed=1)
        after = module(x)
    assert not torch.allclose(before, after)
    torch.testing.assert_close(after.double(), OP.reference(case, inputs), rtol=1e-4, atol=1e-4)


def _needs_triton():
    reason = triton_runtime.supports(_case())
    if reason:
        pytest.skip(reason)


def test_triton_splits_qkv_without_copies_and_matches_eager(monkeypatch):
    _needs_triton()
    from kernels.triton import flash_attention as fa
    from kernels.triton import gemm

    case = _case()
    B, S, D, H = case["B"], case["S"], case["D"], case["H"]
    seen = {"qkv": [], "residuals": []}
    real_gemm, real_fa = gemm.matmul_bias_act, fa.flash_attention

    def gemm_spy(a, b, bias=None, activation="none", residual=None):
        out = real_gemm(a, b, bias, activation, residual)
        seen["qkv"].append(out)
        seen["residuals"].append(None if residual is None else residual.data_ptr())
        return out

    def fa_spy(q, k, v, causal=True):
        seen["qkv_views"] = (q, k, v)
        return real_fa(q, k, v, causal=causal)

    monkeypatch.setattr(gemm, "matmul_bias_act", gemm_spy)  # before prepare: it imports lazily
    monkeypatch.setattr(fa, "flash_attention", fa_spy)
    inputs = _inputs(case)
    out = block._prepare_triton(case, inputs)()

    qkv = seen["qkv"][0]  # (T, 3D), the first GEMM's output
    q, k, v = seen["qkv_views"]
    for i, t in enumerate((q, k, v)):  # (B, H, S, D/H) windows onto qkv, not copies
        assert t.untyped_storage().data_ptr() == qkv.untyped_storage().data_ptr()
        assert t.data_ptr() == qkv.data_ptr() + i * D * qkv.element_size()
        assert t.shape == (B, H, S, D // H) and t.stride() == (S * 3 * D, D // H, 3 * D, 1)
    # Both residual adds ran in GEMM epilogues: x for attention, h (the Wo output) for the MLP.
    assert seen["residuals"] == [None, inputs["x"].data_ptr(), seen["qkv"][1].data_ptr()]

    module, (x,) = block._parts(case, inputs)
    with torch.no_grad():
        torch.testing.assert_close(out, module(x), rtol=1e-4, atol=1e-4)


def test_triton_skips_head_sizes_flash_attention_cannot_take():
    pytest.importorskip("triton")
    case = Case.make("block", {"B": 1, "S": 8, "D": 512, "H": 2, "I": 8}, "float32", "cuda")
    assert "D/H=256" in registry.get_variant("block", "triton").supports(case)
