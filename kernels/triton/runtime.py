"""Where Triton kernels can run, and the input checks every Triton wrapper shares.

Imported on machines without Triton (the eager and compile variants still run there), so this
module must not import triton; torch is fine.
"""
from __future__ import annotations

import functools
import importlib.util
import os

import torch

SUPPORTED_DTYPES = (torch.float32, torch.float16, torch.bfloat16)
# flash_attention keeps a (BLOCK_M, D) fp32 accumulator in registers: larger heads would spill.
MAX_HEAD_DIM = 128


def interpreting() -> bool:
    """True when TRITON_INTERPRET=1 now: kernels defined from here on run on the CPU through
    Triton's interpreter. See kernels_interpreted() for the flag the kernels were defined with.
    """
    return os.environ.get("TRITON_INTERPRET", "0") == "1"


@functools.cache
def kernels_interpreted() -> bool:
    """Whether the Triton kernels run interpreted: interpreting(), read once, on first call.

    triton.jit fixes interpreted-or-compiled when a kernel is defined, so every kernel module
    calls this at import, before defining its kernels, and the wrappers use the same frozen
    value. TRITON_INTERPRET must therefore be set before the first kernel module is imported
    (tests/conftest.py does that on machines without CUDA).
    """
    return interpreting()


def triton_installed() -> bool:
    return importlib.util.find_spec("triton") is not None


def _device_problem(device_type: str, interpreted: bool) -> str | None:
    if device_type == "cuda":
        return None
    if device_type != "cpu":
        return f"Triton kernels run on CUDA tensors (or on CPU ones, interpreted), not {device_type}"
    if not interpreted:
        return "Triton on CPU needs TRITON_INTERPRET=1 set before the kernels are imported"
    return None


def unavailable_reason(device_type: str, *, for_timing: bool) -> str | None:
    """Why a Triton kernel cannot run (or must not be timed) on `device_type`, or None.

    The interpreter gives correct results on the CPU but runs orders of magnitude slower than
    compiled code, so a timed run never uses it: on a CPU the Triton rows are skipped.
    """
    if not triton_installed():
        return "triton is not installed"
    if for_timing and device_type != "cuda":
        return ("Triton kernels need a CUDA GPU to be timed; on CPU they run only under "
                "TRITON_INTERPRET=1, for correctness tests")
    return _device_problem(device_type, interpreting())


def check_tensors(op_name: str, *, same_dtype: bool = True,
                  **tensors: torch.Tensor | None) -> None:
    """The checks every Triton wrapper makes on its tensor arguments (None ones are skipped).

    Bad input (not a tensor, a dtype outside SUPPORTED_DTYPES, mixed dtypes unless same_dtype
    is False, mixed devices) raises ValueError. Tensors on a device the kernels cannot run on
    (a CPU without the interpreter, or anything but CUDA and CPU) raise RuntimeError: the input
    is fine, the machine is not.
    """
    given = {name: t for name, t in tensors.items() if t is not None}
    for name, t in given.items():
        if not isinstance(t, torch.Tensor):
            raise ValueError(f"{op_name}: {name} must be a torch.Tensor, got {type(t).__name__}")
        if t.dtype not in SUPPORTED_DTYPES:
            raise ValueError(f"{op_name}: {name} has dtype {t.dtype}; supported dtypes are "
                             f"float32, float16, bfloat16")
    names = ", ".join(given)
    if same_dtype and len({t.dtype for t in given.values()}) > 1:
        raise ValueError(f"{op_name}: {names} must share one dtype, got "
                         f"{', '.join(str(t.dtype) for t in given.values())}")
    if len({t.device for t in given.values()}) > 1:
        raise ValueError(f"{op_name}: {names} must be on one device, got "
                         f"{', '.join(str(t.device) for t in given.values())}")
    device = next(iter(given.values())).device
    problem = _device_problem(device.type, kernels_interpreted())
    if problem is not None:
        raise RuntimeError(f"{op_name}: tensors are on {device}: {problem}")
