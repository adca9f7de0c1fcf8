"""The checks shared by the Triton wrappers (kernels/triton/runtime.py): one behaviour for all."""
import pytest
import torch

from kernels.triton import runtime

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def test_runtime_does_not_import_triton():
    import subprocess
    import sys
    code = ("import sys; import kernels.triton.runtime; "
            "sys.exit(1 if 'triton' in sys.modules else 0)")
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


@pytest.mark.parametrize("tensors, match", [
    ({"x": [1.0]}, "op: x must be a torch.Tensor, got list"),
    ({"x": torch.ones(2), "w": torch.ones(2, dtype=torch.float64)}, "op: w has dtype torch.float64"),
    ({"x": torch.ones(2), "w": torch.ones(2).half()}, "op: x, w must share one dtype"),
])
def test_check_tensors_rejects_bad_input(tensors, match):
    with pytest.raises(ValueError, match=match):
        runtime.check_tensors("op", **tensors)


def test_check_tensors_skips_none_and_can_allow_mixed_dtypes():
    runtime.check_tensors("op", x=torch.ones(2, device=DEVICE), bias=None)
    runtime.check_tensors("op", same_dtype=False, x=torch.ones(2, device=DEVICE).half(),
                          w=torch.ones(2, device=DEVICE))


@pytest.mark.gpu
def test_check_tensors_rejects_mixed_devices():
    with pytest.raises(ValueError, match="op: x, w must be on one device, got cuda:0, cpu"):
        runtime.check_tensors("op", x=torch.ones(2, device="cuda"), w=torch.ones(2))


def test_cpu_without_the_interpreter_is_a_runtime_error(monkeypatch):
    monkeypatch.setattr(runtime, "kernels_interpreted", lambda: False)
    with pytest.raises(RuntimeError, match="op: tensors are on cpu: .*TRITON_INTERPRET=1"):
        runtime.check_tensors("op", x=torch.ones(2))


def _calls():
    pytest.importorskip("triton")
    from kernels.triton.flash_attention import flash_attention
    from kernels.triton.geglu import geglu
    from kernels.triton.gemm import matmul_bias_act, matmul_geglu
    from kernels.triton.rmsnorm import rms_norm

    def m(*shape):
        return torch.ones(shape, device="meta")
    return {
        "geglu": lambda: geglu(m(4, 8), m(4, 8)),
        "rms_norm": lambda: rms_norm(m(4, 8), m(8)),
        "flash_attention": lambda: flash_attention(m(1, 2, 16, 16), m(1, 2, 16, 16), m(1, 2, 16, 16)),
        "matmul_bias_act": lambda: matmul_bias_act(m(4, 8), m(8, 3)),
        "matmul_geglu": lambda: matmul_geglu(m(4, 8), m(8, 3), m(8, 3)),
    }


@pytest.mark.parametrize("op", ["geglu", "rms_norm", "flash_attention", "matmul_bias_act",
                                "matmul_geglu"])
def test_every_wrapper_raises_runtime_error_on_a_device_triton_cannot_use(op):
    # Valid inputs on the wrong device: the same RuntimeError from all four modules.
    with pytest.raises(RuntimeError, match=f"{op}: tensors are on meta: .*not meta"):
        _calls()[op]()


def _counted(monkeypatch, module):
    """Counts the calls of `module`'s check_tensors (the one check every wrapper makes)."""
    calls = []
    real = module.check_tensors
    monkeypatch.setattr(module, "check_tensors", lambda *a, **k: (calls.append(1), real(*a, **k)))
    return calls


def test_prepared_wrappers_check_once_and_each_call_only_launches(monkeypatch):
    """A timed Triton call is the kernel's launch, not its argument checks: the variants take
    the `prepare_` forms, which check when prepared and never again."""
    from kernels.triton import gemm_common, geglu, rowwise as rows
    from kernels.triton.gemm import prepare_matmul_bias_act, prepare_matmul_geglu
    from kernels.triton.rmsnorm import prepare_rms_norm

    g = torch.Generator().manual_seed(0)
    a, b, bias = (torch.randn(*s, generator=g).to(DEVICE) for s in ((20, 24), (24, 12), (12,)))
    counted = {m.__name__: _counted(monkeypatch, m) for m in (gemm_common, geglu, rows)}
    prepared = [(prepare_matmul_bias_act(a, b, bias), lambda: a @ b + bias),
                (prepare_matmul_geglu(a, b, b), lambda: torch.nn.functional.gelu(
                    a @ b, approximate="tanh") * (a @ b)),
                (geglu.prepare_geglu(b, b), lambda: torch.nn.functional.gelu(
                    b, approximate="tanh") * b),
                (prepare_rms_norm(a, a[0], 1e-6), lambda: torch.nn.functional.rms_norm(
                    a, (24,), a[0], 1e-6))]
    assert {name: len(c) for name, c in counted.items()} == {
        "kernels.triton.gemm_common": 2, "kernels.triton.geglu": 1, "kernels.triton.rowwise": 1}
    for _ in range(2):
        a.copy_(torch.randn(20, 24, generator=g))  # a prepared call reads the tensors as they are
        for call, expected in prepared:
            torch.testing.assert_close(call(), expected(), rtol=1e-4, atol=1e-4)
    assert sum(len(c) for c in counted.values()) == 4  # no check in any of the 8 calls
    with pytest.raises(ValueError, match="inner dimensions differ"):
        prepare_matmul_bias_act(a, a, bias)  # a bad argument is found when prepared
