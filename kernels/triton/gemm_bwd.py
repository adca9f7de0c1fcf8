"""matmul + bias backward with Triton, and `MatmulBiasFn`: the forward GEMM (gemm.py) and these
as a torch.autograd.Function, for the training modes.

y = x @ w + b with x (M, K), w (K, N), b (N,) gives, for dy (M, N):
    dx = dy @ w^T (M, K),   dw = x^T @ dy (K, N),   db = dy summed over its rows (N,).

dx and dw are the project's GEMM (`matmul_bias_act`, no epilogue) on transposed views: it reads
its operands through strides, so w^T, x^T and dy^T are never copied. dw comes out in w's own
memory layout: for an nn.Linear weight passed as `weight.t()` it is computed as dw^T = dy^T @ x,
so the weight's gradient arrives (OUT, IN) and contiguous, the layout AccumulateGrad keeps.

db is one column-reduction kernel (`column_sum`), not a sum fused into the dw GEMM. Fusing
would save one read of dy (M*N elements: at 4096^3 in bf16, 32 MiB, some 7 us at an H200's
bandwidth against 275 GFLOP of dx and dw; an estimated 2%), but it needs a GEMM of its own:
the dw = x^T @ dy loop would also sum each dy tile it loads, and only the programs of the first
row of dw tiles may write db (or the sums race), so those programs do extra work, and every
config's registers and spills change (a new kernel to tune and to check for sm_80/sm_90). The
reduction keeps dx and dw on the kernel the forward suites already measure, and is
deterministic without atomics: when dy is tall, stage one sums slabs of rows into an fp32
(splits, N) buffer, so the programs fill the GPU whatever N is, and stage two (the same kernel)
sums that buffer into db; a short dy takes one stage straight into db.
"""
from __future__ import annotations

from functools import lru_cache

import torch
import triton
import triton.language as tl
from torch.autograd.function import once_differentiable

from kernels.triton.gemm import matmul_bias_act
from kernels.triton.gemm_common import check_offsets
from kernels.triton.runtime import check_tensors, kernels_interpreted


@triton.jit
def _column_sum_kernel(
    in_ptr,  # (M, N), any strides
    out_ptr,  # (splits, N): row s gets the sum of in's rows [s * rows_per_split, ...)
    M, N,
    stride_im, stride_in, stride_os, stride_on,
    rows_per_split,  # a multiple of BLOCK_M, so the splits' slabs never overlap
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
):
    pid_n = tl.program_id(axis=0)
    split = tl.program_id(axis=1)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)  # (BN,)
    col_ok = cols < N
    first = split * rows_per_split
    last = tl.minimum(first + rows_per_split, M)
    # A 2-D accumulator, reduced across rows once at the end: the loop itself is plain adds.
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)  # (BM, BN)
    for start in range(first, last, BLOCK_M):
        rows = start + tl.arange(0, BLOCK_M)  # (BM,)
        mask = (rows[:, None] < last) & col_ok[None, :]  # (BM, BN)
        tile = tl.load(in_ptr + rows[:, None] * stride_im + cols[None, :] * stride_in,
                       mask=mask, other=0.0)
        acc += tile.to(tl.float32)  # fp32: an fp16 column sum overflows past 65504
    total = tl.sum(acc, axis=0)  # (BN,)
    tl.store(out_ptr + split * stride_os + cols * stride_on,
             total.to(out_ptr.dtype.element_ty), mask=col_ok)


# --- the column reduction's host side ---------------------------------------------------------
# (BLOCK_M, BLOCK_N, num_warps) on a GPU: 128 columns of 16-bit values are 256 contiguous bytes
# per row (full 16-byte vectors), and a (32, 128) fp32 accumulator is 32 values per thread.
GPU_BLOCKS = (32, 128, 4)
# The interpreter's blocks are small, so the tests' odd shapes (M=37) take both stages.
INTERPRETER_BLOCKS = (16, 32, 4)
PROGRAMS_PER_SM = 4  # enough resident programs to cover each one's load latency
MIN_SLAB_BLOCKS = 4  # a split sums at least this many BLOCK_M row blocks, or stage two costs more


def column_sum_plan(M: int, N: int, sm_count: int | None) -> tuple[int, int, int, int, int]:
    """(BLOCK_M, BLOCK_N, num_warps, splits, rows_per_split) to sum dy (M, N) over its rows.

    sm_count None means the interpreter. On a GPU, dy is split into row slabs until the
    (column block, slab) programs number about PROGRAMS_PER_SM per SM: with few column blocks
    (a narrow N) one program per column block would leave most SMs idle on a tall dy.
    """
    if sm_count is None:
        BLOCK_M, BLOCK_N, num_warps = INTERPRETER_BLOCKS
        slab = 2 * BLOCK_M
    else:
        BLOCK_M, BLOCK_N, num_warps = GPU_BLOCKS
        col_blocks = triton.cdiv(N, BLOCK_N)
        wanted = max(1, triton.cdiv(PROGRAMS_PER_SM * sm_count, col_blocks))
        slab = max(MIN_SLAB_BLOCKS * BLOCK_M, triton.cdiv(M, wanted))
    rows_per_split = triton.cdiv(slab, BLOCK_M) * BLOCK_M  # whole row blocks
    return BLOCK_M, BLOCK_N, num_warps, triton.cdiv(max(M, 1), rows_per_split), rows_per_split


@lru_cache(maxsize=None)
def _sm_count(device_index: int) -> int:
    return torch.cuda.get_device_properties(device_index).multi_processor_count


def _device_sms(device: torch.device) -> int | None:
    if kernels_interpreted() or device.type != "cuda":
        return None
    return _sm_count(device.index if device.index is not None else torch.cuda.current_device())


def column_sum(t: torch.Tensor) -> torch.Tensor:
    """t (M, N) summed over its rows: (N,) in t's dtype, accumulated in fp32. Any strides."""
    check_tensors("column_sum", t=t)
    if t.dim() != 2:
        raise ValueError(f"column_sum: t must be a 2-D tensor, got {tuple(t.shape)}")
    check_offsets("column_sum", "t", t.shape, t.stride())  # int32 offsets, as the GEMMs
    return _launch_column_sum(t)


def _launch_column_sum(t: torch.Tensor) -> torch.Tensor:
    M, N = t.shape
    out = torch.zeros(N, device=t.device, dtype=t.dtype)  # (N,): zeros when M == 0
    if M == 0 or N == 0:
        return out
    BLOCK_M, BLOCK_N, num_warps, splits, rows_per_split = column_sum_plan(
        M, N, _device_sms(t.device))
    if splits == 1:
        _reduce(t, out, 1, rows_per_split, BLOCK_M, BLOCK_N, num_warps)
        return out
    partial = torch.empty((splits, N), device=t.device, dtype=torch.float32)  # (splits, N)
    _reduce(t, partial, splits, rows_per_split, BLOCK_M, BLOCK_N, num_warps)
    # Stage two: the splits' fp32 sums in one slab (splits is at most a few hundred rows).
    slab = triton.cdiv(splits, BLOCK_M) * BLOCK_M
    _reduce(partial, out, 1, slab, BLOCK_M, BLOCK_N, num_warps)
    return out


def _reduce(t, out, splits, rows_per_split, BLOCK_M, BLOCK_N, num_warps):
    """One stage: t (M, N) -> out, (splits, N) or (N,) for one split."""
    M, N = t.shape
    stride_os, stride_on = out.stride() if out.dim() == 2 else (0, out.stride(0))
    grid = (triton.cdiv(N, BLOCK_N), splits)
    _column_sum_kernel[grid](t, out, M, N, t.stride(0), t.stride(1), stride_os, stride_on,
                             rows_per_split, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N,
                             num_warps=num_warps)


# --- the autograd function -------------------------------------------------------------------
def _rows(t: torch.Tensor) -> torch.Tensor:
    """(..., C) as (rows, C): leading dims folded into M, as matmul_add's batched variant does
    (a view when they merge; 1-D and 2-D tensors as they are, for the GEMM's own checks)."""
    return t if t.dim() <= 2 else t.reshape(-1, t.shape[-1])


def _weight_grad(x2: torch.Tensor, dy2: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """x^T @ dy (K, N), stored in w's layout: column-major when w is (a weight.t() view of)
    an (N, K) weight, so that weight's own gradient is row-major (no transpose copy later)."""
    if w.stride(0) == 1 and w.stride(1) != 1:
        return matmul_bias_act(dy2.t(), x2).t()  # dw^T = dy^T @ x: (N, K) contiguous
    return matmul_bias_act(x2.t(), dy2)  # (K, N) contiguous


class MatmulBiasFn(torch.autograd.Function):
    """y = x @ w + b with Triton in both directions: x (..., K), w (K, N), b (N,) or None.

    Saves x and w (what dw and dx need); b's gradient needs only dy."""

    @staticmethod
    def forward(ctx, x: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None) -> torch.Tensor:
        y = matmul_bias_act(_rows(x), w, b)  # (M, N); checks the inputs
        ctx.save_for_backward(x, w)
        return y.view(*x.shape[:-1], w.shape[1]) if x.dim() > 2 else y

    @staticmethod
    @once_differentiable  # the kernels' gradients are not themselves differentiable
    def backward(ctx, dy: torch.Tensor):
        x, w = ctx.saved_tensors
        dy2 = _rows(dy.to(x.dtype))  # (M, N); may be a stride-0 expand: the kernels read strides
        need_x, need_w, need_b = ctx.needs_input_grad
        dx = matmul_bias_act(dy2, w.t()).view(x.shape) if need_x else None  # (M, K)
        dw = _weight_grad(_rows(x), dy2, w) if need_w else None  # (K, N)
        db = column_sum(dy2) if need_b else None  # (N,)
        return dx, dw, db


def matmul_bias_train(x: torch.Tensor, w: torch.Tensor,
                      b: torch.Tensor | None = None) -> torch.Tensor:
    """x @ w + b that autograd can differentiate: the Triton GEMM forward, and backward as
    two GEMMs (dx, dw) and a column reduction (db). Pass an nn.Linear weight as weight.t()."""
    return MatmulBiasFn.apply(x, w, b)
