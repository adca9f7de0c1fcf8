"""Interleaved timing rounds: the rotated order, the checks that catch a contended round (on
synthetic rounds, for a CPU and a GPU), the paired speedup and its interval, noisy rows, and a
re-measure later in the sweep."""
import math
import os
import statistics
from dataclasses import replace

import pandas as pd
import pytest

from kernels import registry
from kernels.base import Case
from suites.harness import case_run, round_checks as rc
from suites.harness.contention import LoadMeter, RoundLoad, others_cores
from suites.results.intervals import paired_speedup, t95
from suites.harness.round_checks import Limits, Slot, judge
from suites.harness.rounds import Contender, rotated, time_rounds
from suites.results.columns import Status
from specs import QUICK

CASE = Case.make("matmul_add", {"M": 8, "N": 8, "K": 8}, "float32", "cpu")
QUIET = RoundLoad(0.1, others_cores=0.1)
LIMITS = Limits(cores=2, threads=1)


def slot(variant, r, samples, load=QUIET, position=0):
    return Slot(variant, r, position, tuple(samples), load)


# --- the order of the rounds -----------------------------------------------------------------

def test_each_round_rotates_the_order():
    assert [rotated(list("ABC"), r) for r in range(4)] == [list("ABC"), list("BCA"),
                                                           list("CAB"), list("ABC")]


class Meter:
    def start(self):
        pass

    def stop(self):
        return QUIET


def test_time_rounds_interleaves_and_records_the_round_and_position():
    order = []
    contenders = [Contender(name, lambda name=name: order.append(name)) for name in "ABC"]
    spec = replace(QUICK, rounds=3, budget_s=0.0, min_samples=3, max_samples=3)
    slots = time_rounds(contenders, spec, "cpu", Meter())
    assert [(s.round, s.position, s.variant) for s in slots] == [
        (0, 0, "A"), (0, 1, "B"), (0, 2, "C"), (1, 0, "B"), (1, 1, "C"), (1, 2, "A"),
        (2, 0, "C"), (2, 1, "A"), (2, 2, "B")]
    assert all(len(s.samples_us) == 1 for s in slots)  # 3 samples split over 3 rounds
    # One untimed warm-up call per share, then the timed one: the variants alternate.
    assert "".join(order) == "AABBCCBBCCAACCAABB"


def test_a_variant_that_raises_in_a_round_drops_out_and_the_rest_go_on():
    def broken():
        raise RuntimeError("device lost")

    contenders = [Contender("A", lambda: None), Contender("B", broken)]
    slots = time_rounds(contenders, replace(QUICK, rounds=2), "cpu", Meter())
    assert {s.variant for s in slots} == {"A"} and len(slots) == 2
    assert contenders[1].failed == "device lost"


# --- what else ran: contention, on synthetic loads ----------------------------------------------

def test_others_cores_subtracts_this_process():
    assert others_cores(busy_ticks=100, own_cpu_s=0.5, wall_s=1.0) == pytest.approx(0.5)
    assert others_cores(busy_ticks=10, own_cpu_s=0.5, wall_s=1.0) == 0.0  # never negative
    assert others_cores(10, 0.1, 0.0) is None


def test_a_real_meter_sees_a_quiet_sleep():
    meter = LoadMeter("cpu")
    meter.start()
    sum(range(10**5))
    load = meter.stop()
    assert load.wall_s > 0 and load.gpu_other_processes is None
    assert load.others_cores is None or 0.0 <= load.others_cores <= 64


@pytest.mark.parametrize("others, threads, contended", [
    (0.2, 2, False), (0.8, 2, True), (1.0, 1, False), (1.6, 1, True)])
def test_cpu_contention_counts_the_cores_the_timing_needs(others, threads, contended):
    loads = [RoundLoad(0.1, others_cores=others)] * 3
    reason = rc.contention(loads, cores=2, threads=threads)
    assert bool(reason) == contended
    if contended:
        assert f"{others:.1f} of 2 cores busy" in reason


def test_a_share_whose_threads_waited_for_a_cpu_drops_its_round_for_every_variant():
    waited = RoundLoad(0.01, others_cores=0.0, wait_frac=0.6)  # short, but read exactly
    slots = [slot("A", 0, [10.0]), slot("B", 0, [10.0], load=waited), slot("A", 1, [10.0]),
             slot("B", 1, [10.0])]
    states = [(s.variant, s.round, s.state) for s in judge(slots, LIMITS)]
    assert states == [("A", 0, rc.CONTENDED), ("B", 0, rc.CONTENDED), ("A", 1, rc.CLEAN),
                      ("B", 1, rc.CLEAN)]
    assert "waited for a CPU for 60% of the share's time each" in rc.waited(waited)
    assert rc.waited(RoundLoad(0.1, wait_frac=0.004)) == "" and rc.waited(QUIET) == ""


def test_the_wait_is_judged_per_thread():
    # 8 threads each waiting 2% sum to 16%: a quiet machine, not a contended one.
    assert rc.waited(RoundLoad(0.1, wait_frac=0.16), threads=8) == ""
    assert "20% of the share's time each" in rc.waited(RoundLoad(0.1, wait_frac=1.6), threads=8)


def test_a_real_meter_sees_its_threads_wait_under_a_busy_process():
    """Two busy Python processes on top of this one: the readings are in range on any machine,
    and on one of 2 cores or fewer (three runnable threads on two cores) the wait must show."""
    import subprocess
    import sys
    import time

    meter = LoadMeter("cpu")
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    try:
        time.sleep(0.1)
        meter.start()
        deadline = time.perf_counter() + 0.2
        while time.perf_counter() < deadline:
            pass
        load = meter.stop()
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
    assert load.wait_frac is None or 0.0 <= load.wait_frac <= 64
    if (os.cpu_count() or 1) <= 2 and load.wait_frac is not None:
        assert load.wait_frac > rc.WAIT_LIMIT


def test_gpu_contention_other_processes_or_a_clock_drop():
    assert "1 other process on the GPU" in rc.contention(
        [RoundLoad(0.1, 0.0, gpu_other_processes=1, sm_clock_ratio=0.95)], 16, 1)
    assert "SM clock dropped to 50%" in rc.contention(
        [RoundLoad(0.1, 0.0, gpu_other_processes=0, sm_clock_ratio=0.5)], 16, 1)
    assert rc.contention([RoundLoad(0.1, 0.0, gpu_other_processes=0, sm_clock_ratio=0.9)], 16, 1) == ""


def test_other_gpu_processes_are_counted_as_nvml_sees_them():
    from suites.harness.gpu_state import count_others

    assert count_others({100, 200}, None, own=100) == 1
    # In a container NVML reports host PIDs: ours (1234 here) is not among them, one is us.
    assert count_others({5000, 6000}, None, own=1234) == 1
    assert count_others({5000}, None, own=1234) == 0
    # An idle context (a notebook holding the GPU) is not contention when NVML can tell.
    assert count_others({100, 200}, busy={100}, own=100) == 0
    assert count_others({5000, 6000}, busy={5000, 6000}, own=1234) == 1
    assert count_others(set(), None, own=1) == 0


def test_samples_stalled_at_scheduler_ticks_are_caught():
    ticks = [10.0 + 4000.0 * k for k in (1, 2, 4, 1, 2)] + [10.0] * 5
    assert "5 of 10 calls stalled" in rc.stall(tuple(ticks), fastest_us=10.0)
    assert rc.stall((10.0, 11.0, 12.0, 10.5), fastest_us=10.0) == ""
    # A 50 ms op with 4 ms of jitter is not stalled: not twice its fastest call.
    assert rc.stall((50_000.0, 54_000.0, 58_000.0), fastest_us=50_000.0) == ""


def test_a_rate_far_below_the_peak_is_slow():
    # The case: a 64^3 matmul (3.5 us at the peaks) timed at 16 ms.
    assert "4,571x what the measured peaks allow" in rc.slow(16_000.0, model_us=3.5)
    assert rc.slow(40.0, model_us=3.5) == "" and rc.slow(1e9, None) == ""
    assert rc.slow(5000.0, model_us=3.5) == ""  # within 1000x + 2 ms: a slow variant, not a stall


def test_judge_marks_each_kind_and_keeps_clean_rounds_clean():
    busy = RoundLoad(0.1, others_cores=1.9)
    slots = [slot("A", r, [100.0, 101.0, 102.0]) for r in range(5)]
    slots += [slot("A", 5, [100.0, 101.0, 102.0], load=busy)]               # contended
    slots += [slot("A", 6, [100.0, 5000.0, 9000.0])]                         # stalled
    slots += [slot("A", 7, [200.0, 201.0, 202.0])]                           # off
    slots += [slot("A", 8, [5e7, 5e7, 5e7])]                                 # slow
    judged = {s.round: s for s in judge(slots, Limits(2, 1, {"A": 10.0}))}
    assert [judged[r].state for r in range(9)] == ["clean"] * 5 + [
        rc.CONTENDED, rc.STALLED, rc.OFF, rc.SLOW]
    assert "the variant ran 1.99x slower than in its median round" in judged[7].reason


def test_a_round_off_for_every_variant_is_the_machine_and_drops_for_all():
    slots = [slot(v, r, [10.0 * (1 + (v == "B"))]) for r in range(5) for v in "AB"]
    slots += [slot("A", 5, [14.0]), slot("B", 5, [28.0])]     # both 1.4x slower: the machine
    slots += [slot("A", 6, [7.0]), slot("B", 6, [14.0])]      # both 1.4x faster: boosted, too
    judged = {(s.variant, s.round): s.state for s in judge(slots, LIMITS)}
    assert [judged[v, r] for r in (5, 6) for v in "AB"] == [rc.OFF] * 4
    assert all(judged[v, r] == rc.CLEAN for r in range(5) for v in "AB")


def test_a_slow_state_of_one_variant_is_its_own_and_stays_in_its_figures():
    # B is 1.5x slow in 2 rounds of 5, A is steady: B's state, measured as it is.
    slots = [slot("A", r, [10.0]) for r in range(5)]
    slots += [slot("B", r, [15.0 if r in (1, 3) else 10.0]) for r in range(5)]
    assert all(s.clean for s in judge(slots, LIMITS))


def test_stalls_in_one_variant_only_are_its_own_cost():
    stalled = [10.0] * 3 + [4010.0] * 2
    slots = [slot("A", r, [10.0] * 5) for r in range(3)] + [slot("B", r, stalled) for r in range(3)]
    assert all(s.clean for s in judge(slots, LIMITS))
    both = slots + [slot("A", 3, stalled), slot("B", 3, stalled)]
    judged = {(s.variant, s.round): s.state for s in judge(both, LIMITS)}
    assert judged["A", 3] == judged["B", 3] == rc.STALLED


def test_contention_spoils_the_whole_round_for_every_variant():
    busy = RoundLoad(0.1, others_cores=1.9)
    slots = [slot("A", 0, [10.0]), slot("B", 0, [10.0], load=busy), slot("A", 1, [10.0])]
    short = RoundLoad(0.01, others_cores=1.9)  # too short to read alone: the round's average
    assert rc.contention([QUIET, short], 2, 1) == ""
    assert rc.contention([short, short], 2, 1) == ""  # a whole round too short to judge
    states = [(s.variant, s.round, s.state) for s in judge(slots, LIMITS)]
    assert states == [("A", 0, rc.CONTENDED), ("B", 0, rc.CONTENDED), ("A", 1, rc.CLEAN)]


# --- the paired speedup -----------------------------------------------------------------------

def test_t_quantiles():
    # Between tabulated rows the next lower one: never narrower than the true quantile.
    assert t95(4) == pytest.approx(2.776) and t95(11) == t95(10) and t95(1000) == 1.98
    with pytest.raises(ValueError):
        t95(0)


def test_a_drift_that_hits_both_cancels_in_the_paired_speedup():
    drift = [1.0, 1.0, 2.0, 1.0, 1.5]  # round 2 ran on a machine twice as slow
    base = {r: 100.0 * d for r, d in enumerate(drift)}
    variant = {r: 50.0 * d * (1.01 if r % 2 else 0.99) for r, d in enumerate(drift)}
    paired = paired_speedup(base, variant)
    assert paired.rounds == 5 and paired.speedup == pytest.approx(2.0, rel=0.01)
    assert paired.low < 2.0 < paired.high and paired.high / paired.low < 1.05


def test_only_rounds_clean_on_both_sides_pair():
    paired = paired_speedup({0: 10.0, 1: 10.0, 2: 10.0}, {1: 5.0, 2: 5.0, 3: 1.0})
    assert paired.rounds == 2 and paired.speedup == pytest.approx(2.0)
    one = paired_speedup({0: 10.0}, {0: 5.0})
    assert one.speedup == pytest.approx(2.0) and math.isnan(one.low)
    assert math.isnan(paired_speedup({0: 1.0}, {1: 1.0}).speedup)


# --- rows from rounds: ok, noisy, re-measured -------------------------------------------------

def _outcome(states_a, states_b, spec):
    """A finished case of two variants whose rounds are clean or contended as given."""
    op = registry.get_op("matmul_add")
    variants = [registry.get_variant("matmul_add", n) for n in ("eager", "addmm")]
    from suites.harness.derived import new_row

    rows = [new_row("matmul_add", CASE, v, op, 1) for v in variants]
    slots = []
    busy = RoundLoad(0.1, others_cores=1.9)
    for r, (a, b) in enumerate(zip(states_a, states_b)):
        slots.append(slot("eager", r, [100.0 + r, 101.0 + r], busy if a == "busy" else QUIET))
        slots.append(slot("addmm", r, [50.0 + r, 51.0 + r], busy if b == "busy" else QUIET, 1))
    return case_run.CaseOutcome(CASE, rows, slots)


def test_a_row_with_too_few_clean_rounds_is_noisy_with_its_figures(tmp_path):
    from specs import run_spec

    spec = run_spec(tmp_path, CASE, ["addmm"], timing=replace(QUICK, rounds=5))
    outcome = _outcome(["ok"] * 5, ["ok"] * 5, spec)
    outcome.slots = [replace(s, load=RoundLoad(0.1, others_cores=1.9)) if s.round >= 2 else s
                     for s in outcome.slots]
    case_run.finish(outcome, spec, None)
    for row in outcome.rows:
        assert row.status == Status.NOISY and math.isnan(row.speedup)
        assert row.reason.startswith("2 of 5 rounds clean (3 needed): 3 contended (other "
                                     "processes kept 1.9 of 2 cores busy")
        assert row.timing.rounds == 2 and row.timing.rounds_dropped == 3
    assert outcome.needs_remeasure()


def test_an_ok_row_uses_only_its_clean_rounds_and_pairs_its_speedup(tmp_path):
    from specs import run_spec

    spec = run_spec(tmp_path, CASE, ["addmm"], timing=replace(QUICK, rounds=5))
    outcome = _outcome(["ok", "ok", "ok", "ok", "busy"], ["ok"] * 5, spec)
    case_run.finish(outcome, spec, None)
    eager, addmm = outcome.rows
    assert eager.ok and addmm.ok and eager.timing.rounds == 4 and eager.timing.rounds_dropped == 1
    assert eager.timing.median_us == pytest.approx(statistics.median(
        [100.0 + r + d for r in range(4) for d in (0, 1)]))
    assert addmm.speedup == pytest.approx(2.0, rel=0.05)
    assert addmm.speedup_low < addmm.speedup < addmm.speedup_high
    assert eager.speedup == 1.0 and not outcome.needs_remeasure()


def _only_contention_judges(monkeypatch):
    """The re-measure tests use synthetic loads and real calls: the real calls' own spread
    (a round off or stalled on a busy machine) must not decide what they test."""
    monkeypatch.setattr(rc, "off", lambda *args: "")
    monkeypatch.setattr(rc, "stall", lambda *args: "")


def test_a_contended_case_is_re_measured_later_and_its_rounds_continue(tmp_path, monkeypatch):
    """The first rounds are all contended (synthetic loads): the runner times the case again
    after the others; the new rounds, clean, make the rows ok."""
    from suites.harness import runner
    from specs import run_spec

    def stop(self):  # other processes take both cores until the re-measure starts
        return RoundLoad(0.1, others_cores=1.9 if first_pass["on"] else 0.0)

    first_pass = {"on": True}
    real_remeasure = runner.remeasure

    def remeasure(*args, **kwargs):
        first_pass["on"] = False
        return real_remeasure(*args, **kwargs)

    monkeypatch.setattr(LoadMeter, "stop", stop)
    monkeypatch.setattr(runner, "remeasure", remeasure)
    _only_contention_judges(monkeypatch)
    timing = replace(QUICK, rounds=3)
    result = runner.run(run_spec(tmp_path, CASE, ["addmm"], timing=timing))
    frame = result.frame.set_index("variant")
    assert (frame["status"] == "ok").all() and (frame["rounds"] == 3).all()
    assert (frame["rounds_dropped"] == 3).all()
    assert result.env["rounds"]["remeasured_cases"] == [CASE.id]
    rounds = pd.read_csv(tmp_path / "rounds.csv")
    assert sorted(rounds["round"].unique()) == [0, 1, 2, 3, 4, 5]
    assert set(rounds.loc[rounds["round"] < 3, "state"]) == {"contended"}
    assert set(rounds.loc[rounds["round"] >= 3, "state"]) == {"clean"}


def test_a_case_contended_for_the_whole_sweep_ends_noisy_and_is_never_a_result(tmp_path, monkeypatch):
    from suites.harness import runner
    from suites.reports.run.build import write_report
    from specs import run_spec

    monkeypatch.setattr(LoadMeter, "stop", lambda self: RoundLoad(0.1, others_cores=1.9))
    result = runner.run(run_spec(tmp_path, CASE, ["addmm"], timing=replace(QUICK, rounds=3)))
    assert set(result.frame["status"]) == {"noisy"}
    assert result.frame["speedup"].isna().all()
    assert result.frame["reason"].str.contains("0 of 6 rounds clean").all()
    html = write_report(tmp_path).read_text()
    assert "Read with care" in html and "2 row(s) are noisy" in html
    assert "No variant has a speedup against eager" in html


def test_a_variant_measured_alone_is_timed_again_when_its_rounds_were_contended(tmp_path,
                                                                               monkeypatch):
    from specs import run_spec

    loads = iter([RoundLoad(0.1, others_cores=0.0, wait_frac=0.9)] * 3)

    def stop(self):  # the first 3 shares wait for a CPU, the rest do not
        return next(loads, QUIET)

    monkeypatch.setattr(LoadMeter, "stop", stop)
    _only_contention_judges(monkeypatch)
    eager = registry.get_variant("matmul_add", "eager")
    spec = run_spec(tmp_path, CASE, timing=replace(QUICK, rounds=3))
    out = case_run.measure(registry.get_op("matmul_add"), eager, CASE, spec)
    assert out.row.ok and [s.round for s in out.slots] == [0, 1, 2, 3, 4, 5]
    assert [s.state for s in out.slots] == [rc.CONTENDED] * 3 + [rc.CLEAN] * 3
