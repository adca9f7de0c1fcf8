"""RMSNorm Triton kernel vs a float64 torch reference (CPU: Triton interpreter, via conftest)."""
import pytest
import torch

pytest.importorskip("triton")

from kernels.triton.rmsnorm import rms_norm  # noqa: E402

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
RTOL = {torch.float32: 1e-4, torch.float16: 3e-3, torch.bfloat16: 2e-2}


def _reference(x, weight, eps):
    x64 = x.double()
    return x64 / torch.sqrt(x64.pow(2).mean(-1, keepdim=True) + eps) * weight.double()


def _assert_close(out, ref, dtype):
    err = (out.double() - ref).abs().max().item()
    scale = ref.abs().max().item()
    assert err <= RTOL[dtype] * scale, f"max err {err:.3e} > {RTOL[dtype]:.0e} * {scale:.3e}"


def _inputs(shape, dtype, w_dtype=None, seed=0, x_scale=3.0):
    gen = torch.Generator().manual_seed(seed)
    x = (x_scale * torch.randn(shape, generator=gen) + 0.5).to(DEVICE, dtype)
    w = (1.0 + 0.5 * torch.randn(shape[-1], generator=gen)).to(DEVICE, w_dtype or dtype)
    return x, w


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("shape", [(7, 50), (3, 5, 33), (4, 128), (2, 1000), (6,)])
def test_rms_norm_matches_reference(shape, dtype):
    x, w = _inputs(shape, dtype, seed=len(shape) * 1000 + shape[-1])
    out = rms_norm(x, w)
    assert out.shape == x.shape and out.dtype == dtype
    _assert_close(out.cpu(), _reference(x.cpu(), w.cpu(), 1e-6), dtype)


def test_rms_norm_uses_eps():
    # Small activations: eps=0.1 dominates the mean square, so a missing eps shows up.
    x, w = _inputs((5, 40), torch.float32, seed=3, x_scale=0.05)
    out = rms_norm(x, w, eps=0.1).cpu()
    _assert_close(out, _reference(x.cpu(), w.cpu(), 0.1), torch.float32)
    assert not torch.allclose(out.double(), _reference(x.cpu(), w.cpu(), 1e-6), rtol=1e-2)


def test_rms_norm_output_dtype_follows_x():
    x, w = _inputs((9, 70), torch.bfloat16, w_dtype=torch.float32, seed=4)
    out = rms_norm(x, w)
    assert out.dtype == torch.bfloat16
    _assert_close(out.cpu(), _reference(x.cpu(), w.cpu(), 1e-6), torch.bfloat16)


def test_rms_norm_strided_rows():
    x_full, w = _inputs((7, 64), torch.float32, seed=5)
    x = x_full[:, 3:53]  # (7, 50) with row stride 64: no copy needed
    w = w[:50]
    _assert_close(rms_norm(x, w).cpu(), _reference(x.cpu(), w.cpu(), 1e-6), torch.float32)
    xt = torch.randn(50, 7, generator=torch.Generator().manual_seed(6)).to(DEVICE).t()  # col stride 7
    _assert_close(rms_norm(xt, w).cpu(), _reference(xt.cpu(), w.cpu(), 1e-6), torch.float32)


@pytest.mark.parametrize("x, w, kwargs, match", [
    (torch.randn(4, 8), torch.randn(7), {}, r"weight must have shape \(D,\) = \(8,\)"),
    (torch.randn(4, 8), torch.randn(2, 8), {}, "weight must have shape"),
    (torch.randint(0, 5, (4, 8)), torch.randn(8), {}, "x has dtype torch.int64"),
    (torch.randn(4, 8), torch.randn(8).double(), {}, "weight has dtype torch.float64"),
    (torch.tensor(1.0), torch.randn(1), {}, "at least 1 dim"),
    (torch.randn(4, 0), torch.randn(0), {}, "D=0 is not supported"),
    (torch.randn(4, 8), torch.randn(8), {"eps": -1.0}, "eps must be a non-negative"),
])
def test_rms_norm_rejects_bad_input(x, w, kwargs, match):
    with pytest.raises(ValueError, match=match):
        rms_norm(x.to(DEVICE), w.to(DEVICE), **kwargs)
