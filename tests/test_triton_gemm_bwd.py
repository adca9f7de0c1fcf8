"""matmul + bias Triton backward (gemm_bwd.py) vs float64 autograd (interpreter on CPU)."""
import math

import pytest
import torch

triton = pytest.importorskip("triton")
# TRITON_INTERPRET is set by conftest before these import
from kernels.triton import gemm, gemm_bwd  # noqa: E402
from kernels.triton.gemm_bwd import column_sum, column_sum_plan, matmul_bias_train  # noqa: E402

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
# Max |error| relative to max |reference|: the forward GEMM test's tolerances (fp32 is an exact
# ieee dot; fp16/bf16 are dominated by rounding the fp32 result to the output dtype).
TOL = {torch.float32: 1e-5, torch.float16: 2e-3, torch.bfloat16: 1e-2}
# (M, N, K): odd, none a multiple of the 32-wide interpreter blocks; and an even one.
SHAPES = [(37, 45, 29), (64, 48, 32)]


def _randn(*shape):
    return torch.randn(*shape, device=DEVICE)


def _inputs(M, N, K, dtype, layout, seed=0):
    """x (M, K), w (K, N) as the op passes it, b (N,), dy (M, N), and the leaf that holds w:
    w itself (matmul_add, row-major) or an nn.Linear weight (N, K) passed as weight.t()."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(M, K, generator=g)
    weight = torch.randn(N, K, generator=g) / math.sqrt(K)  # outputs O(1)
    b, dy = torch.randn(N, generator=g), torch.randn(M, N, generator=g)
    if layout == "rowmajor":
        weight = weight.t().contiguous()  # (K, N)
    x, weight, b, dy = (t.to(DEVICE, dtype) for t in (x, weight, b, dy))
    for leaf in (x, weight, b):
        leaf.requires_grad_()
    w = weight if layout == "rowmajor" else weight.t()  # (K, N) either way
    return x, w, b, dy, weight


def _reference(x, leaves, dy, layout):
    """y and each leaf's gradient by float64 autograd from the same (rounded) values."""
    x64, w64, b64 = (t.detach().cpu().double().requires_grad_() for t in leaves)
    w = w64 if layout == "rowmajor" else w64.t()
    y = x64.reshape(-1, x64.shape[-1]) @ w + b64
    y.backward(dy.cpu().double().reshape(y.shape))
    return y.detach().reshape(*x.shape[:-1], -1), x64.grad, w64.grad, b64.grad


def _error(out, ref):
    return (out.detach().double().cpu() - ref).abs().max().item() / ref.abs().max().item()


def _assert_close(out, ref, dtype, name):
    assert out.shape == ref.shape and out.dtype == dtype, name
    err = _error(out, ref)
    assert err < TOL[dtype], f"{name}: relative error {err:.3g} >= {TOL[dtype]:g}"


def _check_training_step(x, w, b, dy, weight, layout, dtype):
    y = matmul_bias_train(x, w, b)
    y.backward(dy)
    ref_y, ref_dx, ref_dw, ref_db = _reference(x, (x, weight, b), dy, layout)
    _assert_close(y, ref_y, dtype, "y")
    _assert_close(x.grad, ref_dx, dtype, "dx")
    _assert_close(weight.grad, ref_dw, dtype, "dw")
    _assert_close(b.grad, ref_db, dtype, "db")


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("layout", ["rowmajor", "weight_t"])
def test_gradients_match_float64(shape, dtype, layout):
    x, w, b, dy, weight = _inputs(*shape, dtype, layout)
    _check_training_step(x, w, b, dy, weight, layout, dtype)


def test_fp16():
    x, w, b, dy, weight = _inputs(37, 45, 29, torch.float16, "weight_t", seed=1)
    _check_training_step(x, w, b, dy, weight, "weight_t", torch.float16)


def test_a_linear_weight_gets_its_gradient_row_major():
    """dw is computed in w's layout: an nn.Linear weight's gradient is (OUT, IN), contiguous."""
    x, w, b, dy, weight = _inputs(37, 45, 29, torch.float32, "weight_t", seed=2)
    matmul_bias_train(x, w, b).backward(dy)
    assert weight.grad.shape == (45, 29) and weight.grad.is_contiguous()


def test_batched_input_folds_into_rows():
    """x (B, M, K) as matmul_add's batch axis: y (B, M, N), dx (B, M, K)."""
    x, w, b, dy, weight = _inputs(3 * 13, 45, 29, torch.float32, "rowmajor", seed=3)
    x3 = x.detach().reshape(3, 13, 29).requires_grad_()
    y = matmul_bias_train(x3, w, b)
    assert y.shape == (3, 13, 45)
    y.backward(dy.reshape(3, 13, 45))
    ref_y, ref_dx, ref_dw, ref_db = _reference(x3, (x3, weight, b), dy.reshape(3, 13, 45),
                                               "rowmajor")
    _assert_close(y, ref_y, torch.float32, "y")
    _assert_close(x3.grad, ref_dx, torch.float32, "dx")
    _assert_close(weight.grad, ref_dw, torch.float32, "dw")
    _assert_close(b.grad, ref_db, torch.float32, "db")


def test_no_bias():
    x, w, _, dy, weight = _inputs(37, 45, 29, torch.float32, "rowmajor", seed=4)
    y = matmul_bias_train(x, w)
    y.backward(dy)
    ref_y = x.detach().double() @ w.detach().double()
    _assert_close(y, ref_y, torch.float32, "y")
    _assert_close(weight.grad, x.detach().double().t() @ dy.double(), torch.float32, "dw")


def test_sum_backward_reads_an_expanded_gradient():
    """y.sum().backward() hands the Function a stride-0 dy: every kernel reads it by strides."""
    x, w, b, _, weight = _inputs(37, 45, 29, torch.float32, "weight_t", seed=5)
    matmul_bias_train(x, w, b).sum().backward()
    _, ref_dx, ref_dw, ref_db = _reference(x, (x, weight, b), torch.ones(37, 45), "weight_t")
    _assert_close(x.grad, ref_dx, torch.float32, "dx")
    _assert_close(weight.grad, ref_dw, torch.float32, "dw")
    _assert_close(b.grad, ref_db, torch.float32, "db")


def test_only_the_gradients_asked_for_are_computed(monkeypatch):
    """x without requires_grad (a first layer's input): no dx GEMM; dw and db still run."""
    launches = []
    real_gemm, real_sum = gemm._matmul_bias_act_kernel, gemm_bwd._column_sum_kernel

    class Spy:
        def __init__(self, name, real):
            self.name, self.real = name, real

        def __getitem__(self, grid):
            launches.append(self.name)
            return self.real[grid]

    monkeypatch.setattr(gemm, "_matmul_bias_act_kernel", Spy("gemm", real_gemm))
    monkeypatch.setattr(gemm_bwd, "_column_sum_kernel", Spy("sum", real_sum))
    x, w, b, dy, weight = _inputs(9, 45, 29, torch.float32, "rowmajor", seed=6)
    x.requires_grad_(False)
    matmul_bias_train(x, w, b).backward(dy)
    assert launches == ["gemm", "gemm", "sum"]  # forward, dw, db (9 rows: one stage)
    assert x.grad is None and weight.grad is not None and b.grad is not None


# --- the column reduction --------------------------------------------------------------------
@pytest.mark.parametrize("M", [1, 9, 37, 100])  # one stage up to 32 rows here, then two
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_column_sum(M, dtype):
    g = torch.Generator().manual_seed(M)
    t = torch.randn(M, 45, generator=g).to(DEVICE, dtype)
    _assert_close(column_sum(t), t.double().cpu().sum(0), dtype, "column_sum")


@pytest.mark.parametrize("make", [
    lambda: _randn(45, 37).t(),  # column-major
    lambda: _randn(37, 90)[:, ::2],  # step-2 columns
    lambda: _randn(1, 45).expand(37, 45),  # stride-0 rows, as sum().backward()'s dy
])
def test_column_sum_reads_any_strides(make):
    t = make()
    _assert_close(column_sum(t), t.double().cpu().sum(0), torch.float32, "column_sum")


def test_column_sum_of_no_rows_is_zero():
    assert torch.equal(column_sum(torch.empty(0, 5, device=DEVICE)).cpu(), torch.zeros(5))


def test_fp16_column_sum_accumulates_in_fp32():
    """Partial sums pass fp16's 65504 (here 60000, then -60000 twice): an fp16 accumulator
    would hit inf; the fp32 one ends at the exact -60000."""
    t = torch.tensor([[60000.0], [60000.0], [-60000.0], [-60000.0], [-60000.0]])
    assert column_sum(t.to(DEVICE, torch.float16)).item() == -60000.0


@pytest.mark.parametrize("M, N, sms, splits", [
    (4096, 4096, 132, 16),  # 32 column blocks x 16 slabs of 256 rows: 4 programs per SM
    (65536, 128, 132, 512),  # one column block: slabs of the 128-row minimum fill the SMs
    (8, 4096, 132, 1),  # short dy: one stage straight into db
    (1000, 100_000, 132, 1),  # 782 column blocks already fill the GPU
])
def test_the_gpu_plan_fills_the_sms(M, N, sms, splits):
    BLOCK_M, BLOCK_N, _, got, rows = column_sum_plan(M, N, sms)
    assert got == splits
    assert rows % BLOCK_M == 0 and (splits - 1) * rows < M <= splits * rows  # every row once


def test_interpreter_plan_takes_both_stages_at_the_odd_shape():
    assert column_sum_plan(37, 45, None)[3] == 2 and column_sum_plan(9, 45, None)[3] == 1


# --- the check itself: wrong gradients must fail it ------------------------------------------
def test_db_from_the_first_slab_only_fails_the_check():
    """Stage one alone (a reduction that forgot the other row slabs) must not pass."""
    _, _, _, dy, _ = _inputs(37, 45, 29, torch.float32, "rowmajor", seed=7)
    BLOCK_M, BLOCK_N, warps, splits, rows = column_sum_plan(37, 45, None)
    partial = torch.empty(splits, 45, device=DEVICE)
    gemm_bwd._reduce(dy, partial, splits, rows, BLOCK_M, BLOCK_N, warps)
    ref = dy.double().cpu().sum(0)
    _assert_close(partial.sum(0), ref, torch.float32, "both slabs")
    with pytest.raises(AssertionError, match="db: relative error"):
        _assert_close(partial[0], ref, torch.float32, "db")


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_dx_with_w_untransposed_fails_the_check(dtype):
    """At a square w (K == N) dy @ w has dx's shape: only the values tell it from dy @ w^T."""
    x, w, b, dy, weight = _inputs(37, 29, 29, dtype, "rowmajor", seed=8)
    _, ref_dx, _, _ = _reference(x, (x, weight, b), dy, "rowmajor")
    _assert_close(gemm.matmul_bias_act(dy, w.detach().t()), ref_dx, dtype, "dx")
    with pytest.raises(AssertionError, match="dx: relative error"):
        _assert_close(gemm.matmul_bias_act(dy, w.detach()), ref_dx, dtype, "dx")


@pytest.mark.parametrize("call, match", [
    (lambda: column_sum(_randn(5)), "2-D"),
    (lambda: column_sum(_randn(5, 3).double()), "t has dtype torch.float64"),
    (lambda: matmul_bias_train(_randn(5, 7), _randn(8, 3)), "inner dimensions"),
    (lambda: matmul_bias_train(_randn(5, 7), _randn(7, 3), _randn(4)),
     r"bias must have shape \(3,\)"),
])
def test_bad_input_raises(call, match):
    with pytest.raises(ValueError, match=match):
        call()
