"""Achieved TFLOP/s per GEMM kernel, where the trace says each launch's M, N and K.

A kernel's args carry no shapes. The CPU op that launched it does, when the profile recorded
shapes (record_shapes=True, the suite's default): `Input Dims` of aten::mm, addmm, bmm, linear...
The link is the launch call's correlation id (kernel -> launch call) and the launch call's place
inside that op on its thread (the innermost GEMM op around it with readable shapes). Only an op
instance that launched exactly one GEMM kernel gives that kernel its FLOPs (2 x M x N x K,
B x that for a batched GEMM); an op with two GEMM kernels (a split into pieces, a CUDA graph
replaying many under one launch) is ambiguous and gives none. A kernel with no such op (a Triton
GEMM, Inductor's GEMM templates, a trace without shapes) can take its shapes from a known list
of the call's GEMMs instead (CallProfile.gemm_shapes: the case's M, N, K), in launch order, where
every step launched exactly that many GEMM kernels without shapes; else its rate is unknown.
"""
from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass

from suites.traces.event_args import GEMM_OPS
from suites.traces.gemm_names import gemm_identity, is_gemm
from suites.traces.nesting import by_thread, nest
from suites.traces.op_kinds import is_launch_api
from suites.traces.events import RUNTIME_CATS, Event


@dataclass(frozen=True)
class GemmLaunch:
    kernel: Event
    shape: tuple  # (M, N, K), or (B, M, N, K) for a batched GEMM
    source: str  # the op whose Input Dims gave the shape, or "case" (CallProfile.gemm_shapes)

    @property
    def flops(self) -> float:
        return 2.0 * math.prod(self.shape)

    @property
    def shape_text(self) -> str:
        return "x".join(str(d) for d in self.shape)

    def bytes_moved(self, element_bytes: float) -> float:
        """The least a GEMM moves: A (M x K) and B (K x N) read once, C (M x N) written once,
        per batch; what its rate is held to where memory, not math, bounds it."""
        *batch, m, n, k = self.shape
        return element_bytes * math.prod(batch) * (m * k + k * n + m * n)


def _mnk(a, b) -> tuple | None:
    """(M, N, K) of a (M, K) @ (K, N) product, both 2-D."""
    if a and b and len(a) == 2 and len(b) == 2 and a[1] == b[0]:
        return (a[0], b[1], a[1])
    return None


def gemm_shape(op: str, dims) -> tuple | None:
    """The GEMM an op's Input Dims describe, or None where they do not say it plainly."""
    if not dims:
        return None
    first = lambda i: dims[i] if len(dims) > i else None  # noqa: E731
    if op in ("aten::mm", "aten::_scaled_mm"):
        return _mnk(first(0), first(1))
    if op in ("aten::addmm", "aten::_addmm_activation"):
        return _mnk(first(1), first(2))
    if op in ("aten::bmm", "aten::baddbmm"):
        a, b = (first(0), first(1)) if op == "aten::bmm" else (first(1), first(2))
        if a and b and len(a) == 3 and len(b) == 3 and a[0] == b[0] and a[2] == b[1]:
            return (a[0], a[1], b[2], a[2])
        return None
    if op == "aten::linear":  # x (..., K) @ w (N, K)^T: the leading dims fold into M
        x, w = first(0), first(1)
        if x and w and len(w) == 2 and x[-1] == w[1]:
            return (math.prod(x[:-1]), w[0], w[1])
        return None
    if op == "aten::matmul":  # (..., M, K) @ (K, N) folds into one mm; other forms: no
        a, b = first(0), first(1)
        if a and b and len(b) == 2 and len(a) >= 2 and a[-1] == b[0]:
            return (math.prod(a[:-1]), b[1], a[-1])
        return None
    return None


def _launch_ops(step) -> dict:
    """correlation id -> (op event, shape) of the innermost GEMM op with shapes around each
    launch call of the step, thread by thread (nesting.py; at equal times, an op before its
    launch)."""
    ops = [op for op in step.op_events if op.name in GEMM_OPS and op.info is not None]
    if not ops:
        return {}
    launches = [r for r in step.runtime if r.corr is not None and is_launch_api(r.name)]
    found = {}

    def enter(event: Event, around: list[tuple[Event, tuple | None]]):
        if event.cat not in RUNTIME_CATS:
            return (event, gemm_shape(event.name, event.info))
        for op, shape in reversed(around):
            if shape is not None and event.end <= op.end:
                found[event.corr] = (op, shape)
                break
        return None  # a launch holds no op

    for events in by_thread(ops, launches):
        nest(events, enter)
    return found


def gemm_launches(steps, known_shapes=()) -> list[GemmLaunch]:
    """Every GEMM kernel launch of the steps whose shape is known (module docstring)."""
    out = []
    for step in steps:
        linked = _launch_ops(step)
        per_op: dict = defaultdict(list)
        unshaped = []
        for kernel in step.kernels:
            if kernel.cat != "kernel" or not is_gemm(kernel.name):
                continue
            if kernel.corr in linked:
                per_op[id(linked[kernel.corr][0])].append((kernel, linked[kernel.corr]))
            else:
                unshaped.append(kernel)
        for launched in per_op.values():
            if len(launched) == 1:
                kernel, (op, shape) = launched[0]
                out.append(GemmLaunch(kernel, shape, op.name))
        if known_shapes and len(unshaped) == len(known_shapes):
            out += [GemmLaunch(k, tuple(s), "case") for k, s in zip(unshaped, known_shapes)]
    return out


# Bytes per element of a GEMM's input type (gemm_names' dtype; "a/b" pairs by their first).
ELEMENT_BYTES = {"f64": 8, "f32": 4, "tf32": 4, "bf16": 2, "f16": 2, "e4m3": 1, "e5m2": 1,
                 "i8": 1, "mxfp4": 0.5}


def element_bytes(kernel_name: str) -> float | None:
    identity = gemm_identity(kernel_name)
    dtype = identity.dtype.split("/")[0] if identity is not None else ""
    return ELEMENT_BYTES.get(dtype)


def rate_rows(launches: list[GemmLaunch]) -> dict[str, dict]:
    """kernel name -> its gemm_shapes (the distinct shapes, most launched first), gemm_tflops
    (FLOPs over device time of the launches with known shapes) and, where its name gives its
    input type, gemm_flop_per_byte (FLOPs over the least bytes it moves: under a device's ridge
    point memory bounds it) and gemm_gbps (those bytes over its time)."""
    flops: dict = defaultdict(float)
    moved: dict = defaultdict(float)
    us: dict = defaultdict(float)
    shapes: dict = defaultdict(lambda: defaultdict(int))
    sizes: dict = {}
    for g in launches:
        name = g.kernel.name
        if name not in sizes:
            sizes[name] = element_bytes(name)
        flops[name] += g.flops
        if sizes[name]:
            moved[name] += g.bytes_moved(sizes[name])
        us[name] += g.kernel.dur
        shapes[name][g.shape_text] += 1
    rows = {}
    for name in flops:
        ordered = sorted(shapes[name], key=lambda s: -shapes[name][s])
        text = ";".join(ordered[:3]) + (f";+{len(ordered) - 3} more" if len(ordered) > 3 else "")
        time = us[name]
        rows[name] = {"gemm_shapes": text,
                      "gemm_tflops": flops[name] / time / 1e6 if time > 0 else math.nan,
                      "gemm_flop_per_byte": (flops[name] / moved[name] if moved[name] > 0
                                             else math.nan),
                      "gemm_gbps": moved[name] / time / 1e3 if time > 0 and moved[name] > 0
                      else math.nan}
    return rows


@dataclass(frozen=True)
class ShapeRate:
    shape: str
    flops: float  # per launch
    tflops: float  # achieved, over all its launches
    kernels: tuple  # the kernel names that ran it
    us: float = 0.0  # its launches' device time in all


def equal_flop_rates(launches: list[GemmLaunch]) -> list[list[ShapeRate]]:
    """Groups of two or more distinct shapes with the same FLOPs, each shape's achieved rate,
    fastest first: (M, N, K) = (512, 2048, 512) and (2048, 512, 512) do equal work, and a
    library may run them with different kernels at different speeds."""
    by_shape: dict = defaultdict(list)
    for g in launches:
        by_shape[g.shape].append(g)
    groups: dict = defaultdict(list)
    for shape, runs in by_shape.items():
        us = sum(g.kernel.dur for g in runs)
        if us <= 0:
            continue
        flops = runs[0].flops
        groups[flops].append(ShapeRate(runs[0].shape_text, flops, flops * len(runs) / us / 1e6,
                                       tuple(sorted({g.kernel.name for g in runs})), us))
    return [sorted(rates, key=lambda r: -r.tflops) for rates in groups.values()
            if len(rates) > 1]
