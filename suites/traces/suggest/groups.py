"""A trace's top-level op calls as groups, ranked by time per step: the blocks' matches grouped by
(block, shape, dtype), the calls no block covers by (op, input shapes, dtypes) with the reason.

Time per step is a group's total over the trace's steps (ProfilerStep ranges; a trace without
them is one step): on a GPU trace, the device time of what the group's calls launched (the sum
of their kernels, memcpys and memsets), on a CPU trace their spans. Each group also carries its
host time (the calls' own spans) and its calls per step. The share a mapped group covers is of
the device time every top-level call caused (what fusion could act on), beside the trace's
total device time (`coverage`).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from suites.traces.suggest.op_calls import OpCall
from suites.traces.suggest.patterns import VIEWS, Match


@dataclass
class Group:
    suite: str                 # the block, "" for calls no block covers
    values: dict               # the block's params; for an unmapped group, {}
    dtype: str
    ops: dict[str, int]        # op name -> its calls, over the trace
    instances: int             # matches (a block's) or calls (unmapped), over the trace
    device_us: float           # over the trace
    host_us: float
    notes: list[str] = field(default_factory=list)
    problem: str = ""          # a mapped group that cannot be built: why
    reason: str = ""           # an unmapped group: why no block covers it
    shapes: str = ""           # an unmapped group's input shapes, as text
    replay: str = ""           # the block's variant that runs what the trace ran
    recorded_ops: int = 0      # ops the profiler recorded in the group, calls and inner ops

    @property
    def mapped(self) -> bool:
        return bool(self.suite) and not self.problem

    def label(self) -> str:
        if self.suite:
            shape = "-".join(f"{k}{v}" if k != "norm" else str(v) for k, v in self.values.items())
            return f"{self.suite} {shape} {self.dtype}"
        if self.reason.startswith("views"):
            return "views and copies"
        name = next(iter(self.ops))
        short = name if len(name) <= 60 else name[:57] + "..."
        return f"{short} {self.shapes} {self.dtype}".strip()

    def ops_text(self) -> str:
        """The ops of one instance (a match, or one call): `aten::linear x3, aten::gelu`; the
        views group lists its ops over the trace."""
        per = 1 if self.reason.startswith("views") else max(1, self.instances)
        parts = []
        for name, n in self.ops.items():
            each = n / per
            count = f"{each:.3g}" if each != int(each) else str(int(each))
            parts.append(f"{name}{f' x{count}' if count != '1' else ''}")
        return ", ".join(parts)


def _ops(calls: list[OpCall]) -> dict[str, int]:
    out: dict[str, int] = {}
    for call in calls:
        out[call.name] = out.get(call.name, 0) + 1
    return out


def unmapped_reason(call: OpCall) -> str:
    """Why no block covers a call, in words."""
    name = call.name
    if name == "aten::gelu":
        return "gelu without the GeGLU product around it: no block covers it alone"
    if name in ("aten::silu", "aten::relu") or name.endswith("_activation"):
        return f"{name.removeprefix('aten::')}: fusebench's MLP block is GeGLU (gelu(tanh)*up)"
    if name in ("aten::mul", "aten::add", "aten::sub", "aten::div", "aten::add_", "aten::mul_"):
        return "an elementwise op outside any pattern"
    if name in ("aten::embedding", "aten::index_select", "aten::cat", "aten::copy_",
                "aten::_to_copy", "aten::to", "aten::clone", "aten::contiguous"):
        return "data movement: no block covers it"
    if name == "aten::linear":
        return "a linear whose shapes were not recorded"
    low = name.lower()
    if any(k in low for k in ("all_reduce", "allreduce", "all_gather", "reduce_scatter",
                              "nccl", "broadcast", "all_to_all")):
        return "communication: no block covers it"
    if "moe" in low or "expert" in low:
        return "mixture of experts (routing and grouped GEMMs): no block covers it"
    if "attention" in low or "attn" in low:
        return "a library's own attention op (paged or fused): the attention block is dense SDPA"
    if "quant" in low or "fp8" in low:
        return "quantisation: no block covers it"
    if "rotary" in low or "rope" in low:
        return "rotary position embedding: no block covers it"
    if not call.dims:
        return "no shapes recorded for this call"
    return "no block covers this op"


def group_matches(matches: list[Match]) -> list[Group]:
    groups: dict[tuple, Group] = {}
    for m in matches:
        key = (m.suite, tuple(m.values.items()), m.dtype)
        g = groups.get(key)
        if g is None:
            g = groups[key] = Group(m.suite, dict(m.values), m.dtype, {}, 0, 0.0, 0.0,
                                    problem=m.problem, replay=m.replay)
        g.instances += 1
        g.device_us += m.device_us
        g.host_us += m.host_us
        g.recorded_ops += sum(1 + c.inner_ops() for c in m.calls)
        for name, n in _ops(m.calls).items():
            g.ops[name] = g.ops.get(name, 0) + n
        g.notes += [n for n in m.notes if n not in g.notes]
    return list(groups.values())


def group_unmapped(calls: list[OpCall]) -> list[Group]:
    """Calls no block took, grouped by (op, input shapes, dtype); views, reshapes and the like
    (patterns.VIEWS: no kernel, or a copy at most) are one group of their own."""
    groups: dict[tuple, Group] = {}
    for call in calls:
        if call.name in VIEWS:
            key = ("views",)
            if key not in groups:
                groups[key] = Group("", {}, "", {}, 0, 0.0, 0.0, shapes="",
                                    reason="views, reshapes, copies and allocations between "
                                           "the ops")
            g = groups[key]
            g.instances += 1
            g.ops[call.name] = g.ops.get(call.name, 0) + 1
            g.device_us += call.device_us
            g.host_us += call.host_us
            continue
        shapes = " ".join("x".join(map(str, d)) for d in call.tensor_dims())
        key = (call.name, shapes, call.dtype())
        g = groups.get(key)
        if g is None:
            g = groups[key] = Group("", {}, call.dtype(), {call.name: 0}, 0, 0.0, 0.0,
                                    reason=unmapped_reason(call), shapes=shapes)
        g.instances += 1
        g.ops[call.name] += 1
        g.device_us += call.device_us
        g.host_us += call.host_us
    return list(groups.values())


def outside_reason(kernel: str, launch: str) -> str:
    if "Graph" in launch:
        return (f"replayed from a CUDA graph ({launch}): the ops that captured it are not in "
                "the trace")
    if kernel.startswith("triton_"):
        return "a Triton kernel compiled code launched from Python: no op to read shapes from"
    return f"launched by {launch} outside any op: no shapes to read"


def group_outside(activities) -> list[Group]:
    """Device activities launched under no op (op_calls.Outside), by kernel name."""
    groups: dict[str, Group] = {}
    for a in activities:
        g = groups.get(a.kernel)
        if g is None:
            g = groups[a.kernel] = Group("", {}, "", {a.kernel: 0}, 0, 0.0, 0.0,
                                         reason=outside_reason(a.kernel, a.launch))
        g.instances += 1
        g.ops[a.kernel] += 1
        g.device_us += a.dur
    return list(groups.values())


def ranked(groups: list[Group]) -> list[Group]:
    return sorted(groups, key=lambda g: (-g.device_us, -g.host_us, g.label()))
