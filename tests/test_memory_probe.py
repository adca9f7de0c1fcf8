"""A case's peak memory estimated before it runs (suites/harness/memory_probe.py): measured at a
small probe shape, scaled by the byte model, compared with what is free; a case that would not
fit has its rows skipped with the numbers, a probe that fails never fails a case, and the
default cases pay no probe."""
import re
from pathlib import Path

import pytest
import torch

from kernels import registry
from kernels.base import Case
from suites.common.errors import ConfigError
from suites.harness import case_run, memory_probe
from suites.harness.contention import LoadMeter
from suites.harness.memory_probe import MemoryGuard, model_bytes, probe_case, run_probe
from suites.results.columns import Status
from specs import run_spec

MiB = 2**20
OP = registry.get_op("matmul_add")


def variants(*names):
    return [registry.get_variant("matmul_add", n) for n in names]


def case(size, dtype="float32", mode="fwd_nograd"):
    return Case.make("matmul_add", {"M": size, "N": size, "K": size}, dtype, "cpu", mode=mode)


def free(monkeypatch, nbytes):
    monkeypatch.setattr(memory_probe, "available_memory", lambda device: (nbytes, "free (test)"))


def test_the_cpu_reading_holds_the_inputs_and_peaks_above_them():
    # eager y = x @ w + b at 256^3 fp32: x, w (256 KiB each) and b (1 KiB) are what the prepared
    # call holds; the peak adds the outputs and the check's float64 reference.
    inputs = 2 * 256 * 256 * 4 + 256 * 4
    reading = run_probe(OP, *variants("eager"), case(256))
    assert reading.held == inputs
    assert reading.peak > inputs + 2 * 256 * 256 * 8  # at least a float64 (M, N) on top
    # A training step keeps the gradients too, and the gradient fed to backward, (M, N).
    step = run_probe(OP, *variants("eager"), case(256, mode="fwd_bwd"))
    assert step.held == 2 * inputs + 256 * 256 * 4 and step.peak > reading.peak


def test_the_probe_shape_scales_every_size_by_one_factor_and_keeps_choices():
    big = case(8192, "bfloat16")
    small = probe_case(OP, big, "eager")
    assert model_bytes(OP, small, "eager") <= memory_probe.PROBE_BYTES
    assert small["M"] == small["N"] == small["K"] and 300 < small["M"] < 8192
    assert small.dtype == "bfloat16" and small.mode == big.mode
    norm = registry.get_op("norm")
    rms = Case.make("norm", {"T": 65536, "D": 8192, "norm": "rms"}, "float32", "cpu")
    assert probe_case(norm, rms, "eager")["norm"] == "rms"
    block = registry.get_op("block")  # D % H: a probe shape the op accepts
    step = Case.make("block", {"B": 8, "S": 4096, "D": 4096, "H": 32, "I": 16384}, "bfloat16",
                     "cpu", mode="fwd_bwd")
    assert block.shape_problem(probe_case(block, step, "eager").values) is None
    assert probe_case(OP, case(64), "eager") == case(64)  # a small case is its own probe


def test_a_case_that_does_not_fit_is_skipped_with_the_numbers(tmp_path, monkeypatch):
    free(monkeypatch, 16 * MiB)
    monkeypatch.setattr(case_run, "_prepare_all", lambda *a, **k: pytest.fail("it ran"))
    big = case(1024)
    spec = run_spec(tmp_path, big, ["addmm", "compile"])
    guard = MemoryGuard()
    outcome = case_run.run_case(OP, variants("eager", "addmm", "compile"), big, spec,
                                LoadMeter("cpu"), None, guard)
    assert [r.status for r in outcome.rows] == [Status.SKIPPED] * 3
    reason = outcome.rows[0].reason
    assert re.fullmatch(
        r"not enough memory: needs ~[\d.]+ MiB \(probe of eager at M\d+-N\d+-K\d+-fp32: "
        r"[\d.]+ [KM]iB peak \+ 2 x [\d.]+ [KM]iB held by the other variants, scaled by the byte "
        r"model x[\d.]+, x1.5 headroom\), 16 MiB free \(test\)", reason), reason
    assert {r.reason for r in outcome.rows} == {reason}
    # A variant that would be skipped anyway keeps its own reason (Triton on a CPU).
    skipped = case_run.run_case(OP, variants("eager", "triton"), big, spec, LoadMeter("cpu"),
                                None, guard)
    alone = skipped.rows[0].reason  # no other variant holds inputs: the peak alone
    assert alone.startswith("not enough memory") and "held by" not in alone
    assert skipped.rows[1].reason.startswith("Triton")
    [record] = guard.records
    assert record["case"] == big.id and record["ms"] > 0


def test_the_estimate_scales_by_the_byte_model_from_one_cached_probe(monkeypatch):
    free(monkeypatch, 1 * MiB)
    guard, three = MemoryGuard(), variants("eager", "addmm", "compile")
    small, large = (guard.check(OP, three, case(n), "eager") for n in (1024, 2048))
    assert len(guard.records) == 1  # one probe for the series
    probe = next(iter(guard.probes.values()))
    for verdict, n in ((small, 1024), (large, 2048)):
        ratio = memory_probe.scale_ratio(OP, case(n), probe.case, "eager")
        need = (probe.reading.peak + 2 * probe.reading.held) * ratio * memory_probe.HEADROOM
        assert verdict.need == pytest.approx(need)
        assert verdict.skip.startswith("not enough memory")
    # The unfused (M, N) product makes bytes_moved grow a little faster than bytes_ideal
    assert large.need / small.need == pytest.approx(
        model_bytes(OP, case(2048), "eager") / model_bytes(OP, case(1024), "eager"), rel=0.01)
    # Another dtype or mode is another series: probed on its own.
    guard.check(OP, three, case(1024, "bfloat16"), "eager")
    assert len(guard.records) == 2


def test_a_probed_case_that_fits_runs(monkeypatch):
    free(monkeypatch, 2**40)
    monkeypatch.setattr(memory_probe, "QUICK_SHARE", 0.0)  # probe even a small case
    guard = MemoryGuard()
    verdict = guard.check(OP, variants("eager", "addmm"), case(64), "eager")
    assert not verdict.skip and not verdict.note and 0 < verdict.need < 2**40
    assert guard.records[0]["probe"] == case(64).id  # small enough to be its own probe


def test_a_probe_that_fails_is_a_note_and_the_case_runs(tmp_path, monkeypatch):
    free(monkeypatch, 1)  # every case over the quick bound: each needs a probe
    calls = []

    def broken(op, variant, case):
        calls.append(case.id)
        raise RuntimeError("boom")

    monkeypatch.setattr(memory_probe, "run_probe", broken)
    small = case(64)
    spec = run_spec(tmp_path, small, ["addmm"])
    guard = MemoryGuard()
    note = ("memory probe failed (eager at M64-N64-K64-fp32: RuntimeError: boom): ran without "
            "a memory estimate")
    outcome = case_run.run_case(OP, variants("eager", "addmm"), small, spec, LoadMeter("cpu"),
                                None, guard)
    assert [r.status for r in outcome.rows] != [Status.SKIPPED] * 2
    for row in outcome.rows:
        assert row.status in (Status.OK, Status.NOISY) and note in row.reason
    assert guard.check(OP, variants("eager", "addmm"), case(128), "eager").note.startswith(
        "memory probe failed (eager at M64")  # the failure is cached for its series
    assert calls == [small.id] and guard.records[0]["failed"].endswith("RuntimeError: boom")


def default_spec(*overrides):
    """A suite's default run on a CPU, as run_suite.py composes it."""
    pytest.importorskip("hydra")
    from omegaconf import OmegaConf

    from suites.config.compose import compose
    from suites.config.run_spec import build_run_spec

    cfg = compose(["device=cpu", *overrides])
    return build_run_spec(OmegaConf.to_container(cfg, resolve=True), Path("/tmp/unused"))


@pytest.mark.parametrize("modes", ["[fwd_nograd]", "[fwd,bwd,fwd_bwd]"])
def test_the_default_cases_pay_no_probe(monkeypatch, modes):
    free(monkeypatch, 16 * 2**30)  # a modest machine's free memory
    monkeypatch.setattr(memory_probe, "run_probe", lambda *a: pytest.fail("probed"))
    spec = default_spec("suite=matmul_add", f"suite.modes={modes}")
    every = [registry.get_variant(OP.name, n) for n in spec.suite.variants]
    guard = MemoryGuard()
    assert len(spec.cases()) == 12 * len(spec.suite.modes)
    for each in spec.cases():
        assert guard.check(OP, every, each, spec.suite.baseline).need is None
    assert not guard.records and not guard.probes


def test_memory_probe_off_never_probes_and_a_bad_setting_names_the_key(monkeypatch):
    free(monkeypatch, 1)
    monkeypatch.setattr(memory_probe, "run_probe", lambda *a: pytest.fail("probed"))
    assert MemoryGuard("off").check(OP, variants("eager"), case(4096), "eager").skip == ""
    from suites.config.run_spec import setting
    from suites.harness.memory_probe import SETTINGS

    def memory_probe_setting(value):
        return setting(value, "memory_probe", SETTINGS)

    assert memory_probe_setting("off") == "off"
    with pytest.raises(ConfigError, match=r"^memory_probe: 'sometimes' is not a setting; "
                                          r"accepted: auto, off$"):
        memory_probe_setting("sometimes")
    with pytest.raises(ConfigError, match=r"^memory_probe: False is not a setting"):
        memory_probe_setting(False)
    assert default_spec().memory_probe == "auto"  # conf/config.yaml
    assert default_spec("memory_probe=off").memory_probe == "off"
    with pytest.raises(ConfigError, match=r"^memory_probe: 'never' is not a setting"):
        default_spec("memory_probe=never")


def test_available_memory_reads_meminfo_and_a_cgroup_limit(tmp_path, monkeypatch):
    from suites.common import memory
    (tmp_path / "meminfo").write_text("MemTotal: 100 kB\nMemAvailable:    2048 kB\n")
    assert memory._meminfo_available(tmp_path / "meminfo") == 2 * MiB
    (tmp_path / "memory.max").write_text("max\n")
    (tmp_path / "memory.current").write_text("5\n")
    assert memory._cgroup_room(tmp_path) is None
    (tmp_path / "memory.max").write_text(f"{MiB}\n")
    assert memory._cgroup_room(tmp_path) == MiB - 5
    nbytes, what = memory_probe.available_memory("cpu")
    assert nbytes > 0 and what


def test_a_skipped_case_is_written_and_kept_on_resume(tmp_path, monkeypatch):
    from suites.harness import runner
    from suites.results.resume import read_previous

    free(monkeypatch, 1 * MiB)
    monkeypatch.setattr(memory_probe, "QUICK_SHARE", 0.0)
    big = case(512)
    result = runner.run(run_spec(tmp_path, big, ["addmm"]))
    assert set(result.frame["status"]) == {"skipped"}
    assert result.frame["reason"].str.startswith("not enough memory: needs ~").all()
    assert result.env["memory_probes"][0]["case"] == big.id
    assert big.id in read_previous(tmp_path, 2).cases  # a resumed run keeps it as it is


@pytest.mark.gpu
def test_the_cuda_reading_holds_the_inputs():
    gpu = Case.make("matmul_add", {"M": 256, "N": 256, "K": 256}, "float32", "cuda")
    reading = run_probe(OP, *variants("eager"), gpu)
    assert reading.held == pytest.approx(2 * 256 * 256 * 4 + 256 * 4, abs=4096)
    assert reading.peak > reading.held
    torch.cuda.empty_cache()
