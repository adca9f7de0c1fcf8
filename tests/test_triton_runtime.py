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
