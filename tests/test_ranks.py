"""Several ranks of one job (suites/traces/ranks.py, `python -m suites.analyze FOLDER`), on real
traces recorded here (tests/fixtures/multirank/: three gloo ranks, balanced, and with rank 2 given
about 40 ms of extra work a step): the slowest rank per step, the time the others lost waiting
for it in collectives against the communication itself, and the ranks whose verdict differs."""
from __future__ import annotations

import statistics
from pathlib import Path

import pandas as pd
import pytest

from suites.traces import command
from suites.traces import ranks as across
from suites.traces.call_profile import CallProfile
from suites.traces.events import read_trace
from suites.traces.findings.step_bound import step_bound
from suites.traces.steps import analyze

FIXTURES = Path(__file__).parent / "fixtures" / "multirank"


def load(folder: str, reverse: bool = False):
    paths = sorted((FIXTURES / folder).glob("rank*.json.gz"), reverse=reverse)
    ranks = across.load([(p, CallProfile(analyze(read_trace(p)))) for p in paths])
    return ranks, across.across(ranks)


@pytest.fixture(scope="module")
def skewed():
    return load("skewed")


def _extra_work_per_step(rank) -> float:
    trace = rank.profile.analysis.trace
    steps = rank.profile.steps
    inside = [e.dur for e in trace.annotations if e.name == "extra_work"
              and any(s.call.ts <= e.ts < s.call.end for s in steps)]
    return sum(inside) / len(steps)


def test_the_slow_rank_is_found_and_the_others_wait_its_extra_work(skewed):
    ranks, steps = skewed
    assert [r.rank for r in ranks] == [0, 1, 2] and ranks[0].backend == "gloo"
    assert len(steps) == 4 and all(s.slowest == 2 for s in steps)
    extra = _extra_work_per_step(ranks[2])
    assert 30_000 < extra < 60_000  # asked for 40 ms
    for r in (0, 1):
        wait = statistics.fmean(s.wait_us[r] for s in steps)
        assert wait == pytest.approx(extra, rel=0.3), (r, wait, extra)
        # the communication itself is a small part of their time in collectives
        assert statistics.fmean(s.pure_us for s in steps) < 0.5 * wait
    assert all(s.wait_us[2] == 0 for s in steps)  # it arrived last: it waited for no one


def test_balanced_ranks_lose_far_less_to_skew(skewed):
    ranks, steps = load("balanced")
    _, skewed_steps = skewed
    wait = statistics.fmean(statistics.fmean(s.wait_us[r] for r in (0, 1)) for s in steps)
    skewed_wait = statistics.fmean(statistics.fmean(s.wait_us[r] for r in (0, 1))
                                   for s in skewed_steps)
    assert wait < 0.25 * skewed_wait, (wait, skewed_wait)
    lines = across.findings(ranks, steps)
    assert not any("mostly waiting" in line for line in lines)


def test_the_findings_name_the_skew_and_the_verdicts_that_differ(skewed):
    ranks, steps = skewed
    lines = across.findings(ranks, steps)
    assert lines[0] == "slowest rank: rank 2 in 4 of 4 step(s)"
    assert any(line.startswith("the time in collectives is mostly waiting for rank 2")
               for line in lines)
    differ = next(line for line in lines if line.startswith("verdicts differ"))
    assert "rank 2 compute-bound (CPU compute)" in differ, differ
    # What the slowest rank does that the others do not is named, from its own ranges.
    mostly = next(line for line in lines if line.startswith("the time in collectives"))
    extra = _extra_work_per_step(ranks[2])
    assert extra > 30_000 and (f"rank 2 spends {extra / 1e3:.3g} ms a step in extra_work, the "
                               "other ranks none: that is what they wait for") in mostly, mostly
    # Each waiting rank's own verdict is told what its time in collectives was.
    for r in ranks[:2]:
        assert "is waiting for rank 2: skew, not communication]" in across.waiting_note(r, steps)
    assert across.waiting_note(ranks[2], steps) == ""


def test_a_rank_that_mostly_waits_for_the_slowest_is_judged_waiting_not_communicating(skewed):
    ranks, steps = skewed
    for r in ranks[:2]:
        assert r.own_verdict == "communication-bound (CPU collectives)"
        assert r.verdict == "waiting for rank 2 (skew)" and r.skew.slowest == 2
        wait = statistics.fmean(s.wait_us[r.rank] for s in steps)
        window = statistics.fmean(s.window_us[r.rank] for s in steps)
        assert r.share == pytest.approx(wait / window) and r.share > 0.5
        # the runner-up is the communication itself, the rest of its time in collectives
        pure = statistics.fmean(s.pure_us for s in steps) / window
        assert r.runner_up == "CPU collectives"
        assert r.skew.runner_up_share == pytest.approx(pure, abs=0.02)
        assert across.skew_statement(r).startswith(
            f"waiting for rank 2 (skew): {r.share:.0%} of its step")
        # its own trace's statement is one step's: named
        assert across.skew_statement(r).endswith(
            f"Its own trace says, of {r.bound.step.name}: ")
    slow = ranks[2]
    assert slow.skew is None and slow.verdict == slow.own_verdict == "compute-bound (CPU compute)"
    assert across.skew_statement(slow) == ""
    differ = next(line for line in across.findings(ranks, steps)
                  if line.startswith("verdicts differ"))
    assert differ.startswith("verdicts differ: most ranks waiting for rank 2 (skew); rank 2 "
                             "compute-bound (CPU compute): ranks 0 and 1 read as bound"), differ
    # Balanced ranks share one bound, though rank 2's holds in 2 of 4 steps: no difference.
    balanced, balanced_steps = load("balanced")
    assert not any(line.startswith("verdicts differ")
                   for line in across.findings(balanced, balanced_steps))


def test_balanced_ranks_keep_their_own_verdicts():
    ranks, steps = load("balanced")
    assert all(r.skew is None and r.verdict == r.own_verdict for r in ranks)
    # The table's figures are over the steps alike: a rank bound on its collectives has the
    # share its columns give, collectives_ms against step_ms, both means (it was one step's
    # 75% beside a median step and mean collectives).
    rows = across.rank_rows(ranks, steps)
    for r, row in zip(ranks, rows):
        assert r.own_verdict.startswith("communication-bound (CPU collectives)")
        assert row["share"] == pytest.approx(row["collectives_ms"] / row["step_ms"])
        assert row["step_ms"] == pytest.approx(
            statistics.fmean(s.window_us[r.rank] for s in steps) / 1e3)
    # Rank 2's bound holds in 2 of its 4 steps: no majority, said so.
    assert ranks[2].own_verdict == "communication-bound (CPU collectives) in 2 of 4 steps"
    # Another bound's share is its part's mean against the mean step.
    slow = load("skewed")[0][2]
    bounds = [step_bound(s, slow.profile.analysis.mode) for s in slow.profile.steps]
    assert slow.share == pytest.approx(sum(b.parts["CPU compute"] for b in bounds)
                                       / sum(b.window_us for b in bounds))


def test_ranks_come_from_the_traces_not_the_file_order(skewed):
    ranks, steps = load("skewed", reverse=True)
    assert [r.rank for r in ranks] == [0, 1, 2]
    assert [r.path.name for r in ranks] == ["rank0.json.gz", "rank1.json.gz", "rank2.json.gz"]
    assert all(s.slowest == 2 for s in steps)


def test_the_command_reads_a_folder_or_several_files_alike(tmp_path, capsys):
    assert command.main([str(FIXTURES / "skewed"), "--csv", str(tmp_path / "a")]) == 0
    folder = capsys.readouterr().out
    files = sorted(str(p) for p in (FIXTURES / "skewed").glob("*.json.gz"))
    assert command.main(files) == 0
    assert capsys.readouterr().out.split("\nacross ranks:")[1] == \
        folder.split("\nacross ranks:")[1].split("\ncsv:")[0]
    assert folder.startswith("3 ranks (gloo), 4 step(s) on every rank:")
    table = pd.read_csv(tmp_path / "a" / "ranks.csv")
    assert list(table["rank"]) == [0, 1, 2] and list(table["slowest_in_steps"]) == [0, 0, 4]
    assert len(pd.read_csv(tmp_path / "a" / "rank_steps.csv")) == 12


def test_bad_multi_rank_input_is_one_line(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    assert command.main([str(tmp_path / "empty")]) == 2
    assert "a folder with no trace in it" in capsys.readouterr().err
    assert command.main([str(FIXTURES / "skewed"), "--suggest"]) == 2
    assert "--suggest reads one trace" in capsys.readouterr().err


def test_gpu_ranks_show_their_timelines_side_by_side(skewed):
    from suites.traces.gpu_timeline import trace_timeline
    real = Path(__file__).parent / "fixtures" / "real_traces"
    paths = [real / "h100_bert_small.json.gz", real / "mi300_bert_small.json.gz"]
    ranks = across.load([(p, CallProfile(analyze(read_trace(p)))) for p in paths])
    rows = across.rank_rows(ranks, across.across(ranks))
    for row, r in zip(rows, ranks):
        t = trace_timeline(r.profile.analysis.trace)
        assert row["computation_pct"] == pytest.approx(100 * t.computation_us / t.total_us)
        assert row["idle_pct"] == pytest.approx(100 * t.idle_us / t.total_us)
        assert 85 < row["idle_pct"] < 95  # both launch-bound: the GPU mostly idle
    cpu_ranks, cpu_steps = skewed
    assert "computation_pct" not in across.rank_rows(cpu_ranks, cpu_steps)[0]


def test_a_rank_that_cannot_be_read_is_said_and_the_job_read_from_the_others(tmp_path, capsys):
    """One rank's file cut short (a job killed while writing): the others are compared, and
    the page says which file was left out and why; none readable is one line."""
    (tmp_path / "job").mkdir()
    for name in ("rank0.json.gz", "rank2.json.gz"):
        (tmp_path / "job" / name).write_bytes((FIXTURES / "skewed" / name).read_bytes())
    cut = (FIXTURES / "skewed" / "rank1.json.gz").read_bytes()
    (tmp_path / "job" / "rank1.json.gz").write_bytes(cut[:len(cut) // 3])
    assert command.main([str(tmp_path / "job")]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"note: not read, so not among the ranks below: {tmp_path}/job/"
                          "rank1.json.gz: cannot read the file"), out
    assert "\n2 ranks (gloo), 4 step(s) on every rank:" in out
    assert "slowest rank: rank 2 in 4 of 4 step(s)" in out
    (tmp_path / "job" / "rank0.json.gz").unlink()
    assert command.main([str(tmp_path / "job")]) == 0  # one rank left: read, nothing compared
    out = capsys.readouterr().out
    assert "\n1 rank (gloo), " in out and "one rank read: nothing to compare across ranks" in out
    (tmp_path / "job" / "rank2.json.gz").unlink()
    (tmp_path / "job" / "rank3.json").write_text("[")
    assert command.main([str(tmp_path / "job")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "rank1.json.gz: cannot read the file" in err


def test_two_files_that_say_one_rank_are_numbered_and_said(tmp_path, capsys):
    files = [str(FIXTURES / "skewed" / "rank0.json.gz")] * 2  # the same trace given twice
    assert command.main(files) == 0
    out = capsys.readouterr().out
    assert out.startswith("note: rank0.json.gz and rank0.json.gz both say rank 0 "
                          "(distributedInfo): the ranks are numbered by file order"), out


def test_traces_that_cannot_be_one_jobs_ranks_are_said_to_differ(capsys):
    real = FIXTURES.parent / "real_traces"
    files = [FIXTURES / "skewed" / "rank0.json.gz", real / "h100_bert_small.json.gz",
             real / "mi300_bert_small.json.gz"]
    assert command.main([str(f) for f in files]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first == ("note: kinds differ (cpu: rank0.json.gz; gpu: h100_bert_small.json.gz, "
                     "mi300_bert_small.json.gz); devices differ (NVIDIA H100 80GB HBM3: "
                     "h100_bert_small.json.gz; AMD Instinct MI300X VF: mi300_bert_small.json.gz): "
                     "these may not be the ranks of one job"), first
    assert command.main([str(FIXTURES / "balanced")]) == 0  # one job's ranks: nothing said
    assert capsys.readouterr().out.startswith("3 ranks (gloo)")
