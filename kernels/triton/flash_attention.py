"""FlashAttention-2-style forward in Triton: out = softmax(q k^T * sm_scale [+ causal mask]) v.

Each program owns BLOCK_M queries of one (batch, head) and streams K/V in BLOCK_N tiles,
keeping a running row max m_i and row sum l_i (fp32) and rescaling the fp32 accumulator when
the max grows (online softmax). The (S, S) score matrix never reaches global memory.

Causal attention is split by block: K/V tiles wholly below the diagonal run without any mask,
the tiles on the diagonal apply the element mask, and tiles above it are never visited. The
softmax uses exp2 with log2(e) folded into the scale (one multiply saved per score).

For training, the same kernel also stores each query row's log-sum-exp (STORE_LSE), all that
the backward (flash_attention_bwd.py) needs to recompute the softmax without the (S, S) matrix.
"""
from __future__ import annotations

import math
from functools import partial
from typing import Callable

import torch
import triton
import triton.language as tl

from kernels.triton import targets
from kernels.triton.runtime import MAX_HEAD_DIM, check_tensors, kernels_interpreted

_LOG2E = 1.4426950408889634
_LN2: tl.constexpr = tl.constexpr(0.6931471805599453)  # a constant inside the kernels


@triton.jit
def _load_tile(ptrs, rows, n_rows, cols, n_cols, MASK_ROWS: tl.constexpr, MASK_COLS: tl.constexpr):
    """Load a (len(rows), len(cols)) tile, masking only what can be out of range (zeros there)."""
    if MASK_ROWS:
        if MASK_COLS:
            tile = tl.load(ptrs, mask=(rows[:, None] < n_rows) & (cols[None, :] < n_cols), other=0.0)
        else:
            tile = tl.load(ptrs, mask=rows[:, None] < n_rows, other=0.0)
    else:
        if MASK_COLS:
            tile = tl.load(ptrs, mask=cols[None, :] < n_cols, other=0.0)
        else:
            tile = tl.load(ptrs)
    return tile


@triton.jit
def _dot(a, b, acc, EXACT_FP32: tl.constexpr):
    """a @ b + acc in fp32. EXACT_FP32: fp32 operands get tf32x3 (three TF32 tensor-core
    products, ~fp32 accuracy) instead of plain TF32 (10-bit mantissa, ~1e-3 error); "ieee"
    would fall back to FMA loops that spill heavily."""
    if EXACT_FP32:
        return tl.dot(a, b, acc, input_precision="tf32x3")
    else:
        return tl.dot(a, b, acc)


@triton.jit
def _attn_fwd_inner(
    acc, m_i, l_i, q,  # (BLOCK_M, BLOCK_D) fp32, (BLOCK_M,) fp32, (BLOCK_M,) fp32, (BLOCK_M, BLOCK_D)
    k_base, v_base, stride_kn, stride_kd, stride_vn, stride_vd,
    offs_m, offs_d, lo, hi, seq_len, qk_scale,
    HEAD_DIM: tl.constexpr, BLOCK_N: tl.constexpr, PAD_D: tl.constexpr,
    MASKED: tl.constexpr,  # key tiles that cross seq_len or the causal diagonal
    CAUSAL: tl.constexpr, UPCAST: tl.constexpr, EXACT_FP32: tl.constexpr,
):
    for start_n in range(lo, hi, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)  # (BLOCK_N,) key positions
        k_ptrs = k_base + offs_n[:, None] * stride_kn + offs_d[None, :] * stride_kd
        v_ptrs = v_base + offs_n[:, None] * stride_vn + offs_d[None, :] * stride_vd
        k = _load_tile(k_ptrs, offs_n, seq_len, offs_d, HEAD_DIM, MASKED, PAD_D)  # (BLOCK_N, BLOCK_D)
        v = _load_tile(v_ptrs, offs_n, seq_len, offs_d, HEAD_DIM, MASKED, PAD_D)  # (BLOCK_N, BLOCK_D)
        if UPCAST:  # interpreter: bf16 tl.dot is wrong there, fp32 is exact for bf16 values
            k = k.to(tl.float32)
            v = v.to(tl.float32)
        qk = _dot(q, tl.trans(k), None, EXACT_FP32)  # (BLOCK_M, BLOCK_N) fp32, unscaled
        if MASKED:
            keep = offs_n[None, :] < seq_len  # (1, BLOCK_N) keys past the end
            if CAUSAL:
                keep = keep & (offs_n[None, :] <= offs_m[:, None])  # (BLOCK_M, BLOCK_N)
            # -inf is safe: each row's first visited tile holds a valid key (key 0, or on the
            # diagonal key diag_lo <= row), so m_i is finite before any row is fully masked.
            qk = tl.where(keep, qk, float("-inf"))
        # Log2 domain (qk_scale includes log2(e), and is > 0 so it commutes with max and keeps
        # -inf): scale the row max only, then one fused multiply-add per score.
        m_new = tl.maximum(m_i, tl.max(qk, axis=1) * qk_scale)  # (BLOCK_M,)
        p = tl.math.exp2(qk * qk_scale - m_new[:, None])  # (BLOCK_M, BLOCK_N) fp32, unnormalized
        alpha = tl.math.exp2(m_i - m_new)  # (BLOCK_M,) rescale for the old max; 0 on first tile
        l_i = l_i * alpha + tl.sum(p, axis=1)
        acc = acc * alpha[:, None]
        if UPCAST:
            # Round P to the input dtype as the GPU path does, then compute in fp32.
            p_op = p.to(v_base.dtype.element_ty).to(tl.float32)
        else:
            p_op = p.to(v.dtype)  # fp16/bf16: tensor-core P @ V; fp32: no-op
        acc = _dot(p_op, v, acc, EXACT_FP32)
        m_i = m_new
    return acc, m_i, l_i


@triton.jit
def _program_tile(CAUSAL: tl.constexpr):
    """(batch, head, query block) of this program in the grid (n_query_blocks, H, B).

    The query block varies fastest: blocks are dispatched in grid order, so the programs in
    flight together (about one per SM) cover all query blocks of one or a few heads, and each
    K/V tile one of them loads is read again by its neighbours from L2, not from memory. With
    (batch, head) fastest, every SM held another head, and at S=8192 a wave's K/V is far
    larger than L2. For causal, block i costs i+1 diagonal-sized tiles: each head's blocks go
    out heaviest first, so the launch ends on light blocks and its last wave is short.
    All three come from the grid's special registers, which the compiler re-reads instead of
    keeping them live (a 1-D grid's divisions made 128x64 configs spill on sm_90). Axes 1 and 2
    take up to 65535 heads and batches each.
    """
    start_m = tl.program_id(axis=0)
    if CAUSAL:
        start_m = tl.num_programs(axis=0) - 1 - start_m
    return tl.program_id(axis=2), tl.program_id(axis=1), start_m


@triton.jit
def _attn_fwd_kernel(
    q_ptr, k_ptr, v_ptr, o_ptr,  # (B, H, S, D) each, any strides
    lse_ptr,  # (B, H, S) fp32, contiguous: written when STORE_LSE, else None
    stride_qb, stride_qh, stride_qm, stride_qd,
    stride_kb, stride_kh, stride_kn, stride_kd,
    stride_vb, stride_vh, stride_vn, stride_vd,
    stride_ob, stride_oh, stride_om, stride_od,
    seq_len, qk_scale,  # qk_scale = sm_scale * log2(e)
    BH_BUCKET,  # next pow2 >= B*H, the number of (batch, head) programs: read by the autotuner only
    HEAD_DIM: tl.constexpr, BLOCK_D: tl.constexpr,  # BLOCK_D = next pow2 >= HEAD_DIM (>= 16)
    PAD_D: tl.constexpr,  # BLOCK_D != HEAD_DIM: mask the padded head-dim lanes
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,  # BLOCK_M % BLOCK_N == 0
    CAUSAL: tl.constexpr, UPCAST: tl.constexpr, EXACT_FP32: tl.constexpr,
    STORE_LSE: tl.constexpr,  # training: keep each row's log-sum-exp for the backward
):
    off_b, off_h, start_m = _program_tile(CAUSAL)
    # int64: batch/head offsets of large tensors can pass 2**31 elements.
    off_b = off_b.to(tl.int64)
    off_h = off_h.to(tl.int64)
    q_base = q_ptr + off_b * stride_qb + off_h * stride_qh
    k_base = k_ptr + off_b * stride_kb + off_h * stride_kh
    v_base = v_ptr + off_b * stride_vb + off_h * stride_vh
    o_base = o_ptr + off_b * stride_ob + off_h * stride_oh

    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)  # (BLOCK_M,) query positions
    offs_d = tl.arange(0, BLOCK_D)  # (BLOCK_D,)

    q_ptrs = q_base + offs_m[:, None] * stride_qm + offs_d[None, :] * stride_qd
    # Padded query rows load as 0 (finite scores); they are dropped on store.
    q = _load_tile(q_ptrs, offs_m, seq_len, offs_d, HEAD_DIM, True, PAD_D)  # (BLOCK_M, BLOCK_D)
    if UPCAST:
        q = q.to(tl.float32)

    m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, BLOCK_D], dtype=tl.float32)

    if CAUSAL:
        # Tiles wholly below the diagonal: every key < start_m * BLOCK_M <= every query, all in
        # range, so no mask. Then the diagonal tiles, masked; nothing above is visited.
        full_hi = start_m * BLOCK_M
        masked_hi = tl.minimum(full_hi + BLOCK_M, seq_len)
    else:
        # Full key tiles unmasked, then at most one partial tile masked against seq_len.
        full_hi = (seq_len // BLOCK_N) * BLOCK_N
        masked_hi = seq_len
    acc, m_i, l_i = _attn_fwd_inner(acc, m_i, l_i, q, k_base, v_base, stride_kn, stride_kd,
                                    stride_vn, stride_vd, offs_m, offs_d, 0, full_hi, seq_len,
                                    qk_scale, HEAD_DIM, BLOCK_N, PAD_D, False, CAUSAL, UPCAST,
                                    EXACT_FP32)
    acc, m_i, l_i = _attn_fwd_inner(acc, m_i, l_i, q, k_base, v_base, stride_kn, stride_kd,
                                    stride_vn, stride_vd, offs_m, offs_d, full_hi, masked_hi,
                                    seq_len, qk_scale, HEAD_DIM, BLOCK_N, PAD_D, True, CAUSAL,
                                    UPCAST, EXACT_FP32)

    out = acc / l_i[:, None]  # (BLOCK_M, BLOCK_D); l_i >= 1 since the max term is exp2(0)
    o_ptrs = o_base + offs_m[:, None] * stride_om + offs_d[None, :] * stride_od
    tl.store(o_ptrs, out.to(o_ptr.dtype.element_ty),
             mask=(offs_m[:, None] < seq_len) & (offs_d[None, :] < HEAD_DIM))
    if STORE_LSE:
        # log sum_j exp(q.k_j * sm_scale), natural log: m_i and log2(l_i) are in log2 units.
        # The rows of (batch, head) are contiguous, and H is the grid's axis 1.
        lse = (m_i + tl.math.log2(l_i)) * _LN2
        row0 = (off_b * tl.num_programs(axis=1) + off_h) * seq_len
        tl.store(lse_ptr + row0 + offs_m, lse, mask=offs_m < seq_len)


def _cuda_configs() -> list:
    """A short autotune list for Hopper/Ampere-class GPUs (FA2-like tile shapes), as
    (BLOCK_M, BLOCK_N, num_warps, num_stages); targets.flash_prune drops the misfits per call."""
    shapes = [(128, 64, 4, 3), (128, 64, 4, 4), (128, 64, 8, 3), (128, 128, 8, 3),
              (128, 128, 8, 4), (64, 64, 4, 3), (64, 32, 4, 4),
              (64, 32, 4, 2),  # fp32 at D=128: fits sm_80's shared memory
              (64, 64, 8, 2)]  # 16-bit at D=128 on sm_80: eight warps share the accumulator
    return [triton.Config({"BLOCK_M": bm, "BLOCK_N": bn}, num_warps=w, num_stages=st)
            for bm, bn, w, st in shapes]


# The interpreter cannot benchmark configs, so it gets a plain kernel and one small fixed config
# (still several K/V tiles per diagonal); on CUDA the autotuner picks per (S, D, causal, dtype,
# B*H bucket): how many (batch, head) programs share the GPU changes which tiles fill it best.
_TUNE_KEY = ["seq_len", "HEAD_DIM", "CAUSAL", "BH_BUCKET"]
if kernels_interpreted():
    _attn_fwd_launch = _attn_fwd_kernel
else:
    _attn_fwd_launch = triton.autotune(
        configs=_cuda_configs(),
        key=_TUNE_KEY,
        prune_configs_by={"early_config_prune": targets.flash_prune},
    )(_attn_fwd_kernel)

_INTERPRET_BLOCK_M, _INTERPRET_BLOCK_N = 32, 16
_MAX_GRID_YZ = 65535  # heads and batches go on grid axes 1 and 2 (see _program_tile)


def _check(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, sm_scale) -> None:
    check_tensors("flash_attention", q=q, k=k, v=v)
    for name, t in (("q", q), ("k", k), ("v", v)):
        if t.ndim != 4:
            raise ValueError(f"flash_attention: {name} must be 4-D (B, H, S, D), got "
                             f"{t.ndim}-D shape {tuple(t.shape)}")
    if not (q.shape == k.shape == v.shape):
        raise ValueError(f"flash_attention: q, k, v must have the same shape (B, H, S, D) "
                         f"(self-attention, S_q == S_k), got {tuple(q.shape)}, "
                         f"{tuple(k.shape)}, {tuple(v.shape)}")
    B, H, _, D = q.shape
    if max(B, H) > _MAX_GRID_YZ:
        raise ValueError(f"flash_attention: B={B} and H={H} must each be at most "
                         f"{_MAX_GRID_YZ} (CUDA's limit on grid axes 1 and 2)")
    if not 1 <= D <= MAX_HEAD_DIM:
        raise ValueError(f"flash_attention: head dim D={D} is not supported; need "
                         f"1 <= D <= {MAX_HEAD_DIM}")
    if sm_scale is not None and not (isinstance(sm_scale, (int, float)) and math.isfinite(sm_scale)
                                     and sm_scale > 0):
        raise ValueError(f"flash_attention: sm_scale must be a positive finite number or None, "
                         f"got {sm_scale!r}")


def flash_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = True,
                    sm_scale: float | None = None) -> torch.Tensor:
    """Attention forward; q, k, v (B, H, S, D) -> (B, H, S, D) in q's dtype.

    sm_scale defaults to 1/sqrt(D). Causal masks key j > query i (top-left aligned, S_q == S_k).
    """
    return prepare_flash_attention(q, k, v, causal, sm_scale)()


def prepare_flash_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                            causal: bool = True,
                            sm_scale: float | None = None) -> Callable[[], torch.Tensor]:
    """`flash_attention` on these tensors as a call: the arguments are checked once, here, and
    each call only allocates the output and launches."""
    _check(q, k, v, sm_scale)
    return partial(_launch, q, k, v, causal, sm_scale)


def flash_attention_lse(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = True,
                        sm_scale: float | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """The training forward: `flash_attention`'s output and each query row's log-sum-exp of
    its scaled (masked) scores, (B, H, S) fp32, which the backward recomputes P from."""
    _check(q, k, v, sm_scale)
    B, H, S, _ = q.shape
    lse = torch.empty((B, H, S), dtype=torch.float32, device=q.device)
    return _launch(q, k, v, causal, sm_scale, lse), lse


def _launch(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool,
            sm_scale: float | None, lse: torch.Tensor | None = None) -> torch.Tensor:
    """lse: a contiguous (B, H, S) fp32 tensor to store the rows' log-sum-exp in, or None."""
    B, H, S, D = q.shape
    # Stored as (B, S, H, D) and returned as its (B, H, S, D) view, as SDPA does: a caller that
    # merges heads (transpose(1, 2).reshape(B * S, H * D)) then gets a view, not a copy.
    out = torch.empty((B, S, H, D), dtype=q.dtype, device=q.device).transpose(1, 2)
    if out.numel() == 0:
        return out
    if sm_scale is None:
        sm_scale = 1.0 / math.sqrt(D)
    qk_scale = float(sm_scale) * _LOG2E
    BLOCK_D = max(16, triton.next_power_of_2(D))  # tl.dot needs K >= 16
    # fp32 inputs: ~fp32-accurate dots (no plain TF32), so fp32 results match a fp32 reference.
    upcast = kernels_interpreted() and q.dtype == torch.bfloat16
    exact_fp32 = q.dtype == torch.float32 or upcast
    args = (q, k, v, out, lse, *q.stride(), *k.stride(), *v.stride(), *out.stride(), S, qk_scale,
            triton.next_power_of_2(B * H))
    # The training forward (lse a tensor, not None) tunes apart from inference without a key of
    # its own: the autotuner adds every tensor argument's dtype to the key.
    meta = dict(HEAD_DIM=D, BLOCK_D=BLOCK_D, PAD_D=BLOCK_D != D, CAUSAL=bool(causal), UPCAST=upcast,
                EXACT_FP32=exact_fp32, STORE_LSE=lse is not None)
    if kernels_interpreted():
        grid = (triton.cdiv(S, _INTERPRET_BLOCK_M), H, B)
        _attn_fwd_launch[grid](*args, BLOCK_M=_INTERPRET_BLOCK_M, BLOCK_N=_INTERPRET_BLOCK_N, **meta)
    else:
        def grid(META):  # query blocks fastest: see _program_tile
            return (triton.cdiv(S, META["BLOCK_M"]), H, B)
        _attn_fwd_launch[grid](*args, **meta)
    return out
