"""A trace's operator calls with their shapes: what `--suggest` reads.

torch.profiler records, with `record_shapes=True`, each op's `Input Dims`, `Input type`,
`Input Strides` and `Concrete Inputs` (scalars and flags: `is_causal`, `approximate`) in its
args. The analysis's reader (events.py) keeps only what timing needs, so the args are read here
in a second pass over the raw events, for the cpu ops alone, and matched to the reader's events
by (pid, tid, start, name).

Each call is placed in its thread's op tree (nesting.py) and charged what it caused: on a GPU
trace the device time of every kernel, memcpy and memset launched under it (by the launch's
correlation id; inclusive, so an aten::linear holds its addmm's kernel), on a CPU trace its own
span. A *top-level* call is an op with no op around it (a module's ranges are
record_function ranges, not ops): what the model called, and what a fused variant would
replace.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from suites.traces.device_time import on_gpu, trace_mode
from suites.traces.events import CPU_OP_CATS, RUNTIME_CATS, Event, Trace, iter_raw_events
from suites.traces.nesting import by_thread, nest

# Kineto's dtype names -> torch's (what a suite's `dtypes` says).
DTYPES = {"float": "float32", "c10::BFloat16": "bfloat16", "c10::Half": "float16",
          "double": "float64", "c10::Float8_e4m3fn": "float8_e4m3fn", "long int": "int64",
          "int": "int32", "bool": "bool", "unsigned char": "uint8"}


@dataclass(eq=False)
class OpCall:
    event: Event
    dims: tuple = ()       # per input: its shape (a tuple), or None (a scalar, a list)
    types: tuple = ()      # per input: Kineto's type name ("c10::BFloat16", "Scalar", "")
    strides: tuple = ()    # per input: its strides, where recorded
    concrete: tuple = ()   # per input: a scalar's or flag's value as text, else ""
    parent: OpCall | None = None
    children: list = field(default_factory=list)
    device_us: float = 0.0  # of what it launched (GPU trace), its span (CPU trace)
    kernels: int = 0

    @property
    def name(self) -> str:
        return self.event.name

    @property
    def ts(self) -> float:
        return self.event.ts

    @property
    def host_us(self) -> float:
        return self.event.dur

    @property
    def top_level(self) -> bool:
        """An op no other op encloses: an aten op the model called, or a library's own op
        (`vllm::...`, a custom kernel's op), whose work would be lost if only aten ops were
        read (record_function ranges and module names are annotations, not ops)."""
        return self.parent is None

    def inner_ops(self) -> int:
        """The ops recorded inside this call, at any depth (each one costs the profiler)."""
        return sum(1 + child.inner_ops() for child in self.children)

    def dtype(self, index: int = 0) -> str:
        """The input's dtype as torch names it ("" where not recorded)."""
        if index >= len(self.types):
            return ""
        raw = self.types[index]
        return DTYPES.get(raw, raw.removeprefix("c10::").lower() if raw else "")

    def tensor_dims(self) -> list[tuple]:
        """The shapes of the tensor inputs, in order (scalars and lists left out)."""
        return [d for d, t in zip(self.dims, self.types or ("",) * len(self.dims))
                if d is not None and d != () and t not in ("Scalar", "ScalarList")]

    def flag(self, index: int) -> str:
        return self.concrete[index] if index < len(self.concrete) else ""

    def contiguous(self, index: int) -> bool:
        """Whether input `index` is laid out contiguously (row-major), as recorded."""
        if index >= len(self.dims) or index >= len(self.strides):
            return True
        shape, strides = self.dims[index], self.strides[index]
        if not shape or not strides or len(shape) != len(strides):
            return True
        expected = 1
        for size, stride in zip(reversed(shape), reversed(strides)):
            if size != 1 and stride != expected:
                return False
            expected *= size
        return True


def _shape(value) -> tuple | None:
    if type(value) is list and all(type(d) is int for d in value):
        return tuple(value)
    return None


def _args_by_event(path) -> dict:
    """(pid, tid, ts, name) -> the shape args of every cpu op of the raw trace."""
    out = {}
    for raw in iter_raw_events(path):
        if type(raw) is not dict or raw.get("ph") != "X" or raw.get("cat") not in CPU_OP_CATS:
            continue
        args = raw.get("args")
        if type(args) is not dict or "Input Dims" not in args:
            continue
        dims = args.get("Input Dims")
        types = args.get("Input type") or []
        strides = args.get("Input Strides") or []
        concrete = args.get("Concrete Inputs") or []
        ts = raw.get("ts")
        if type(dims) is not list or type(ts) not in (int, float):
            continue
        out[(raw.get("pid"), raw.get("tid"), float(ts), str(raw.get("name", "")))] = (
            tuple(_shape(d) for d in dims),
            tuple(str(t) for t in types) if type(types) is list else (),
            tuple(_shape(s) for s in strides) if type(strides) is list else (),
            tuple(str(c) for c in concrete) if type(concrete) is list else ())
    return out


@dataclass(frozen=True)
class Outside:
    """A device activity whose launch is in the trace but under no op: a Triton kernel that
    compiled code launched from Python, a CUDA graph's replay (`cudaGraphLaunch`)."""
    kernel: str
    dur: float
    launch: str  # the runtime call that launched it


def read_op_calls(trace: Trace) -> tuple[list[OpCall], bool, list[Outside]]:
    """Every cpu op of the trace as an OpCall, in start order, with its place in its thread's
    tree and what it caused; whether the trace recorded shapes at all; and the device
    activities launched outside any op."""
    args = _args_by_event(trace.path)
    gpu = on_gpu(trace_mode(trace))
    device_by_corr: dict = defaultdict(list)
    for activity in trace.device:
        if activity.corr is not None:
            device_by_corr[activity.corr].append(activity)
    calls: dict[int, OpCall] = {}
    outside: list[Outside] = []
    launched: set = set()  # correlation ids already charged (a runtime call and its driver call)

    def enter(event: Event, frames: list) -> OpCall | None:
        if event.cat in RUNTIME_CATS:
            if gpu and event.corr is not None and event.corr not in launched \
                    and event.corr in device_by_corr:
                launched.add(event.corr)
                work = device_by_corr[event.corr]
                for frame in frames:
                    frame.device_us += sum(a.dur for a in work)
                    frame.kernels += len(work)
                if not frames:  # compiled code or a graph replay: no op to read shapes from
                    for activity in work:
                        outside.append(Outside(activity.name, activity.dur, event.name))
            return None
        found = args.get((event.pid, event.tid, event.ts, event.name), ((), (), (), ()))
        call = OpCall(event, *found, parent=frames[-1] if frames else None)
        if call.parent is not None:
            call.parent.children.append(call)
        if not gpu:
            call.device_us = event.dur
        calls[id(event)] = call
        return call

    for events in by_thread(trace.cpu_ops, trace.runtime):
        nest(events, enter)
    ordered = sorted(calls.values(), key=lambda c: (c.ts, -c.host_us))
    return ordered, bool(args), outside
