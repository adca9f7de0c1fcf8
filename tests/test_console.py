"""The console: the time left on progress lines, reasons cut at a word, and the commands from any
folder. (No empty run_suite.log in a run folder: tests/test_end_to_end.py, on its tiny run.)"""
import io
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from kernels import registry
from kernels.base import Case
from suites.harness.progress import DETAIL_CHARS, Progress, case_cost, clock_text, time_left
from suites.results.row import ResultRow
from suites.text import ELLIPSIS, cut

HEADER = re.compile(r"^\[ *\d+- *\d+/\d+(?:, (?P<floor>≥?)(?P<eta>[\d:]+) left"
                    r"(?: \+ (?P<again>\d+) re-measures?)?)?\] (?P<case>\S+)$")


class FakeClock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def seconds(text: str) -> int:
    parts = [int(p) for p in text.split(":")]
    return sum(p * 60 ** i for i, p in enumerate(reversed(parts)))


def sweep(costs, case_time, variants=2, noisy=(), warmup=0.0):
    """Run Progress over cases of `costs` as the runner does, each taking case_time(cost) on a
    fake clock (the first `warmup` more); the header lines, parsed, by case."""
    clock, out = FakeClock(), io.StringIO()
    progress = Progress(len(costs) * variants, enabled=True, stream=out, costs=costs, clock=clock)
    for i, cost in enumerate(costs):
        progress.start(f"case{i}", variants)
        clock.now += case_time(cost) + (warmup if i == 0 else 0.0)
        status = {"status": "noisy", "reason": "too few clean rounds"} if i in noisy else {
            "median_us": 1.0, "rounds": 3}
        progress.finish([ResultRow.from_record({"variant": f"v{v}", **status})
                         for v in range(variants)])
    headers = [HEADER.match(line) for line in out.getvalue().splitlines() if line[0] == "["]
    assert all(headers), out.getvalue()
    return headers, out.getvalue(), progress, clock


def test_no_estimate_before_a_case_is_done_then_one_on_every_line():
    headers, _, _, _ = sweep([1.0] * 4, lambda c: 10.0)
    assert headers[0]["eta"] is None
    assert [seconds(h["eta"]) for h in headers[1:]] == [30, 20, 10]


def test_growing_cases_are_extrapolated_by_model_cost_not_by_rows():
    """Sizes 64 ... 2048, wall time = 0.5 s + cost (FLOPs-like, ~s^3), and a first case with 5 s
    of warm-up: from the fourth case on, the estimate is the true time left; rows per second
    would promise a fraction of it."""
    costs = [2 * s ** 3 * 1e-9 for s in (64, 128, 256, 512, 1024, 2048)]
    case_time = lambda c: 0.5 + c  # noqa: E731
    headers, _, _, _ = sweep(costs, case_time, warmup=5.0)
    for k in range(3, len(costs)):
        truth = sum(case_time(c) for c in costs[k:])
        assert abs(seconds(headers[k]["eta"]) - truth) <= 1, (k, headers[k].group(0), truth)
        elapsed = 5.0 + sum(case_time(c) for c in costs[:k])
        per_row = elapsed / k * (len(costs) - k)  # what a linear rows-done estimate says
        assert per_row < 0.5 * truth  # ... so the model is what makes the estimate true
        assert headers[k]["floor"] == ""


def test_a_floor_when_growth_is_not_yet_seen():
    """Small cases cost the same (the timing budget dominates): the cases left are bigger, so
    the time per case so far is a floor, and says so."""
    headers, _, _, _ = sweep([1.0, 1.0, 1.0, 50.0], lambda c: 2.0 if c < 10 else 40.0)
    assert headers[3]["floor"] == "≥" and seconds(headers[3]["eta"]) == 2
    # Without costs (an op whose model cannot say): the mean time per case.
    assert time_left([3.0, 2.0, 2.0], [1.0] * 3, [1.0] * 2) == (4.0, False)
    assert time_left([], [], [1.0]) is None


def test_remeasures_are_counted_not_guessed():
    headers, _, progress, clock = sweep([1.0] * 4, lambda c: 10.0, noisy=(0, 2))
    assert [h["again"] for h in headers] == [None, "1", "1", "2"]
    out = progress.stream
    progress.again("case0")
    clock.now += 3.0
    progress.finish([ResultRow.from_record({"variant": "v0", "median_us": 1.0, "rounds": 6})])
    tail = out.getvalue().splitlines()[-3:]
    assert tail[0] == "[re-measuring] case0: too few clean timing rounds, timed again"
    assert "left" not in tail[0] and tail[-1] == "    (3.0 s)"


def test_clock_text():
    assert [clock_text(s) for s in (0.4, 41, 725, 3729)] == ["0:00", "0:41", "12:05", "1:02:09"]


def test_case_cost_is_the_ops_model_time():
    op = registry.get_op("matmul_add")
    cases = [Case.make("matmul_add", {"M": s, "N": s, "K": s}, "float32", "cpu")
             for s in (64, 128, 4096)]
    flops = [case_cost(op, c) for c in cases]
    assert flops == [op.flops(c) for c in cases] and flops[2] > 1000 * flops[1]
    peaks = {"matmul_tflops": {"float32": 2.0}, "copy_gbps": 50.0}
    assert case_cost(op, cases[2], peaks) == pytest.approx(op.flops(cases[2]) / 2e12)
    tiny = Case.make("matmul_add", {"M": 1, "N": 4096, "K": 1}, "float32", "cpu")
    assert case_cost(op, tiny, peaks) == pytest.approx(op.bytes_ideal(tiny) / 50e9)  # memory


# --- reasons cut at a word ---------------------------------------------------------------------

LONG = ("noisy: 1 of 3 rounds clean (3 needed): 2 contended (the timing's threads waited for a "
        "CPU for 66% of the share's time (summed over threads: another process held the cores))")


@pytest.mark.parametrize("width", [20, 41, 60, 100])
def test_a_long_reason_is_cut_after_a_whole_word(width):
    text = cut(LONG, width)
    assert len(text) <= width and text.endswith(ELLIPSIS)
    head = text[:-1]
    assert LONG.startswith(head) and LONG[len(head)] in " ,;:(", (width, text)
    assert head[-1] not in " ,;:(-"  # no dangling separator before the ellipsis


def test_a_reason_without_spaces_and_a_short_one():
    assert cut("x" * 150, 100) == "x" * 99 + ELLIPSIS
    assert cut("skipped: needs a CUDA GPU", 100) == "skipped: needs a CUDA GPU"
    assert cut("a" * 100, 100) == "a" * 100
    assert cut("two\n  lines", 100) == "two lines"


def test_the_console_cuts_what_measurements_csv_keeps_whole():
    out = io.StringIO()
    progress = Progress(1, enabled=True, stream=out)
    progress.start("case0", 1)
    row = ResultRow.from_record({"variant": "eager", "status": "noisy", "reason": LONG[7:]})
    progress.finish([row])
    line = out.getvalue().splitlines()[1]
    assert line.endswith(ELLIPSIS) and line.split(None, 1)[1] == cut(LONG, DETAIL_CHARS)
    assert row.record()["reason"] == LONG[7:]  # measurements.csv's row: the whole reason


# --- the commands from any folder ----------------------------------------------------------------

def outside_env():
    """The environment of a user in another folder: nothing points Python at the clone."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


def test_the_commands_work_from_any_folder(tmp_path):
    """`make` installs the project editable (pip install -e .): its commands and `python -m
    suites...` then work outside the clone."""
    bin_dir = Path(sys.executable).parent
    if not (bin_dir / "fusebench-report").exists():
        pytest.fail(f"fusebench is not installed in {bin_dir.parent}: run `make` (it does "
                    "pip install --no-build-isolation --no-deps -e .)")
    for cmd in ([str(bin_dir / "fusebench-report"), "--help"],
                [sys.executable, "-m", "suites.compare", "--help"]):
        done = subprocess.run(cmd, cwd=tmp_path, env=outside_env(), capture_output=True,
                              text=True, timeout=120)
        assert done.returncode == 0 and "usage:" in done.stdout, (cmd, done.stderr[-2000:])
    assert list(tmp_path.iterdir()) == []  # --help leaves nothing behind
    # The run itself, its config resolved from the clone's conf/ wherever it starts.
    done = subprocess.run([str(bin_dir / "fusebench-run"), "--cfg", "job", "suite=norm",
                           "device=cpu"], cwd=tmp_path, env=outside_env(), capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0 and "name: norm" in done.stdout, done.stderr[-2000:]
