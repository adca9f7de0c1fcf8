"""Where Triton kernels can run, and how the CPU interpreter changes what they must do."""
from __future__ import annotations

import importlib.util
import os


def interpreting() -> bool:
    """True when TRITON_INTERPRET=1: kernels run on the CPU through Triton's interpreter.

    The variable is read when a kernel is defined, so it must be set before the kernel module
    is imported (tests/conftest.py does that on machines without CUDA).
    """
    return os.environ.get("TRITON_INTERPRET", "0") == "1"


def triton_installed() -> bool:
    return importlib.util.find_spec("triton") is not None


def unavailable_reason(device_type: str, *, for_timing: bool) -> str | None:
    """Why a Triton kernel cannot run (or must not be timed) on `device_type`, or None.

    The interpreter gives correct results on the CPU but runs orders of magnitude slower than
    compiled code, so a timed run never uses it: on a CPU the Triton rows are skipped.
    """
    if not triton_installed():
        return "triton is not installed"
    if device_type == "cuda":
        return None
    if for_timing:
        return ("Triton kernels need a CUDA GPU to be timed; on CPU they run only under "
                "TRITON_INTERPRET=1, for correctness tests")
    if not interpreting():
        return "Triton on CPU needs TRITON_INTERPRET=1 set before the kernels are imported"
    return None
