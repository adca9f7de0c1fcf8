"""LayerNorm and RMSNorm training kernels (layernorm_bwd.py, rmsnorm_bwd.py, rowwise_bwd.py):
dx, dweight and dbias against float64 autograd through F.layer_norm / F.rms_norm (CPU: Triton
interpreter, via conftest)."""
import pytest
import torch
import torch.nn.functional as F

pytest.importorskip("triton")

from kernels.triton.layernorm import layer_norm  # noqa: E402
from kernels.triton.layernorm_bwd import (  # noqa: E402
    layer_norm_bwd_rows, layer_norm_fwd_train, layer_norm_train)
from kernels.triton.rmsnorm import rms_norm  # noqa: E402
from kernels.triton.rmsnorm_bwd import rms_norm_fwd_train, rms_norm_train  # noqa: E402
from kernels.triton.rowwise_bwd import SUM_BLOCK_B, split_rows, sum_partials  # noqa: E402

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
# As the forward tests: the max error over a tensor, relative to that tensor's largest value.
RTOL = {torch.float32: 1e-4, torch.float16: 3e-3, torch.bfloat16: 2e-2}
EPS = {"layer": 1e-5, "rms": 1e-6}
DTYPES = [torch.float32, torch.float16, torch.bfloat16]


def _assert_close(out, ref, dtype, name="out"):
    err = (out.detach().double().cpu() - ref).abs().max().item()
    scale = ref.abs().max().item()
    assert err <= RTOL[dtype] * scale, \
        f"{name}: max err {err:.3e} > {RTOL[dtype]:.0e} * {scale:.3e}"


def _inputs(shape, dtype, p_dtype=None, seed=0):
    """x with a non-zero row mean (an uncentred LayerNorm would show), weight around 1, bias,
    and dy with a non-zero mean too: its mean is what LayerNorm's dx subtracts."""
    gen = torch.Generator().manual_seed(seed)
    x = (2.0 * torch.randn(shape, generator=gen) + 3.0).to(DEVICE, dtype)
    w = (1.0 + 0.5 * torch.randn(shape[-1], generator=gen)).to(DEVICE, p_dtype or dtype)
    b = torch.randn(shape[-1], generator=gen).to(DEVICE, p_dtype or dtype)
    dy = (torch.randn(shape, generator=gen) + 0.5).to(DEVICE, dtype)
    return x, w, b, dy


def _leaves(*tensors):
    return [None if t is None else t.detach().clone().requires_grad_() for t in tensors]


def _reference_grads(norm, x, w, b, dy):
    """(dx, dw, db) in float64 by torch's autograd (db None for rms or no bias)."""
    x64, w64, b64 = _leaves(*(None if t is None else t.detach().double().cpu() for t in (x, w, b)))
    D = x.shape[-1]
    if norm == "layer":
        y = F.layer_norm(x64, (D,), w64, b64, EPS[norm])
    else:
        y = F.rms_norm(x64, (D,), w64, EPS[norm])
    y.backward(dy.double().cpu())
    return x64.grad, w64.grad, None if b64 is None else b64.grad


def _triton_grads(norm, x, w, b, dy, rows_per_program=None):
    """(y, dx, dw, db) through the autograd Function of `norm`."""
    x, w, b = _leaves(x, w, b)
    if norm == "layer":
        y = layer_norm_train(x, w, b, EPS[norm], rows_per_program=rows_per_program)
    else:
        y = rms_norm_train(x, w, EPS[norm], rows_per_program=rows_per_program)
    y.backward(dy)
    return y, x.grad, w.grad, None if b is None else b.grad


def _check_grads(norm, x, w, b, dy, dtype, rows_per_program=None):
    y, dx, dw, db = _triton_grads(norm, x, w, b, dy, rows_per_program)
    ref_dx, ref_dw, ref_db = _reference_grads(norm, x, w, b, dy)
    assert dx.shape == x.shape and dx.dtype == x.dtype and dw.dtype == w.dtype
    _assert_close(dx, ref_dx, dtype, "dx")
    _assert_close(dw, ref_dw, dtype, "dweight")
    if b is not None:
        assert db.dtype == b.dtype
        _assert_close(db, ref_db, dtype, "dbias")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(37, 45), (2, 3, 64)])  # D=45 masks a tail; 64 does not
@pytest.mark.parametrize("norm, with_bias", [("layer", True), ("layer", False), ("rms", False)])
def test_grads_match_reference(norm, with_bias, shape, dtype):
    x, w, b, dy = _inputs(shape, dtype, seed=shape[-1] + len(shape))
    _check_grads(norm, x, w, b if with_bias else None, dy, dtype)


@pytest.mark.parametrize("norm", ["layer", "rms"])
def test_grads_with_strided_rows(norm):
    # x a (7, 45) view with row stride 64 (no copy: the kernels take the stride), then one with
    # column stride 7 (copied to unit stride); dy transposed, then expanded (row stride 0).
    x_full, w, b, dy_full = _inputs((7, 64), torch.float32, seed=5)
    w, b = w[:45], (b[:45] if norm == "layer" else None)
    x = x_full[:, 3:48]
    assert x.stride() == (64, 1)
    dy_t = dy_full[:, :45].t().contiguous().t()  # (7, 45), column stride 7
    _check_grads(norm, x, w, b, dy_t, torch.float32)
    xt = x.t().contiguous().t()  # (7, 45), column stride 7
    dy_rows = dy_full[0, :45].expand(7, 45)  # every row the same: stride (0, 1)
    _check_grads(norm, xt, w, b, dy_rows, torch.float32)


@pytest.mark.parametrize("norm", ["layer", "rms"])
# T=37 in blocks of 1 (37 partial rows: stage 2 loops past SUM_BLOCK_B with a tail), 5 (8
# blocks, the last of 2 rows), 10 (the last of 7), 37 (one block) and 64 (one short block).
@pytest.mark.parametrize("rows_per_program", [1, 5, 10, 37, 64])
def test_uneven_blocks_of_rows(norm, rows_per_program):
    assert 37 > SUM_BLOCK_B  # else rows_per_program=1 would not exercise stage 2's loop
    x, w, b, dy = _inputs((37, 45), torch.float32, seed=11)
    _check_grads(norm, x, w, b if norm == "layer" else None, dy, torch.float32,
                 rows_per_program=rows_per_program)


def test_stage_one_partials_are_per_block_sums():
    # Each partial row holds exactly its own block's sums: dy * xhat and dy over its rows.
    x, w, b, dy = _inputs((37, 45), torch.float32, seed=12)
    y2, mean, rstd = layer_norm_fwd_train(x, w, b, EPS["layer"])
    dx2, partials = layer_norm_bwd_rows(dy, x, w, mean, rstd, True, rows_per_program=10)
    assert partials.shape == (2, 4, 45) and partials.dtype == torch.float32
    x64, dy64 = x.double().cpu(), dy.double().cpu()
    xhat = (x64 - x64.mean(-1, keepdim=True)) * torch.rsqrt(x64.var(-1, unbiased=False,
                                                                    keepdim=True) + 1e-5)
    for block, rows in enumerate((slice(0, 10), slice(10, 20), slice(20, 30), slice(30, 37))):
        _assert_close(partials[0, block], (dy64 * xhat)[rows].sum(0), torch.float32)
        _assert_close(partials[1, block], dy64[rows].sum(0), torch.float32)


@pytest.mark.parametrize("n_blocks", [1, 7, SUM_BLOCK_B, 2 * SUM_BLOCK_B + 3])
def test_stage_two_sums_every_block(n_blocks):
    # Partial rows that are powers of two apart: a block skipped or counted twice shows.
    gen = torch.Generator().manual_seed(n_blocks)
    partials = torch.randn(2, n_blocks, 70, generator=gen).to(DEVICE)
    partials[:, -1] += 1000.0  # the tail block of stage 2's last step
    dw = torch.empty(70, dtype=torch.bfloat16, device=DEVICE)  # each term in its own dtype
    db = torch.empty(70, dtype=torch.float32, device=DEVICE)
    sum_partials(partials, dw, db)
    sums = partials.double().cpu().sum(1)
    _assert_close(dw, sums[0], torch.bfloat16, "dw")
    _assert_close(db, sums[1], torch.float32, "db")


def test_split_rows():
    cpu = torch.device("cpu")
    assert split_rows(37, cpu) == (10, 4)  # four programs off the GPU, the last short
    assert split_rows(3, cpu) == (1, 3)
    assert split_rows(0, cpu) == (1, 0)
    assert split_rows(37, cpu, rows_per_program=5) == (5, 8)
    with pytest.raises(ValueError, match="at least 1"):
        split_rows(37, cpu, rows_per_program=0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_training_forward_is_the_inference_forward(dtype):
    # The same row math: y to the bit, and the saved statistics are the row's own.
    x, w, b, _ = _inputs((37, 45), dtype, seed=13)
    y, mean, rstd = layer_norm_fwd_train(x, w, b, EPS["layer"])
    assert torch.equal(y, layer_norm(x, w, b, EPS["layer"]))
    x64 = x.double().cpu()
    _assert_close(mean, x64.mean(-1), torch.float32, "mean")
    var = x64.var(-1, unbiased=False)
    _assert_close(rstd, torch.rsqrt(var + EPS["layer"]), torch.float32, "rstd")
    y, rstd = rms_norm_fwd_train(x, w, EPS["rms"])
    assert torch.equal(y, rms_norm(x, w, EPS["rms"]))
    _assert_close(rstd, torch.rsqrt(x64.pow(2).mean(-1) + EPS["rms"]), torch.float32, "rstd")
    assert mean.dtype == rstd.dtype == torch.float32


@pytest.mark.parametrize("norm", ["layer", "rms"])
def test_fp32_params_with_bf16_activations(norm):
    x, w, b, dy = _inputs((37, 45), torch.bfloat16, p_dtype=torch.float32, seed=14)
    _check_grads(norm, x, w, b if norm == "layer" else None, dy, torch.bfloat16)


@pytest.mark.parametrize("norm", ["layer", "rms"])
def test_grads_only_where_required(norm):
    x, w, b, _ = _inputs((5, 45), torch.float32, seed=15)
    b = b if norm == "layer" else None
    x = x.requires_grad_()
    y = layer_norm_train(x, w, b) if norm == "layer" else rms_norm_train(x, w)
    y.sum().backward()  # an expanded gradient of ones
    assert w.grad is None and x.grad is not None
    _assert_close(x.grad, _reference_grads(norm, x, w, b, torch.ones(5, 45))[0], torch.float32)


def test_empty_input():
    x = torch.randn(0, 3, 16, device=DEVICE, requires_grad=True)
    w = torch.ones(16, device=DEVICE, requires_grad=True)
    b = torch.zeros(16, device=DEVICE, requires_grad=True)
    layer_norm_train(x, w, b).sum().backward()
    assert x.grad.shape == x.shape and torch.equal(w.grad, torch.zeros(16, device=DEVICE))
    assert torch.equal(b.grad, torch.zeros(16, device=DEVICE))


def test_bad_input_rejected():
    with pytest.raises(ValueError, match=r"weight must have shape \(D,\) = \(8,\)"):
        layer_norm_train(torch.randn(4, 8, device=DEVICE), torch.randn(7, device=DEVICE))
    with pytest.raises(ValueError, match="eps must be a non-negative"):
        rms_norm_train(torch.randn(4, 8, device=DEVICE), torch.randn(8, device=DEVICE), eps=-1.0)


def _wrong_layer_norm_dx(x, w, dy, drop):
    """LayerNorm's dx in float64 with one term dropped, as a wrong kernel would compute it."""
    x64, g = x.double().cpu(), dy.double().cpu() * w.double().cpu()
    rstd = torch.rsqrt(x64.var(-1, unbiased=False, keepdim=True) + EPS["layer"])
    xhat = (x64 - x64.mean(-1, keepdim=True)) * rstd
    mean_g = 0.0 if drop == "mean_g" else g.mean(-1, keepdim=True)
    mean_gx = 0.0 if drop == "mean_gx" else (g * xhat).mean(-1, keepdim=True)
    return (g - mean_g - xhat * mean_gx) * (1.0 if drop == "rstd" else rstd)


@pytest.mark.parametrize("drop", ["mean_g", "mean_gx", "rstd"])
def test_a_dropped_term_fails_even_the_bf16_tolerance(drop):
    # The tests above would catch a kernel that leaves out any one term, at their loosest
    # tolerance (bf16), on their inputs: the correct formula passes, each wrong one does not.
    x, w, b, dy = _inputs((37, 45), torch.bfloat16, seed=45 + 2)
    ref_dx = _reference_grads("layer", x, w, b, dy)[0]
    _assert_close(_wrong_layer_norm_dx(x, w, dy, drop=None), ref_dx, torch.float32)
    with pytest.raises(AssertionError, match="dx: max err"):
        _assert_close(_wrong_layer_norm_dx(x, w, dy, drop=drop), ref_dx, torch.bfloat16, "dx")
    # And a dweight summed over only one block of rows (a stage 2 that misses blocks).
    ref_dw = _reference_grads("layer", x, w, b, dy)[1]
    _, _, dw_one_block, _ = _triton_grads("layer", x[:10], w, b, dy[:10])
    with pytest.raises(AssertionError, match="dweight: max err"):
        _assert_close(dw_one_block, ref_dw, torch.bfloat16, "dweight")
