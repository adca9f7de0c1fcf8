"""Triton GEMMs with fused epilogues: `matmul_bias_act` (bias + activation + residual) and
`matmul_geglu`.

Both read their operands through strides (an nn.Linear weight is passed as its `weight.t()`
view, never copied), accumulate in fp32 and apply the epilogue in fp32 before the one store.
On CUDA the block shapes are autotuned; under TRITON_INTERPRET=1 a single small config is used,
because autotuning times configs on a GPU and the interpreter is slow on big tiles.
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl

from kernels.triton.geglu import gelu_tanh  # the one exp-only gelu shared by all kernels
from kernels.triton.runtime import interpreting, unavailable_reason

ACTIVATIONS = ("none", "relu", "gelu_tanh")
_DTYPES = {torch.float32: "float32", torch.float16: "float16", torch.bfloat16: "bfloat16"}


def _config(bm: int, bn: int, bk: int, stages: int, warps: int, group: int = 8) -> triton.Config:
    return triton.Config(
        {"BLOCK_SIZE_M": bm, "BLOCK_SIZE_N": bn, "BLOCK_SIZE_K": bk, "GROUP_SIZE_M": group},
        num_stages=stages, num_warps=warps)


# Chosen once, at import: the interpreter flag is read when the kernels are defined anyway.
# Configs that do not fit a GPU's shared memory (e.g. fp32 with big tiles) are dropped by the
# autotuner as out-of-resources, so one list serves every dtype.
if interpreting():
    GEMM_CONFIGS = [_config(32, 32, 32, 1, 4, group=4)]
    GEGLU_CONFIGS = GEMM_CONFIGS
else:
    GEMM_CONFIGS = [
        _config(128, 256, 64, 3, 8),  # the big Hopper/Ampere tiles win on large square problems
        _config(256, 128, 64, 3, 8),
        _config(128, 128, 64, 4, 8),
        _config(128, 128, 64, 4, 4),
        _config(64, 128, 64, 4, 4),
        _config(128, 64, 64, 4, 4),
        _config(128, 128, 32, 4, 4),  # fp32 operands: half the K depth to fit shared memory
        _config(64, 64, 32, 4, 4),    # small or skinny problems: more programs to fill the SMs
    ]
    # Two fp32 accumulators per program double the register use, so no 128x256 tiles here.
    GEGLU_CONFIGS = [
        _config(128, 128, 64, 3, 8),
        _config(128, 128, 64, 4, 8),
        _config(64, 128, 64, 4, 4),
        _config(128, 64, 64, 4, 4),
        _config(64, 64, 64, 4, 4),
        _config(128, 128, 32, 4, 8),
        _config(64, 64, 32, 4, 4),
    ]

_TUNE_KEY = ["M", "N", "K"]
# A K that is a multiple of the block depth needs no mask on the operand loads.
_EVEN_K = {"EVEN_K": lambda args: args["K"] % args["BLOCK_SIZE_K"] == 0}


# ---------------------------------------------------------------------------------------------
# Device helpers shared by both kernels
# ---------------------------------------------------------------------------------------------
@triton.jit
def _activate(x, ACTIVATION: tl.constexpr):
    # The activation hook: resolved at compile time, so "none" costs nothing.
    if ACTIVATION == "relu":
        x = tl.maximum(x, 0.0)
    elif ACTIVATION == "gelu_tanh":
        x = gelu_tanh(x)
    return x


@triton.jit
def _grouped_tile(M, N, BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr,
                  GROUP_SIZE_M: tl.constexpr):
    """(pid_m, pid_n) of this program's output tile, in super-grouped order.

    Consecutive programs walk down GROUP_SIZE_M tile rows before moving one tile column right,
    so the A row-panels and B column-panels they share are still in L2 when re-read.
    """
    pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    num_pid_in_group = GROUP_SIZE_M * num_pid_n
    first_pid_m = (pid // num_pid_in_group) * GROUP_SIZE_M
    group_size_m = tl.minimum(num_pid_m - first_pid_m, GROUP_SIZE_M)  # the last group may be short
    pid_in_group = pid % num_pid_in_group
    return first_pid_m + pid_in_group % group_size_m, pid_in_group // group_size_m


@triton.jit
def _mma(a, b, acc, INPUT_PRECISION: tl.constexpr, UPCAST_BF16: tl.constexpr):
    # The interpreter computes bf16 dots wrongly; fp32 operands give the right product there.
    if UPCAST_BF16:
        a = a.to(tl.float32)
        b = b.to(tl.float32)
    return tl.dot(a, b, acc, input_precision=INPUT_PRECISION)


@triton.jit
def _store_tile(c_ptr, tile, pid_m, pid_n, M, N, stride_cm, stride_cn,
                BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr):
    offs_cm = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    offs_cn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    c_ptrs = c_ptr + offs_cm[:, None] * stride_cm + offs_cn[None, :] * stride_cn  # (BM, BN)
    mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
    tl.store(c_ptrs, tile.to(c_ptr.dtype.element_ty), mask=mask)


# ---------------------------------------------------------------------------------------------
# Kernels
# ---------------------------------------------------------------------------------------------
@triton.autotune(configs=GEMM_CONFIGS, key=_TUNE_KEY)
@triton.heuristics(_EVEN_K)
@triton.jit
def _matmul_bias_act_kernel(
        a_ptr, b_ptr, bias_ptr, c_ptr, M, N, K,
        stride_am, stride_ak, stride_bk, stride_bn, stride_bias, stride_cm, stride_cn,
        res_ptr, stride_rm, stride_rn,
        HAS_BIAS: tl.constexpr, ACTIVATION: tl.constexpr, HAS_RESIDUAL: tl.constexpr,
        INPUT_PRECISION: tl.constexpr, UPCAST_BF16: tl.constexpr,
        BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
        GROUP_SIZE_M: tl.constexpr, EVEN_K: tl.constexpr):
    pid_m, pid_n = _grouped_tile(M, N, BLOCK_SIZE_M, BLOCK_SIZE_N, GROUP_SIZE_M)
    # Rows/columns past the edge wrap (% M, % N): their loads stay in bounds without a mask,
    # and _store_tile's mask drops the duplicate results.
    offs_am = (pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)) % M
    offs_bn = (pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)) % N
    offs_k = tl.arange(0, BLOCK_SIZE_K)
    a_ptrs = a_ptr + offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak  # (BM, BK)
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn  # (BK, BN)

    acc = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)  # (BM, BN)
    for k in range(0, tl.cdiv(K, BLOCK_SIZE_K)):
        if EVEN_K:
            a = tl.load(a_ptrs)
            b = tl.load(b_ptrs)
        else:  # zeros past K add nothing to the dot
            k_ok = offs_k < K - k * BLOCK_SIZE_K  # (BK,)
            a = tl.load(a_ptrs, mask=k_ok[None, :], other=0.0)
            b = tl.load(b_ptrs, mask=k_ok[:, None], other=0.0)
        acc = _mma(a, b, acc, INPUT_PRECISION, UPCAST_BF16)
        a_ptrs += BLOCK_SIZE_K * stride_ak
        b_ptrs += BLOCK_SIZE_K * stride_bk

    if HAS_BIAS:
        bias = tl.load(bias_ptr + offs_bn * stride_bias).to(tl.float32)  # (BN,)
        acc += bias[None, :]
    acc = _activate(acc, ACTIVATION)
    if HAS_RESIDUAL:
        # A transformer's `h = x + proj(...)`: the residual is added in fp32 before the one
        # store, so the projection output never makes a round trip through memory. The wrapped
        # offsets keep the load in bounds without a mask, as for the operands.
        res_ptrs = res_ptr + offs_am[:, None] * stride_rm + offs_bn[None, :] * stride_rn  # (BM, BN)
        acc += tl.load(res_ptrs).to(tl.float32)
    _store_tile(c_ptr, acc, pid_m, pid_n, M, N, stride_cm, stride_cn, BLOCK_SIZE_M, BLOCK_SIZE_N)


@triton.autotune(configs=GEGLU_CONFIGS, key=_TUNE_KEY)
@triton.heuristics(_EVEN_K)
@triton.jit
def _matmul_geglu_kernel(
        x_ptr, wg_ptr, wu_ptr, c_ptr, M, N, K,
        stride_xm, stride_xk, stride_gk, stride_gn, stride_uk, stride_un, stride_cm, stride_cn,
        INPUT_PRECISION: tl.constexpr, UPCAST_BF16: tl.constexpr,
        BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
        GROUP_SIZE_M: tl.constexpr, EVEN_K: tl.constexpr):
    pid_m, pid_n = _grouped_tile(M, N, BLOCK_SIZE_M, BLOCK_SIZE_N, GROUP_SIZE_M)
    offs_xm = (pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)) % M  # wrap: see above
    offs_wn = (pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)) % N
    offs_k = tl.arange(0, BLOCK_SIZE_K)
    x_ptrs = x_ptr + offs_xm[:, None] * stride_xm + offs_k[None, :] * stride_xk  # (BM, BK)
    wg_ptrs = wg_ptr + offs_k[:, None] * stride_gk + offs_wn[None, :] * stride_gn  # (BK, BN)
    wu_ptrs = wu_ptr + offs_k[:, None] * stride_uk + offs_wn[None, :] * stride_un  # (BK, BN)

    # One x tile feeds both products, so x is read once for gate and up.
    gate = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)  # (BM, BN)
    up = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)  # (BM, BN)
    for k in range(0, tl.cdiv(K, BLOCK_SIZE_K)):
        if EVEN_K:
            x = tl.load(x_ptrs)
            wg = tl.load(wg_ptrs)
            wu = tl.load(wu_ptrs)
        else:
            k_ok = offs_k < K - k * BLOCK_SIZE_K  # (BK,)
            x = tl.load(x_ptrs, mask=k_ok[None, :], other=0.0)
            wg = tl.load(wg_ptrs, mask=k_ok[:, None], other=0.0)
            wu = tl.load(wu_ptrs, mask=k_ok[:, None], other=0.0)
        gate = _mma(x, wg, gate, INPUT_PRECISION, UPCAST_BF16)
        up = _mma(x, wu, up, INPUT_PRECISION, UPCAST_BF16)
        x_ptrs += BLOCK_SIZE_K * stride_xk
        wg_ptrs += BLOCK_SIZE_K * stride_gk
        wu_ptrs += BLOCK_SIZE_K * stride_uk

    # gate and up live only in registers: the one store is the GeGLU product.
    _store_tile(c_ptr, gelu_tanh(gate) * up, pid_m, pid_n, M, N, stride_cm, stride_cn,
                BLOCK_SIZE_M, BLOCK_SIZE_N)


# ---------------------------------------------------------------------------------------------
# Host wrappers
# ---------------------------------------------------------------------------------------------
def _check_matrix(name: str, t: torch.Tensor, dtype: torch.dtype, device: torch.device) -> None:
    if not isinstance(t, torch.Tensor) or t.dim() != 2:
        got = tuple(t.shape) if isinstance(t, torch.Tensor) else type(t).__name__
        raise ValueError(f"{name} must be a 2-D tensor, got {got}")
    if t.dtype != dtype:
        raise ValueError(f"{name} has dtype {t.dtype} but the first operand has {dtype}")
    if t.device != device:
        raise ValueError(f"{name} is on {t.device} but the first operand is on {device}")
    # The kernels form element offsets as int32 products (offset * stride).
    if sum((size - 1) * abs(stride) for size, stride in zip(t.shape, t.stride())) >= 2 ** 31:
        raise ValueError(f"{name} spans more than 2**31 elements; int32 offsets would overflow")


def _check_first(name: str, t: torch.Tensor) -> None:
    if not isinstance(t, torch.Tensor):
        raise ValueError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if t.dtype not in _DTYPES:
        raise ValueError(f"unsupported dtype {t.dtype} for {name}; "
                         f"supported: {', '.join(_DTYPES.values())}")
    reason = unavailable_reason(t.device.type, for_timing=False)
    if reason is not None:
        raise RuntimeError(reason)
    _check_matrix(name, t, t.dtype, t.device)


def _dot_flags(dtype: torch.dtype) -> dict:
    # fp32 must match cuBLAS fp32, which does not use TF32: ask for an exact (ieee) dot.
    # fp16/bf16 take the tensor-core path, where the precision setting has no effect.
    upcast = interpreting() and dtype == torch.bfloat16
    exact = dtype == torch.float32 or upcast
    return {"INPUT_PRECISION": "ieee" if exact else "tf32", "UPCAST_BF16": upcast}


def _grid(M: int, N: int):
    # 1-D launch: _grouped_tile turns the flat program id into a (pid_m, pid_n) tile.
    return lambda meta: (triton.cdiv(M, meta["BLOCK_SIZE_M"])
                         * triton.cdiv(N, meta["BLOCK_SIZE_N"]),)


def matmul_bias_act(a: torch.Tensor, b: torch.Tensor, bias: torch.Tensor | None = None,
                    activation: str = "none", residual: torch.Tensor | None = None) -> torch.Tensor:
    """activation(a @ b + bias) + residual: a (M, K), b (K, N), bias (N,) or None, residual
    (M, N) or None -> (M, N), a's dtype. The whole epilogue runs in fp32 before the one store.

    Any strides: pass an nn.Linear weight (N, K) as `weight.t()`; it is read in place.
    """
    if activation not in ACTIVATIONS:
        raise ValueError(f"unknown activation {activation!r}; expected one of {ACTIVATIONS}")
    _check_first("a", a)
    _check_matrix("b", b, a.dtype, a.device)
    (M, K), (K_b, N) = a.shape, b.shape
    if K_b != K:
        raise ValueError(f"inner dimensions differ: a is {tuple(a.shape)}, b is {tuple(b.shape)} "
                         f"(K={K} vs {K_b})")
    if bias is not None:
        if not isinstance(bias, torch.Tensor) or tuple(bias.shape) != (N,):
            got = tuple(bias.shape) if isinstance(bias, torch.Tensor) else type(bias).__name__
            raise ValueError(f"bias must have shape ({N},) to match b's N, got {got}")
        if bias.dtype != a.dtype or bias.device != a.device:
            raise ValueError(f"bias is {bias.dtype} on {bias.device}; "
                             f"expected {a.dtype} on {a.device} like a")
    if residual is not None:
        _check_matrix("residual", residual, a.dtype, a.device)
        if tuple(residual.shape) != (M, N):
            raise ValueError(f"residual must have shape ({M}, {N}) = (M, N) of the output, "
                             f"got {tuple(residual.shape)}")

    c = torch.empty((M, N), device=a.device, dtype=a.dtype)  # (M, N)
    if c.numel() == 0:
        return c
    _matmul_bias_act_kernel[_grid(M, N)](
        a, b, bias if bias is not None else c, c, M, N, K,  # c stands in for a missing bias
        a.stride(0), a.stride(1), b.stride(0), b.stride(1),
        bias.stride(0) if bias is not None else 0, c.stride(0), c.stride(1),
        residual if residual is not None else c,  # c stands in for a missing residual too
        *(residual.stride() if residual is not None else (0, 0)),
        HAS_BIAS=bias is not None, ACTIVATION=activation, HAS_RESIDUAL=residual is not None,
        **_dot_flags(a.dtype))
    return c


def matmul_geglu(x: torch.Tensor, w_gate: torch.Tensor, w_up: torch.Tensor) -> torch.Tensor:
    """gelu_tanh(x @ w_gate) * (x @ w_up): x (M, K), w_gate and w_up (K, N) -> (M, N).

    One kernel, two fp32 accumulators; the gate and up products never reach memory. Any
    strides: pass nn.Linear weights (N, K) as `weight.t()` views.
    """
    _check_first("x", x)
    _check_matrix("w_gate", w_gate, x.dtype, x.device)
    _check_matrix("w_up", w_up, x.dtype, x.device)
    M, K = x.shape
    if w_gate.shape[0] != K:
        raise ValueError(f"inner dimensions differ: x is {tuple(x.shape)}, "
                         f"w_gate is {tuple(w_gate.shape)} (K={K} vs {w_gate.shape[0]})")
    if w_up.shape != w_gate.shape:
        raise ValueError(f"w_up has shape {tuple(w_up.shape)} but w_gate has "
                         f"{tuple(w_gate.shape)}; both must be (K, N)")
    N = w_gate.shape[1]

    c = torch.empty((M, N), device=x.device, dtype=x.dtype)  # (M, N)
    if c.numel() == 0:
        return c
    _matmul_geglu_kernel[_grid(M, N)](
        x, w_gate, w_up, c, M, N, K,
        x.stride(0), x.stride(1), w_gate.stride(0), w_gate.stride(1),
        w_up.stride(0), w_up.stride(1), c.stride(0), c.stride(1),
        **_dot_flags(x.dtype))
    return c
