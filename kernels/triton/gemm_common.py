"""What the Triton GEMM kernels share (gemm.py: matmul_bias_act, gemm_geglu.py: matmul_geglu,
gemm_tma.py: matmul_bias_act_tma).

Device helpers (grouped tile order, the K loop with its operand pointers, the dot, the masked
store) and the host side: input checks, the launch grid, the dot-precision flags. On CUDA the
block shapes are autotuned; under TRITON_INTERPRET=1 a single small config is used, because
autotuning times configs on a GPU and the interpreter is slow on big tiles.
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl

from kernels.triton.runtime import check_tensors, kernels_interpreted


def config(bm: int, bn: int, bk: int, stages: int, warps: int, group: int = 8) -> triton.Config:
    return triton.Config(
        {"BLOCK_SIZE_M": bm, "BLOCK_SIZE_N": bn, "BLOCK_SIZE_K": bk, "GROUP_SIZE_M": group},
        num_stages=stages, num_warps=warps)


INTERPRETER_CONFIGS = [config(32, 32, 32, 1, 4, group=4)]
# A K that is a multiple of the block depth needs no mask on the operand loads.
EVEN_K = {"EVEN_K": lambda args: args["K"] % args["BLOCK_SIZE_K"] == 0}


# --- device helpers ---
@triton.jit
def grouped_tile(M, N, BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr,
                 GROUP_SIZE_M: tl.constexpr):
    """(pid_m, pid_n) of this program's output tile, in super-grouped order.

    Consecutive programs walk down GROUP_SIZE_M tile rows before moving one tile column right,
    so the A row-panels and B column-panels they share are still in L2 when re-read.
    """
    return tile_of(tl.program_id(axis=0), M, N, BLOCK_SIZE_M, BLOCK_SIZE_N, GROUP_SIZE_M)


@triton.jit
def tile_of(tile_id, M, N, BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr,
            GROUP_SIZE_M: tl.constexpr):
    """(pid_m, pid_n) of the tile_id-th output tile in grouped_tile's order: a persistent
    program (gemm_tma.py) walks tile ids itself instead of taking its program id."""
    num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    num_pid_in_group = GROUP_SIZE_M * num_pid_n
    first_pid_m = (tile_id // num_pid_in_group) * GROUP_SIZE_M
    group_size_m = tl.minimum(num_pid_m - first_pid_m, GROUP_SIZE_M)  # the last group may be short
    pid_in_group = tile_id % num_pid_in_group
    return first_pid_m + pid_in_group % group_size_m, pid_in_group // group_size_m


@triton.jit
def mma(a, b, acc, INPUT_PRECISION: tl.constexpr, UPCAST_BF16: tl.constexpr):
    # The interpreter computes bf16 dots wrongly; fp32 operands give the right product there.
    if UPCAST_BF16:
        a = a.to(tl.float32)
        b = b.to(tl.float32)
    return tl.dot(a, b, acc, input_precision=INPUT_PRECISION)


@triton.jit
def k_loop(a_ptr, b_ptr, b2_ptr, M, N, K, pid_m, pid_n,
           stride_am, stride_ak, stride_bk, stride_bn, stride_b2k, stride_b2n,
           INPUT_PRECISION: tl.constexpr, UPCAST_BF16: tl.constexpr,
           BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
           EVEN_K: tl.constexpr, DUAL: tl.constexpr):
    """The (pid_m, pid_n) tile of a @ b, and of a @ b2 too when DUAL, as fp32 accumulators.

    DUAL feeds both products from one a tile, so a is read once for the two of them; without
    it, b2 and its strides are unused (pass None). Returns (acc, acc2, offs_m, offs_n): acc2 stays
    zero unless DUAL; offs_m (BM,) and offs_n (BN,) are the wrapped operand offsets, which the
    epilogue reuses for its own unmasked loads.
    """
    # Rows/columns past the edge wrap (% M, % N): their loads stay in bounds without a mask,
    # and store_tile's mask drops the duplicate results.
    offs_m = (pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)) % M
    offs_n = (pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)) % N
    offs_k = tl.arange(0, BLOCK_SIZE_K)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak  # (BM, BK)
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn  # (BK, BN)
    acc = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)  # (BM, BN)
    # A tensor even when unused: compiled Triton cannot return None; the compiler drops it.
    acc2 = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)  # (BM, BN)
    if DUAL:
        b2_ptrs = b2_ptr + offs_k[:, None] * stride_b2k + offs_n[None, :] * stride_b2n  # (BK, BN)
    for k in range(0, tl.cdiv(K, BLOCK_SIZE_K)):
        if EVEN_K:
            a = tl.load(a_ptrs)
            b = tl.load(b_ptrs)
            if DUAL:
                b2 = tl.load(b2_ptrs)
        else:  # zeros past K add nothing to the dot
            k_ok = offs_k < K - k * BLOCK_SIZE_K  # (BK,)
            a = tl.load(a_ptrs, mask=k_ok[None, :], other=0.0)
            b = tl.load(b_ptrs, mask=k_ok[:, None], other=0.0)
            if DUAL:
                b2 = tl.load(b2_ptrs, mask=k_ok[:, None], other=0.0)
        acc = mma(a, b, acc, INPUT_PRECISION, UPCAST_BF16)
        if DUAL:
            acc2 = mma(a, b2, acc2, INPUT_PRECISION, UPCAST_BF16)
        a_ptrs += BLOCK_SIZE_K * stride_ak
        b_ptrs += BLOCK_SIZE_K * stride_bk
        if DUAL:
            b2_ptrs += BLOCK_SIZE_K * stride_b2k
    return acc, acc2, offs_m, offs_n


@triton.jit
def store_tile(c_ptr, tile, pid_m, pid_n, M, N, stride_cm, stride_cn,
               BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr):
    offs_cm = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    offs_cn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    c_ptrs = c_ptr + offs_cm[:, None] * stride_cm + offs_cn[None, :] * stride_cn  # (BM, BN)
    mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
    tl.store(c_ptrs, tile.to(c_ptr.dtype.element_ty), mask=mask)


# --- host side ---
def check_offsets(op: str, name: str, shape, stride) -> None:
    # The kernels form element offsets as int32 products (offset * stride), the output's too.
    if sum((size - 1) * abs(st) for size, st in zip(shape, stride)) >= 2 ** 31:
        raise ValueError(f"{op}: {name} spans 2**31 elements or more; int32 offsets would overflow")


def check_operands(op: str, bias: torch.Tensor | None = None, **matrices: torch.Tensor | None):
    """Shared tensor checks, then: each matrix 2-D, and each tensor's offsets within int32."""
    check_tensors(op, **matrices, bias=bias)
    for name, t in matrices.items():
        if t is not None and t.dim() != 2:
            raise ValueError(f"{op}: {name} must be a 2-D tensor, got {tuple(t.shape)}")
    for name, t in {**matrices, "bias": bias}.items():
        if t is not None:
            check_offsets(op, name, t.shape, t.stride())


def check_output(op: str, M: int, N: int) -> None:
    check_offsets(op, f"the output c ({M}, {N})", (M, N), (N, 1))  # before allocating it


def dot_flags(dtype: torch.dtype) -> dict:
    # fp32 must match cuBLAS fp32, which does not use TF32: ask for an exact (ieee) dot.
    # fp16/bf16 take the tensor-core path, where the precision setting has no effect.
    upcast = kernels_interpreted() and dtype == torch.bfloat16
    exact = dtype == torch.float32 or upcast
    return {"INPUT_PRECISION": "ieee" if exact else "tf32", "UPCAST_BF16": upcast}


def grid(M: int, N: int):
    # 1-D launch: grouped_tile turns the flat program id into a (pid_m, pid_n) tile.
    return lambda meta: (triton.cdiv(M, meta["BLOCK_SIZE_M"])
                         * triton.cdiv(N, meta["BLOCK_SIZE_N"]),)
