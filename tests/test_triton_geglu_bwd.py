"""GeGLU Triton backward (geglu_bwd.py) vs float64 autograd (CPU: the interpreter, via conftest)."""
import pytest
import torch
import torch.nn.functional as F

triton = pytest.importorskip("triton")
tl = triton.language

from kernels.triton import geglu_bwd  # noqa: E402
from kernels.triton.activations import gelu_tanh_with_grad  # noqa: E402
from kernels.triton.geglu_bwd import GeGLUFn, geglu_backward, geglu_train  # noqa: E402

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
# Max abs error allowed, relative to max |reference|: the forward test's tolerances. The math is
# fp32 from the same rounded inputs, so the error is mostly the final rounding to the dtype.
RTOL = {torch.float32: 1e-4, torch.float16: 3e-3, torch.bfloat16: 2e-2}
# Odd (no multiple of the 1024-wide interpreter block), 3-D, and one even shape.
SHAPES = [(37, 45), (2, 3, 50), (64, 32)]


def _inputs(shape, dtype, seed=0):
    """gate, up, dh; gate spans both of gelu's tails (|gate| up to ~8)."""
    gen = torch.Generator().manual_seed(seed + sum(shape))
    gate = 2 * torch.randn(shape, generator=gen)
    up, dh = torch.randn(shape, generator=gen), torch.randn(shape, generator=gen)
    return [t.to(DEVICE, dtype) for t in (gate, up, dh)]


def _reference(gate, up, dh):
    """(h, dgate, dup) by float64 autograd from the same (rounded) values."""
    gate64, up64 = (t.detach().cpu().double().requires_grad_() for t in (gate, up))
    h = F.gelu(gate64, approximate="tanh") * up64
    h.backward(dh.cpu().double())
    return h.detach(), gate64.grad, up64.grad


def _error(out, ref):
    """Max |error| relative to max |reference|."""
    return (out.detach().cpu().double() - ref).abs().max().item() / ref.abs().max().item()


def _assert_close(out, ref, dtype, name):
    assert out.shape == ref.shape and out.dtype == dtype, name
    err = _error(out, ref)
    assert err <= RTOL[dtype], f"{name}: relative error {err:.3e} > {RTOL[dtype]:.0e}"


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("shape", SHAPES)
def test_geglu_train_gradients_match_float64(shape, dtype):
    gate, up, dh = _inputs(shape, dtype)
    gate.requires_grad_(), up.requires_grad_()
    h = geglu_train(gate, up)
    h.backward(dh)
    ref_h, ref_dgate, ref_dup = _reference(gate, up, dh)
    _assert_close(h, ref_h, dtype, "h")
    _assert_close(gate.grad, ref_dgate, dtype, "dgate")
    _assert_close(up.grad, ref_dup, dtype, "dup")


def test_sum_backward_reads_an_expanded_gradient():
    """h.sum().backward() hands the Function a stride-0 dh: the wrapper must densify it."""
    gate, up, _ = _inputs((37, 45), torch.float32, seed=1)
    gate.requires_grad_(), up.requires_grad_()
    geglu_train(gate, up).sum().backward()
    _, ref_dgate, ref_dup = _reference(gate, up, torch.ones(37, 45))
    _assert_close(gate.grad, ref_dgate, torch.float32, "dgate")
    _assert_close(up.grad, ref_dup, torch.float32, "dup")


def test_only_the_inputs_that_need_it_get_a_gradient():
    gate, up, dh = _inputs((13, 7), torch.float32, seed=2)
    up.requires_grad_()
    geglu_train(gate, up).backward(dh)
    assert gate.grad is None
    _assert_close(up.grad, _reference(gate, up, dh)[2], torch.float32, "dup")


def test_non_contiguous_inputs():
    gen = torch.Generator().manual_seed(3)
    gate = torch.randn(40, 24, generator=gen).to(DEVICE).t()  # (24, 40), transposed strides
    up = torch.randn(24, 80, generator=gen).to(DEVICE)[:, ::2]  # (24, 40), step-2 columns
    dh = torch.randn(24, 40, generator=gen).to(DEVICE)
    dgate, dup = geglu_backward(dh, gate, up)
    _, ref_dgate, ref_dup = _reference(gate, up, dh)
    _assert_close(dgate, ref_dgate, torch.float32, "dgate")
    _assert_close(dup, ref_dup, torch.float32, "dup")


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")  # interpreter numpy
@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")
def test_extreme_gates_give_the_limits_not_nan():
    # exp(-2u) overflows for very negative gates, and du/dx itself past |x| ~ 1e19: the
    # derivative must still be the limits 0 and 1, never NaN.
    gate = torch.tensor([-1e20, -1e4, -100.0, -20.0, -3.0, 0.0, 3.0, 20.0, 100.0, 1e4, 1e20],
                        device=DEVICE)
    up, dh = torch.full_like(gate, 1.5), torch.full_like(gate, 2.0)
    dgate, dup = geglu_backward(dh, gate, up)
    assert torch.isfinite(dgate).all() and torch.isfinite(dup).all()
    _, ref_dgate, ref_dup = _reference(gate, up, dh)
    assert torch.equal(dgate.cpu()[[0, 1, 2, -3, -2, -1]],
                       torch.tensor([0.0, 0.0, 0.0, 3.0, 3.0, 3.0]))  # dh * up * {0, 1}
    _assert_close(dgate, ref_dgate, torch.float32, "dgate")
    # dup at +-1e20 (0 and 3e20) would make every other error vanish against max |dup|.
    _assert_close(dup[1:-1], ref_dup[1:-1], torch.float32, "dup")


def test_empty_input():
    gate = torch.empty(0, 5, device=DEVICE, requires_grad=True)
    up = torch.empty(0, 5, device=DEVICE, requires_grad=True)
    geglu_train(gate, up).sum().backward()
    assert gate.grad.shape == (0, 5) and up.grad.shape == (0, 5)


@pytest.mark.parametrize("args, match", [
    ((torch.randn(4, 5), torch.randn(4, 5), torch.randn(4, 6)), "same shape"),
    ((torch.randn(4, 5).half(), torch.randn(4, 5), torch.randn(4, 5)),
     "dh, gate, up must share one dtype"),
    ((torch.randn(4, 5).double(),) * 3, "dh has dtype torch.float64"),
])
def test_geglu_backward_rejects_bad_input(args, match):
    with pytest.raises(ValueError, match=match):
        geglu_backward(*(t.to(DEVICE) for t in args))


def test_forward_rejects_bad_input_too():
    with pytest.raises(ValueError, match="same shape"):
        GeGLUFn.apply(torch.randn(4, 5, device=DEVICE), torch.randn(4, 6, device=DEVICE))


# --- the check itself: a kernel with a dropped term must fail it ------------------------------
@triton.jit
def _wrong_bwd_kernel(dh_ptr, gate_ptr, up_ptr, dgate_ptr, dup_ptr, n_elements,
                      BLOCK_SIZE: tl.constexpr, DROP: tl.constexpr):
    offsets = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    dh = tl.load(dh_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    gate = tl.load(gate_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    up = tl.load(up_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    gelu, grad = gelu_tanh_with_grad(gate)
    if DROP == "slope":  # gelu' taken as the sigmoid alone: the x * sigmoid' term dropped
        grad = 1.0 / (1.0 + tl.exp(-1.5957691216057308 * (gate + 0.044715 * gate * gate * gate)))
    if DROP == "up":  # dgate without its up factor
        up = 1.0
    tl.store(dgate_ptr + offsets, (dh * up * grad).to(dgate_ptr.dtype.element_ty), mask=mask)
    tl.store(dup_ptr + offsets, (dh * gelu).to(dup_ptr.dtype.element_ty), mask=mask)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("drop", ["slope", "up"])
def test_a_dropped_term_fails_the_check(drop, dtype):
    gate, up, dh = _inputs((37, 45), dtype, seed=4)
    dgate, dup = torch.empty_like(gate), torch.empty_like(up)
    _wrong_bwd_kernel[(triton.cdiv(gate.numel(), 1024),)](
        dh, gate, up, dgate, dup, gate.numel(), BLOCK_SIZE=1024, DROP=drop)
    _, ref_dgate, ref_dup = _reference(gate, up, dh)
    _assert_close(dup, ref_dup, dtype, "dup")  # the untouched gradient still passes
    with pytest.raises(AssertionError, match="dgate: relative error"):
        _assert_close(dgate, ref_dgate, dtype, "dgate")
    # ... by a wide margin, not by luck of the seed.
    assert _error(dgate, ref_dgate) > 5 * RTOL[dtype]


def test_the_backward_kernel_is_one_launch(monkeypatch):
    """dgate and dup come from one kernel launch, the forward's blocks."""
    real, grids = geglu_bwd._geglu_bwd_kernel, []

    class Spy:
        def __getitem__(self, grid):
            grids.append(grid)
            return real[grid]

    monkeypatch.setattr(geglu_bwd, "_geglu_bwd_kernel", Spy())
    gate, up, dh = _inputs((37, 45), torch.float32, seed=5)
    gate.requires_grad_(), up.requires_grad_()
    geglu_train(gate, up).backward(dh)
    assert grids == [(triton.cdiv(37 * 45, 1024),)]
