"""Where Triton kernels can run, and the input checks every Triton wrapper shares.

Imported on machines without Triton (the eager and compile variants still run there), so this
module must not import triton; torch is fine.
"""
from __future__ import annotations

import importlib.util
import os

import torch

SUPPORTED_DTYPES = (torch.float32, torch.float16, torch.bfloat16)
# flash_attention keeps a (BLOCK_M, D) fp32 accumulator in registers: larger heads would spill.
MAX_HEAD_DIM = 128
# The row-wise kernels (rms_norm, layer_norm) hold one whole row in one program's registers.
MAX_ROW = 65536


# Read once, when this module is first imported. triton.jit fixes interpreted-or-compiled when a
# kernel is defined, and every kernel module imports this one before defining its kernels, so
# the flag can never disagree with how they were defined. TRITON_INTERPRET must therefore be set
# before the first import (tests/conftest.py does that on machines without CUDA).
_INTERPRETED = os.environ.get("TRITON_INTERPRET", "0") == "1"


def kernels_interpreted() -> bool:
    """Whether the Triton kernels run through Triton's interpreter: the project's one flag."""
    return _INTERPRETED


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


def supports(case, head_dim: tuple[str, int] | None = None,
             row: tuple[str, int] | None = None) -> str | None:
    """Why the Triton kernels cannot run on `case`, or None: the one support check of every
    Triton variant. Triton must be installed; the tensors on CUDA, or on a CPU with the
    interpreter on; a head dim no larger than flash_attention's register-resident accumulator
    takes, and a row no longer than a row-wise kernel holds (each given as how the op names it
    and its value: `("D/H", 64)`). Whether a run may *time* a kernel that runs interpreted is
    not asked here: the harness never does.
    """
    if not triton_installed():
        return "triton is not installed"
    problem = _device_problem(case.device_type, kernels_interpreted())
    for given, limit, what in ((head_dim, MAX_HEAD_DIM, "the Triton flash kernel takes head dims"),
                               (row, MAX_ROW, "the Triton row-wise kernels take rows")):
        if problem is None and given is not None and given[1] > limit:
            problem = f"{what} up to {limit}, not {given[0]}={given[1]}"
    return problem


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
