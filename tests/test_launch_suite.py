"""The launch suite (kernels/launch.py), the floor probe every run makes at its start
(suites/harness/launch_floor.py) and the launch_floor finding that reads it: on a CPU the eager
and compile floors are measured and checked, the Triton paths are skipped with their reasons;
on a GPU (`gpu` marker) every path runs."""
import io
import json
from pathlib import Path

import pytest
import torch

from kernels import registry
from kernels.base import Case
from specs import run_spec
from suites.harness import launch_floor
from suites.harness.case_run import measure
from suites.harness.runner import run
from suites.results.columns import Status
from suites.traces.findings.measured import ROW_CODES, row_findings

CPU_PATHS = ("eager", "compile", "compile_guard")
CUDA_PATHS = ("triton_jit", "triton_handle", "triton_driver", "cuda_graph")
FLOORS = {"eager_dispatch": {"us": 7.0, "method": "x.add_(1)"},
          "triton_launch": {"us": 11.0, "method": "kernel[grid](x)"}}


def _case(device="cpu", launches=2, mode="fwd_nograd"):
    return Case.make("launch", {"L": launches}, "float32", device, mode=mode)


def test_the_suite_has_every_launch_path_with_eager_as_baseline():
    op = registry.get_op("launch")
    assert op.baseline == "eager" and op.size_axis == "L"
    assert registry.variant_names("launch") == [*CPU_PATHS, *CUDA_PATHS]
    assert registry.op_names()[-1] == "launch"  # after the blocks: the floor under them


def test_cpu_floors_are_timed_and_checked(tmp_path):
    case = _case()
    op = registry.get_op("launch")
    for name in CPU_PATHS:
        row = measure(op, registry.get_variant("launch", name), case,
                      run_spec(tmp_path / name, case, [name])).row
        # Timed and correct; noisy where a neighbour took the cores (this machine is shared).
        assert row.status in (Status.OK, Status.NOISY), (name, row.reason)
        assert row.check.passed and row.timing.mean_us > 0, name


def test_cuda_paths_are_skipped_on_a_cpu_with_their_reasons(tmp_path):
    case = _case()
    op = registry.get_op("launch")
    for name in CUDA_PATHS:
        variant = registry.get_variant("launch", name)
        assert "needs a CUDA GPU" in variant.supports(case), name
        row = measure(op, variant, case, run_spec(tmp_path / name, case, [name])).row
        assert row.status == Status.SKIPPED and "CUDA" in row.reason, (name, row.reason)


def test_the_floors_are_inference_only():
    for name in registry.variant_names("launch"):
        reason = registry.get_variant("launch", name).supports(_case(mode="fwd_bwd"))
        assert reason and "no_grad only" in reason, name


def test_the_empty_kernel_launches_under_the_interpreter_and_has_no_handle_there():
    from kernels.triton import nop

    nop.nop_kernel[nop.GRID](torch.zeros(1))  # defined and launched: the body is empty
    assert "interpreted" in nop.handle_problem(object())


def test_the_floor_probe_measures_the_eager_floor_quickly_and_names_its_method():
    floors = launch_floor.measure_floors("cpu")
    eager = floors["eager_dispatch"]
    assert 0 < eager["min_us"] <= eager["us"] <= eager["max_us"] < 1000
    # blocks x calls x the floor: well under a second, even on a loaded 2-core machine
    assert eager["blocks"] * eager["calls_per_block"] * eager["us"] < 0.5e6
    assert "x.add_(1)" in eager["method"] and "median" in eager["method"]
    assert "no Triton kernel" in floors["triton_launch"]["skipped"]
    # What the profiler adds to a recorded op: the profile guard's allowance (profile_guard.py).
    profiler = floors["profiler_op"]
    assert profiler["us"] >= profiler["extra_us"] >= 0 and "torch.profiler" in profiler["method"]
    assert "skipped" in launch_floor.measure_floors("cpu", profiled=False)["profiler_op"]


def test_a_failing_probe_is_recorded_not_raised(monkeypatch):
    def broken(device, profiled=True):
        raise RuntimeError("no device")

    monkeypatch.setattr(launch_floor, "measure_floors", broken)
    assert launch_floor.recorded_floors("cpu") == {
        "error": "the launch floor probe failed: RuntimeError: no device"}


def _row(variant="eager", family="eager", exposed=41.0, status="ok", kernels=2.0):
    return {"suite": "matmul_add", "case_id": "M64-N64-K64-fp32", "variant": variant,
            "family": family, "status": status, "exposed_overhead_us": exposed,
            "n_kernels": kernels}


def _statements(rows, floors):
    return [f["statement"] for f in row_findings(rows, "matmul_add", "eager", floors)
            if f["code"] == "launch_floor"]


def test_the_finding_states_exposed_overhead_in_ops_worth_of_the_floor():
    [said] = _statements([_row()], FLOORS)
    assert said.startswith("exposed overhead 41 us = 5.86x the eager dispatch floor of 7 us")
    assert "about 6 ops' worth of dispatch, for 2 kernels a call" in said
    [triton] = _statements([_row("triton", "triton", kernels=1.0)], FLOORS)
    assert "for 1 kernel a call; against the empty Triton kernel's JIT launch of 11 us it is " \
           "3.73x, about 4 launches' worth" in triton
    assert "launch_floor" in ROW_CODES  # a resumed run finds it again over every row


@pytest.mark.parametrize("rows, floors", [
    ([_row(exposed=5.0)], FLOORS),                              # under one floor
    ([_row(exposed=float("nan"))], FLOORS),                     # no profile: not known
    ([_row(status="noisy")], FLOORS),                           # not a result
    ([_row()], None),                                           # a run without floors
    ([_row()], {"error": "the launch floor probe failed"}),     # the probe failed
    ([_row()], {"eager_dispatch": {"skipped": "why"}}),
])
def test_no_finding_without_a_known_overhead_over_a_measured_floor(rows, floors):
    assert _statements(rows, floors) == []


def test_a_run_writes_its_floors_to_env_json(tmp_path):
    case = _case(launches=1)
    result = run(run_spec(tmp_path, case), stream=io.StringIO())
    floors = json.loads((tmp_path / "env.json").read_text())["launch_floors"]
    assert floors == result.env["launch_floors"] and floors["eager_dispatch"]["us"] > 0


def test_the_suite_composes_with_its_cpu_and_cuda_grids():
    pytest.importorskip("hydra")
    from suites.config.compose import compose, resolved
    from suites.config.run_spec import build_run_spec

    cfg = resolved(compose(["suite=launch", "device=cpu"]))
    spec = build_run_spec(cfg, Path("/tmp/unused"))
    assert [c.id for c in spec.cases()] == ["L1-fp32", "L10-fp32"]
    assert spec.suite.variants == (*CPU_PATHS, *CUDA_PATHS)
    assert cfg["suite"]["grids"]["cuda"]["sizes"] == [1, 10, 100]
    assert dict(spec.suite.reference) == {"L": 1}


@pytest.mark.gpu
def test_every_launch_path_runs_on_a_gpu(tmp_path):
    case = _case("cuda", launches=10)
    op = registry.get_op("launch")
    for name in CUDA_PATHS:
        row = measure(op, registry.get_variant("launch", name), case,
                      run_spec(tmp_path / name, case, [name])).row
        assert row.status == Status.OK, (name, row.reason)
    floors = launch_floor.measure_floors("cuda")
    assert floors["triton_launch"]["us"] > 0 and floors["eager_dispatch"]["us"] > 0
