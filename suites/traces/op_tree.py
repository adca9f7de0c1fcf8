"""The op tree of a call: which op ran inside which, as the series reads it off the trace
(`aten::linear` -> `aten::t` + `aten::addmm`), and what changed between two variants' trees.

Inside each call's range (its record_function, or the step), the CPU ops, the record_function
ranges inside it (`## Call CompiledFxGraph ##`) and the runtime calls (cudaLaunchKernel,
cudaOccupancyMaxActiveBlocksPerMultiprocessor...) are nested by time containment, one thread at
a time. Each node is named by its path from the call down (`aten::linear > aten::addmm`); nodes
with the same path are one row, so a call that runs aten::matmul twice has one
`aten::matmul` row with 2 calls per call. Every number is per call: summed over the profiled
calls, divided by their number.

A node's self time is its span minus its direct children's, runtime calls included (a launch
is the runtime's time, not the op's), as torch's key_averages counts it. Row 0 is the call
itself: its total is the call's span, its self the time in no op (Python between the ops).

Graph ids and hashes are taken out of names (`Torch-Compiled Region: 0/0`, `## Call
CompiledFxGraph f3x... ##`, `graph_18_cpp_fused_...`), so trees compare across cases and
variants that compiled in a different order.
"""
from __future__ import annotations

import bisect
import functools
import re
from collections import defaultdict
from typing import Callable

from suites.traces.nesting import by_thread
from suites.traces.op_kinds import (METADATA_OPS, STEP_PREFIX, is_compute_op_name,
                                    is_inductor_cpu_kernel)
from suites.traces.steps import StepMetrics, TraceAnalysis
from suites.traces.events import RUNTIME_CATS, Event

SEP = " > "
CALL = "(call)"  # row 0: the call's own range
OP, RANGE, RUNTIME = "op", "range", "runtime"  # a node's kind

# The query cuBLAS (and cuDNN) make before launching a GEMM-class kernel: the series' marker of
# a GEMM under an op whose name does not say so.
OCCUPANCY_QUERY = "cudaOccupancyMaxActiveBlocksPerMultiprocessor"
# Ops that only make a transposed view; the copy that materialises one runs under a
# contiguous or a reshape (LAYOUT_COPY_PARENTS).
TRANSPOSE_OPS = frozenset({"aten::t", "aten::transpose", "aten::transpose_", "aten::permute",
                           "aten::mT", "aten::mH", "aten::swapaxes", "aten::swapdims",
                           "aten::numpy_T", "aten::adjoint", "aten::matrix_H"})
COPY_OPS = frozenset({"aten::copy_", "aten::clone", "aten::contiguous"})
LAYOUT_COPY_PARENTS = frozenset({"aten::contiguous", "aten::reshape", "aten::flatten"})

_IDS = ((re.compile(r"^(Torch-Compiled Region): \d+/\d+$"), r"\1"),
        (re.compile(r"^## (Call CompiledFxGraph) \w+ ##$"), r"## \1 ##"),
        (re.compile(r"^graph_\d+_(cpp_fused|cpp_kernel|triton_)"), r"\1"))


@functools.lru_cache(maxsize=1 << 16)  # once per distinct name: a trace repeats a few hundred
def plain_name(name: str) -> str:
    """`name` without the graph ids and hashes that differ between compilations."""
    for pattern, repl in _IDS:
        name = pattern.sub(repl, name)
    return name


def _kind(event: Event) -> str:
    if event.cat in RUNTIME_CATS:
        return RUNTIME
    return RANGE if event.cat == "user_annotation" else OP


def _inner_ranges(analysis: TraceAnalysis) -> Callable[[Event | None], list[Event]]:
    """call -> the record_function ranges strictly inside it (not the call's own range, not a
    step): a bisect over the trace's annotations, sorted by start."""
    annotations = analysis.trace.annotations
    starts = [a.ts for a in annotations]

    def inside(call: Event | None) -> list[Event]:
        if call is None:
            return []
        window = annotations[bisect.bisect_left(starts, call.ts):
                             bisect.bisect_right(starts, call.end)]
        return [a for a in window if a is not call and a.end <= call.end
                and not a.name.startswith(STEP_PREFIX)
                and not (a.ts == call.ts and a.dur == call.dur and a.name == call.name)]
    return inside


class _Tree:
    """The sums over the profiled calls, per path."""

    def __init__(self):
        # path -> [calls, self us, total us, kind, index], in the order the paths first ran (a
        # node's place among its siblings); one list per path: a node's end updates one entry.
        self.nodes: dict = {}
        # (parent's index, name) -> node: hashing a short key per event, not the whole path
        # (twice), was a third of the walk. The call itself is index -1.
        self.child: dict = {}
        self.paths: list[tuple] = []  # index -> path
        self.in_ops = 0.0  # time in the calls' outermost nodes

    def _node(self, parent: int, event: Event) -> list:
        """The node of `event`'s name under the node at index `parent`, made where new. Names
        that differ only by a graph id (plain_name) are one path, so one node."""
        path = (self.paths[parent] if parent >= 0 else ()) + (plain_name(event.name),)
        node = self.nodes.get(path)
        if node is None:
            node = self.nodes[path] = [0, 0.0, 0.0, _kind(event), len(self.paths)]
            self.paths.append(path)
        self.child[(parent, event.name)] = node
        return node

    def add_call(self, step: StepMetrics, ranges: list[Event]) -> None:
        """One call's nodes, nested by time on each thread, a range before an op of the same
        span. Runtime calls open frames too: a driver call (cuLaunchKernel) inside a runtime
        call is its child. nesting.nest's walk, written out here: with two callbacks per event,
        this was the largest part of a long trace's analysis."""
        child = self.child
        in_ops = 0.0
        for events in by_thread(ranges, step.op_events, step.runtime):
            # frames: [end, node, the children's time, duration]
            frames: list[list] = []
            for event in events:
                start, dur = event.ts, event.dur
                while frames and frames[-1][0] <= start:  # _close, written out
                    _, ended, children, ended_dur = frames.pop()
                    own = ended_dur - children
                    ended[0] += 1
                    ended[1] += own if own > 0.0 else 0.0
                    ended[2] += ended_dur
                if frames:
                    parent = frames[-1]
                    parent[2] += dur
                    index = parent[1][4]
                else:
                    in_ops += dur
                    index = -1
                node = child.get((index, event.name))
                if node is None:
                    node = self._node(index, event)
                frames.append([start + dur, node, 0.0, dur])
            while frames:
                _close(frames.pop())
        self.in_ops += in_ops


def _close(frame: list) -> None:
    """A node's event has ended: one call, its own time (children overlapping their parent:
    not below 0) and its total added to its path's sums."""
    _, node, children, dur = frame
    own = dur - children
    node[0] += 1
    node[1] += own if own > 0.0 else 0.0
    node[2] += dur


def op_tree(analysis: TraceAnalysis) -> list[dict]:
    """The tree of the analysis's calls, one row per path, in depth-first order (children in
    the order they first ran): path, depth, name, kind, calls_per_call, self_us, total_us.
    Row 0 is the call (CALL)."""
    steps = analysis.steps
    if not steps:
        return []
    inside = _inner_ranges(analysis)
    tree = _Tree()
    for step in steps:
        tree.add_call(step, inside(step.call))
    n = len(steps)
    span = sum(s.host_us for s in steps)
    rows = [{"path": CALL, "depth": 0, "name": CALL, "kind": "call", "calls_per_call": 1.0,
             "self_us": max(0.0, span - tree.in_ops) / n, "total_us": span / n}]
    for path in _depth_first(tree.nodes):
        calls, self_us, total_us, kind, _ = tree.nodes[path]
        rows.append({"path": SEP.join(path), "depth": len(path), "name": path[-1],
                     "kind": kind, "calls_per_call": calls / n,
                     "self_us": self_us / n, "total_us": total_us / n})
    return rows


def _depth_first(paths) -> list[tuple]:
    """The paths (in the order they first ran) depth first, siblings in that order."""
    children: dict = defaultdict(list)
    for path in paths:
        children[path[:-1]].append(path)
    out, todo = [], list(reversed(children[()]))
    while todo:
        path = todo.pop()
        out.append(path)
        todo.extend(reversed(children[path]))
    return out


# --- readings of a tree (its rows, from a profile or from optree.csv) ------------------------

def _nodes(rows) -> list[dict]:
    return [r for r in rows if r["depth"] and r["depth"] == r["depth"]]  # not the call, not NaN


def name_counts(rows) -> dict[tuple[str, str], float]:
    """(name, kind) -> calls per call, over every place in the tree it runs."""
    counts: dict = defaultdict(float)
    for row in _nodes(rows):
        counts[(row["name"], row["kind"])] += row["calls_per_call"]
    return dict(counts)


def call_us(rows) -> float:
    """The call's span (row 0's total), NaN where the tree has no row 0."""
    return next((r["total_us"] for r in rows if r["depth"] == 0), float("nan"))


def hotspots(rows, k: int = 15) -> list[dict]:
    """The series' `key_averages().table(sort_by="self_cpu_time_total", row_limit=15)` from the
    tree: the k names with the most self time per call, each with its total time, calls per
    call and both as shares of the call's span. The call's own row (time in no op) is one of
    them: Python between ops is a hotspot too. A name nested in itself counts its total twice,
    as key_averages does."""
    span = call_us(rows)
    by_name: dict = {}
    for row in rows:
        name = row["name"]
        entry = by_name.setdefault(name, {"name": name, "kind": row["kind"], "calls_per_call": 0.0,
                                          "self_us": 0.0, "total_us": 0.0})
        entry["calls_per_call"] += row["calls_per_call"]
        entry["self_us"] += row["self_us"]
        entry["total_us"] += row["total_us"]
    ranked = sorted(by_name.values(), key=lambda e: (-e["self_us"], -e["total_us"], e["name"]))
    for entry in ranked:
        entry["self_share"] = entry["self_us"] / span if span > 0 else float("nan")
        entry["total_share"] = entry["total_us"] / span if span > 0 else float("nan")
    return ranked[:k]


def occupancy_queries(rows) -> float:
    """cudaOccupancyMaxActiveBlocksPerMultiprocessor* calls per call (any suffix: WithFlags)."""
    return sum(r["calls_per_call"] for r in _nodes(rows)
               if r["kind"] == RUNTIME and r["name"].startswith(OCCUPANCY_QUERY))


def layout_counts(rows) -> dict[str, float]:
    """Per call: transposes (views), copies (copy_, clone, contiguous) and the copies that
    materialise a layout (an aten::copy_ under a contiguous or a reshape, which copies only when
    its input is not contiguous: a transposed tensor made dense)."""
    transposes = copies = layout = 0.0
    for row in _nodes(rows):
        n = row["calls_per_call"]
        if row["name"] in TRANSPOSE_OPS:
            transposes += n
        if row["name"] in COPY_OPS:
            copies += n
            parents = set(str(row["path"]).split(SEP)[:-1])
            if row["name"] == "aten::copy_" and parents & LAYOUT_COPY_PARENTS:
                layout += n
    return {"transposes": transposes, "copies": copies, "layout_copies": layout}


def children_us(rows, path: str) -> tuple[float, float]:
    """(calls per call, total us per call) of a node's direct children."""
    depth = str(path).count(SEP) + 2
    prefix = f"{path}{SEP}"
    kids = [r for r in _nodes(rows) if r["depth"] == depth and str(r["path"]).startswith(prefix)]
    return sum(r["calls_per_call"] for r in kids), sum(r["total_us"] for r in kids)


# --- what changed between two trees --------------------------------------------------------

# Groups of a diff, in the order a sentence states them: the ops that compute first (what
# replaced what), then views, wrappers and ranges, then runtime calls.
COMPUTE, METADATA, WRAPPERS, RUNTIME_CALLS = ("compute", "views and metadata",
                                              "wrappers and ranges", "runtime calls")
GROUPS = (COMPUTE, METADATA, WRAPPERS, RUNTIME_CALLS)
# Calls per call are means over the profiled calls: a change under half a call is one call
# in some steps and not in others (a cold first call), not a change of the tree.
MIN_CHANGE = 0.5
LIST_UP_TO = 3  # names per list in a sentence; the rest are counted


def group_of(name: str, kind: str) -> str:
    if kind == RUNTIME:
        return RUNTIME_CALLS
    if name in METADATA_OPS:
        return METADATA
    if is_compute_op_name(name) or is_inductor_cpu_kernel(name):
        return COMPUTE
    return WRAPPERS


def tree_diff(base_rows, rows) -> dict[str, dict[str, list]]:
    """group -> {"removed": [(name, n)], "added": [(name, n)], "changed": [(name, was, now)]}
    of the calls per call by name, in the order the trees first run them; groups with no
    change left out."""
    before, after = name_counts(base_rows), name_counts(rows)
    out: dict = {}
    for key in dict.fromkeys([*before, *after]):
        was, now = before.get(key, 0.0), after.get(key, 0.0)
        if abs(now - was) < MIN_CHANGE:
            continue
        parts = out.setdefault(group_of(*key), {"removed": [], "added": [], "changed": []})
        if now < MIN_CHANGE:
            parts["removed"].append((key[0], was))
        elif was < MIN_CHANGE:
            parts["added"].append((key[0], now))
        else:
            parts["changed"].append((key[0], was, now))
    return {g: out[g] for g in GROUPS if g in out}


def _count(n: float) -> str:
    return f"{round(n, 1):g}"


def _names(items, joiner: str = ", ") -> str:
    shown = [name + (f" x{_count(n)}" if abs(n - 1) >= 0.05 else "") for name, n in items]
    more = len(shown) - LIST_UP_TO
    return joiner.join(shown[:LIST_UP_TO]) + (f" and {more} more" if more > 0 else "")


def diff_clauses(diff: dict) -> list[tuple[str, str]]:
    """(group, what changed in it) per group of a diff, in GROUPS order: `aten::addmm replaced
    aten::mm + aten::add` (compute), `removed aten::t` (views and metadata)."""
    clauses = []
    for group, parts in diff.items():
        said = []
        removed, added = parts["removed"], parts["added"]
        if group == COMPUTE and removed and added:
            said.append(f"{_names(added, ' + ')} replaced {_names(removed, ' + ')}")
        else:
            said += [f"removed {_names(removed)}"] * bool(removed)
            said += [f"added {_names(added)}"] * bool(added)
        said += [f"{name} {_count(was)} -> {_count(now)} per call"
                 for name, was, now in parts["changed"][:LIST_UP_TO]]
        if len(parts["changed"]) > LIST_UP_TO:
            said.append(f"{len(parts['changed']) - LIST_UP_TO} more changed in count")
        clauses.append((group, "; ".join(said)))
    return clauses


def diff_sentence(diff: dict) -> str:
    """`aten::addmm replaced aten::mm + aten::add; views and metadata: removed aten::t`; '' when
    the trees run the same ops the same number of times."""
    return "; ".join(text if group == COMPUTE else f"{group}: {text}"
                     for group, text in diff_clauses(diff))


def diff_size(diff: dict) -> dict[str, int]:
    """How many names were added, removed and changed in count, over every group."""
    return {what: sum(len(parts[what]) for parts in diff.values())
            for what in ("added", "removed", "changed")}
