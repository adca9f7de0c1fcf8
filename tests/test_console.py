"""The console: the time left on progress lines, reasons cut at a word, and the commands from any
folder. (No empty run_suite.log in a run folder: tests/test_end_to_end.py, on its tiny run.)"""
import io
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from kernels import registry
from kernels.base import Case
from suites.harness.progress import (DETAIL_CHARS, CaseWork, Progress, case_cost, clock_text,
                                     time_left)
from suites.results.row import ResultRow
from suites.common.text import ELLIPSIS, cut
from test_end_to_end import ROOT, assert_finished

HEADER = re.compile(r"^\[ *\d+- *\d+/\d+(?:, (?P<eta>[\d:]+) left"
                    r"(?: \+ (?P<again>\d+) re-measures?)?)?\] (?P<case>\S+)$")


class FakeClock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def seconds(text: str) -> int:
    parts = [int(p) for p in text.split(":")]
    return sum(p * 60 ** i for i, p in enumerate(reversed(parts)))


WORK = CaseWork(budget_s=0.4, min_calls=10, other_calls=12)  # the default timing's shape


def sweep(costs, call_s, variants=2, noisy=(), warmup=0.0, fixed=0.3):
    """Run Progress over cases of `costs` as the runner does: each variant's calls take
    call_s(cost) seconds, a case as long as the harness spends on them (WORK) plus `fixed`, on
    a fake clock (the first case `warmup` more); the header lines, parsed, by case."""
    clock, out = FakeClock(), io.StringIO()
    progress = Progress(len(costs) * variants, enabled=True, stream=out, costs=costs, clock=clock,
                        work=WORK)
    for i, cost in enumerate(costs):
        progress.start(f"case{i}", variants)
        clock.now += fixed + variants * WORK.seconds(call_s(cost)) + (warmup if i == 0 else 0.0)
        status = {"status": "noisy", "reason": "too few clean rounds"} if i in noisy else {
            "median_us": call_s(cost) * 1e6, "mean_us": call_s(cost) * 1e6,
            "rounds": 3}
        progress.finish([ResultRow.from_record({"variant": f"v{v}", **status})
                         for v in range(variants)])
    headers = [HEADER.match(line) for line in out.getvalue().splitlines() if line[0] == "["]
    assert all(headers), out.getvalue()
    return headers, out.getvalue(), progress, clock


def case_seconds(call, variants=2, fixed=0.3):
    return fixed + variants * WORK.seconds(call)


def test_no_estimate_before_a_case_is_done_then_one_on_every_line():
    headers, _, _, _ = sweep([1.0] * 4, lambda c: 1e-3)
    assert headers[0]["eta"] is None
    per_case = case_seconds(1e-3)
    assert [seconds(h["eta"]) for h in headers[1:]] == [round(per_case * k) for k in (3, 2, 1)]


def test_a_sweep_budget_bound_at_first_and_call_bound_at_the_end_is_estimated_by_its_work():
    """Sizes 64 ... 2048: a call's time grows with the model cost (~s^3), but the small cases all
    take the timing budget. A straight line through the first cases' times, or rows per
    second, is wrong both ways; the harness's own arithmetic, with each call fitted on the cases done, is
    right once two cases are done (within rounding)."""
    costs = [2 * s ** 3 * 1e-9 for s in (64, 128, 256, 512, 1024, 2048)]
    call = lambda c: 2e-5 + c / 10  # noqa: E731  overhead, then ~0.1 of the model's time
    headers, _, _, _ = sweep(costs, call, warmup=5.0)
    for k in range(2, len(costs)):
        truth = sum(case_seconds(call(c)) for c in costs[k:])
        assert abs(seconds(headers[k]["eta"]) - truth) <= 0.2 * truth + 1, (k, headers[k][0])
    # The first cases take the budget: a line through them would say a few seconds are left.
    assert case_seconds(call(costs[1])) == pytest.approx(case_seconds(call(costs[2])), rel=0.1)
    assert seconds(headers[3]["eta"]) > 10 * case_seconds(call(costs[2])) * 3


def test_without_a_measured_call_the_mean_case_time():
    """Cases whose variants were all skipped so far: the mean time per case done."""
    assert time_left([3.0, 2.0, 2.0], [{}, {}, {}], [1.0] * 3, [1.0] * 2, WORK) == \
        pytest.approx(2 * 7 / 3)
    assert time_left([], [], [], [1.0], WORK) is None


def test_remeasures_are_counted_not_guessed():
    headers, _, progress, clock = sweep([1.0] * 4, lambda c: 10.0, noisy=(0, 2))
    assert [h["again"] for h in headers] == [None, "1", "1", "2"]
    out = progress.stream
    progress.again("case0")
    clock.now += 3.0
    progress.finish([ResultRow.from_record({"variant": "v0", "median_us": 1.0, "mean_us": 1.0, "rounds": 6})])
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



def test_the_quick_start_says_how_to_reach_the_installed_commands():
    """`make` puts fusebench-* in .venv/bin, which is on no one's PATH: the README's quick start
    names both ways to them, the path and the venv activated."""
    quick = (ROOT / "README.md").read_text().split("## Quick start", 1)[1].split("\n## ", 1)[0]
    for way in (".venv/bin/fusebench-run", "source .venv/bin/activate"):
        assert way in quick, way
    named = set(re.findall(r"`(fusebench-[a-z]+)`", quick))
    assert named == {"fusebench-run", "fusebench-report", "fusebench-compare",
                     "fusebench-collect", "fusebench-analyze"}, named
    assert all((Path(sys.executable).parent / name).exists() for name in named)

# --- the printed command that finishes a stopped run, from any folder ---------------------------

# Loaded at start-up (a sitecustomize on PYTHONPATH) by the run under test, whichever command
# starts it: once the first case's rows are in the journal, a SIGINT, as a user's Ctrl-C. The
# run stops after that case and prints the command that finishes it.
STOP_AFTER_FIRST_CASE = """
import os, signal
from suites.results import journal
append, sent = journal.append, []

def append_then_stop(path, frame):
    append(path, frame)
    if path.name == journal.MEASUREMENTS_CSV and not sent:
        sent.append(os.kill(os.getpid(), signal.SIGINT))

journal.append = append_then_stop
"""
TWO_CASES = ["device=cpu", "timing=quick", "calibrate=false", "profile=off",
             "suite.sizes=[16,24]", "suite.variants=[eager,addmm]", "suite.dtypes=[float32]"]


def _stopped_after_one_case(tmp_path, started_as):
    """Start a run of two cases as a user would (`python run_suite.py` in the clone, with a
    run folder given absolute; or the installed `fusebench-run` in a folder of its own, with
    a relative one); it stops after the first. Its folder and its last stderr line."""
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(STOP_AFTER_FIRST_CASE)
    env = {**outside_env(), "PYTHONPATH": str(hook), "PYTHONUNBUFFERED": "1"}
    env.pop("TRITON_INTERPRET", None)
    if started_as == "script":
        cwd, folder, given = ROOT, tmp_path / "run", str(tmp_path / "run")
        command = [sys.executable, "run_suite.py"]
    else:
        cwd = tmp_path / "start"
        cwd.mkdir()
        folder, given = cwd / "run", "run"
        command = [str(Path(sys.executable).parent / "fusebench-run")]
    done = subprocess.run([*command, *TWO_CASES, f"hydra.run.dir={given}"], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 130, (done.returncode, done.stderr[-3000:])
    return folder, done.stderr.strip().splitlines()[-1]


@pytest.mark.parametrize("started_as", ["script", "installed"])
def test_the_printed_command_finishes_a_stopped_run_from_another_folder(tmp_path, started_as):
    """What a stopped run prints is pasted in another folder, in a shell without the venv on
    PATH: it names this interpreter and run_suite.py by absolute paths, and the folder too."""
    folder, last = _stopped_after_one_case(tmp_path, started_as)
    assert "interrupted by SIGINT: 2 of 4 rows" in last, last
    printed = last.split("to finish it: ", 1)[1]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {k: v for k, v in outside_env().items() if k != "TRITON_INTERPRET"}
    env["PATH"] = "/usr/bin:/bin"  # no venv on it: the pasted command needs none
    done = subprocess.run(printed, shell=True, cwd=elsewhere, env=env, capture_output=True,
                          text=True, timeout=600)
    assert_finished(done, folder)
    assert len(pd.read_csv(folder / "measurements.csv")) == 4
    assert list(elsewhere.iterdir()) == []  # the run finished in its folder, nothing here
    words = shlex.split(printed)
    assert words[:2] == [sys.executable, str(ROOT / "run_suite.py")], words
    assert words[-2:] == ["resume=true", f"hydra.run.dir={folder}"], words


# --- no line of torch's own on the console ------------------------------------------------------

# Every case probed for memory (memory_probe.py: on a CPU, under torch.profiler), as the largest
# default cases are on any machine; loaded at start-up as above.
PROBE_EVERY_CASE = """
from suites.harness import memory_probe
memory_probe.QUICK_SHARE = 0.0
"""


def test_a_profiled_run_with_memory_probes_prints_no_usdt_line(tmp_path):
    """Kineto writes `USDT: ... profiler_start` / `profiler_stop` to file descriptor 2 at every
    profiler session; the run's own sessions (profile pass, launch floor, memory probe) hold
    them back, so a run's console holds none."""
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(PROBE_EVERY_CASE)
    env = {**outside_env(), "PYTHONPATH": str(hook), "PYTHONUNBUFFERED": "1"}
    env.pop("TRITON_INTERPRET", None)
    folder = tmp_path / "run"
    done = subprocess.run([sys.executable, str(ROOT / "run_suite.py"), "device=cpu",
                           "timing=quick", "calibrate=false", "suite.sizes=[16]",
                           "suite.variants=[eager,addmm]", "suite.dtypes=[float32]",
                           f"hydra.run.dir={folder}"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=600)
    assert_finished(done, folder)
    env_json = json.loads((folder / "env.json").read_text())
    assert [p["case"] for p in env_json["memory_probes"]] == ["M16-N16-K16-fp32"]
    assert (folder / "traces").is_dir()  # profiled too
    usdt = [line for line in (done.stdout + done.stderr).splitlines() if "USDT:" in line]
    assert usdt == [], usdt
