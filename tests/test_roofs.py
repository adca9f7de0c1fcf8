"""The right roof for a row: the bandwidth of the memory level its own bytes fit in (a CPU's
caches, probed), and overhead where the exposed overhead is most of the call."""
import math

import pytest

from kernels import registry
from kernels.base import Case
from suites.common.roofline import bandwidth_for
from suites.harness import calibration
from suites.harness.derived import derive, new_row
from suites.results.row import TimingStats

PEAKS = {"matmul_tflops": {"float32": 0.1}, "copy_gbps": 10.0,
         "cache_copy_gbps": [[256 * 1024, 50.0], [16 * 2**20, 25.0]]}


def test_cache_sizes_from_a_fake_sysfs(tmp_path):
    for i, (level, kind, size) in enumerate([(1, "Data", "32K"), (1, "Instruction", "32K"),
                                             (2, "Unified", "512K"), (3, "Unified", "32768K")]):
        folder = tmp_path / f"index{i}"
        folder.mkdir()
        (folder / "level").write_text(f"{level}\n")
        (folder / "type").write_text(f"{kind}\n")
        (folder / "size").write_text(f"{size}\n")
    assert calibration.cache_sizes(tmp_path) == {"L1": 32768, "L2": 524288, "L3": 33554432}
    assert calibration.cache_sizes(tmp_path / "none") == {}


def test_the_roof_is_the_level_the_bytes_fit_in():
    assert bandwidth_for(PEAKS, 100_000) == 50.0        # L2
    assert bandwidth_for(PEAKS, 2**20) == 25.0          # L3
    assert bandwidth_for(PEAKS, 2**30) == 10.0          # DRAM
    assert bandwidth_for({"copy_gbps": 10.0}, 100) == 10.0  # a GPU: DRAM's only
    # A cache probe that read under DRAM's (a busy machine) never lowers the roof.
    assert bandwidth_for({**PEAKS, "cache_copy_gbps": [[2**20, 3.0]]}, 100) == 10.0


def _row(suite, params, variant, mean_us, device_us=math.nan, host_us=math.nan):
    op = registry.get_op(suite)
    case = Case.make(suite, params, "float32", "cpu")
    row = new_row(suite, case, registry.get_variant(suite, variant), op, 1)
    row.timing = TimingStats(10, mean_us, mean_us, mean_us, mean_us, 0.0, mean_us, mean_us,
                             mean_us)
    if device_us == device_us:
        from suites.results.row import ProfileStats
        row.profile = ProfileStats(host_us, device_us, 0.0, 1.0, math.nan, math.nan, 2.0, None,
                                   "", "")
    return row


def test_a_working_set_in_cache_is_judged_against_the_cache_not_dram():
    # A norm of 64 x 256 fp32: ~130 kB moved, resident in L2 here.
    row = _row("norm", {"T": 64, "D": 256, "norm": "layer"}, "functional", mean_us=5.0)
    derive(row, PEAKS)
    at_dram = dict(PEAKS, cache_copy_gbps=[])
    dram_row = _row("norm", {"T": 64, "D": 256, "norm": "layer"}, "functional", mean_us=5.0)
    derive(dram_row, at_dram)
    assert row.roofline.pct_peak == pytest.approx(dram_row.roofline.pct_peak / 5)


def test_a_call_that_is_mostly_exposed_overhead_is_overhead_bound():
    # 64^3 fp32 matmul, 16 us a call, of which the compute is 2 us of a 10 us profiled span.
    tiny = _row("matmul_add", {"M": 64, "N": 64, "K": 64}, "eager", 16.0, device_us=2.0,
                host_us=10.0)
    derive(tiny, PEAKS)
    assert tiny.roofline.roofline_bound == "overhead"
    big = _row("matmul_add", {"M": 1024, "N": 1024, "K": 1024}, "eager", 30_000.0,
               device_us=29_000.0, host_us=29_500.0)
    derive(big, PEAKS)
    assert big.roofline.roofline_bound == "compute"


def test_a_half_types_peak_is_at_least_float32s(monkeypatch):
    """A CPU without bf16 instructions computes bf16 kernels in fp32: the bf16 GEMM probe read
    1.2-9 GFLOP/s while bf16 flash attention ran at 37, so the bf16 roof is fp32's at least."""
    from suites.harness import calibration

    probed = []

    def probe(device, dtype, repeats=3):
        probed.append(dtype)
        return {"float32": 0.09, "bfloat16": 0.009, "float16": 0.5}[dtype]

    monkeypatch.setattr(calibration, "peak_matmul_tflops", probe)
    assert calibration.matmul_peaks("cpu", ["float32", "bfloat16"]) == {
        "float32": 0.09, "bfloat16": 0.09}
    probed.clear()
    assert calibration.matmul_peaks("cpu", ["bfloat16", "float16"]) == {
        "bfloat16": 0.09, "float16": 0.5}
    assert probed == ["bfloat16", "float16", "float32"]  # fp32 probed for the bound
    assert calibration.matmul_peaks("cpu", ["float32"]) == {"float32": 0.09}
