"""Issue 36, one answer: each contradiction a new user found between fusebench's pages and their
own evidence, as a test (each failed on the code before the fix).

1. a bound against its own numbers (the ridge env.json's peaks give; one bound per intensity);
2. the profile pass unguarded (a contended or out-of-step profile stated as fact);
7. impossible figures (more cores busy than the machine has; a share quoting another's wait);
8. the console never giving the answer (report.md, and the console's end).
(3: test_collect.py; 4: test_history_audit.py; 5: test_trace_analysis.py, test_attention.py,
test_block.py; 6: test_suggest.py; the audit itself: test_audit.py.)"""
from __future__ import annotations

import math

import pytest

from kernels import registry
from kernels.base import Case
from suites.common.roofline import row_bound
from suites.harness import case_run, round_checks
from suites.harness.contention import RoundLoad
from suites.harness.derived import derive, new_row
from suites.harness.profile_guard import MAX_TAKES, OUT_OF_STEP, ProfileGuard
from suites.harness.variant_passes import prepare, profile
from suites.results.row import ProfileStats, TimingStats
from suites.traces.findings.core import FindingContext
from suites.traces.findings.detectors import find_all
from suites.traces.findings.row_bound import NOT_CLEAN_MARK
from suites.traces.findings import bounds
from specs import PROFILE, run_spec

# The machine: bf16 1.298 TFLOP/s, copy 12.03 GB/s: a ridge of about 108 FLOP/B.
PEAKS = {"matmul_tflops": {"bfloat16": 1.298, "float32": 0.3}, "copy_gbps": 12.03}


def _row(variant, mean_us=2000.0, device_us=1900.0, host_us=1950.0, m=512, dtype="bfloat16"):
    case = Case.make("matmul_add", {"M": m, "N": m, "K": m}, dtype, "cpu")
    row = new_row("matmul_add", case, registry.get_variant("matmul_add", variant),
                  registry.get_op("matmul_add"), 1)
    row.timing = TimingStats(10, mean_us, mean_us, mean_us, mean_us, 0.0, mean_us, mean_us,
                             mean_us)
    row.profile = ProfileStats(host_us, device_us, 0.0, 2.0, math.nan, math.nan, 6.0,
                               profile_state="clean", profile_takes=1.0)
    derive(row, PEAKS)
    return row


def _bound_finding(row):
    [found] = list(bounds.bound(FindingContext(profile=None, row=row.record())))
    return found


def test_a_bound_is_stated_with_the_intensity_and_the_ridge_that_decided_it():
    """"memory-bound: ... the op does 170.7 FLOP per byte, under the machine's ridge point"
    while env.json's peaks put the ridge at 108: the statement quoted the ideal bytes' intensity
    and decided on the unfused form's."""
    eager, addmm = _row("eager"), _row("addmm")
    ridge = 1.298e12 / 12.03e9
    assert eager.roofline.ridge == pytest.approx(ridge)
    found = _bound_finding(eager)
    intensity = eager.roofline.flops / eager.roofline.bytes_moved  # it writes and reads x @ w
    assert intensity < ridge < eager.roofline.intensity  # the ideal bytes would be above it
    assert found.code == "memory_bound" and f"{intensity:.3g} FLOP per byte" in found.statement
    assert f"ridge of {ridge:.3g} FLOP/B" in found.statement
    assert found.evidence["ridge"] == pytest.approx(ridge)
    # addmm moves the ideal bytes: above the same ridge, compute-bound, and said so.
    assert addmm.roofline.roofline_bound == "compute"
    assert _bound_finding(addmm).code == "compute_bound"


def test_every_variant_at_one_intensity_gets_one_bound():
    """"at the same intensity addmm and compile are called compute-bound" beside eager's
    memory: variants that move the same bytes, at times and profiles far apart (one 4x slower,
    one with a third of its call exposed overhead), meet one roof; the roof is the intensity's,
    never the achieved throughput's."""
    for m in (64, 128, 512, 1024):
        rows = [_row("addmm", mean_us=100.0 * m, device_us=95.0 * m, host_us=98.0 * m, m=m),
                _row("compile", mean_us=400.0 * m, device_us=260.0 * m, host_us=390.0 * m, m=m),
                _row("triton", mean_us=150.0 * m, device_us=148.0 * m, host_us=149.0 * m, m=m)]
        bounds_at = {r.roofline.roofline_bound for r in rows}
        intensity = rows[0].roofline.flops / rows[0].roofline.bytes
        assert bounds_at == {"compute" if intensity >= rows[0].roofline.ridge else "memory"}, \
            (m, bounds_at)


def test_the_ladders_roofline_places_a_row_at_the_intensity_its_bound_was_judged_at():
    """The ladder's roofline plotted `intensity` (the ideal bytes') while the bound used the
    variant's own bytes: eager's point sat right of the ridge with a memory bound."""
    import pandas as pd

    from suites.reports.ladder.plots import own_intensity

    eager, addmm = _row("eager"), _row("addmm")
    frame = pd.DataFrame([eager.record(), addmm.record()])
    placed = own_intensity(frame)
    ridge = eager.roofline.ridge
    assert placed[0] == pytest.approx(eager.roofline.flops / eager.roofline.bytes_moved)
    assert (placed[0] >= ridge) == (eager.roofline.roofline_bound == "compute")
    assert (placed[1] >= ridge) == (addmm.roofline.roofline_bound == "compute")


def test_an_overhead_bound_without_a_measured_overhead_quotes_no_nan():
    """Without a clean profile figure the model's share decides overhead; the sentence says
    so, never "nan us of a call"."""
    row = _row("addmm", mean_us=50_000.0, m=64)
    row.profile = None
    derive(row, PEAKS)
    assert row.roofline.roofline_bound == "overhead"
    found = _bound_finding(row)
    assert found.code == "overhead_bound" and "nan" not in found.statement.lower()


def test_a_finding_of_an_overhead_bound_row_rests_on_its_overhead():
    """findings.csv: "overhead-bound: the exposed overhead ... is 1.22e+03 us of a 1.82e+03 us
    call" with evidence `verdict=host-bound: CPU compute, share=0.9837`: evidence of another
    rule. The evidence is the numbers the statement quotes."""
    row = _row("eager", mean_us=1820.0, device_us=600.0, host_us=1800.0)
    found = _bound_finding(row)
    assert found.code == "overhead_bound"
    assert found.evidence["exposed_overhead_us"] == pytest.approx(row.exposed_overhead_us)
    assert found.evidence["overhead_share"] >= 0.5 and "verdict" not in found.evidence


class BusyMeter:
    """A load meter that reads every take contended (what another process on the cores does)."""
    def start(self):
        pass

    def stop(self):
        return RoundLoad(wall_s=0.01, wait_frac=0.5)


def test_a_contended_profile_is_taken_again_then_marked_and_states_no_bound(tmp_path):
    case = Case.make("matmul_add", {"M": 32, "N": 32, "K": 32}, "float32", "cpu")
    spec = run_spec(tmp_path, case, ["addmm"], profile=PROFILE)
    op = registry.get_op("matmul_add")
    prepared = prepare(op, registry.get_variant("matmul_add", "addmm"), case, spec, None)
    guard = ProfileGuard(BusyMeter(), cores=2, threads=1)
    result = profile(prepared, case, spec, guard, timed_us=20.0)
    row = prepared.row
    assert row.profile.profile_state == "contended" and row.profile.profile_takes == MAX_TAKES
    assert "waited for a CPU" in row.profile.profile_reason
    row.timing = TimingStats(10, 20.0, 20.0, 20.0, 20.0, 0.0, 20.0, 20.0, 20.0)
    derive(row, PEAKS)
    assert row.roofline.roofline_bound is None  # no bound stated as fact
    found = find_all(row.record(), result, None, None)
    codes = [f["code"] for f in found]
    assert "no_verdict" in codes and not {"compute_bound", "memory_bound",
                                         "overhead_bound"} & set(codes)
    assert all(NOT_CLEAN_MARK in f["statement"] for f in found if f["code"] != "no_verdict")


def test_a_profile_out_of_step_with_its_timed_call_is_not_clean():
    """"aten::copy_ inside aten::addmm, 870.8 us" in a 246 us call (31 us in quiet runs)."""
    guard = ProfileGuard(BusyMeter(), cores=2, threads=1, profiler_op_us=3.0)
    quiet = RoundLoad(wall_s=0.01, wait_frac=0.0)
    judged = guard.judge(quiet, host_us=871.0, timed_us=246.0, ops=7)
    assert judged.state == OUT_OF_STEP and "871" in judged.reason
    # The profiler's own cost on a tiny call explains its profiled span: clean.
    assert guard.judge(quiet, host_us=34.0, timed_us=13.0, ops=6).clean


def test_each_share_of_a_contended_round_quotes_its_own_wait():
    """Every share of a round quoted the first share's wait: "waited for a CPU for 10%" on a
    share that waited 0.006%."""
    slots = [round_checks.Slot("eager", 0, 0, (10.0,) * 5, RoundLoad(0.01, None, 0.10)),
             round_checks.Slot("addmm", 0, 1, (10.0,) * 5, RoundLoad(0.01, None, 0.00006))]
    judged = round_checks.judge(slots, round_checks.Limits(cores=2, threads=1))
    assert {s.state for s in judged} == {"contended"}
    assert "10%" in judged[0].reason
    assert "10%" not in judged[1].reason.split("(")[0] and "eager's share" in judged[1].reason


def test_no_share_reads_more_cores_busy_than_the_machine_has(monkeypatch):
    from suites.harness import contention

    meter = contention.LoadMeter("cpu")
    ticks = iter([(0, 100), (10_000, 10_100)])  # far more busy ticks than a short share holds
    monkeypatch.setattr(contention, "cpu_times", lambda cpus=None: next(ticks))
    meter.start()
    load = meter.stop()
    assert load.others_cores <= len(meter.cpus)


def test_the_run_ends_with_the_reports_answer_before_any_later_work(tiny_run):
    from suites.reports.run.answer import answer_section

    out, result = tiny_run
    said = answer_section((out / "report.md").read_text())
    assert said and said[0].startswith(("Fusion", "Nothing to compare"))
    console = result.stdout
    assert "\n".join(said) in console  # the same lines, in the console
    assert console.index(said[0]) < console.index("audit of run folder")
    assert "0 contradictions" in console


def test_case_run_builds_the_guard_from_the_runs_floors():
    case = Case.make("matmul_add", {"M": 16, "N": 16, "K": 16}, "float32", "cpu")
    spec = run_spec("/tmp", case)
    guard = case_run.profile_guard(case, spec, BusyMeter(),
                                   {"profiler_op": {"extra_us": 4.5}})
    assert guard.profiler_op_us == 4.5 and guard.threads == spec.timing.threads


def _steps_profile(host_us):
    """A CallProfile over stand-in steps of these host spans (a CPU trace: no launches)."""
    from types import SimpleNamespace

    from suites.traces.call_profile import CallProfile

    steps = [SimpleNamespace(host_us=h, device_us=h, n_kernels=2, launch_api_us=0.0,
                             launch_delay_us=0.0, n_cpu_ops=6, busy_frac=1.0) for h in host_us]
    return CallProfile(SimpleNamespace(steps=steps, mode="cpu"))


def test_a_slow_step_that_passes_the_median_is_judged_by_the_tree_it_shows_in():
    """CI, a contended machine: optree.csv's call (the mean over the profiled steps) 6242 us
    against a 3915 us timed call, from a profile judged clean on its median step. The guard
    judges the longer of the two readings the pages quote."""
    from suites.harness.profile_guard import rejudged

    taken = _steps_profile([3900.0, 3950.0, 11000.0])
    assert taken.metrics()["host_us"] == 3950.0 and taken.call_us() == pytest.approx(6283.3, 1e-3)
    quiet = RoundLoad(wall_s=0.01, wait_frac=0.0)
    guard = ProfileGuard(BusyMeter(), cores=2, threads=1, profiler_op_us=3.0)
    assert guard.judge(quiet, taken.metrics()["host_us"], 3915.0, 6).clean
    assert guard.judge(quiet, taken.call_us(), 3915.0, 6).state == OUT_OF_STEP
    stats = ProfileStats(3950.0, 3950.0, 0.0, 2.0, math.nan, math.nan, 6.0,
                         profile_state="clean", profile_takes=1.0)
    assert rejudged(stats, 3915.0, 3.0).profile_state == "clean"  # the median alone passes
    assert rejudged(stats, 3915.0, 3.0, taken.call_us()).profile_state == OUT_OF_STEP


def test_a_profile_not_clean_is_marked_in_the_banner_and_the_results_table():
    import pandas as pd

    from suites.reports.kit.banner import banner_lines
    from suites.reports.run.build import _flagged

    frame = pd.DataFrame({"status": ["ok", "ok"], "pct_peak": [50.0, 120.0],
                          "host_us": [30.0, 900.0], "device_us": [20.0, 800.0],
                          "profile_state": ["clean", "contended"]})
    [line] = [s for s in banner_lines([], frame) if "profile" in s]
    assert line.startswith("1 row(s)") and "1 contended" in line
    shown = _flagged(frame)
    assert shown["host_us"].tolist() == [30.0, "900 (profile contended)"]
    assert shown["device_us"].iloc[1] == "800 (profile contended)"
    assert "above peak" in shown["pct_peak"].iloc[1]


def test_a_row_without_a_bound_says_the_same_reason_on_every_page():
    """The answer and the narrative said "no measured peaks" of a row that had peaks but no
    FLOPs (or a NaN count): one reason, from the rule's own inputs."""
    from suites.reports.run.answer import bound_word
    from suites.reports.run.narrative import _no_bound

    for flops, said in ((float("nan"), "no FLOPs"), (0.0, "no FLOPs"),
                        (1e9, "no measured peak")):
        row = {"flops": flops, "mean_us": 10.0, "device": "cpu", "status": "ok",
               "profile_state": "clean", "trace": "traces/x.json.gz", "roofline_bound": ""}
        assert said in bound_word(row) and said in _no_bound(row), (flops, bound_word(row))
