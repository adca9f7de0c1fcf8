"""Hopper GEMM + bias: `matmul_bias_act_tma` = activation(a @ b + bias), read and written by TMA.

The plain tiled GEMM (gemm.py) launches one program per output tile and loads its operands
through pointer arithmetic. On sm_90 this kernel instead:
- builds tensor descriptors on the device (`tl.make_tensor_descriptor`): the copy engine (TMA)
  moves whole tiles between global and shared memory, out-of-range rows and columns padded with
  zeros on load and dropped on store, so the K loop has no masks and no address math, and the
  compiler can feed wgmma straight from the shared-memory tiles;
- is persistent: one program per SM, each walking output tiles (in gemm_common's grouped
  order) until none are left, so the next tile's loads can overlap this tile's epilogue and
  a program's set-up (its descriptors) is paid once per SM, not once per tile.
Device-side descriptors live in a global-memory workspace that Triton asks an allocator for at
launch; `_use_torch_workspace` installs one (the tutorials' way) when this module is imported.

TMA wants 16-byte aligned rows: a row-major a (M, K), b either row-major (K, N) or an
nn.Linear weight's `weight.t()` view, every row stride a multiple of 16 bytes. `layout_problem`
says which inputs break that; the op's variant skips such cases, the wrapper refuses them.
"""
from __future__ import annotations

import functools
from typing import Callable

import torch
import triton
import triton.language as tl

from kernels.triton import targets
from kernels.triton.activations import ACTIVATIONS, activate
from kernels.triton.gemm_common import (INTERPRETER_CONFIGS, check_offsets, check_operands,
                                        config, dot_flags, mma, tile_of)
from kernels.triton.runtime import kernels_interpreted

# Tiles for wgmma: a warpgroup (4 warps) per 64 rows of the accumulator. Configs that do not
# fit sm_90 for a dtype are pruned there by targets.UNFIT (triton_targets measures them).
TMA_CONFIGS = INTERPRETER_CONFIGS if kernels_interpreted() else [
    config(128, 256, 64, 3, 8),  # cuBLAS's usual Hopper tile for large 16-bit problems
    config(128, 128, 64, 4, 8),
    config(128, 128, 64, 4, 4),
    config(128, 128, 64, 5, 4),
    config(128, 64, 64, 4, 4),   # smaller problems: more tiles to spread over the SMs
    config(128, 128, 32, 4, 8),  # fp32: half the depth to fit shared memory
    config(64, 64, 32, 4, 4),    # fp32, and small problems
]
# The B layout picks a different descriptor (and shared-memory order), so it tunes apart.
TUNE_KEY = ["M", "N", "K", "B_KMAJOR"]
# Under the interpreter, fewer programs than tiles, so each program walks several.
INTERPRETER_PROGRAMS = 3


def _use_torch_workspace() -> None:
    """Let Triton take the descriptors' workspace from torch's caching allocator (cheap after
    the first launch). A context variable, set in the importing thread; kernels without
    device-side descriptors never ask for it, so the other kernels are untouched."""
    def workspace(size: int, alignment: int, stream: int | None) -> torch.Tensor:
        return torch.empty(size, device="cuda", dtype=torch.int8)  # alignment: torch's is 512

    triton.set_allocator(workspace)


if not kernels_interpreted():  # the interpreter builds descriptors on the host
    _use_torch_workspace()


@triton.autotune(configs=TMA_CONFIGS, key=TUNE_KEY,
                 prune_configs_by={"early_config_prune": targets.tma_prune})
@triton.jit
def _matmul_tma_kernel(
        a_ptr, b_ptr, bias_ptr, c_ptr, M, N, K,
        stride_am, stride_bk, stride_bn, stride_bias, stride_cm,
        HAS_BIAS: tl.constexpr, ACTIVATION: tl.constexpr, B_KMAJOR: tl.constexpr,
        INPUT_PRECISION: tl.constexpr, UPCAST_BF16: tl.constexpr,
        BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
        GROUP_SIZE_M: tl.constexpr):
    # Unit inner strides are constexpr: a descriptor's last dimension must be contiguous.
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[stride_am, 1],
                                       block_shape=[BLOCK_SIZE_M, BLOCK_SIZE_K])
    if B_KMAJOR:  # b is a weight.t() view: its storage is (N, K) row-major
        b_desc = tl.make_tensor_descriptor(b_ptr, shape=[N, K], strides=[stride_bn, 1],
                                           block_shape=[BLOCK_SIZE_N, BLOCK_SIZE_K])
    else:
        b_desc = tl.make_tensor_descriptor(b_ptr, shape=[K, N], strides=[stride_bk, 1],
                                           block_shape=[BLOCK_SIZE_K, BLOCK_SIZE_N])
    c_desc = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[stride_cm, 1],
                                       block_shape=[BLOCK_SIZE_M, BLOCK_SIZE_N])

    first, step = tl.program_id(axis=0), tl.num_programs(axis=0)
    n_tiles = tl.cdiv(M, BLOCK_SIZE_M) * tl.cdiv(N, BLOCK_SIZE_N)
    k_tiles = tl.cdiv(K, BLOCK_SIZE_K)
    # The epilogue recomputes its tile from a counter of its own: the compiler's pipelining
    # across tiles (flatten) then never needs one value alive from a tile's loads to its store.
    out_tile = first - step
    for tile in tl.range(first, n_tiles, step, flatten=True):
        pid_m, pid_n = tile_of(tile, M, N, BLOCK_SIZE_M, BLOCK_SIZE_N, GROUP_SIZE_M)
        acc = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)  # (BM, BN)
        for k in range(k_tiles):  # K past the end loads as zeros: adds nothing
            a = a_desc.load([pid_m * BLOCK_SIZE_M, k * BLOCK_SIZE_K])  # (BM, BK)
            if B_KMAJOR:
                b = tl.trans(b_desc.load([pid_n * BLOCK_SIZE_N, k * BLOCK_SIZE_K]))  # (BK, BN)
            else:
                b = b_desc.load([k * BLOCK_SIZE_K, pid_n * BLOCK_SIZE_N])  # (BK, BN)
            acc = mma(a, b, acc, INPUT_PRECISION, UPCAST_BF16)

        out_tile += step
        pid_m, pid_n = tile_of(out_tile, M, N, BLOCK_SIZE_M, BLOCK_SIZE_N, GROUP_SIZE_M)
        if HAS_BIAS:
            offs_n = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)  # (BN,)
            bias = tl.load(bias_ptr + offs_n * stride_bias, mask=offs_n < N, other=0.0)
            acc += bias.to(tl.float32)[None, :]
        acc = activate(acc, ACTIVATION)
        # Rows and columns past (M, N) are clipped by the copy engine.
        c_desc.store([pid_m * BLOCK_SIZE_M, pid_n * BLOCK_SIZE_N], acc.to(c_ptr.dtype.element_ty))


# --- host side ---
def layout_problem(K: int, N: int, itemsize: int) -> str | None:
    """Why contiguous a (M, K), b (K, N) and c (M, N) cannot be TMA operands, or None: every
    row must be a multiple of 16 bytes (a weight.t() view's rows are K long, like a's)."""
    if K == 0:
        return "TMA descriptors need K >= 1"
    for what, length in (("K", K), ("N", N)):
        if length * itemsize % 16:
            return (f"TMA needs rows of a multiple of 16 bytes: {what}={length} at {itemsize} B "
                    f"per element is {length * itemsize} B")
    return None


def _tensor_problem(a: torch.Tensor, b: torch.Tensor) -> str | None:
    """The layout rules for the operands as given (any 2-D strides), or None."""
    itemsize = a.element_size()
    if a.stride(1) != 1:
        return f"a must be row-major (unit column stride), got strides {a.stride()}"
    if b.stride(1) != 1 and b.stride(0) != 1:
        return f"b must be row-major or a weight.t() view, got strides {b.stride()}"
    # The shapes first (c's rows too, and a's and b's when contiguous), then the strides given.
    problem = layout_problem(a.shape[1], b.shape[1], itemsize)
    b_row = b.stride(0) if b.stride(1) == 1 else b.stride(1)
    if problem is None and (a.stride(0) * itemsize % 16 or b_row * itemsize % 16
                            or any(t.data_ptr() % 16 for t in (a, b))):
        problem = (f"TMA needs 16-byte aligned operands with row strides of a multiple of 16 "
                   f"bytes, got a {tuple(a.stride())} and b {tuple(b.stride())} at {itemsize} B")
    return problem


@functools.lru_cache(maxsize=None)
def _programs(device: torch.device) -> int:
    if device.type != "cuda":
        return INTERPRETER_PROGRAMS
    return torch.cuda.get_device_properties(device).multi_processor_count


def tma_dot_flags(dtype: torch.dtype) -> dict:
    """gemm_common's dot flags, but fp32 as tf32x3 (three TF32 tensor-core products, about
    fp32's accuracy): the exact FMA dot spills tens of kilobytes per thread in this kernel on
    sm_90, where tf32x3 runs clean (measured by suites/tools/triton_targets.py)."""
    flags = dot_flags(dtype)
    if dtype == torch.float32:
        flags["INPUT_PRECISION"] = "tf32x3"
    return flags


def prepare_matmul_bias_act_tma(a: torch.Tensor, b: torch.Tensor,
                                bias: torch.Tensor | None = None,
                                activation: str = "none") -> Callable[[], torch.Tensor]:
    """Check the operands once and return the zero-argument launch of activation(a @ b + bias)
    (a fresh (M, N) output per call, in a's dtype): the checks stay off the timed path."""
    op = "matmul_bias_act_tma"
    if activation not in ACTIVATIONS:
        raise ValueError(f"{op}: unknown activation {activation!r}; expected one of {ACTIVATIONS}")
    check_operands(op, a=a, b=b, bias=bias)
    (M, K), (K_b, N) = a.shape, b.shape
    if K_b != K:
        raise ValueError(f"{op}: inner dimensions differ: a is {tuple(a.shape)}, b is "
                         f"{tuple(b.shape)} (K={K} vs {K_b})")
    if bias is not None and tuple(bias.shape) != (N,):
        raise ValueError(f"{op}: bias must have shape ({N},) to match b's N, "
                         f"got {tuple(bias.shape)}")
    problem = _tensor_problem(a, b)
    if problem is not None:
        raise ValueError(f"{op}: {problem}")
    check_offsets(op, f"the output c ({M}, {N})", (M, N), (N, 1))
    b_kmajor = b.stride(1) != 1  # a weight.t() view (N, K rows); (K, 1)-strided b is row-major
    programs = _programs(a.device)
    flags = dict(HAS_BIAS=bias is not None, ACTIVATION=activation, B_KMAJOR=b_kmajor,
                 **tma_dot_flags(a.dtype))

    def grid(meta):  # persistent: never more programs than tiles
        tiles = triton.cdiv(M, meta["BLOCK_SIZE_M"]) * triton.cdiv(N, meta["BLOCK_SIZE_N"])
        return (min(programs, tiles),)

    def launch() -> torch.Tensor:
        c = torch.empty((M, N), device=a.device, dtype=a.dtype)  # (M, N)
        if c.numel() == 0:
            return c
        _matmul_tma_kernel[grid](
            a, b, bias if bias is not None else c, c, M, N, K,  # c stands in for a missing bias
            a.stride(0), b.stride(0), b.stride(1),
            bias.stride(0) if bias is not None else 0, c.stride(0), **flags)
        return c

    return launch


def matmul_bias_act_tma(a: torch.Tensor, b: torch.Tensor, bias: torch.Tensor | None = None,
                        activation: str = "none") -> torch.Tensor:
    """activation(a @ b + bias): a (M, K) row-major, b (K, N) row-major or a weight.t() view,
    bias (N,) or None -> (M, N) in a's dtype, fp32 accumulation and epilogue, TMA in and out."""
    return prepare_matmul_bias_act_tma(a, b, bias, activation)()
