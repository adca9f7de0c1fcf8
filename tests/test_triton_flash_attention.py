"""Flash-attention Triton kernel vs explicit float64 attention (CPU: Triton interpreter)."""
import math

import pytest
import torch

pytest.importorskip("triton")
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

from kernels.triton import flash_attention as fa  # noqa: E402
from kernels.triton.flash_attention import flash_attention  # noqa: E402

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
RTOL = {torch.float32: 1e-4, torch.float16: 3e-3, torch.bfloat16: 2e-2}


def _reference(q, k, v, causal, sm_scale=None):
    """softmax(q k^T * scale + mask) v in float64, materializing the (S, S) scores."""
    q, k, v = (t.cpu().double() for t in (q, k, v))
    S, D = q.shape[-2], q.shape[-1]
    scale = 1.0 / math.sqrt(D) if sm_scale is None else sm_scale
    scores = q @ k.transpose(-1, -2) * scale  # (B, H, S, S)
    if causal:
        above = torch.ones(S, S, dtype=torch.bool).triu(1)  # key j > query i
        scores = scores.masked_fill(above, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v


def _inputs(shape, dtype, seed):
    gen = torch.Generator().manual_seed(seed)
    # Scaled up a little so the softmax is peaked rather than near-uniform.
    return [(1.5 * torch.randn(shape, generator=gen)).to(DEVICE, dtype) for _ in range(3)]


def _assert_close(out, ref, dtype):
    err = (out.cpu().double() - ref).abs().max().item()
    scale = ref.abs().max().item()
    assert err <= RTOL[dtype] * scale, f"max err {err:.3e} > {RTOL[dtype]:.0e} * {scale:.3e}"


@pytest.mark.parametrize("causal", [True, False], ids=["causal", "full"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16], ids=["fp32", "fp16"])
@pytest.mark.parametrize("S, D", [(37, 16), (70, 16), (70, 40), (64, 64), (33, 128)])
def test_flash_attention_matches_reference(S, D, dtype, causal):
    q, k, v = _inputs((1, 2, S, D), dtype, seed=S * 1000 + D)
    out = flash_attention(q, k, v, causal=causal)
    assert out.shape == q.shape and out.dtype == dtype
    _assert_close(out, _reference(q, k, v, causal), dtype)


@pytest.mark.parametrize("causal", [True, False], ids=["causal", "full"])
@pytest.mark.parametrize("S, D", [(37, 32), (70, 40)])
def test_flash_attention_bf16(S, D, causal):
    q, k, v = _inputs((1, 2, S, D), torch.bfloat16, seed=S + D)
    out = flash_attention(q, k, v, causal=causal)
    assert out.dtype == torch.bfloat16
    _assert_close(out, _reference(q, k, v, causal), torch.bfloat16)


def test_flash_attention_batches_heads_and_scale():
    # B and H > 1 catch (batch, head) offset mistakes; a custom scale is honoured.
    q, k, v = _inputs((2, 3, 45, 32), torch.float32, seed=7)
    out = flash_attention(q, k, v, causal=True, sm_scale=0.3)
    _assert_close(out, _reference(q, k, v, True, sm_scale=0.3), torch.float32)


@pytest.mark.parametrize("causal", [True, False], ids=["causal", "full"])
@pytest.mark.parametrize("B, H, S, dtype", [(3, 2, 45, torch.float32), (2, 5, 70, torch.float16),
                                            (1, 7, 33, torch.float32)])
def test_flash_attention_grouped_programs(B, H, S, dtype, causal):
    # Every (batch, head) has its own data, so a program that computes one head's query block
    # from another's K/V (a wrong 1-D grid mapping) shows as a large error.
    q, k, v = _inputs((B, H, S, 16), dtype, seed=B * 100 + H * 10 + S)
    _assert_close(flash_attention(q, k, v, causal=causal), _reference(q, k, v, causal), dtype)


@triton.jit
def _program_tiles_kernel(out_ptr, CAUSAL: tl.constexpr):
    # This program's row of out: its place in dispatch order (axis 0 fastest, as CUDA numbers
    # blocks), then the (batch, head, query block) the flash kernel gives it.
    linear = tl.program_id(0) + tl.num_programs(0) * (
        tl.program_id(1) + tl.num_programs(1) * tl.program_id(2))
    off_b, off_h, block = fa._program_tile(CAUSAL)
    row = out_ptr + 4 * linear
    tl.store(row, linear)
    tl.store(row + 1, off_b)
    tl.store(row + 2, off_h)
    tl.store(row + 3, block)


@pytest.mark.parametrize("causal", [True, False], ids=["causal", "full"])
def test_programs_in_flight_together_share_a_head(causal):
    """The launch order: each head's query blocks are consecutive programs (so a wave of them
    reuses that head's K/V from L2), every (batch, head, block) exactly once, and for causal
    the heaviest (last) block of each head first."""
    B, H, n_blocks = 2, 3, 10
    out = torch.full((B * H * n_blocks, 4), -1, dtype=torch.int32, device=DEVICE)
    _program_tiles_kernel[(n_blocks, H, B)](out, CAUSAL=causal)
    rows = out.cpu().tolist()
    assert [r[0] for r in rows] == list(range(B * H * n_blocks))
    assert sorted(tuple(r[1:]) for r in rows) == [
        (b, h, m) for b in range(B) for h in range(H) for m in range(n_blocks)]
    for pid, b, h, m in rows:
        assert b * H + h == pid // n_blocks  # n_blocks programs in a row per head
        assert m == (n_blocks - 1 - pid % n_blocks if causal else pid % n_blocks)


def test_flash_attention_rejects_more_heads_than_grid_axis_takes():
    q = torch.zeros(1, 1, 1, 16, device=DEVICE).expand(1, 65536, 1, 16)  # no memory behind it
    with pytest.raises(ValueError, match="H=65536 must each be at most 65535"):
        flash_attention(q, q, q)


def test_flash_attention_non_contiguous_layout():
    # (B, S, H, D) memory viewed as (B, H, S, D): the kernel takes strides, no copy.
    q, k, v = (t.transpose(1, 2) for t in _inputs((1, 50, 2, 24), torch.float16, seed=8))
    assert not q.is_contiguous()
    _assert_close(flash_attention(q, k, v, causal=False), _reference(q, k, v, False), torch.float16)


@pytest.mark.parametrize("S", [1, 16])
def test_flash_attention_tiny_sequences(S):
    q, k, v = _inputs((1, 1, S, 16), torch.float32, seed=9 + S)
    _assert_close(flash_attention(q, k, v, causal=True), _reference(q, k, v, True), torch.float32)


@pytest.mark.parametrize("shapes, dtypes, kwargs, match", [
    ([(2, 16, 16)] * 3, [torch.float32] * 3, {}, "q must be 4-D"),
    ([(1, 2, 16, 16), (1, 2, 20, 16), (1, 2, 16, 16)], [torch.float32] * 3, {}, "same shape"),
    ([(1, 2, 16, 16)] * 3, [torch.int32] * 3, {}, "q has dtype torch.int32"),
    ([(1, 2, 16, 16)] * 3, [torch.float16, torch.float32, torch.float16], {}, "q, k, v must share one dtype"),
    ([(1, 2, 16, 160)] * 3, [torch.float32] * 3, {}, "head dim D=160 is not supported"),
    ([(1, 2, 16, 16)] * 3, [torch.float32] * 3, {"sm_scale": -1.0}, "sm_scale must be"),
])
def test_flash_attention_rejects_bad_input(shapes, dtypes, kwargs, match):
    q, k, v = (torch.ones(s, device=DEVICE).to(d) for s, d in zip(shapes, dtypes))
    with pytest.raises(ValueError, match=match):
        flash_attention(q, k, v, **kwargs)


def test_flash_attention_tune_key_names_kernel_arguments():
    # The autotuner (CUDA only) silently ignores key names that are not kernel arguments.
    assert set(fa._TUNE_KEY) <= set(fa._attn_fwd_kernel.arg_names)
    assert "BH_BUCKET" in fa._TUNE_KEY  # 32 and 128 (batch, head) programs tune separately


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
def test_flash_attention_target_shape_matches_sdpa(dtype):
    # The benchmark shape (B=8, H=16, S=1024, D=64); exercises the autotuned CUDA configs.
    gen = torch.Generator(device="cuda").manual_seed(10)
    q, k, v = (torch.randn(8, 16, 1024, 64, device="cuda", generator=gen).to(dtype) for _ in range(3))
    out = flash_attention(q, k, v, causal=True)
    ref = torch.nn.functional.scaled_dot_product_attention(
        q.double(), k.double(), v.double(), is_causal=True)
    err = (out.double() - ref).abs().max().item()
    assert err <= RTOL[dtype] * ref.abs().max().item()
