"""torch.compile's partition of a training graph (suites/harness/compile_partition.py): what the
compiled forward saves for backward and which forward ops the compiled backward recomputes.

Each reading is held against what the real Inductor compile did, read independently: the
partitioner's own debug log of that compile (AOT_PARTITIONER_DEBUG: "Count of Ops
Rematerialized", "Theoretical Per Activation Storage Sizes") and saved_tensors_hooks around the
real compiled call (suites/harness/training.py saved_bytes). A compile costs seconds on a CPU:
each is made once per module (module-scoped fixtures)."""
import ast
import logging
import math
from collections import Counter

import pandas as pd
import pytest
import torch
import torch.nn.functional as F

from kernels import registry
from kernels.base import Case
from suites.harness import compile_partition
from suites.harness.training import saved_bytes
from suites.results.columns import Status

PARTITIONER_LOG = "torch._functorch.partitioners"


class _Lines(logging.Handler):
    def __init__(self):
        super().__init__(logging.INFO)
        self.lines: list[str] = []

    def emit(self, record):
        self.lines.append(record.getMessage())


class PartitionerLog:
    """The partitioner's debug log of the compiles made inside it: what it rematerialised and
    which values it saved, as torch itself reports them."""

    def __init__(self):
        self.handler = _Lines()

    def __enter__(self):
        import torch._functorch.partitioners as partitioners

        self._partitioners, self._debug = partitioners, partitioners.AOT_PARTITIONER_DEBUG
        partitioners.AOT_PARTITIONER_DEBUG = True
        logger = logging.getLogger(PARTITIONER_LOG)
        self._level, self._propagate = logger.level, logger.propagate
        logger.setLevel(logging.INFO)
        logger.propagate = False
        logger.addHandler(self.handler)
        # A cache hit would skip the partitioner, and with it the log.
        self._cache = torch._functorch.config.patch(enable_autograd_cache=False)
        self._cache.__enter__()
        return self

    def __exit__(self, *exc):
        self._cache.__exit__(*exc)
        logger = logging.getLogger(PARTITIONER_LOG)
        logger.removeHandler(self.handler)
        logger.setLevel(self._level)
        logger.propagate = self._propagate
        self._partitioners.AOT_PARTITIONER_DEBUG = self._debug

    def _first(self, prefix: str):
        """The first compile's line (the first call's: a later one is a recompile)."""
        found = [line for line in self.handler.lines if line.startswith(prefix)]
        assert found, f"the partitioner logged no {prefix!r}: {self.handler.lines}"
        return ast.literal_eval(found[0][len(prefix):].strip())

    @property
    def rematerialized(self) -> Counter:
        return Counter(dict(self._first("Count of Ops Rematerialized:")))

    @property
    def saved(self) -> list[tuple[int, str]]:
        return self._first("Theoretical Per Activation Storage Sizes:")


def _unlogged(read):
    """compile_partition's own reading with the partitioner's debug log off, so that what the
    log holds is the real compile's alone."""
    import torch._functorch.partitioners as partitioners

    def quiet(*args, **kwargs):
        debug, partitioners.AOT_PARTITIONER_DEBUG = partitioners.AOT_PARTITIONER_DEBUG, False
        try:
            return read(*args, **kwargs)
        finally:
            partitioners.AOT_PARTITIONER_DEBUG = debug

    return quiet


def geglu(x, w_gate, w_up):
    """GeGLU's gate: gelu_tanh(x Wg^T) * (x Wu^T)."""
    return F.gelu(x @ w_gate.T, approximate="tanh") * (x @ w_up.T)


def _leaf(*shape, seed):
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=gen).requires_grad_(True)


@pytest.fixture(scope="module")
def geglu_compiled():
    """The real compile of geglu (forward and backward), its partitioner's log, what hooks see
    it save, and the reading; dynamo fresh before, as the harness has it per case."""
    torch._dynamo.reset()
    x, wg, wu = _leaf(24, 16, seed=1), _leaf(40, 16, seed=2), _leaf(40, 16, seed=3)
    compiled = torch.compile(geglu, dynamic=False)
    with PartitionerLog() as log, torch.enable_grad():
        compiled(x, wg, wu).sum().backward()
    inputs = {"x": x, "w_gate": wg, "w_up": wu}
    with torch.enable_grad():
        hooks = saved_bytes(lambda: compiled(x, wg, wu), inputs)
        before = torch._dynamo.utils.counters["stats"]["unique_graphs"]
        found = compile_partition.read_partition(geglu, x, wg, wu)
        after = torch._dynamo.utils.counters["stats"]["unique_graphs"]
        entries = len(torch._dynamo.eval_frame._debug_get_cache_entry_list(geglu.__code__))
        graphs_before = torch._dynamo.utils.counters["stats"]["unique_graphs"]
        compiled(x, wg, wu).sum().backward()  # the real compiled code, as it was
        again = torch._dynamo.utils.counters["stats"]["unique_graphs"] - graphs_before
    yield dict(log=log, hooks=hooks, found=found, graphs_added=after - before,
               entries=entries, recompiled=again)
    torch._dynamo.reset()


def test_the_recomputed_ops_are_those_the_real_compile_rematerialised(geglu_compiled):
    found, log = geglu_compiled["found"], geglu_compiled["log"]
    assert Counter(found.recomputed) == log.rematerialized
    # gelu_tanh's pointwise ops are recomputed from the saved GEMM outputs, never a GEMM.
    assert "aten.tanh" in found.recomputed and "aten.mm" not in found.recomputed
    assert found.recomputed_ops == sum(log.rematerialized.values())
    assert found.recomputed_text.startswith("aten.mul x")
    assert found.graphs == 1 and found.bwd_ops > found.recomputed_ops


def test_what_it_saves_is_what_hooks_see_the_real_compiled_call_save(geglu_compiled):
    found, log = geglu_compiled["found"], geglu_compiled["log"]
    hooks_mb, hooks_n = geglu_compiled["hooks"]
    assert (found.saved, found.saved_mb) == (hooks_n, pytest.approx(hooks_mb))
    # The two (T, I) GEMM outputs; the inputs (and the weights' transposed views) aside.
    assert found.saved == 2 and found.saved_mb == pytest.approx(2 * 24 * 40 * 4 / 2 ** 20)
    assert found.saved + found.saved_inputs == len(log.saved)
    made = {name for _, name in log.saved if not name.startswith(("primals", "permute"))}
    assert sum(size for size, name in log.saved if name in made) == 2 * 24 * 40 * 4


def test_the_second_compile_leaves_the_real_one_alone(geglu_compiled):
    assert geglu_compiled["graphs_added"] == 1  # its own graph, on a frame of its own
    assert geglu_compiled["entries"] == 1  # the function's cache holds the real compile only
    assert geglu_compiled["recompiled"] == 0


def test_no_gradient_no_partition():
    x = torch.randn(4, 8)
    with pytest.raises(RuntimeError, match="no backward graph"):
        compile_partition.read_partition(torch.tanh, x)


def test_recomputed_text_counts_each_op_most_frequent_first():
    ops = ("aten.tanh", "aten.mul", "aten.add", "aten.mul", "aten.tanh", "aten.mul")
    assert compile_partition.recomputed_text(ops) == "aten.mul x3, aten.tanh x2, aten.add"
    assert compile_partition.recomputed_text(()) == ""


NORM = Case.make("norm", {"T": 48, "D": 80, "norm": "layer"}, "float32", "cpu",
                 mode="fwd_bwd")
MLP = Case.make("mlp", {"T": 24, "D": 16, "I": 40}, "float32", "cpu", mode="fwd_bwd")


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    """The norm and mlp suites' compile rows at a tiny shape in fwd_bwd, through the harness
    (first call, check, activation memory, the partition, timing), the real compile's
    partitioner log beside each."""
    from suites.harness.case_run import measure
    from specs import run_spec

    out = {}
    read = compile_partition.read_partition
    compile_partition.read_partition = _unlogged(read)
    try:
        for case in (NORM, MLP):
            torch._dynamo.reset()
            spec = run_spec(tmp_path_factory.mktemp(case.op), case)
            with PartitionerLog() as log:
                result = measure(registry.get_op(case.op),
                                 registry.get_variant(case.op, "compile"), case, spec, None)
            out[case.op] = (result.row, log)
    finally:
        compile_partition.read_partition = read
    yield out
    torch._dynamo.reset()


@pytest.mark.parametrize("op", ["norm", "mlp"])
def test_a_compile_row_in_a_training_mode_says_its_partition(measured, op):
    row, log = measured[op]
    assert row.status in (Status.OK, Status.NOISY), row.reason
    assert "partition" not in row.reason
    assert row.recomputed_ops == sum(log.rematerialized.values())
    assert Counter(dict(_counts(row.recomputed))) == log.rematerialized
    assert row.partition_saved == row.saved_tensors  # hooks on the real compiled call
    assert row.partition_saved_mb == pytest.approx(row.activation_mb)
    assert row.bwd_graphs == 1 == row.compile_graphs and row.bwd_graph_ops > 0


def test_the_layer_norm_saves_its_statistics_and_recomputes_the_centring(measured):
    row, log = measured["norm"]
    # The per-row mean and rstd, (T, 1) each; x - mean is recomputed, not saved.
    assert row.partition_saved == 2
    assert row.partition_saved_mb == pytest.approx(2 * 48 * 4 / 2 ** 20)
    assert {name for _, name in log.saved if not name.startswith("primals")} == {"mean", "rsqrt"}
    assert "aten.sub" in row.recomputed


def test_the_mlp_recomputes_gelu_and_saves_the_gemm_outputs(measured):
    row, _ = measured["mlp"]
    # gate, up and gelu(gate) * up, (T, I) each: what the three GEMMs' backward reads.
    assert row.partition_saved == 3 and row.partition_saved_mb == pytest.approx(
        3 * 24 * 40 * 4 / 2 ** 20)
    assert "aten.tanh" in row.recomputed and "aten.mm" not in row.recomputed


def _counts(text: str):
    for part in text.split(", "):
        op, _, n = part.partition(" x")
        yield op, int(n or 1)


def test_a_partition_not_read_leaves_the_row_standing():
    from suites.harness.derived import new_row
    from suites.harness.variant_passes import read_partition

    op, variant = registry.get_op("norm"), registry.get_variant("norm", "eager")
    row = new_row("norm", NORM, variant, op, 1)
    row.reason = "activation memory not measured: X"
    read_partition(row, lambda: None)  # not a compile call: its function is unknown
    assert row.reason.startswith("activation memory not measured: X; compile partition not "
                                 "read: ValueError: not a call made by")
    assert math.isnan(row.recomputed_ops) and row.recomputed is None
    assert math.isnan(row.partition_saved) and math.isnan(row.bwd_graph_ops)


def _row(case_id, variant, **values):
    return {"case_id": case_id, "variant": variant, "status": "ok", "mean_us": 10.0, **values}


PARTITIONED = dict(partition_saved=3, partition_saved_mb=0.0703125, recomputed_ops=12,
                   recomputed="aten.mul x6, aten.permute x3, aten.add x2, aten.tanh",
                   bwd_graphs=1, bwd_graph_ops=37, saved_tensors=3, activation_mb=0.0703125)


def test_the_finding_says_what_compile_saves_and_recomputes_once_per_case():
    from suites.reports.run.answer import training_lines
    from suites.traces.findings.measured import row_findings

    rows = [_row("T24-fp32-fwd", "eager", saved_tensors=5, activation_mb=0.1),
            _row("T24-fp32-fwd_bwd", "eager"),
            _row("T24-fp32-fwd", "compile", **PARTITIONED),
            _row("T24-fp32-fwd_bwd", "compile", **PARTITIONED),
            _row("T48-fp32-bwd", "compile", **{**PARTITIONED, "recomputed_ops": 0,
                                               "recomputed": None, "saved_tensors": 4})]
    found = [f for f in row_findings(rows, "mlp", "eager") if f["code"] == "compile_partition"]
    assert [(f["case_id"], f["variant"]) for f in found] == [("T24-fp32-fwd_bwd", "compile"),
                                                           ("T48-fp32-bwd", "compile")]
    assert found[0]["statement"] == (
        "saves 3 tensor(s) for backward (0.0703 MiB) and recomputes 12 forward op(s) in "
        "backward instead of saving them (aten.mul x6, aten.permute x3, aten.add x2, "
        "aten.tanh); its backward: 1 graph(s), 37 aten ops before fusion")
    assert found[1]["statement"].startswith(
        "saves 3 tensor(s) for backward (0.0703 MiB) (saved_tensors_hooks counted 4 on the "
        "real call, the graph's other inputs included) and recomputes no forward op in "
        "backward;")
    frame = pd.DataFrame(rows).assign(mode=[r["case_id"].split("-")[-1] for r in rows])
    lines = training_lines(frame, pd.DataFrame(row_findings(rows, "mlp", "eager")), "eager", str)
    said = [line for line in lines if "recomputes" in line]
    assert said == [f"training, compile: {found[0]['statement']} (T24-fp32-fwd_bwd; 2 cases "
                    "in all)"]


def test_an_inference_row_has_no_partition_finding():
    from suites.traces.findings.measured import row_findings

    rows = [_row("T24-fp32", "eager"), _row("T24-fp32", "compile", **PARTITIONED)]
    assert not [f for f in row_findings(rows, "mlp", "eager") if f["code"] == "compile_partition"]


def test_a_run_of_version_4_reads_with_the_partition_columns_empty():
    from suites.results.upgrade import upgrade

    frame = pd.DataFrame([{"suite": "mlp", "case_id": "T24-fp32-fwd_bwd", "variant": "compile",
                           "status": "ok", "mode": "fwd_bwd", "saved_tensors": 3}])
    up = upgrade("measurements.csv", frame, 4)
    new = ["partition_saved", "partition_saved_mb", "recomputed_ops", "recomputed",
           "bwd_graphs", "bwd_graph_ops"]
    assert up[new].isna().all().all() and up["saved_tensors"].tolist() == [3]
