"""Triton GEMM with a fused epilogue: `matmul_bias_act` = activation(a @ b + bias) + residual.

Reads its operands through strides (an nn.Linear weight is passed as its `weight.t()` view,
never copied), accumulates in fp32 and applies the epilogue in fp32 before the one store.
`matmul_geglu` lives in gemm_geglu.py and is re-exported here. Each has a `prepare_` form
that checks its arguments once and returns the call to time.
"""
from __future__ import annotations

from functools import partial
from typing import Callable

import torch
import triton
import triton.language as tl

from kernels.triton.activations import ACTIVATIONS, activate
from kernels.triton.gemm_common import (EVEN_K, INTERPRETER_CONFIGS, check_operands,
                                        check_output, config, dot_flags, grid, grouped_tile,
                                        k_loop, store_tile)
from kernels.triton.gemm_geglu import matmul_geglu, prepare_matmul_geglu  # noqa: F401
from kernels.triton import targets
from kernels.triton.runtime import kernels_interpreted

# One list for every dtype and GPU: a config that does not fit a GPU's shared memory is dropped
# by the autotuner as out-of-resources, and one that spills registers there by targets.py.
GEMM_CONFIGS = INTERPRETER_CONFIGS if kernels_interpreted() else [
    config(128, 256, 64, 3, 8),  # the big Hopper/Ampere tiles win on large square problems
    config(256, 128, 64, 3, 8),
    config(128, 128, 64, 4, 8),
    config(128, 128, 64, 4, 4),
    config(64, 128, 64, 4, 4),
    config(128, 64, 64, 4, 4),
    config(128, 128, 32, 4, 4),  # fp32 operands: half the K depth to fit shared memory
    config(64, 64, 32, 4, 4),    # small or skinny problems: more programs to fill the SMs
]
# B's strides are in the key so a row-major B and a transposed view (an nn.Linear weight.t())
# tune separately: the best tiles differ with the layout. M, N, K already fix them otherwise.
# A's too, for the backward (gemm_bwd.py): its dw = x^T @ dy reads A transposed, and at a square
# shape would otherwise take the config the forward tuned for a row-major A.
TUNE_KEY = ["M", "N", "K", "stride_am", "stride_ak", "stride_bk", "stride_bn"]


@triton.autotune(configs=GEMM_CONFIGS, key=TUNE_KEY,
                 prune_configs_by={"early_config_prune": targets.gemm_prune("gemm")})
@triton.heuristics(EVEN_K)
@triton.jit
def _matmul_bias_act_kernel(
        a_ptr, b_ptr, bias_ptr, c_ptr, M, N, K,
        stride_am, stride_ak, stride_bk, stride_bn, stride_bias, stride_cm, stride_cn,
        res_ptr, stride_rm, stride_rn,
        HAS_BIAS: tl.constexpr, ACTIVATION: tl.constexpr, HAS_RESIDUAL: tl.constexpr,
        INPUT_PRECISION: tl.constexpr, UPCAST_BF16: tl.constexpr,
        BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
        GROUP_SIZE_M: tl.constexpr, EVEN_K: tl.constexpr):
    pid_m, pid_n = grouped_tile(M, N, BLOCK_SIZE_M, BLOCK_SIZE_N, GROUP_SIZE_M)
    acc, _, offs_am, offs_bn = k_loop(  # (BM, BN) fp32, -, (BM,), (BN,)
        a_ptr, b_ptr, None, M, N, K, pid_m, pid_n,
        stride_am, stride_ak, stride_bk, stride_bn, None, None,
        INPUT_PRECISION, UPCAST_BF16, BLOCK_SIZE_M, BLOCK_SIZE_N, BLOCK_SIZE_K, EVEN_K,
        DUAL=False)

    if HAS_BIAS:
        bias = tl.load(bias_ptr + offs_bn * stride_bias).to(tl.float32)  # (BN,)
        acc += bias[None, :]
    acc = activate(acc, ACTIVATION)
    if HAS_RESIDUAL:
        # A transformer's `h = x + proj(...)`: the residual is added in fp32 before the one
        # store, so the projection output never makes a round trip through memory. The wrapped
        # offsets keep the load in bounds without a mask, as for the operands.
        res_ptrs = res_ptr + offs_am[:, None] * stride_rm + offs_bn[None, :] * stride_rn  # (BM, BN)
        acc += tl.load(res_ptrs).to(tl.float32)
    store_tile(c_ptr, acc, pid_m, pid_n, M, N, stride_cm, stride_cn, BLOCK_SIZE_M, BLOCK_SIZE_N)


def matmul_bias_act(a: torch.Tensor, b: torch.Tensor, bias: torch.Tensor | None = None,
                    activation: str = "none", residual: torch.Tensor | None = None) -> torch.Tensor:
    """activation(a @ b + bias) + residual: a (M, K), b (K, N), bias (N,) or None, residual
    (M, N) or None -> (M, N), a's dtype. The whole epilogue runs in fp32 before the one store.

    Any strides: pass an nn.Linear weight (N, K) as `weight.t()`; it is read in place.
    """
    return prepare_matmul_bias_act(a, b, bias, activation, residual)()


def prepare_matmul_bias_act(a: torch.Tensor, b: torch.Tensor, bias: torch.Tensor | None = None,
                            activation: str = "none",
                            residual: torch.Tensor | None = None) -> Callable[[], torch.Tensor]:
    """`matmul_bias_act` on these tensors as a call: the arguments are checked once, here, and
    each call only allocates the output and launches (a timed call is the kernel's, not the
    checks'). The call reads the tensors as they are when it runs."""
    op = "matmul_bias_act"
    if activation not in ACTIVATIONS:
        raise ValueError(f"{op}: unknown activation {activation!r}; expected one of {ACTIVATIONS}")
    check_operands(op, a=a, b=b, residual=residual, bias=bias)
    (M, K), (K_b, N) = a.shape, b.shape
    if K_b != K:
        raise ValueError(f"{op}: inner dimensions differ: a is {tuple(a.shape)}, b is "
                         f"{tuple(b.shape)} (K={K} vs {K_b})")
    if bias is not None and tuple(bias.shape) != (N,):
        raise ValueError(f"{op}: bias must have shape ({N},) to match b's N, got {tuple(bias.shape)}")
    if residual is not None and tuple(residual.shape) != (M, N):
        raise ValueError(f"{op}: residual must have shape ({M}, {N}) = (M, N) of the output, "
                         f"got {tuple(residual.shape)}")

    check_output(op, M, N)
    return partial(_launch, a, b, bias, activation, residual)


def _launch(a, b, bias, activation, residual) -> torch.Tensor:
    (M, K), N = a.shape, b.shape[1]
    c = torch.empty((M, N), device=a.device, dtype=a.dtype)  # (M, N)
    if c.numel() == 0:
        return c
    _matmul_bias_act_kernel[grid(M, N)](
        a, b, bias if bias is not None else c, c, M, N, K,  # c stands in for a missing bias
        a.stride(0), a.stride(1), b.stride(0), b.stride(1),
        bias.stride(0) if bias is not None else 0, c.stride(0), c.stride(1),
        residual if residual is not None else c,  # c stands in for a missing residual too
        *(residual.stride() if residual is not None else (0, 0)),
        HAS_BIAS=bias is not None, ACTIVATION=activation, HAS_RESIDUAL=residual is not None,
        **dot_flags(a.dtype))
    return c
