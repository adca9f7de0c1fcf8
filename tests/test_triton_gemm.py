"""Triton GEMM kernels against a float64 torch reference (interpreter on CPU, compiled on CUDA)."""
import math

import pytest
import torch
import torch.nn.functional as F

pytest.importorskip("triton")
from kernels.triton import gemm, gemm_common, gemm_geglu  # noqa: E402  (TRITON_INTERPRET set by conftest)

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
# Max |error| relative to max |reference|. fp32 is an exact (ieee) dot; for fp16/bf16 the
# error is dominated by rounding the fp32 result to the output dtype.
TOL = {torch.float32: 1e-5, torch.float16: 2e-3, torch.bfloat16: 1e-2}
# Not multiples of the 32-wide interpreter blocks (nor of the CUDA ones), plus M=1, and one
# K that is a multiple of the block depth for the unmasked-K path.
SHAPES = [(37, 51, 29), (1, 70, 33), (65, 17, 130), (40, 33, 64)]  # (M, N, K)


def _inputs(M, N, K, dtype, seed=0):
    """x (M, K) and an nn.Linear-style weight (N, K) scaled so outputs are O(1), plus bias (N,)."""
    g = torch.Generator().manual_seed(seed)
    a = torch.randn(M, K, generator=g)
    w = torch.randn(N, K, generator=g) / math.sqrt(K)
    bias = torch.randn(N, generator=g)
    return [t.to(device=DEVICE, dtype=dtype) for t in (a, w, bias)]


def _reference(a, b, bias, activation):
    y = a.double().cpu() @ b.double().cpu()
    if bias is not None:
        y = y + bias.double().cpu()
    if activation == "relu":
        y = torch.relu(y)
    elif activation == "gelu_tanh":
        y = F.gelu(y, approximate="tanh")
    return y


def _assert_close(out, ref, dtype):
    assert out.shape == ref.shape and out.is_contiguous()
    err = (out.double().cpu() - ref).abs().max().item() / ref.abs().max().item()
    assert err < TOL[dtype], f"relative error {err:.3g} >= {TOL[dtype]:g}"


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
@pytest.mark.parametrize("activation", gemm.ACTIVATIONS)
def test_matmul_bias_act(shape, dtype, activation):
    M, N, K = shape
    a, w, bias = _inputs(M, N, K, dtype)
    out = gemm.matmul_bias_act(a, w.t(), bias, activation)
    assert out.dtype == dtype
    _assert_close(out, _reference(a, w.t(), bias, activation), dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_matmul_no_bias_contiguous_b(dtype):
    a, w, _ = _inputs(37, 51, 29, dtype, seed=1)
    b = w.t().contiguous()  # row-major (K, N): the other stride order
    _assert_close(gemm.matmul_bias_act(a, b), _reference(a, b, None, "none"), dtype)


def test_matmul_bf16_bias_gelu():
    # bf16 needs the interpreter's fp32 cast before tl.dot; this is the shape that exercises it.
    a, w, bias = _inputs(65, 17, 130, torch.bfloat16, seed=2)
    out = gemm.matmul_bias_act(a, w.t(), bias, "gelu_tanh")
    _assert_close(out, _reference(a, w.t(), bias, "gelu_tanh"), torch.bfloat16)


def test_transposed_weight_is_read_in_place(monkeypatch):
    """The wrapper hands the kernel the weight's own storage and strides, not a copy."""
    M, N, K = 37, 51, 29
    a, w, bias = _inputs(M, N, K, torch.float32, seed=3)
    real, seen = gemm._matmul_bias_act_kernel, {}

    class Spy:
        def __getitem__(self, grid):
            def launch(*args, **kwargs):
                seen["b_ptr"], seen["b_strides"] = args[1].data_ptr(), (args[9], args[10])
                return real[grid](*args, **kwargs)
            return launch

    monkeypatch.setattr(gemm, "_matmul_bias_act_kernel", Spy())
    out = gemm.matmul_bias_act(a, w.t(), bias, "relu")
    assert seen == {"b_ptr": w.data_ptr(), "b_strides": (1, K)}
    _assert_close(out, _reference(a, w.t(), bias, "relu"), torch.float32)


@pytest.mark.parametrize("shape", SHAPES[:3])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_matmul_geglu(shape, dtype):
    M, N, K = shape
    x, wg, _ = _inputs(M, N, K, dtype, seed=4)
    _, wu, _ = _inputs(M, N, K, dtype, seed=5)
    out = gemm.matmul_geglu(x, wg.t(), wu.t())  # (I, D) weights as (D, I) views
    ref = _reference(x, wg.t(), None, "gelu_tanh") * _reference(x, wu.t(), None, "none")
    assert out.dtype == dtype
    _assert_close(out, ref, dtype)


@pytest.mark.parametrize("call, match", [
    (lambda a, w, bias: gemm.matmul_bias_act(a, w), "inner dimensions"),  # (5, 7) @ (8, 3)
    (lambda a, w, bias: gemm.matmul_bias_act(a, w[:7], bias), r"bias must have shape \(3,\)"),
    (lambda a, w, bias: gemm.matmul_bias_act(a, w[:7], activation="gelu"),
     r"unknown activation 'gelu'.*'relu'"),
    (lambda a, w, bias: gemm.matmul_bias_act(a.int(), w[:7].int()),
     "a has dtype torch.int32"),
    (lambda a, w, bias: gemm.matmul_bias_act(a, w[:7].half()),
     "a, b must share one dtype, got torch.float32, torch.float16"),
    (lambda a, w, bias: gemm.matmul_bias_act(a, w[:7], bias[:3].half()), "must share one dtype"),
    (lambda a, w, bias: gemm.matmul_bias_act(a[0], w[:7]), "2-D"),
    (lambda a, w, bias: gemm.matmul_geglu(a, w, w), "inner dimensions"),
    (lambda a, w, bias: gemm.matmul_geglu(a, w[:7], w[:7, :2]), "w_up has shape"),
    (lambda a, w, bias: gemm.matmul_geglu(a.long(), w[:7].long(), w[:7].long()),
     "matmul_geglu: x has dtype torch.int64"),
])
def test_bad_input_raises(call, match):
    a = torch.randn(5, 7, device=DEVICE)
    w = torch.randn(8, 3, device=DEVICE)
    bias = torch.randn(4, device=DEVICE)
    with pytest.raises(ValueError, match=match):
        call(a, w, bias)


def test_empty_output():
    a = torch.randn(0, 7, device=DEVICE)
    assert gemm.matmul_bias_act(a, torch.randn(7, 3, device=DEVICE)).shape == (0, 3)


def _residual(M, N, dtype, layout, seed=6):
    """A residual (M, N) in one of three memory layouts, all read through strides."""
    g = torch.Generator().manual_seed(seed)
    if layout == "contiguous":
        r = torch.randn(M, N, generator=g)
    elif layout == "transposed":  # column-major: strides (1, M)
        r = torch.randn(N, M, generator=g).t()
    else:  # "sliced": rows of a wider buffer, row stride N + 5
        r = torch.randn(M, N + 5, generator=g)[:, 2:N + 2]
    return r.to(device=DEVICE, dtype=dtype)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced"])
def test_matmul_residual(shape, dtype, layout):
    """act(a @ b + bias) + residual: the residual is added after the activation."""
    M, N, K = shape
    a, w, bias = _inputs(M, N, K, dtype, seed=7)
    residual = _residual(M, N, dtype, layout)
    out = gemm.matmul_bias_act(a, w.t(), bias, "gelu_tanh", residual=residual)
    assert out.dtype == dtype
    ref = _reference(a, w.t(), bias, "gelu_tanh") + residual.double().cpu()
    _assert_close(out, ref, dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_matmul_residual_no_bias(dtype):
    # The transformer block's use: h = x + attn @ Wo^T, no bias, no activation.
    a, w, _ = _inputs(65, 48, 33, dtype, seed=8)
    residual = _residual(65, 48, dtype, "contiguous")
    out = gemm.matmul_bias_act(a, w.t(), residual=residual)
    _assert_close(out, _reference(a, w.t(), None, "none") + residual.double().cpu(), dtype)


@pytest.mark.parametrize("make, match", [
    (lambda: torch.randn(5, 4), r"residual must have shape \(5, 3\)"),
    (lambda: torch.randn(3, 5).t()[:, :2], r"residual must have shape \(5, 3\)"),
    (lambda: torch.randn(5, 3, dtype=torch.float16), "must share one dtype"),
    (lambda: torch.randn(15), "residual must be a 2-D tensor"),
])
def test_bad_residual_raises(make, match):
    a, w = torch.randn(5, 7, device=DEVICE), torch.randn(7, 3, device=DEVICE)
    with pytest.raises(ValueError, match=match):
        gemm.matmul_bias_act(a, w, residual=make().to(DEVICE))


@pytest.mark.gpu
def test_residual_on_another_device_raises():
    a, w = torch.randn(5, 7, device="cuda"), torch.randn(7, 3, device="cuda")
    with pytest.raises(ValueError, match="a, b, residual must be on one device, got cuda:0, cuda:0, cpu"):
        gemm.matmul_bias_act(a, w, residual=torch.randn(5, 3))


def test_offset_guard_covers_the_output():
    """c (M, N) is stored with int32 offsets too: an output of 2**31 elements is refused before
    it is allocated. Stride-0 operands are tiny in memory, so only the output is too big."""
    M, N = 2 ** 16, 2 ** 15 + 1  # M * N = 2**31 + 2**16
    a = torch.zeros(1, 1, device=DEVICE).expand(M, 1)  # (M, K=1), strides (0, 0)
    b = torch.zeros(1, 1, device=DEVICE).expand(1, N)  # (K=1, N)
    with pytest.raises(ValueError, match=r"matmul_bias_act: the output c \(65536, 32769\) spans 2\*\*31"):
        gemm.matmul_bias_act(a, b)
    with pytest.raises(ValueError, match=r"matmul_geglu: the output c \(65536, 32769\)"):
        gemm.matmul_geglu(a, b, b)
    # The bound itself: the last element's offset must fit int32, i.e. be at most 2**31 - 1.
    gemm_common.check_offsets("op", "c", (2 ** 16, 2 ** 15), (2 ** 15, 1))  # offset 2**31 - 1
    with pytest.raises(ValueError, match="op: c spans"):
        gemm_common.check_offsets("op", "c", (2 ** 16 + 1, 2 ** 15), (2 ** 15, 1))


@pytest.mark.parametrize("kernel", [gemm._matmul_bias_act_kernel, gemm_geglu._matmul_geglu_kernel])
def test_tune_keys_name_kernel_arguments(kernel):
    # The autotuner silently ignores key names that are not arguments, so a typo would let a
    # row-major B and a weight.t() view share one tuned config without any error.
    assert set(kernel.keys) <= set(kernel.arg_names)
    assert len(set(kernel.keys) & {"stride_bk", "stride_bn", "stride_gk", "stride_gn"}) == 2


def test_matmul_geglu_is_reexported():
    assert gemm.matmul_geglu is gemm_geglu.matmul_geglu
