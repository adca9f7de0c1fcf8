"""The op tree of a call (suites/traces/op_tree.py) on built events and the real A100
traces: nesting, per-call averaging, the diff in words, occupancy queries, transposes, and
the two findings it feeds (op_tree_diff, fat_leaf_op)."""
import pytest

from suites.traces.findings import FindingContext, run_detectors
from suites.traces.findings.tree import FAT_SHARE
from suites.traces import op_tree as ot
from suites.traces.call_profile import CallProfile
from suites.traces.steps import analyze
from suites.traces.events import read_trace
from trace_builders import ALEXNET_TRACE, event, write

REAL = ALEXNET_TRACE.parents[1] / "real_traces"


def profile_of(events, tmp_path, label="call", name="t.json", **kwargs):
    path = write({"traceEvents": events}, tmp_path / name)
    return CallProfile(analyze(read_trace(path), label=label, **kwargs))


def step(i, t0, ops, host=100.0, label="call"):
    """One ProfilerStep holding the call's range; ops: (name, start in the call, duration,
    category)."""
    return ([event(f"ProfilerStep#{i}", "user_annotation", t0, host + 10),
             event(label, "user_annotation", t0 + 1, host)]
            + [event(name, cat, t0 + 1 + at, dur) for name, at, dur, cat in ops])


def op(name, at, dur, cat="cpu_op"):
    return (name, at, dur, cat)


def by_path(rows):
    return {r["path"]: r for r in rows}


LINEAR = [op("aten::linear", 2, 50), op("aten::t", 4, 6), op("aten::transpose", 5, 4),
          op("aten::addmm", 12, 38), op("aten::copy_", 14, 4)]


def test_ops_nest_by_time_and_count_per_call(tmp_path):
    # The second call runs aten::linear twice: 1.5 per call, one row, its subtree merged.
    second = [op("aten::linear", 2, 30), op("aten::t", 3, 4), op("aten::addmm", 8, 20),
              op("aten::linear", 40, 30), op("aten::t", 41, 4), op("aten::addmm", 46, 20)]
    rows = profile_of(step(0, 0, LINEAR) + step(1, 1000, second), tmp_path).op_tree()
    tree = by_path(rows)
    assert [r["path"] for r in rows] == [
        ot.CALL, "aten::linear", "aten::linear > aten::t", "aten::linear > aten::t > "
        "aten::transpose", "aten::linear > aten::addmm", "aten::linear > aten::addmm > "
        "aten::copy_"]
    assert [r["depth"] for r in rows] == [0, 1, 2, 3, 2, 3]
    linear = tree["aten::linear"]
    assert linear["calls_per_call"] == 1.5 and linear["total_us"] == pytest.approx((50 + 60) / 2)
    # Self time: its span less its direct children's, per call.
    assert linear["self_us"] == pytest.approx(((50 - 6 - 38) + (30 - 4 - 20) * 2) / 2)
    assert tree["aten::linear > aten::t > aten::transpose"]["calls_per_call"] == 0.5
    call = tree[ot.CALL]
    assert call["total_us"] == 100 and call["self_us"] == pytest.approx((50 + 40) / 2)


def test_ranges_inside_the_call_are_nodes_and_runtime_calls_leaves(tmp_path):
    ops = [op("Torch-Compiled Region: 3/0", 2, 80),
           op("## Call CompiledFxGraph fab12cd ##", 5, 70, "user_annotation"),
           op("aten::addmm", 10, 50), op("cudaOccupancyMaxActiveBlocksPerMultiprocessor", 12, 2,
                                         "cuda_runtime"),
           op("cudaLaunchKernel", 20, 5, "cuda_runtime")]
    rows = profile_of(step(0, 0, ops), tmp_path).op_tree()
    tree = by_path(rows)
    addmm = "Torch-Compiled Region > ## Call CompiledFxGraph ## > aten::addmm"
    assert tree["Torch-Compiled Region > ## Call CompiledFxGraph ##"]["kind"] == ot.RANGE
    assert tree[f"{addmm} > cudaLaunchKernel"]["kind"] == ot.RUNTIME
    # The launch is the runtime's time, not the op's (as key_averages counts self time).
    assert tree[addmm]["self_us"] == pytest.approx(50 - 2 - 5)
    assert ot.occupancy_queries(rows) == 1
    assert "ProfilerStep#0" not in {r["name"] for r in rows} and "call" not in tree


def test_graph_ids_and_hashes_are_taken_out_of_names():
    assert ot.plain_name("Torch-Compiled Region: 12/1") == "Torch-Compiled Region"
    assert ot.plain_name("## Call CompiledFxGraph fl52zlm3jpat ##") == "## Call CompiledFxGraph ##"
    assert ot.plain_name("graph_18_cpp_fused__softmax_0") == "cpp_fused__softmax_0"
    assert ot.plain_name("aten::mm") == "aten::mm"


def rows_of(*paths):
    """Tree rows from (path, calls per call); the call's row first."""
    rows = [{"path": ot.CALL, "depth": 0, "name": ot.CALL, "kind": "call",
             "calls_per_call": 1.0, "self_us": 1.0, "total_us": 10.0}]
    for path, calls in paths:
        names = path.split(ot.SEP)
        kind = ot.RUNTIME if names[-1].startswith("cuda") else ot.OP
        rows.append({"path": path, "depth": len(names), "name": names[-1], "kind": kind,
                     "calls_per_call": calls, "self_us": 1.0, "total_us": 1.0})
    return rows


EAGER = rows_of(("aten::matmul", 1), ("aten::matmul > aten::mm", 1), ("aten::add", 1))
EAGER_LINEAR = rows_of(("aten::linear", 1), ("aten::linear > aten::t", 1),
                       ("aten::linear > aten::t > aten::transpose", 1),
                       ("aten::linear > aten::addmm", 1))


def sentence(base, rows):
    return ot.diff_sentence(ot.tree_diff(base, rows))


def test_the_diff_in_plain_words():
    addmm = rows_of(("aten::addmm", 1))
    assert sentence(EAGER, addmm) == ("aten::addmm replaced aten::mm + aten::add; wrappers and "
                                      "ranges: removed aten::matmul")
    compiled = rows_of(("Torch-Compiled Region", 1), ("Torch-Compiled Region > aten::addmm", 1))
    said = sentence(EAGER_LINEAR, compiled)
    assert said == ("views and metadata: removed aten::t, aten::transpose; wrappers and ranges: "
                    "removed aten::linear; added Torch-Compiled Region")
    # A 3-D input (B, M, K) @ (K, N): the posts' experiment, aten::bmm and its extra calls.
    batched = rows_of(("aten::matmul", 1), ("aten::matmul > aten::expand", 2),
                      ("aten::matmul > aten::bmm", 1), ("aten::matmul > aten::bmm > "
                                                         "cudaLaunchKernel", 1),
                      ("aten::add", 1))
    eager = rows_of(("aten::matmul", 1), ("aten::matmul > aten::mm", 1),
                    ("aten::matmul > aten::mm > cudaLaunchKernel", 2), ("aten::add", 1))
    assert sentence(eager, batched) == ("aten::bmm replaced aten::mm; views and metadata: added "
                                        "aten::expand x2; runtime calls: cudaLaunchKernel 2 -> "
                                        "1 per call")
    assert sentence(EAGER, EAGER) == "" and ot.tree_diff(EAGER, EAGER) == {}


def test_a_change_under_half_a_call_is_not_one():
    # One extra aten::empty in one of three profiled calls: a cold call, not the tree.
    assert sentence(EAGER, EAGER + rows_of(("aten::empty", 1 / 3))[1:]) == ""
    many = rows_of(*[(f"aten::op{i}", 1) for i in range(6)])
    assert sentence(rows_of(), many) == ("added aten::op0, aten::op1, aten::op2 and 3 more")


def test_transposes_and_the_copies_that_make_them_dense():
    rows = rows_of(("aten::transpose", 2), ("aten::reshape", 1), ("aten::reshape > aten::clone", 1),
                   ("aten::reshape > aten::clone > aten::copy_", 1), ("aten::masked_fill", 1),
                   ("aten::masked_fill > aten::clone", 1),
                   ("aten::masked_fill > aten::clone > aten::copy_", 1))
    assert ot.layout_counts(rows) == {"transposes": 2, "copies": 4, "layout_copies": 1}


def test_op_tree_diff_finding_against_the_baseline(tmp_path):
    base = profile_of(step(0, 0, [op("aten::matmul", 2, 52), op("aten::mm", 3, 50),
                                  op("aten::add", 60, 10)]), tmp_path, name="a.json")
    fused = profile_of(step(0, 0, [op("aten::addmm", 2, 55)]), tmp_path, name="b.json")
    rows = {"baseline_row": {"variant": "eager"}, "row": {"variant": "addmm"}}
    found = {f.code: f for f in run_detectors(FindingContext(profile=fused,
                                                             baseline_profile=base, **rows))}
    diff = found["op_tree_diff"]
    assert diff.statement == ("op tree against the baseline: aten::addmm replaced aten::mm + "
                              "aten::add; wrappers and ranges: removed aten::matmul")
    assert diff.evidence["ops_per_call"] == 1 and diff.evidence["baseline_ops_per_call"] == 3
    alone = {f.code for f in run_detectors(FindingContext(profile=fused))}
    assert "op_tree_diff" not in alone


def cudnn_step(i, t0, own=400.0, host=500.0, children=()):
    """A GPU call whose SDPA op spends `own` us in itself (cuDNN's plan selection)."""
    name = "aten::_scaled_dot_product_cudnn_attention"
    events = step(i, t0, [op("aten::scaled_dot_product_attention", 2, own + 40),
                          op(name, 4, own + 30), op("aten::empty", 6, 3),
                          op("cudaLaunchKernel", own + 20, 8, "cuda_runtime"), *children],
                  host=host)
    events[-1 - len(children)]["args"]["correlation"] = 7 + i
    events.append(event("cudnn_flash_fwd", "kernel", t0 + own + 40, 90, tid=7,
                        correlation=7 + i))
    return events


def test_fat_leaf_on_built_gpu_events(tmp_path):
    events = cudnn_step(0, 0) + cudnn_step(1, 1000)
    found = {f.code: f for f in run_detectors(FindingContext(
        profile=profile_of(events, tmp_path)))}
    fat = found["fat_leaf_op"]
    assert fat.evidence["op"] == "aten::_scaled_dot_product_cudnn_attention"
    assert fat.evidence["share"] == pytest.approx(419 / 500) and fat.evidence["share"] > FAT_SHARE
    assert fat.evidence["children_per_call"] == 2 and fat.evidence["children_us"] == 11
    assert "84% of the call's 500.0 us" in fat.statement
    # A short call, and an op whose time is in its children, are not fat leaves.
    small = profile_of(cudnn_step(0, 0, own=10, host=60), tmp_path, name="s.json")
    assert "fat_leaf_op" not in {f.code for f in run_detectors(FindingContext(profile=small))}
    busy_kids = [op("cudaStreamSynchronize", 40, 300, "cuda_runtime")]  # it waits, in a child
    wide = profile_of(cudnn_step(0, 0, children=busy_kids), tmp_path, name="w.json")
    assert "fat_leaf_op" not in {f.code for f in run_detectors(FindingContext(profile=wide))}


def test_no_fat_leaf_on_a_cpu_where_self_time_is_the_computation(tmp_path):
    cpu = profile_of(step(0, 0, [op("aten::mm", 2, 95)]), tmp_path)
    assert "fat_leaf_op" not in {f.code for f in run_detectors(FindingContext(profile=cpu))}


@pytest.mark.parametrize("path, pattern", [(ALEXNET_TRACE, r"measure\|forward"),
                                           (REAL / "h100_bert_small.json.gz", None)])
def test_no_fat_leaf_in_the_real_gpu_traces(path, pattern):
    """None of the shared traces runs cuDNN attention: their library calls launch and return
    (checked over every fixture when this was written; these two stand for them)."""
    profile = CallProfile(analyze(read_trace(path), step_pattern=pattern))
    assert "fat_leaf_op" not in {f.code for f in run_detectors(FindingContext(profile=profile))}


def test_occupancy_queries_per_call_in_the_alexnet_trace():
    """cuBLAS and cuDNN query occupancy before their GEMM-class launches: 5 under the three
    linears' aten::addmm, 4 under the convolutions, in the measured forward."""
    rows = CallProfile(analyze(read_trace(ALEXNET_TRACE),
                               step_pattern=r"measure\|forward")).op_tree()
    assert ot.occupancy_queries(rows) == 9
    queries = [r for r in rows if r["name"].startswith(ot.OCCUPANCY_QUERY)]
    under: dict = {}
    for r in queries:
        parent = r["path"].split(ot.SEP)[-2]
        under[parent] = under.get(parent, 0) + r["calls_per_call"]
    assert under == {"aten::addmm": 5, "aten::cudnn_convolution": 4}
