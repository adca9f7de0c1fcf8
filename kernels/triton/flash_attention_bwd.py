"""FlashAttention-2-style backward in Triton: dq, dk, dv of out = softmax(q k^T * sm_scale) v.

The training forward (flash_attention.flash_attention_lse) keeps the output O and each query
row's log-sum-exp lse_i of its scaled scores s_ij; the backward recomputes P = exp(s - lse)
tile by tile rather than reading a stored (S, S) matrix. With dO the output's gradient:

    dV = P^T dO    dP = dO V^T    dS = P * (dP - delta)    delta_i = sum_j P_ij dP_ij = dO_i . O_i
    dQ = dS K * sm_scale          dK = dS^T Q * sm_scale

Three kernels: delta per query row; dK and dV by one program per key block that streams the
query blocks which see it; dQ by one program per query block that streams the key blocks it
sees. Computing dQ apart recomputes P and dP once more, but every gradient is then a sum in
one program's registers, stored once: no atomics, the same bits on every run.

Causal attention is split by block as in the forward: blocks wholly above the diagonal are
never visited, blocks wholly below it run without a mask, and only the diagonal blocks and
the partial block at the end of the sequence apply one.
"""
from __future__ import annotations

import math
from functools import partial
from typing import Callable, NamedTuple

import torch
import triton
import triton.language as tl

from kernels.triton import flash_attention as fwd
from kernels.triton.flash_attention import _dot, _load_tile, _program_tile
from kernels.triton.runtime import kernels_interpreted

_LOG2E = 1.4426950408889634
_LOG2E_C: tl.constexpr = tl.constexpr(_LOG2E)  # the same, as a constant inside the kernels


@triton.jit
def _operand(x, like_ptr, UPCAST: tl.constexpr):
    """An fp32 tile (P or dS) as a dot operand in the inputs' dtype, as FlashAttention-2 does:
    16-bit tensor-core products, and for fp32 inputs a no-op. UPCAST (interpreted bf16): rounded
    to bf16, then computed in fp32, since the interpreter's bf16 dot is wrong."""
    if UPCAST:
        return x.to(like_ptr.dtype.element_ty).to(tl.float32)
    else:
        return x.to(like_ptr.dtype.element_ty)


@triton.jit
def _load_rows(ptrs, rows, n_rows, MASKED: tl.constexpr):
    """One fp32 value per row (lse, delta); rows past the end read as 0."""
    if MASKED:
        return tl.load(ptrs, mask=rows < n_rows, other=0.0)
    else:
        return tl.load(ptrs)


@triton.jit
def _row_stats_base(off_b, off_h, seq_len):
    """Offset of this (batch, head)'s first row in the contiguous (B, H, S) lse and delta; H is
    the grid's axis 1 in every kernel here."""
    return (off_b * tl.num_programs(axis=1) + off_h) * seq_len


@triton.jit
def _attn_bwd_delta_kernel(
    o_ptr, do_ptr,  # (B, H, S, D) each, any strides
    delta_ptr,  # (B, H, S) fp32, contiguous
    stride_ob, stride_oh, stride_om, stride_od,
    stride_dob, stride_doh, stride_dom, stride_dod,
    seq_len,
    HEAD_DIM: tl.constexpr, BLOCK_D: tl.constexpr, PAD_D: tl.constexpr, BLOCK_M: tl.constexpr,
):
    """delta_i = sum_d dO_id * O_id in fp32: the row term of dS, read by both gradient kernels."""
    off_b, off_h, start_m = _program_tile(False)
    off_b = off_b.to(tl.int64)
    off_h = off_h.to(tl.int64)
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)  # (BLOCK_M,)
    offs_d = tl.arange(0, BLOCK_D)
    o_ptrs = (o_ptr + off_b * stride_ob + off_h * stride_oh
              + offs_m[:, None] * stride_om + offs_d[None, :] * stride_od)
    do_ptrs = (do_ptr + off_b * stride_dob + off_h * stride_doh
               + offs_m[:, None] * stride_dom + offs_d[None, :] * stride_dod)
    o = _load_tile(o_ptrs, offs_m, seq_len, offs_d, HEAD_DIM, True, PAD_D).to(tl.float32)
    do = _load_tile(do_ptrs, offs_m, seq_len, offs_d, HEAD_DIM, True, PAD_D).to(tl.float32)
    delta = tl.sum(o * do, axis=1)  # (BLOCK_M,)
    tl.store(delta_ptr + _row_stats_base(off_b, off_h, seq_len) + offs_m, delta,
             mask=offs_m < seq_len)


@triton.jit
def _attn_bwd_dkdv_inner(
    dk, dv, k, v,  # (BLOCK_N, BLOCK_D): fp32 accumulators, this program's keys and values
    q_base, do_base, lse_base, delta_base, stride_qm, stride_qd, stride_dom, stride_dod,
    offs_n, offs_d, lo, hi, seq_len, qk_scale,
    HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, PAD_D: tl.constexpr,
    MASKED: tl.constexpr,  # query blocks that cross seq_len or the causal diagonal
    CAUSAL: tl.constexpr, UPCAST: tl.constexpr, EXACT_FP32: tl.constexpr,
):
    # Transposed (keys x queries) throughout, so that each product lands in dk and dv's layout.
    for start_m in range(lo, hi, BLOCK_M):
        offs_m = start_m + tl.arange(0, BLOCK_M)  # (BLOCK_M,) query positions
        q_ptrs = q_base + offs_m[:, None] * stride_qm + offs_d[None, :] * stride_qd
        do_ptrs = do_base + offs_m[:, None] * stride_dom + offs_d[None, :] * stride_dod
        q = _load_tile(q_ptrs, offs_m, seq_len, offs_d, HEAD_DIM, MASKED, PAD_D)  # (BLOCK_M, BLOCK_D)
        do = _load_tile(do_ptrs, offs_m, seq_len, offs_d, HEAD_DIM, MASKED, PAD_D)
        # lse in log2 units, to match qk_scale (which holds log2(e)).
        lse = _load_rows(lse_base + offs_m, offs_m, seq_len, MASKED) * _LOG2E_C  # (BLOCK_M,)
        delta = _load_rows(delta_base + offs_m, offs_m, seq_len, MASKED)  # (BLOCK_M,)
        if UPCAST:
            q = q.to(tl.float32)
            do = do.to(tl.float32)
        qk_t = _dot(k, tl.trans(q), None, EXACT_FP32)  # (BLOCK_N, BLOCK_M) fp32, unscaled
        p_t = tl.math.exp2(qk_t * qk_scale - lse[None, :])  # P^T: normalised by the stored lse
        if MASKED:
            keep = offs_m[None, :] < seq_len  # (1, BLOCK_M) queries past the end
            if CAUSAL:
                keep = keep & (offs_m[None, :] >= offs_n[:, None])  # (BLOCK_N, BLOCK_M)
            # Not -inf on the scores: a padded row's lse is 0, not its own; zero P itself.
            p_t = tl.where(keep, p_t, 0.0)
        dv = _dot(_operand(p_t, q_base, UPCAST), do, dv, EXACT_FP32)  # += P^T dO
        dp_t = _dot(v, tl.trans(do), None, EXACT_FP32)  # (BLOCK_N, BLOCK_M) = (dO V^T)^T
        ds_t = p_t * (dp_t - delta[None, :])  # masked entries stay 0: p_t is 0 there
        dk = _dot(_operand(ds_t, q_base, UPCAST), q, dk, EXACT_FP32)  # += dS^T Q, unscaled
    return dk, dv


@triton.jit
def _attn_bwd_dkdv_kernel(
    q_ptr, k_ptr, v_ptr, do_ptr, dk_ptr, dv_ptr,  # (B, H, S, D) each, any strides
    lse_ptr, delta_ptr,  # (B, H, S) fp32, contiguous
    stride_qb, stride_qh, stride_qm, stride_qd,
    stride_kb, stride_kh, stride_kn, stride_kd,
    stride_vb, stride_vh, stride_vn, stride_vd,
    stride_dob, stride_doh, stride_dom, stride_dod,
    stride_dkb, stride_dkh, stride_dkn, stride_dkd,
    stride_dvb, stride_dvh, stride_dvn, stride_dvd,
    seq_len, qk_scale, sm_scale,  # qk_scale = sm_scale * log2(e)
    HEAD_DIM: tl.constexpr, BLOCK_D: tl.constexpr, PAD_D: tl.constexpr,
    BLOCK_M: tl.constexpr,  # queries per streamed block
    BLOCK_N: tl.constexpr,  # keys this program owns; BLOCK_N % BLOCK_M == 0
    CAUSAL: tl.constexpr, UPCAST: tl.constexpr, EXACT_FP32: tl.constexpr,
):
    # Grid (n_key_blocks, H, B). Causal key block j is seen by the queries from j * BLOCK_N on,
    # so the blocks are heaviest first already: the plain order, not the forward's reversed one.
    off_b, off_h, start_n = _program_tile(False)
    off_b = off_b.to(tl.int64)  # int64: batch/head offsets can pass 2**31 elements
    off_h = off_h.to(tl.int64)
    q_base = q_ptr + off_b * stride_qb + off_h * stride_qh
    do_base = do_ptr + off_b * stride_dob + off_h * stride_doh
    stats = _row_stats_base(off_b, off_h, seq_len)

    offs_n = start_n * BLOCK_N + tl.arange(0, BLOCK_N)  # (BLOCK_N,) key positions
    offs_d = tl.arange(0, BLOCK_D)
    k_ptrs = (k_ptr + off_b * stride_kb + off_h * stride_kh
              + offs_n[:, None] * stride_kn + offs_d[None, :] * stride_kd)
    v_ptrs = (v_ptr + off_b * stride_vb + off_h * stride_vh
              + offs_n[:, None] * stride_vn + offs_d[None, :] * stride_vd)
    # Padded keys load as 0: finite scores, and their dk, dv rows are dropped on store.
    k = _load_tile(k_ptrs, offs_n, seq_len, offs_d, HEAD_DIM, True, PAD_D)  # (BLOCK_N, BLOCK_D)
    v = _load_tile(v_ptrs, offs_n, seq_len, offs_d, HEAD_DIM, True, PAD_D)
    if UPCAST:
        k = k.to(tl.float32)
        v = v.to(tl.float32)
    dk = tl.zeros([BLOCK_N, BLOCK_D], dtype=tl.float32)
    dv = tl.zeros([BLOCK_N, BLOCK_D], dtype=tl.float32)

    # Query blocks [0, full_lo) never see these keys (causal); [diag_lo, diag_hi) straddle the
    # diagonal; [full_lo, full_hi) see every key and are in range; [full_hi, seq_len) is the
    # last, partial query block. Each bound is a multiple of BLOCK_M (BLOCK_N is one).
    even_hi = (seq_len // BLOCK_M) * BLOCK_M
    if CAUSAL:
        diag_lo = start_n * BLOCK_N
        diag_hi = tl.minimum(diag_lo + BLOCK_N, seq_len)
        full_lo = diag_lo + BLOCK_N
    else:
        diag_lo = 0
        diag_hi = 0
        full_lo = 0
    full_hi = tl.maximum(full_lo, even_hi)
    dk, dv = _attn_bwd_dkdv_inner(dk, dv, k, v, q_base, do_base, lse_ptr + stats,
                                  delta_ptr + stats, stride_qm, stride_qd, stride_dom, stride_dod,
                                  offs_n, offs_d, diag_lo, diag_hi, seq_len, qk_scale, HEAD_DIM,
                                  BLOCK_M, PAD_D, True, CAUSAL, UPCAST, EXACT_FP32)
    dk, dv = _attn_bwd_dkdv_inner(dk, dv, k, v, q_base, do_base, lse_ptr + stats,
                                  delta_ptr + stats, stride_qm, stride_qd, stride_dom, stride_dod,
                                  offs_n, offs_d, full_lo, full_hi, seq_len, qk_scale, HEAD_DIM,
                                  BLOCK_M, PAD_D, False, CAUSAL, UPCAST, EXACT_FP32)
    dk, dv = _attn_bwd_dkdv_inner(dk, dv, k, v, q_base, do_base, lse_ptr + stats,
                                  delta_ptr + stats, stride_qm, stride_qd, stride_dom, stride_dod,
                                  offs_n, offs_d, full_hi, seq_len, seq_len, qk_scale, HEAD_DIM,
                                  BLOCK_M, PAD_D, True, CAUSAL, UPCAST, EXACT_FP32)

    store = (offs_n[:, None] < seq_len) & (offs_d[None, :] < HEAD_DIM)
    dk_ptrs = (dk_ptr + off_b * stride_dkb + off_h * stride_dkh
               + offs_n[:, None] * stride_dkn + offs_d[None, :] * stride_dkd)
    dv_ptrs = (dv_ptr + off_b * stride_dvb + off_h * stride_dvh
               + offs_n[:, None] * stride_dvn + offs_d[None, :] * stride_dvd)
    tl.store(dk_ptrs, (dk * sm_scale).to(dk_ptr.dtype.element_ty), mask=store)
    tl.store(dv_ptrs, dv.to(dv_ptr.dtype.element_ty), mask=store)


@triton.jit
def _attn_bwd_dq_inner(
    dq, q, do, lse, delta,  # (BLOCK_M, BLOCK_D) x 3, (BLOCK_M,) x 2: this program's rows
    k_base, v_base, stride_kn, stride_kd, stride_vn, stride_vd,
    offs_m, offs_d, lo, hi, seq_len, qk_scale,
    HEAD_DIM: tl.constexpr, BLOCK_N: tl.constexpr, PAD_D: tl.constexpr,
    MASKED: tl.constexpr,  # key blocks that cross seq_len or the causal diagonal
    CAUSAL: tl.constexpr, UPCAST: tl.constexpr, EXACT_FP32: tl.constexpr,
):
    for start_n in range(lo, hi, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)  # (BLOCK_N,) key positions
        k_ptrs = k_base + offs_n[:, None] * stride_kn + offs_d[None, :] * stride_kd
        v_ptrs = v_base + offs_n[:, None] * stride_vn + offs_d[None, :] * stride_vd
        k = _load_tile(k_ptrs, offs_n, seq_len, offs_d, HEAD_DIM, MASKED, PAD_D)  # (BLOCK_N, BLOCK_D)
        v = _load_tile(v_ptrs, offs_n, seq_len, offs_d, HEAD_DIM, MASKED, PAD_D)
        if UPCAST:
            k = k.to(tl.float32)
            v = v.to(tl.float32)
        qk = _dot(q, tl.trans(k), None, EXACT_FP32)  # (BLOCK_M, BLOCK_N) fp32, unscaled
        p = tl.math.exp2(qk * qk_scale - lse[:, None])
        if MASKED:
            keep = offs_n[None, :] < seq_len  # (1, BLOCK_N) keys past the end
            if CAUSAL:
                keep = keep & (offs_n[None, :] <= offs_m[:, None])  # (BLOCK_M, BLOCK_N)
            p = tl.where(keep, p, 0.0)
        dp = _dot(do, tl.trans(v), None, EXACT_FP32)  # (BLOCK_M, BLOCK_N)
        ds = p * (dp - delta[:, None])
        dq = _dot(_operand(ds, k_base, UPCAST), k, dq, EXACT_FP32)  # += dS K, unscaled
    return dq


@triton.jit
def _attn_bwd_dq_kernel(
    q_ptr, k_ptr, v_ptr, do_ptr, dq_ptr,  # (B, H, S, D) each, any strides
    lse_ptr, delta_ptr,  # (B, H, S) fp32, contiguous
    stride_qb, stride_qh, stride_qm, stride_qd,
    stride_kb, stride_kh, stride_kn, stride_kd,
    stride_vb, stride_vh, stride_vn, stride_vd,
    stride_dob, stride_doh, stride_dom, stride_dod,
    stride_dqb, stride_dqh, stride_dqm, stride_dqd,
    seq_len, qk_scale, sm_scale,  # qk_scale = sm_scale * log2(e)
    HEAD_DIM: tl.constexpr, BLOCK_D: tl.constexpr, PAD_D: tl.constexpr,
    BLOCK_M: tl.constexpr,  # queries this program owns
    BLOCK_N: tl.constexpr,  # keys per streamed block; BLOCK_M % BLOCK_N == 0
    CAUSAL: tl.constexpr, UPCAST: tl.constexpr, EXACT_FP32: tl.constexpr,
):
    # Grid (n_query_blocks, H, B), ordered as the forward's: causal heaviest (last) block first.
    off_b, off_h, start_m = _program_tile(CAUSAL)
    off_b = off_b.to(tl.int64)
    off_h = off_h.to(tl.int64)
    k_base = k_ptr + off_b * stride_kb + off_h * stride_kh
    v_base = v_ptr + off_b * stride_vb + off_h * stride_vh
    stats = _row_stats_base(off_b, off_h, seq_len)

    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)  # (BLOCK_M,) query positions
    offs_d = tl.arange(0, BLOCK_D)
    q_ptrs = (q_ptr + off_b * stride_qb + off_h * stride_qh
              + offs_m[:, None] * stride_qm + offs_d[None, :] * stride_qd)
    do_ptrs = (do_ptr + off_b * stride_dob + off_h * stride_doh
               + offs_m[:, None] * stride_dom + offs_d[None, :] * stride_dod)
    # Padded rows load as 0 (finite scores, zero dP); their dq rows are dropped on store.
    q = _load_tile(q_ptrs, offs_m, seq_len, offs_d, HEAD_DIM, True, PAD_D)  # (BLOCK_M, BLOCK_D)
    do = _load_tile(do_ptrs, offs_m, seq_len, offs_d, HEAD_DIM, True, PAD_D)
    lse = _load_rows(lse_ptr + stats + offs_m, offs_m, seq_len, True) * _LOG2E_C
    delta = _load_rows(delta_ptr + stats + offs_m, offs_m, seq_len, True)
    if UPCAST:
        q = q.to(tl.float32)
        do = do.to(tl.float32)
    dq = tl.zeros([BLOCK_M, BLOCK_D], dtype=tl.float32)

    # The forward's split: key blocks wholly below the diagonal (causal) or whole (not) unmasked,
    # then the diagonal or partial blocks masked; nothing above the diagonal.
    if CAUSAL:
        full_hi = start_m * BLOCK_M
        masked_hi = tl.minimum(full_hi + BLOCK_M, seq_len)
    else:
        full_hi = (seq_len // BLOCK_N) * BLOCK_N
        masked_hi = seq_len
    dq = _attn_bwd_dq_inner(dq, q, do, lse, delta, k_base, v_base, stride_kn, stride_kd,
                            stride_vn, stride_vd, offs_m, offs_d, 0, full_hi, seq_len, qk_scale,
                            HEAD_DIM, BLOCK_N, PAD_D, False, CAUSAL, UPCAST, EXACT_FP32)
    dq = _attn_bwd_dq_inner(dq, q, do, lse, delta, k_base, v_base, stride_kn, stride_kd,
                            stride_vn, stride_vd, offs_m, offs_d, full_hi, masked_hi, seq_len,
                            qk_scale, HEAD_DIM, BLOCK_N, PAD_D, True, CAUSAL, UPCAST, EXACT_FP32)

    dq_ptrs = (dq_ptr + off_b * stride_dqb + off_h * stride_dqh
               + offs_m[:, None] * stride_dqm + offs_d[None, :] * stride_dqd)
    tl.store(dq_ptrs, (dq * sm_scale).to(dq_ptr.dtype.element_ty),
             mask=(offs_m[:, None] < seq_len) & (offs_d[None, :] < HEAD_DIM))


# --- block sizes ----------------------------------------------------------------------------

class Tile(NamedTuple):
    """One kernel's launch: queries and keys per block (the delta kernel reads block_m only),
    warps, pipeline stages."""
    block_m: int
    block_n: int
    num_warps: int
    num_stages: int


class BwdConfig(NamedTuple):
    delta: Tile
    dkdv: Tile  # owns block_n keys, streams block_m queries
    dq: Tile    # owns block_m queries, streams block_n keys


# The interpreter: small tiles, so that the odd test shapes still cross several blocks and the
# diagonal, the unmasked and the partial-tail loops all run.
_INTERPRET = BwdConfig(Tile(32, 1, 4, 1), Tile(16, 32, 4, 1), Tile(32, 16, 4, 1))


def cuda_config(block_d: int, dtype: torch.dtype) -> BwdConfig:
    """The CUDA tiles for a head dim (padded to BLOCK_D) and dtype. No autotuner: the tiles are
    bound by registers more than by shape, so each one here is the roomiest that compiles for
    both sm_80 and sm_90 without a register spill, in shared memory under even sm_86's 99 KB
    (Triton 3.7's compiler and ptxas, ahead of time: the table in _CUDA_TILES).

    As in FlashAttention-2, each program owns a tall block (keys for dk, dv; queries for dq)
    and streams the other side in short ones: the owned block's fp32 accumulators (two for
    dk, dv) and operands stay in registers, and the streamed tiles are pipelined through
    shared memory (num_stages buffers). fp32 inputs run tf32x3 dots, which split every
    operand in two: they get a quarter of the tile or less."""
    return _CUDA_TILES[(min(max(block_d, 64), 128), dtype == torch.float32)]


# (BLOCK_D 64 or 128, fp32) -> tiles; BLOCK_D 16 and 32 use 64's. Shared memory (bytes) and
# registers per thread as compiled for causal, sm_90 / sm_80, from a 16-bit or an fp32 input:
#   16-bit D64  dkdv 32x128 w8 s3: 57,856 / 49,664 B, 160 / 181 regs
#               dq  128x32  w8 s3: 57,344 / 49,152 B, 112 / 138 regs
#   16-bit D128 dkdv 32x64  w8 s3: 82,944 / 70,144 B, 180 / 198 regs  (32x128 spills on sm_80)
#               dq  128x32  w8 s2: 98,304 / 81,920 B, 157 / 194 regs  (s3: 98,304 B on sm_80)
#   fp32   D64  dkdv 32x32  w8 s2: 49,408 / 49,408 B, 198 / 198 regs  (16x64: spills on sm_80)
#               dq   32x16  w8 s2: 40,960 / 40,960 B, 166 / 164 regs  (64x16: spills on sm_80)
#   fp32   D128 dkdv 16x16  w8 s2: 49,280 / 49,280 B, 206 / 220 regs  (16x32 spills)
#               dq   16x16  w8 s2: 49,152 / 49,152 B, 168 / 169 regs  (32x16 spills on sm_90)
# bf16 and fp16 alike; non-causal needs no more; D=16 and 32 (and a padded 40 in 16-bit) fit
# with the D64 tiles, none spilling (fp32 D=32's dkdv at 255 registers). delta is a row sum:
# one small tile everywhere (256 B, at most 41 registers).
_DELTA_TILE = Tile(64, 1, 4, 1)
_CUDA_TILES = {
    (64, False): BwdConfig(_DELTA_TILE, Tile(32, 128, 8, 3), Tile(128, 32, 8, 3)),
    (128, False): BwdConfig(_DELTA_TILE, Tile(32, 64, 8, 3), Tile(128, 32, 8, 2)),
    (64, True): BwdConfig(_DELTA_TILE, Tile(32, 32, 8, 2), Tile(32, 16, 8, 2)),
    (128, True): BwdConfig(_DELTA_TILE, Tile(16, 16, 8, 2), Tile(16, 16, 8, 2)),
}


def _config(block_d: int, dtype: torch.dtype) -> BwdConfig:
    return _INTERPRET if kernels_interpreted() else cuda_config(block_d, dtype)


# --- launches -------------------------------------------------------------------------------

def _launch_delta(o: torch.Tensor, do: torch.Tensor, tile: Tile) -> torch.Tensor:
    """delta = rowsum(dO * O), (B, H, S) fp32."""
    B, H, S, D = o.shape
    block_d = _block_d(D)
    delta = torch.empty((B, H, S), dtype=torch.float32, device=o.device)
    _attn_bwd_delta_kernel[(triton.cdiv(S, tile.block_m), H, B)](
        o, do, delta, *o.stride(), *do.stride(), S,
        HEAD_DIM=D, BLOCK_D=block_d, PAD_D=block_d != D, BLOCK_M=tile.block_m,
        num_warps=tile.num_warps, num_stages=tile.num_stages)
    return delta


def _flags(q: torch.Tensor, causal: bool) -> dict:
    """The constexprs both gradient kernels share, set as the forward sets them."""
    D = q.shape[-1]
    block_d = _block_d(D)
    upcast = kernels_interpreted() and q.dtype == torch.bfloat16
    return dict(HEAD_DIM=D, BLOCK_D=block_d, PAD_D=block_d != D, CAUSAL=bool(causal),
                UPCAST=upcast, EXACT_FP32=q.dtype == torch.float32 or upcast)


def _block_d(D: int) -> int:
    return max(16, triton.next_power_of_2(D))  # tl.dot needs K >= 16


def _launch_dkdv(q, k, v, do, lse, delta, causal: bool, sm_scale: float,
                 tile: Tile) -> tuple[torch.Tensor, torch.Tensor]:
    """(dk, dv) in k's and v's layout (dense ones keep their strides, so autograd hands them
    to the leaves without a copy) and dtype."""
    B, H, S, _ = q.shape
    dk, dv = torch.empty_like(k), torch.empty_like(v)
    _attn_bwd_dkdv_kernel[(triton.cdiv(S, tile.block_n), H, B)](
        q, k, v, do, dk, dv, lse, delta, *q.stride(), *k.stride(), *v.stride(), *do.stride(),
        *dk.stride(), *dv.stride(), S, sm_scale * _LOG2E, sm_scale,
        BLOCK_M=tile.block_m, BLOCK_N=tile.block_n, num_warps=tile.num_warps,
        num_stages=tile.num_stages, **_flags(q, causal))
    return dk, dv


def _launch_dq(q, k, v, do, lse, delta, causal: bool, sm_scale: float,
               tile: Tile) -> torch.Tensor:
    """dq in q's layout and dtype."""
    B, H, S, _ = q.shape
    dq = torch.empty_like(q)
    _attn_bwd_dq_kernel[(triton.cdiv(S, tile.block_m), H, B)](
        q, k, v, do, dq, lse, delta, *q.stride(), *k.stride(), *v.stride(), *do.stride(),
        *dq.stride(), S, sm_scale * _LOG2E, sm_scale,
        BLOCK_M=tile.block_m, BLOCK_N=tile.block_n, num_warps=tile.num_warps,
        num_stages=tile.num_stages, **_flags(q, causal))
    return dq


def _backward(q, k, v, out, lse, do, causal: bool, sm_scale: float, need_dq: bool = True):
    """(dq, or None when not needed, dk, dv): delta first, which both gradient kernels read."""
    config = _config(_block_d(q.shape[-1]), q.dtype)
    delta = _launch_delta(out, do, config.delta)
    dk, dv = _launch_dkdv(q, k, v, do, lse, delta, causal, sm_scale, config.dkdv)
    dq = _launch_dq(q, k, v, do, lse, delta, causal, sm_scale, config.dq) if need_dq else None
    return dq, dk, dv


class FlashAttentionFn(torch.autograd.Function):
    """Flash attention with the Triton backward: saves q, k, v, the output and the rows'
    log-sum-exp ((B, H, S) fp32, S floats per head where eager keeps (S, S) probabilities)."""

    @staticmethod
    def forward(ctx, q, k, v, causal: bool, sm_scale: float | None):
        # Unchecked: flash_attention_train and its prepare check the arguments, once.
        B, H, S, _ = q.shape
        lse = torch.empty((B, H, S), dtype=torch.float32, device=q.device)
        out = fwd._launch(q, k, v, causal, sm_scale, lse)
        ctx.save_for_backward(q, k, v, out, lse)
        ctx.causal = bool(causal)
        ctx.sm_scale = 1.0 / math.sqrt(q.shape[-1]) if sm_scale is None else float(sm_scale)
        return out

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, do):
        q, k, v, out, lse = ctx.saved_tensors
        if do.numel() == 0:
            return torch.zeros_like(q), torch.zeros_like(k), torch.zeros_like(v), None, None
        # dK and dV come from one kernel: both are computed when either is needed.
        dq, dk, dv = _backward(q, k, v, out, lse, do, ctx.causal, ctx.sm_scale,
                               need_dq=ctx.needs_input_grad[0])
        return dq, dk, dv, None, None


def flash_attention_train(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = True,
                          sm_scale: float | None = None) -> torch.Tensor:
    """`flash_attention` that autograd can differentiate: q, k, v (B, H, S, D) -> (B, H, S, D),
    with dq, dk, dv from the Triton backward."""
    return prepare_flash_attention_train(q, k, v, causal, sm_scale)()


def prepare_flash_attention_train(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                                  causal: bool = True,
                                  sm_scale: float | None = None) -> Callable[[], torch.Tensor]:
    """`flash_attention_train` on these tensors as a call, the arguments checked once here.
    A call that records no graph (no_grad, or no input requiring grad) is the inference
    forward: no log-sum-exp stored, nothing saved."""
    fwd._check(q, k, v, sm_scale)
    inference = fwd.prepare_flash_attention(q, k, v, causal, sm_scale)
    train = partial(FlashAttentionFn.apply, q, k, v, causal, sm_scale)

    def call() -> torch.Tensor:
        records = torch.is_grad_enabled() and (q.requires_grad or k.requires_grad
                                               or v.requires_grad)
        return train() if records else inference()

    return call
