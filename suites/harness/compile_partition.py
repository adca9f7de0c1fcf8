"""What torch.compile's partition of a training graph decided: how many tensors the compiled
forward saves for backward, and which forward ops the compiled backward recomputes
(rematerialises) from them instead of saving them.

A `compile` variant that trains runs AOTAutograd: it traces forward and backward as one joint
graph and splits it into a forward graph and a backward graph with a partitioner. Inductor's
(`torch._inductor.compile_fx.partition_fn`: its joint-graph passes, then
`torch._functorch.partitioners.min_cut_rematerialization_partition(compiler="inductor")`)
cuts the graph where the fewest bytes cross, and recomputes cheap ops (pointwise ones; never a
matmul, which it bans) in the backward rather than keeping their outputs alive. The real
compile's graphs are gone once Inductor has generated code for them, so `read_partition`
compiles the same function (the same module, the same tensors) a second time through
`aot_autograd` with Inductor's own decompositions (`select_decomp_table()`) and Inductor's own
partition function, wrapped to record the forward and backward graphs it returns; the
forward and backward compilers run those graphs as they are (no code generation), so the
second compile costs a trace, not an Inductor compile (0.2-2 s on a CPU). It runs once, with
grad on, and its output is dropped: no backward runs, no gradient is touched.

Read from the two graphs, as the partitioner's own debug output reads them
(`AOT_PARTITIONER_DEBUG`: "# remat/fw/bw" and "Count of Ops Rematerialized"):

- saved: the forward graph's outputs past its `num_fwd_outputs` user outputs, tensors only.
  An input saved as it is, or a view of one (a transposed weight), is left out, as
  suites/harness/training.py `saved_bytes` leaves inputs out (it exists anyway); the rest are
  counted once per storage, their bytes from the nodes' fake values (`meta['val']`).
- recomputed: the ops of the backward graph that the forward graph computes too (a node of one
  name in both: the partitioner copies the joint graph's nodes into both graphs under their
  names), named by their aten op (`aten.tanh`, `aten.mul`), in the backward's order.
- the backward graph: its aten ops (call_function nodes that are aten or prims ops, before
  Inductor fuses them into kernels), and how many backward graphs there are (one per graph
  dynamo built with a gradient to compute).

Checked on this CPU build (torch 2.13; tests/test_compile_partition.py):
- Inductor on a CPU partitions with this function: with the partitioner's debug log on, the
  real compile (torch.compile's default backend) logs the same rematerialised ops and the same
  saved values as the reading, for a GeGLU function and the mlp and norm suites' compile
  variants. gelu_tanh(x Wg^T) * (x Wu^T): aten.mul x6, aten.add x2, aten.tanh recomputed,
  the two (T, I) GEMM outputs saved; the mlp's module: the same and the three weights'
  transposes (aten.permute x3, views), and gelu*mul (the down GEMM's input) saved too, 3
  tensors; LayerNorm: the rows' mean and rstd saved, aten.sub (x - mean) and one aten.mul
  recomputed; RMSNorm: rstd saved, one aten.mul recomputed.
- What the reading counts as saved is what saved_tensors_hooks sees the real compiled call
  save (training.py saved_bytes: count and bytes), for those and for matmul_add, linear and
  block (11 tensors at the test shape), with one difference by definition: a tensor the
  variant's set-up made and the graph takes as an input (attention's causal mask) is an input
  here, and saved_bytes, which leaves out the case's inputs only, counts it.
- The reading takes 0.2-0.6 s (1.6 s for the decoder block), against 4-40 s for the real
  compile.

Dynamo is not disturbed: the second compile's frame is a wrapper with a code object of its own
(`_fresh_frame`), so its cache entry is not on the variant's function (the variant's compiled
code stays the only entry there, its guards checked first, its recompile count unchanged), and
no `torch._dynamo.reset()` is needed (one would throw away the variant's compiled code, and the
timed calls would compile again). The harness reads the partition after the variant's graphs
are counted (`compile_graphs`), as dynamo's counters count this compile too.
"""
from __future__ import annotations

import itertools
from collections import Counter
from dataclasses import dataclass
from typing import Callable

import torch
from torch import fx

_FRESH = itertools.count()


@dataclass(frozen=True)
class Partition:
    """The partition of a compiled training call, summed over its graphs."""

    graphs: int  # backward graphs (one per joint graph partitioned)
    saved: int  # tensors the forward keeps for backward, inputs and views of them left out
    saved_mb: float
    saved_inputs: int  # inputs (or views of them) it keeps too: not in `saved`
    recomputed: tuple[str, ...]  # the aten op of each recomputed node, in the backward's order
    bwd_ops: int  # aten ops in the backward graph(s)
    fwd_ops: int  # aten ops in the forward graph(s)

    @property
    def recomputed_ops(self) -> int:
        return len(self.recomputed)

    @property
    def recomputed_text(self) -> str:
        """`aten.mul x6, aten.add x2, aten.tanh`: most frequent first, then first seen."""
        return recomputed_text(self.recomputed)


def recomputed_text(ops) -> str:
    counts = Counter(ops)
    order = {op: i for i, op in reversed(list(enumerate(ops)))}
    ranked = sorted(counts, key=lambda op: (-counts[op], order[op]))
    return ", ".join(op if counts[op] == 1 else f"{op} x{counts[op]}" for op in ranked)


def compiled_source(call) -> tuple[Callable, tuple] | None:
    """(fn, args) a compile variant's call compiles (kernels/compiled.py `compile_prepare`
    marks its calls with them), or None for any other call."""
    return getattr(call, "compiled_from", None)


def read_call(call) -> Partition:
    """The partition of a compile variant's prepared call (kernels/compiled.py)."""
    source = compiled_source(call)
    if source is None:
        raise ValueError("not a call made by kernels/compiled.py compile_prepare (no "
                         "compiled_from): its compiled function is unknown")
    fn, args = source
    return read_partition(fn, *args)


def read_partition(fn: Callable, *args) -> Partition:
    """Compile `fn(*args)` once more, recording Inductor's partition of its joint graph(s), and
    read it. Raises where there is no partition (no input requires grad, so no backward)."""
    from functorch.compile import make_boxed_func
    from torch._dynamo.backends.common import aot_autograd
    from torch._inductor.compile_fx import partition_fn as inductor_partition_fn
    from torch._inductor.decomposition import select_decomp_table

    recorded: list[tuple[fx.GraphModule, fx.GraphModule, int]] = []

    def partition(joint, joint_inputs, **kwargs):
        fw, bw = inductor_partition_fn(joint, joint_inputs, **kwargs)
        recorded.append((fw, bw, kwargs["num_fwd_outputs"]))
        return fw, bw

    def as_is(gm, example_inputs):  # no code generation: the graph runs as traced
        return make_boxed_func(gm.forward)

    backend = aot_autograd(fw_compiler=as_is, bw_compiler=as_is, inference_compiler=as_is,
                           partition_fn=partition, decompositions=select_decomp_table(),
                           keep_inference_input_mutations=True)
    compiled = torch.compile(_fresh_frame(fn), backend=backend, dynamic=False)
    # Never from (or into) AOTAutograd's cache: a hit would skip the partitioner.
    with torch._functorch.config.patch(force_autograd_cache=False), torch.enable_grad():
        out = compiled(*args)
    del out, compiled
    if not recorded:
        raise RuntimeError("no backward graph: nothing the compiled call computes needs a "
                           "gradient")
    try:
        return _read(recorded)
    finally:
        recorded.clear()  # the graphs (dynamo keeps the backend, and this list, until a reset)


def _fresh_frame(fn: Callable) -> Callable:
    """A wrapper that calls `fn`, with a code object no other function has: dynamo keeps its
    compiled code (and counts recompiles) per code object, so this compile's entry is the
    wrapper's alone, dropped with it, and `fn` itself is only inlined."""
    def run(*args):
        return fn(*args)

    run.__code__ = run.__code__.replace(co_name=f"compile_partition_{next(_FRESH)}")
    return run


def is_aten(node: fx.Node) -> bool:
    return node.op == "call_function" and isinstance(node.target, torch._ops.OpOverload)


def op_name(node: fx.Node) -> str:
    """`aten.tanh` (the overload packet, as the partitioner's debug log names it)."""
    target = node.target
    packet = getattr(target, "_overloadpacket", None)
    return str(packet) if packet is not None else getattr(target, "__name__", str(target))


def _storage_root(node: fx.Node) -> fx.Node:
    """The node whose storage `node` shares: itself, or through view ops, the one viewed."""
    while (is_aten(node) and node.target.is_view and node.args
           and isinstance(node.args[0], fx.Node)):
        node = node.args[0]
    return node


def _nbytes(value) -> int:
    try:
        return int(value.untyped_storage().nbytes())
    except Exception:  # a fake tensor without a storage to ask: its elements
        return int(value.numel() * value.element_size())


def saved_values(fw: fx.GraphModule, num_fwd_outputs: int) -> list[fx.Node]:
    """The forward graph's outputs past the user outputs that are tensors."""
    outputs = next(n for n in fw.graph.nodes if n.op == "output").args[0]
    return [n for n in outputs[num_fwd_outputs:]
            if isinstance(n, fx.Node) and isinstance(n.meta.get("val"), torch.Tensor)]


def _read(recorded) -> Partition:
    saved, saved_bytes, saved_inputs, fwd_ops, bwd_ops = 0, 0, 0, 0, 0
    recomputed: list[str] = []
    for fw, bw, num_fwd_outputs in recorded:
        roots: dict[str, fx.Node] = {}
        inputs: set[str] = set()
        for node in saved_values(fw, num_fwd_outputs):
            root = _storage_root(node)
            if root.op == "placeholder":
                inputs.add(root.name)
            else:
                roots.setdefault(root.name, root)
        saved += len(roots)
        saved_bytes += sum(_nbytes(r.meta["val"]) for r in roots.values())
        saved_inputs += len(inputs)
        forward = {n.name for n in fw.graph.nodes if n.op == "call_function"}
        recomputed += [op_name(n) for n in bw.graph.nodes if is_aten(n) and n.name in forward]
        fwd_ops += sum(is_aten(n) for n in fw.graph.nodes)
        bwd_ops += sum(is_aten(n) for n in bw.graph.nodes)
    return Partition(len(recorded), saved, saved_bytes / 2 ** 20, saved_inputs,
                     tuple(recomputed), bwd_ops, fwd_ops)
