"""LayerNorm Triton kernel vs a float64 torch reference (CPU: Triton interpreter, via conftest)."""
import pytest
import torch

pytest.importorskip("triton")

from kernels.triton.layernorm import layer_norm  # noqa: E402

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
RTOL = {torch.float32: 1e-4, torch.float16: 3e-3, torch.bfloat16: 2e-2}


def _reference(x, weight, bias, eps):
    x64 = x.double()
    b64 = None if bias is None else bias.double()
    return torch.nn.functional.layer_norm(x64, (x.shape[-1],), weight.double(), b64, eps)


def _assert_close(out, ref, dtype):
    err = (out.double() - ref).abs().max().item()
    scale = ref.abs().max().item()
    assert err <= RTOL[dtype] * scale, f"max err {err:.3e} > {RTOL[dtype]:.0e} * {scale:.3e}"


def _inputs(shape, dtype, p_dtype=None, seed=0, x_scale=2.0, x_shift=3.0):
    """x with a non-zero row mean (x_shift): an uncentred variance would show; weight, bias (D,)."""
    gen = torch.Generator().manual_seed(seed)
    x = (x_scale * torch.randn(shape, generator=gen) + x_shift).to(DEVICE, dtype)
    w = (1.0 + 0.5 * torch.randn(shape[-1], generator=gen)).to(DEVICE, p_dtype or dtype)
    b = torch.randn(shape[-1], generator=gen).to(DEVICE, p_dtype or dtype)
    return x, w, b


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("shape", [(7, 37), (2, 3, 45), (1, 769), (4, 128), (2, 2, 2, 33), (50,)])
@pytest.mark.parametrize("with_bias", [True, False])
def test_layer_norm_matches_reference(shape, dtype, with_bias):
    x, w, b = _inputs(shape, dtype, seed=len(shape) * 1000 + shape[-1])
    b = b if with_bias else None
    out = layer_norm(x, w, b)
    assert out.shape == x.shape and out.dtype == dtype
    _assert_close(out.cpu(), _reference(x.cpu(), w.cpu(), None if b is None else b.cpu(), 1e-5),
                  dtype)


def test_layer_norm_centres_only_valid_lanes():
    # D=37 fills 37 of 64 lanes. A large mean makes each padded lane's (0 - mean)^2 = 10^4
    # dwarf the true variance, and a missing centring shift every output by about mean * rstd.
    x, w, b = _inputs((6, 37), torch.float32, seed=1, x_scale=1.0, x_shift=100.0)
    out = layer_norm(x, w, b).cpu()
    ref = _reference(x.cpu(), w.cpu(), b.cpu(), 1e-5)
    _assert_close(out, ref, torch.float32)
    centred = out.double() - b.cpu().double()
    assert centred.div(w.cpu().double()).mean(-1).abs().max() < 1e-4  # zero row mean before w, b


def test_layer_norm_uses_eps():
    # Small spread: eps=0.1 dominates the variance, so a missing eps shows up.
    x, w, b = _inputs((5, 40), torch.float32, seed=3, x_scale=0.05, x_shift=0.0)
    out = layer_norm(x, w, b, eps=0.1).cpu()
    _assert_close(out, _reference(x.cpu(), w.cpu(), b.cpu(), 0.1), torch.float32)
    assert not torch.allclose(out.double(), _reference(x.cpu(), w.cpu(), b.cpu(), 1e-5), rtol=1e-2)


def test_layer_norm_default_eps_is_torchs():
    # eps=1e-5 is F.layer_norm's default; a variance of ~1e-5 makes it matter.
    x, w, b = _inputs((4, 64), torch.float32, seed=7, x_scale=3e-3, x_shift=0.0)
    out = layer_norm(x, w, b).cpu()
    _assert_close(out, _reference(x.cpu(), w.cpu(), b.cpu(), 1e-5), torch.float32)
    assert not torch.allclose(out.double(), _reference(x.cpu(), w.cpu(), b.cpu(), 1e-6), rtol=1e-2)


def test_layer_norm_output_dtype_follows_x():
    x, w, b = _inputs((9, 70), torch.bfloat16, p_dtype=torch.float32, seed=4)
    out = layer_norm(x, w, b)
    assert out.dtype == torch.bfloat16
    _assert_close(out.cpu(), _reference(x.cpu(), w.cpu(), b.cpu(), 1e-5), torch.bfloat16)


def test_layer_norm_strided_rows():
    x_full, w, b = _inputs((7, 64), torch.float32, seed=5)
    x = x_full[:, 3:48]  # (7, 45) with row stride 64: no copy needed
    w, b = w[:45], b[:45]
    _assert_close(layer_norm(x, w, b).cpu(), _reference(x.cpu(), w.cpu(), b.cpu(), 1e-5),
                  torch.float32)
    gen = torch.Generator().manual_seed(6)
    xt = (torch.randn(45, 7, generator=gen) + 3.0).to(DEVICE).t()  # (7, 45), column stride 7
    _assert_close(layer_norm(xt, w, b).cpu(), _reference(xt.cpu(), w.cpu(), b.cpu(), 1e-5),
                  torch.float32)


def test_layer_norm_empty_input():
    x = torch.randn(0, 3, 16, device=DEVICE)
    out = layer_norm(x, torch.ones(16, device=DEVICE), torch.zeros(16, device=DEVICE))
    assert out.shape == (0, 3, 16) and out.dtype == x.dtype


@pytest.mark.parametrize("x, w, b, kwargs, match", [
    (torch.randn(4, 8), torch.randn(7), None, {}, r"weight must have shape \(D,\) = \(8,\)"),
    (torch.randn(4, 8), torch.randn(2, 8), None, {}, "weight must have shape"),
    (torch.randn(4, 8), torch.randn(8), torch.randn(9), {}, r"bias must have shape \(D,\) = \(8,\)"),
    (torch.randint(0, 5, (4, 8)), torch.randn(8), None, {}, "x has dtype torch.int64"),
    (torch.randn(4, 8), torch.randn(8).double(), None, {}, "weight has dtype torch.float64"),
    (torch.randn(4, 8), torch.randn(8), torch.randn(8).double(), {}, "bias has dtype torch.float64"),
    (torch.tensor(1.0), torch.randn(1), None, {}, "at least 1 dim"),
    (torch.randn(4, 0), torch.randn(0), None, {}, "layer_norm: last dim D=0 is not supported"),
    (torch.randn(4, 8), torch.randn(8), None, {"eps": -1.0}, "eps must be a non-negative"),
    (torch.randn(4, 8), torch.randn(8), None, {"eps": "1e-5"}, "eps must be a non-negative"),
])
def test_layer_norm_rejects_bad_input(x, w, b, kwargs, match):
    b = None if b is None else b.to(DEVICE)
    with pytest.raises(ValueError, match=match):
        layer_norm(x.to(DEVICE), w.to(DEVICE), b, **kwargs)
