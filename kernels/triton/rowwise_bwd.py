"""The host side and the second reduction stage that the norm backward kernels share
(layernorm_bwd.py, rmsnorm_bwd.py).

A norm's parameter gradients are sums over rows (dweight = sum_rows dy * xhat, dbias =
sum_rows dy). Atomics would make them depend on the order programs finish, so they are
reduced in two stages instead, each deterministic:

  stage 1 (the norm's backward kernel, which also writes dx): program b walks its block of
          `rows_per_program` consecutive rows and writes its fp32 partial sums to row b of a
          (n_terms, n_blocks, D) buffer; term 0 is dweight, term 1 dbias (LayerNorm only);
  stage 2 (`_sum_partials_kernel` here): each program sums one column tile of one term over
          the n_blocks rows of the buffer, and stores it in the parameter's dtype.

Stage 1 wants enough programs to keep every SM busy and no more, since every extra program
adds a row to the buffer stage 2 reads (`split_rows` chooses).
"""
from __future__ import annotations

from functools import lru_cache

import torch
import triton
import triton.language as tl

from kernels.triton.runtime import kernels_interpreted

# Stage 1 programs per SM. One program holds a whole row (and two fp32 accumulators) in
# registers, so a few fit on an SM at once; two per SM keep memory busy while one waits,
# and the (n_blocks, D) buffer stays small beside x and dy (264 rows on an H200's 132 SMs).
PROGRAMS_PER_SM = 2
# Without a GPU (the interpreter): a few programs, so that the blocks of rows and the stage 2
# reduction are exercised all the same. (The ahead-of-time compile tool plans as on a GPU: it
# stands in the target's SM count, suites/tools/triton_launches.py.)
PROGRAMS_NO_GPU = 4
# Stage 2's tile: SUM_BLOCK_B partial rows by SUM_BLOCK_D columns per step, fp32. Narrow
# columns give a D=4096 layer 64 programs per term; 32 x 64 fp32 is 16 values per thread.
SUM_BLOCK_B = 32
SUM_BLOCK_D = 64


@triton.jit
def _sum_partials_kernel(
    partial_ptr,  # (n_terms, n_blocks, D) fp32, contiguous
    dw_ptr,  # (D,) contiguous, the weight's dtype: where term 0's sum goes
    db_ptr,  # (D,) contiguous, the bias's dtype: where term 1's sum goes (unused if 1 term)
    n_blocks,
    D,
    stride_pt,  # n_blocks * D: from one term to the next
    BLOCK_B: tl.constexpr,
    BLOCK_D: tl.constexpr,
):
    col_tile = tl.program_id(axis=0)
    term = tl.program_id(axis=1)
    cols = col_tile * BLOCK_D + tl.arange(0, BLOCK_D)  # (BLOCK_D,)
    col_mask = cols < D
    base = partial_ptr + term.to(tl.int64) * stride_pt
    # A 2-D accumulator, summed once at the end: each step's adds are independent.
    acc = tl.zeros((BLOCK_B, BLOCK_D), dtype=tl.float32)
    for start in range(0, n_blocks, BLOCK_B):
        blocks = start + tl.arange(0, BLOCK_B)  # (BLOCK_B,)
        # n_blocks is rarely a multiple of BLOCK_B: the rows past it load as 0.
        mask = (blocks[:, None] < n_blocks) & col_mask[None, :]
        acc += tl.load(base + blocks[:, None].to(tl.int64) * D + cols[None, :], mask=mask,
                       other=0.0)
    total = tl.sum(acc, axis=0)  # (BLOCK_D,) fp32
    if term == 0:
        tl.store(dw_ptr + cols, total.to(dw_ptr.dtype.element_ty), mask=col_mask)
    else:
        tl.store(db_ptr + cols, total.to(db_ptr.dtype.element_ty), mask=col_mask)


def rows_of(t: torch.Tensor) -> torch.Tensor:
    """t (..., D) as (n_rows, D) with unit column stride, a view where the layout allows: the
    kernels take any row stride (even 0, as an expanded gradient has) but step 1 along D."""
    t2 = t.reshape(-1, t.shape[-1])
    return t2 if t2.stride(-1) == 1 else t2.contiguous()


@lru_cache(maxsize=None)
def _sm_count(device_index: int) -> int:
    return torch.cuda.get_device_properties(device_index).multi_processor_count


def split_rows(n_rows: int, device: torch.device,
               rows_per_program: int | None = None) -> tuple[int, int]:
    """(rows_per_program, n_blocks) of stage 1 for n_rows rows: PROGRAMS_PER_SM programs per
    SM on CUDA, PROGRAMS_NO_GPU elsewhere, unless rows_per_program is given (tests use it to
    split the rows unevenly). The last block holds what is left: n_rows need not divide."""
    if rows_per_program is None:
        if device.type == "cuda" and not kernels_interpreted():
            programs = PROGRAMS_PER_SM * _sm_count(device.index if device.index is not None
                                                   else torch.cuda.current_device())
        else:
            programs = PROGRAMS_NO_GPU
        rows_per_program = max(1, triton.cdiv(n_rows, programs))  # 1 for no rows, too
    if rows_per_program < 1:
        raise ValueError(f"rows_per_program must be at least 1, got {rows_per_program}")
    return rows_per_program, triton.cdiv(n_rows, rows_per_program)


def sum_partials(partials: torch.Tensor, dw: torch.Tensor,
                 db: torch.Tensor | None = None) -> None:
    """Stage 2: dw = partials[0].sum(0) and, given db, db = partials[1].sum(0), written in
    place in their own dtypes. partials (n_terms, n_blocks, D) fp32 contiguous; n_blocks may
    be 0 (no rows), which writes zeros."""
    n_terms, n_blocks, D = partials.shape
    grid = (triton.cdiv(D, SUM_BLOCK_D), n_terms)
    # dw stands in for a missing db: with one term no program takes the db branch.
    _sum_partials_kernel[grid](
        partials, dw, dw if db is None else db, n_blocks, D, n_blocks * D,
        BLOCK_B=SUM_BLOCK_B, BLOCK_D=SUM_BLOCK_D, num_warps=4,
    )
