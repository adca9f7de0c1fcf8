"""The few `args` the reader keeps beyond times and ids (events.py): a kernel's launch
configuration as Kineto records it, and the input shapes of the ops that run a GEMM.

Kept as small interned tuples on the event (`Event.info`): a training trace holds a million
kernel launches of a few hundred distinct configurations, so each event holds a reference to a
shared tuple, not a dict of its own.
"""
from __future__ import annotations

from typing import NamedTuple

# The CPU ops whose `Input Dims` (recorded when record_shapes=True) give a GEMM's M, N, K.
GEMM_OPS = frozenset({
    "aten::mm", "aten::addmm", "aten::_addmm_activation", "aten::bmm", "aten::baddbmm",
    "aten::_scaled_mm", "aten::matmul", "aten::linear",
})


class KernelLaunch(NamedTuple):
    """One launch's configuration, as Kineto writes it in a kernel event's args (CUDA only:
    ROCm traces carry grid and block alone). None where the trace has no such key."""

    registers: int | None  # "registers per thread"
    shared_mem: int | None  # "shared memory": static + dynamic bytes per block
    blocks_per_sm: float | None  # grid blocks / SMs (what was launched, not what was resident)
    warps_per_sm: float | None  # blocks per SM x warps per block
    est_occupancy_pct: float | None  # Kineto's estimate, rounded to an integer percent
    grid: tuple | None
    block: tuple | None
    device: int | None  # "device": which entry of the trace's deviceProperties

    @property
    def threads(self) -> int | None:
        if not self.block:
            return None
        n = 1
        for d in self.block:
            n *= d
        return n

    def config(self) -> tuple:
        """What makes two launches of one kernel differ: geometry and resources."""
        return (self.grid, self.block, self.registers, self.shared_mem)


_NUMBER = (int, float)


def _num(value):
    return value if type(value) in _NUMBER else None


def _dims(value) -> tuple | None:
    if type(value) is list and all(type(d) is int for d in value):
        return tuple(value)
    return None


def kernel_launch(args, interned: dict) -> KernelLaunch | None:
    """The launch tuple of a kernel event's args (trace_text.RawArgs), shared with equal ones
    via `interned`; None when the args hold none of the keys (a ROCm kernel without grid and
    block)."""
    grid, block = _dims(args.grid), _dims(args.block)
    values = [_num(args.registers), _num(args.shared_mem), _num(args.blocks_per_sm),
              _num(args.warps_per_sm), _num(args.occupancy)]
    if grid is None and block is None and all(v is None for v in values):
        return None
    device = args.device
    launch = KernelLaunch(*values, grid, block, device if type(device) is int else None)
    return interned.setdefault(launch, launch)


def input_dims(args, interned: dict) -> tuple | None:
    """An op's `Input Dims` (trace_text.RawArgs) as a tuple of shape tuples (a scalar input is
    ()), or None."""
    dims = args.input_dims
    if type(dims) is not list:
        return None
    shapes = []
    for shape in dims:
        if type(shape) is not list or not all(type(d) is int for d in shape):
            shapes.append(None)  # a tensor list or an unknown entry: not a GEMM operand
        else:
            shapes.append(tuple(shape))
    value = tuple(shapes)
    return interned.setdefault(value, value)


def event_info(cat: str, name: str, args, interned: dict):
    """What the reader keeps of a kernel's or a GEMM op's args; None for every other event."""
    if cat == "kernel":
        return kernel_launch(args, interned)
    if name in GEMM_OPS:
        return input_dims(args, interned)
    return None
