"""An empty Triton kernel and the ways to launch it: the floors of the `launch` suite
(kernels/launch.py) and of the probe every run makes at its start (suites/harness/launch_floor.py).

The kernel takes one pointer, as the smallest real kernel does, and does nothing, so a call of
it costs its launch path alone. The paths, each skipping more of Triton's Python:

- jit: `nop_kernel[(1,)](x)`: the JIT's dispatch (binding the arguments, the specialisation
  key, the cache lookup), then the launcher: what this project's Triton variants pay a kernel.
- handle: the CompiledKernel the JIT returned, its launcher called with all but the tensor bound
  once (grid, stream, CUfunction, packed metadata), as the JIT calls it: no binding, no lookup.
- driver: cuLaunchKernel through ctypes on that CUfunction: no Triton at all.
- graph: the kernel captured n times into a CUDA graph, replayed with one call.

What each path needs of Triton is checked by name (handle_problem, driver_problem), so a Triton
whose CompiledKernel lacks a part is a reason to skip, not a crash inside a timed call.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import functools
from typing import Callable

import torch
import triton

from kernels.triton.runtime import kernels_interpreted

GRID = (1,)
# What the handle path reads off a CompiledKernel (triton 3.x: `run` is the launcher, created
# with the CUfunction on first use; jit.py calls it with exactly these).
HANDLE_PARTS = ("run", "function", "packed_metadata", "metadata")
# cuLaunchKernel reads one argument slot per parameter the kernel declares: x's pointer, then
# the scratch pointers Triton appends (global, profile; none used by an empty kernel). Spare
# slots are never read, so a Triton that appends one more still launches.
PARAM_SLOTS = 8


@triton.jit
def nop_kernel(x_ptr):  # x_ptr: unused, a pointer argument as every real kernel has one
    pass


def compiled_nop(x: torch.Tensor):
    """The CompiledKernel for x (the first launch compiles and loads it)."""
    kernel = nop_kernel[GRID](x)
    if kernel is None:
        raise RuntimeError(f"triton {triton.__version__}: a launch returned no CompiledKernel")
    return kernel


def jit_launch(x: torch.Tensor) -> Callable[[], None]:
    """Launches of nop_kernel through the JIT's dispatch, compiled here, before any is timed."""
    compiled_nop(x)
    return lambda: nop_kernel[GRID](x)


def handle_problem(kernel) -> str | None:
    """Why this CompiledKernel cannot be launched through its handle here, or None."""
    if kernels_interpreted():
        return "TRITON_INTERPRET=1: the kernel is interpreted, so there is no compiled handle"
    missing = [name for name in HANDLE_PARTS if getattr(kernel, name, None) is None]
    if missing:
        return (f"triton {triton.__version__}: its CompiledKernel has no {', '.join(missing)}, "
                "so its launcher cannot be called directly")
    return None


def handle_launch(x: torch.Tensor) -> Callable[[], None]:
    """Launches through the CompiledKernel's launcher, its arguments bound here: the grid, the
    stream (the current one, as the harness calls on it), the CUfunction, the packed metadata,
    no launch metadata and no enter/exit hooks (the JIT passes its knobs' hooks: None unless a
    profiler set them), then the kernel's argument."""
    kernel = compiled_nop(x)
    problem = handle_problem(kernel)
    if problem:
        raise RuntimeError(problem)
    run, function, packed = kernel.run, kernel.function, kernel.packed_metadata
    stream = torch.cuda.current_stream(x.device).cuda_stream
    return lambda: run(*GRID, 1, 1, stream, function, packed, None, None, None, x)


@functools.lru_cache(maxsize=None)
def _libcuda():
    """The CUDA driver library (loaded by torch already; ctypes only finds it again)."""
    name = ctypes.util.find_library("cuda") or "libcuda.so.1"
    library = ctypes.CDLL(name)
    launch = library.cuLaunchKernel
    launch.restype = ctypes.c_int
    launch.argtypes = [ctypes.c_void_p, *[ctypes.c_uint] * 7, ctypes.c_void_p,
                       ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_void_p)]
    return library


def driver_problem() -> str | None:
    """Why cuLaunchKernel cannot be reached from Python here, or None."""
    try:
        _libcuda()
    except (OSError, AttributeError) as exc:
        return f"the CUDA driver's cuLaunchKernel is not reachable through ctypes ({exc})"
    return None


def driver_launch(x: torch.Tensor) -> Callable[[], None]:
    """Launches by cuLaunchKernel on the compiled kernel's CUfunction: one block of its warps,
    its static shared memory, the current stream. A non-zero status raises."""
    kernel = compiled_nop(x)
    problem = handle_problem(kernel) or driver_problem()
    if problem:
        raise RuntimeError(problem)
    launch = _libcuda().cuLaunchKernel
    pointer, null = ctypes.c_void_p(x.data_ptr()), ctypes.c_void_p(0)
    slots = [ctypes.addressof(pointer)] + [ctypes.addressof(null)] * (PARAM_SLOTS - 1)
    params = (ctypes.c_void_p * PARAM_SLOTS)(*slots)
    function = ctypes.c_void_p(kernel.function)
    stream = ctypes.c_void_p(torch.cuda.current_stream(x.device).cuda_stream)
    threads, shared = kernel.metadata.num_warps * 32, kernel.metadata.shared

    def call():
        status = launch(function, *GRID, 1, 1, threads, 1, 1, shared, stream, params, None)
        if status:
            raise RuntimeError(f"cuLaunchKernel returned CUDA error {status}")

    call.slots = (pointer, null)  # the slots hold their addresses: they live as long as the call
    return call


def graph_replay(x: torch.Tensor, nodes: int) -> Callable[[], None]:
    """One replay of a CUDA graph of `nodes` launches of nop_kernel. The kernel is compiled and
    loaded before the capture (a module load cannot be captured); the JIT launches inside it
    go to the capture stream, which Triton takes from torch's current stream."""
    compiled_nop(x)
    torch.cuda.synchronize(x.device)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(nodes):
            nop_kernel[GRID](x)
    return graph.replay
