"""Triton GEMM kernels against a float64 torch reference (interpreter on CPU, compiled on CUDA)."""
import math

import pytest
import torch
import torch.nn.functional as F

pytest.importorskip("triton")
# TRITON_INTERPRET is set by conftest before these import
from kernels.triton import gemm, gemm_common, gemm_geglu, gemm_tma  # noqa: E402

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


# --- the Hopper TMA GEMM (gemm_tma.py): the interpreter runs its tensor descriptors ---------
# Rows of a multiple of 16 bytes in every dtype (TMA's rule), not multiples of the blocks.
TMA_SHAPES = [(37, 40, 24), (65, 24, 72), (1, 72, 40)]  # (M, N, K)


@pytest.mark.parametrize("shape", TMA_SHAPES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("layout", ["rowmajor", "weight_t"])
def test_matmul_bias_act_tma(shape, dtype, layout):
    M, N, K = shape
    a, w, bias = _inputs(M, N, K, dtype, seed=7)
    b = w.t() if layout == "weight_t" else w.t().contiguous()  # (K, N) either way
    activation = "relu" if layout == "weight_t" else "none"
    out = gemm_tma.matmul_bias_act_tma(a, b, bias, activation)
    assert out.dtype == dtype
    _assert_close(out, _reference(a, b, bias, activation), dtype)


def test_tma_pads_with_zeros_and_reads_nothing_outside():
    """a and b are windows of NaN-filled buffers: a NaN in the output would mean a tile load
    read past the descriptor's shape (rows, or K) instead of padding with zeros."""
    M, N, K = 37, 40, 24
    a_buf = torch.full((M + 9, K + 8), float("nan"), device=DEVICE)
    b_buf = torch.full((K + 40, N + 8), float("nan"), device=DEVICE)
    a, w, bias = _inputs(M, N, K, torch.float32, seed=8)
    a_buf[:M, :K], b_buf[:K, :N] = a, w.t()
    out = gemm_tma.matmul_bias_act_tma(a_buf[:M, :K], b_buf[:K, :N], bias)
    _assert_close(out, _reference(a, w.t(), bias, "none"), torch.float32)


def test_tma_call_is_checked_once_and_reads_current_values():
    a, w, bias = _inputs(37, 40, 24, torch.float16, seed=9)
    b = w.t().contiguous()
    call = gemm_tma.prepare_matmul_bias_act_tma(a, b, bias)
    first = call()
    a.mul_(2)  # a refill in place: the prepared call must see it
    second = call()
    assert second.data_ptr() != first.data_ptr()  # a fresh output per call
    _assert_close(second, _reference(a, b, bias, "none"), torch.float16)


@pytest.mark.parametrize("make, match", [
    (lambda: (torch.randn(5, 29), torch.randn(29, 8)), "K=29 at 4 B per element is 116 B"),
    (lambda: (torch.randn(5, 8), torch.randn(8, 7)), "N=7 at 4 B"),
    (lambda: (torch.randn(8, 5).t(), torch.randn(8, 8)), "a must be row-major"),
    (lambda: (torch.randn(5, 8), torch.randn(8, 16)[:, ::2]), "row-major or a weight.t"),
    (lambda: (torch.randn(5, 8), torch.randn(9, 8)), "inner dimensions"),
    (lambda: (torch.randn(5, 8)[:, 1:5], torch.randn(4, 8)), "16-byte aligned"),
])
def test_tma_refuses_what_a_descriptor_cannot_read(make, match):
    a, b = (t.to(DEVICE) for t in make())
    with pytest.raises(ValueError, match=match):
        gemm_tma.matmul_bias_act_tma(a, b)


def test_tma_tune_key_names_kernel_arguments():
    kernel = gemm_tma._matmul_tma_kernel
    assert set(kernel.keys) <= set(kernel.arg_names) and "B_KMAJOR" in kernel.keys


def test_tma_variant_skips_off_hopper(monkeypatch):
    """A reason (a skip, not a failure) on a GPU older than sm_90, and on rows TMA cannot
    read; on this machine's interpreter, an aligned case runs."""
    from kernels import registry
    from kernels.base import Case
    variant = registry.get_variant("matmul_add", "triton_tma")
    assert variant.family == "triton"
    ampere = Case.make("matmul_add", {"M": 64, "N": 64, "K": 64}, "bfloat16", "cuda")
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: (8, 0))
    assert "compute capability 9.0" in variant.supports(ampere)
    assert "this GPU is 8.0" in variant.supports(ampere)
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: (9, 0))
    assert variant.supports(ampere) is None
    odd = Case.make("matmul_add", {"M": 37, "N": 45, "K": 29}, "float32", DEVICE)
    assert "16 bytes" in variant.supports(odd)
    aligned = Case.make("matmul_add", {"M": 37, "N": 40, "K": 24}, "float32", DEVICE)
    if DEVICE == "cpu":
        assert variant.supports(aligned) is None  # the interpreter runs descriptors


@pytest.mark.gpu
@pytest.mark.parametrize("layout", ["rowmajor", "weight_t"])
def test_tma_at_the_target_shape(layout):
    """bf16 4096^3 (the issue's GEMM target), autotuned on a Hopper GPU, against float64."""
    if torch.cuda.get_device_capability()[0] < 9:
        pytest.skip("the TMA GEMM needs sm_90+")
    a, w, bias = _inputs(4096, 4096, 4096, torch.bfloat16, seed=10)
    b = w.t() if layout == "weight_t" else w.t().contiguous()
    out = gemm_tma.matmul_bias_act_tma(a, b, bias)
    ref = (a.double() @ b.double() + bias.double()).cpu()
    _assert_close(out, ref, torch.bfloat16)
