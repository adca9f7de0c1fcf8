"""Peak memory per call (the intermediates fusion never writes) and the graphs torch.compile
builds per shape."""
import math

import torch
from torch.profiler import ProfilerActivity, profile, record_function

from kernels import registry
from kernels.base import Case
from suites.traces.findings.core import FindingContext
from suites.traces.findings.fusion import memory_saved
from suites.harness.case_run import measure
from suites.harness.derived import new_row
from suites.traces.memory import call_peaks, peak_mb
from specs import PROFILE, run_spec


def test_a_calls_peak_is_its_intermediates_and_output_not_its_inputs(tmp_path):
    x, w, b = torch.randn(256, 256), torch.randn(256, 256), torch.randn(256)  # before the calls
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        for _ in range(2):
            with record_function("eager"):
                torch.add(torch.matmul(x, w), b)  # the mm's result, then the add's: 2 x 256 KiB
    prof.export_chrome_trace(str(tmp_path / "t.json"))
    assert call_peaks(tmp_path / "t.json", "eager", "cpu") == [2 * 256 * 1024] * 2
    assert peak_mb(tmp_path / "t.json", "eager", "cpu") == 0.5
    assert all(math.isnan(p) for p in call_peaks(tmp_path / "t.json", "eager", "cuda"))
    assert math.isnan(peak_mb(tmp_path / "t.json", "other", "cpu"))


def test_the_eager_mlp_holds_more_than_its_compiled_form_and_compile_builds_one_graph(tmp_path):
    case = Case.make("mlp", {"T": 64, "D": 128, "I": 512}, "float32", "cpu")
    rows = {}
    for variant in ("eager", "compile"):
        spec = run_spec(tmp_path / variant, case, [variant], profile=PROFILE)
        rows[variant] = measure(registry.get_op("mlp"), registry.get_variant("mlp", variant),
                                case, spec).row
    # eager holds g, u, gelu(g) and their product at once: 4 (T, I) fp32 tensors of 128 KiB
    assert rows["eager"].peak_mem_mb >= 0.5
    assert 0 < rows["compile"].peak_mem_mb < rows["eager"].peak_mem_mb
    assert rows["compile"].compile_graphs == 1 and math.isnan(rows["eager"].compile_graphs)


def _row(variant, peak):
    op = registry.get_op("mlp")
    case = Case.make("mlp", {"T": 64, "D": 128, "I": 512}, "float32", "cpu")
    row = new_row("mlp", case, registry.get_variant("mlp", variant), op, 1)
    row.peak_mem_mb = peak
    return row.record()  # the findings read a row's column values


def test_a_fused_variant_saving_a_quarter_of_the_peak_is_a_finding():
    base = _row("eager", 0.5)
    [found] = memory_saved(FindingContext(None, _row("compile", 0.25), base))
    assert found.code == "memory_saved" and found.evidence["baseline_peak_mem_mb"] == 0.5
    assert found.statement.startswith("peak memory 0.25 MiB against the baseline's 0.5 MiB "
                                      "(50% less)")
    assert "byte model" in found.statement and found.evidence["model_extra_mb"] > 0
    assert list(memory_saved(FindingContext(None, _row("compile", 0.4), base))) == []
