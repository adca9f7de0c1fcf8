"""GeGLU Triton kernel vs a float64 torch reference (CPU: Triton interpreter, via conftest)."""
import pytest
import torch

triton = pytest.importorskip("triton")
tl = triton.language

from kernels.triton.activations import gelu_tanh  # noqa: E402
from kernels.triton.geglu import geglu  # noqa: E402

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
# Max abs error allowed, relative to max |reference|.
RTOL = {torch.float32: 1e-4, torch.float16: 3e-3, torch.bfloat16: 2e-2}


def _reference(gate, up):
    return torch.nn.functional.gelu(gate.double(), approximate="tanh") * up.double()


def _assert_close(out, ref, dtype):
    err = (out.double() - ref).abs().max().item()
    scale = ref.abs().max().item()
    assert err <= RTOL[dtype] * scale, f"max err {err:.3e} > {RTOL[dtype]:.0e} * {scale:.3e}"


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("shape", [(13, 77), (2, 3, 50), (5000,)])
def test_geglu_matches_reference(shape, dtype):
    gen = torch.Generator().manual_seed(sum(shape) + len(shape))  # fixed per shape
    gate = (2 * torch.randn(shape, generator=gen)).to(DEVICE, dtype)
    up = torch.randn(shape, generator=gen).to(DEVICE, dtype)
    out = geglu(gate, up)
    assert out.shape == gate.shape and out.dtype == dtype
    _assert_close(out.cpu(), _reference(gate.cpu(), up.cpu()), dtype)


@pytest.mark.filterwarnings("ignore:overflow encountered in exp:RuntimeWarning")  # interpreter numpy
def test_geglu_extreme_gate_has_no_nan():
    # exp(-2u) overflows for very negative gates: the result must be -0, not NaN.
    gate = torch.tensor([-1e4, -100.0, -20.0, -3.0, 0.0, 3.0, 20.0, 100.0, 1e4], device=DEVICE)
    up = torch.full_like(gate, 1.5)
    out = geglu(gate, up).cpu()
    assert torch.isfinite(out).all()
    _assert_close(out, _reference(gate.cpu(), up.cpu()), torch.float32)


def test_geglu_non_contiguous_inputs():
    gen = torch.Generator().manual_seed(1)
    gate = torch.randn(40, 24, generator=gen).to(DEVICE).t()  # (24, 40), transposed strides
    up = torch.randn(24, 80, generator=gen).to(DEVICE)[:, ::2]  # (24, 40), step-2 columns
    out = geglu(gate, up)
    assert out.shape == (24, 40)
    _assert_close(out.cpu(), _reference(gate.cpu(), up.cpu()), torch.float32)


@triton.jit
def _gelu_only_kernel(x_ptr, y_ptr, n, BLOCK_SIZE: tl.constexpr):
    offs = tl.arange(0, BLOCK_SIZE)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(y_ptr + offs, gelu_tanh(x), mask=mask)


def test_gelu_tanh_helper_is_reusable_from_other_kernels():
    x = torch.linspace(-6, 6, 50, device=DEVICE)
    y = torch.empty_like(x)
    _gelu_only_kernel[(1,)](x, y, x.numel(), BLOCK_SIZE=64)
    ref = torch.nn.functional.gelu(x.cpu().double(), approximate="tanh")
    _assert_close(y.cpu(), ref, torch.float32)


@pytest.mark.parametrize("gate, up, match", [
    (torch.randn(4, 5), torch.randn(4, 6), "same shape"),
    (torch.randn(4, 5), torch.randn(4, 5).half(), "gate, up must share one dtype"),
    (torch.randint(0, 3, (4, 5)), torch.randint(0, 3, (4, 5)), "gate has dtype torch.int64"),
    (torch.randn(4, 5), torch.randn(4, 5).double(), "up has dtype torch.float64"),
    ([1.0, 2.0], torch.randn(2), "gate must be a torch.Tensor"),
])
def test_geglu_rejects_bad_input(gate, up, match):
    if isinstance(gate, torch.Tensor):
        gate = gate.to(DEVICE)
    with pytest.raises(ValueError, match=match):
        geglu(gate, up.to(DEVICE))
