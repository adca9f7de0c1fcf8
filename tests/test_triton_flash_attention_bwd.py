"""Flash-attention Triton backward (dq, dk, dv) and the training forward's log-sum-exp vs float64
autograd of the explicit attention (CPU: Triton interpreter)."""
import math

import pytest
import torch

pytest.importorskip("triton")

from kernels.triton import flash_attention_bwd as fab  # noqa: E402
from kernels.triton.flash_attention import flash_attention, flash_attention_lse  # noqa: E402
from kernels.triton.flash_attention_bwd import flash_attention_train  # noqa: E402

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
# The forward tests' tolerances (tests/test_triton_flash_attention.py): max error over the
# reference's largest magnitude, per tensor.
RTOL = {torch.float32: 1e-4, torch.float16: 3e-3, torch.bfloat16: 2e-2}
# The gradients' are the same but bf16's: the backward rounds more than the forward (P and dS
# to bf16 as dot operands, and the output, stored in bf16, enters delta = rowsum(dO * O)). Of 40
# bf16 cases tried at the shapes here, one reached 2.1e-2 (dk; 7.7e-3 with delta from the exact
# output, and PyTorch's own bf16 autograd made 1.5e-2 on the same inputs); the rest <= 1.3e-2.
GRAD_RTOL = {**RTOL, torch.bfloat16: 3e-2}


def _scores(q, k, causal, sm_scale=None):
    """q k^T * scale with the causal mask, in q's dtype (float64 here)."""
    S, D = q.shape[-2], q.shape[-1]
    scale = 1.0 / math.sqrt(D) if sm_scale is None else sm_scale
    scores = q @ k.transpose(-1, -2) * scale  # (B, H, S, S)
    if causal:
        above = torch.ones(S, S, dtype=torch.bool).triu(1)  # key j > query i
        scores = scores.masked_fill(above, float("-inf"))
    return scores


def _reference(q, k, v, do, causal, sm_scale=None):
    """(out, dq, dk, dv) of softmax(scores) v by float64 autograd on the same (rounded) values."""
    q, k, v = (t.detach().cpu().double().requires_grad_() for t in (q, k, v))
    out = torch.softmax(_scores(q, k, causal, sm_scale), dim=-1) @ v
    out.backward(do.cpu().double())
    return out.detach(), q.grad, k.grad, v.grad


def _triton(q, k, v, do, causal, sm_scale=None):
    """(out, dq, dk, dv) through flash_attention_train and autograd."""
    q, k, v = (t.detach().clone().requires_grad_() for t in (q, k, v))
    out = flash_attention_train(q, k, v, causal=causal, sm_scale=sm_scale)
    out.backward(do)
    return out.detach(), q.grad, k.grad, v.grad


def _inputs(shape, dtype, seed, n=4):
    gen = torch.Generator().manual_seed(seed)
    # Scaled up a little so the softmax is peaked rather than near-uniform.
    return [(1.5 * torch.randn(shape, generator=gen)).to(DEVICE, dtype) for _ in range(n)]


def _error(got, ref):
    """Max error over the reference's largest magnitude."""
    return (got.cpu().double() - ref).abs().max().item() / ref.abs().max().item()


def _assert_close(got, ref, dtype, what=("out", "dq", "dk", "dv")):
    for name, g, r in zip(what, got, ref):
        assert g.dtype == dtype and g.shape == r.shape, name
        err, tol = _error(g, r), (RTOL if name == "out" else GRAD_RTOL)[dtype]
        assert err <= tol, f"{name}: max err {err:.3e} > {tol:.0e} of its max"


@pytest.mark.parametrize("causal", [True, False], ids=["causal", "full"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
@pytest.mark.parametrize("S", [37, 64])  # odd (partial blocks), and a multiple of every block
def test_gradients_match_reference(S, dtype, causal):
    q, k, v, do = _inputs((1, 2, S, 16), dtype, seed=S * 10 + causal)
    _assert_close(_triton(q, k, v, do, causal), _reference(q, k, v, do, causal), dtype)


@pytest.mark.parametrize("S, D", [(37, 40), (33, 128)])
def test_gradients_padded_and_wide_head_dims(S, D):
    # D=40 runs in a 64-wide block with masked lanes; D=128 is the widest head.
    q, k, v, do = _inputs((1, 2, S, D), torch.float32, seed=S + D)
    _assert_close(_triton(q, k, v, do, True), _reference(q, k, v, do, True), torch.float32)


def test_gradients_fp16():
    q, k, v, do = _inputs((1, 2, 37, 32), torch.float16, seed=5)
    _assert_close(_triton(q, k, v, do, True), _reference(q, k, v, do, True), torch.float16)


def test_gradients_batches_heads_strided_layout_and_scale():
    # (B, S, H, D) memory seen as (B, H, S, D), as a model that splits heads passes it, with
    # B, H > 1 (a wrong batch or head offset shows) and a custom scale. Dense inputs get their
    # gradients in their own strides: autograd's leaves then keep them without a copy.
    q, k, v, do = (t.transpose(1, 2) for t in _inputs((2, 45, 3, 24), torch.float32, seed=7))
    got = _triton(q, k, v, do, True, sm_scale=0.3)
    _assert_close(got, _reference(q, k, v, do, True, sm_scale=0.3), torch.float32)
    assert all(g.stride() == q.stride() for g in got[1:])


def test_gradient_of_a_sum_reads_a_broadcast_output_gradient():
    # out.sum().backward() hands the backward an expanded dO (all strides 0).
    q, k, v = (t.requires_grad_() for t in _inputs((1, 2, 37, 16), torch.float32, seed=3, n=3))
    flash_attention_train(q, k, v, causal=True).sum().backward()
    ref = _reference(q, k, v, torch.ones(q.shape), True)
    _assert_close((q.grad, k.grad, v.grad), ref[1:], torch.float32, what=("dq", "dk", "dv"))


@pytest.mark.parametrize("causal", [True, False], ids=["causal", "full"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
def test_lse_matches_float64_logsumexp(dtype, causal):
    q, k, v = _inputs((1, 2, 37, 16), dtype, seed=11, n=3)
    out, lse = flash_attention_lse(q, k, v, causal=causal)
    assert lse.shape == (1, 2, 37) and lse.dtype == torch.float32 and lse.is_contiguous()
    ref = torch.logsumexp(_scores(q.cpu().double(), k.cpu().double(), causal), dim=-1)
    # fp32 whatever the inputs: the scores of 16-bit inputs are exact fp32 products.
    assert _error(lse, ref) <= RTOL[torch.float32]
    assert torch.equal(out, flash_attention(q, k, v, causal=causal))  # the same forward


def test_a_missing_delta_term_fails_the_check(monkeypatch):
    """delta = 0 (dS = P * dP, the rowsum(dO * O) term dropped): dq and dk go wrong and the
    check says so; dv, which does not use delta, stays right."""
    q, k, v, do = _inputs((1, 2, 37, 16), torch.float32, seed=13)
    ref = _reference(q, k, v, do, True)
    real = fab._launch_delta
    monkeypatch.setattr(fab, "_launch_delta", lambda o, *a: torch.zeros_like(real(o, *a)))
    got = _triton(q, k, v, do, True)
    with pytest.raises(AssertionError, match="dq"):
        _assert_close(got, ref, torch.float32)
    assert _error(got[2], ref[2]) > GRAD_RTOL[torch.float32]  # dk
    assert _error(got[3], ref[3]) <= GRAD_RTOL[torch.float32]  # dv


def test_a_backward_without_the_causal_mask_fails_the_check(monkeypatch):
    q, k, v, do = _inputs((1, 2, 37, 16), torch.float32, seed=17)
    real = fab._flags
    monkeypatch.setattr(fab, "_flags", lambda *a: {**real(*a), "CAUSAL": False})
    got = _triton(q, k, v, do, True)
    with pytest.raises(AssertionError, match="dq"):
        _assert_close(got, _reference(q, k, v, do, True), torch.float32)


class _Refused:
    def __getitem__(self, grid):
        raise AssertionError("launched a kernel whose gradient nobody asked for")


def test_only_the_gradients_asked_for_and_no_graph_without_them(monkeypatch):
    q, k, v, do = _inputs((1, 2, 37, 16), torch.float32, seed=19)
    ref = _reference(q, k, v, do, True)
    # Only v trains: dq's kernel is not launched, dv is still right.
    monkeypatch.setattr(fab, "_attn_bwd_dq_kernel", _Refused())
    v_leaf = v.clone().requires_grad_()
    flash_attention_train(q, k, v_leaf, causal=True).backward(do)
    assert q.grad is None and _error(v_leaf.grad, ref[3]) <= GRAD_RTOL[torch.float32]
    # No graph to record: the inference forward, nothing saved.
    leaf = q.clone().requires_grad_()
    with torch.no_grad():
        out = flash_attention_train(leaf, k, v, causal=True)
    assert out.grad_fn is None and _error(out, ref[0]) <= RTOL[torch.float32]


def test_interpreted_tiles_cross_blocks_at_the_test_shapes():
    # S=37 must leave a partial block on both sides of each gradient kernel, and S=64 none:
    # otherwise the tests above skip the masked tail or the unmasked loop.
    config = fab._INTERPRET
    for tile in (config.dkdv, config.dq):
        assert 37 % tile.block_m and 37 % tile.block_n
        assert 64 % tile.block_m == 0 and 64 % tile.block_n == 0 and 64 > max(tile[:2])
    assert config.dkdv.block_n % config.dkdv.block_m == 0  # owned block: several streamed ones
    assert config.dq.block_m % config.dq.block_n == 0


@pytest.mark.parametrize("block_d", [16, 32, 64, 128])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_cuda_tiles_nest(block_d, dtype):
    config = fab.cuda_config(block_d, dtype)
    assert config.dkdv.block_n % config.dkdv.block_m == 0
    assert config.dq.block_m % config.dq.block_n == 0
    assert min(config.dkdv[:2] + config.dq[:2]) >= 16  # tl.dot's smallest operand side


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
@pytest.mark.parametrize("D", [64, 128])
def test_gradients_at_a_benchmark_shape(dtype, D):
    # The CUDA tiles at a suites' shape, against float64 on the GPU.
    gen = torch.Generator(device="cuda").manual_seed(23)
    q, k, v, do = (torch.randn(2, 8, 1000, D, device="cuda", generator=gen).to(dtype)
                   for _ in range(4))
    got = _triton(q, k, v, do, True)
    leaves = [t.double().requires_grad_() for t in (q, k, v)]
    out = torch.nn.functional.scaled_dot_product_attention(*leaves, is_causal=True)
    out.backward(do.double())
    _assert_close(got, (out.detach(), *(t.grad for t in leaves)), dtype)
