"""python -m suites.analyze on real GPU fixtures, on a CPU trace the suite wrote, on a generated
multi-step trace larger than the reader's window, and on bad files."""
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from kernels import registry
from kernels.base import Case
from suites.traces.command import main
from suites.tools.trace_speed import write_trace
from suites.harness.case_run import measure
from suites.harness.profile_pass import ProfileSpec
from specs import run_spec
from suites.common.audit import every_number_finite, finite
from suites.traces.event_times import FAR_START, PAST_THE_CLOCK
from suites.traces.events import TraceFormatError, read_trace
from suites.traces.steps import analyze
from trace_builders import ALEXNET_TRACE, TRITON_TRACE, load, write


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_triton_fixture_summary(capsys, tmp_path):
    code, out, _ = run(capsys, TRITON_TRACE, "--csv", tmp_path)
    assert code == 0
    assert ("mode: gpu (CUDA, ROCm or MTIA activities) on NVIDIA A100-PG509-200; 1 step(s)"
            in out)
    assert "triton_poi_fused_add_cos_sin_0" in out and "the queue runs empty" in out
    steps = pd.read_csv(tmp_path / "steps.csv")
    assert steps["kernels"].tolist() == [1] and steps["launch_api_us"].iloc[0] == pytest.approx(47.768)
    assert steps["verdict"].tolist() == ["host: Python, dispatch, launch"]
    # One 1.76 us kernel in a 1531 us step: the device waited for the host the rest of it.
    assert steps["host_wait_us"].iloc[0] + 1.76 == pytest.approx(steps["window_us"].iloc[0], abs=5)
    assert set(pd.read_csv(tmp_path / "findings.csv")["code"]) >= {"inductor_kernels",
                                                                   "overhead_bound"}


def test_real_traces_verdicts(capsys):
    """What an engineer reading each trace would say first."""
    expected = {"a100_alexnet_fp32": "init_bound", "sglang_qwen3_8b_decode": "device_wait",
                "h100_qwen1.5_0.5b": "compute_bound", "mi300_qwen1.5_0.5b": "compute_bound",
                "h100_bert_small": "overhead_bound", "mi300_bert_small": "overhead_bound",
                "vllm_decode_cuda_graphs": "compute_bound"}
    for name, code in expected.items():
        path = next(Path(__file__).parent.glob(f"fixtures/*/{name}.json.gz"))
        exit_code, out, _ = run(capsys, path)
        first = out.split("findings:\n", 1)[1].splitlines()[0]
        assert exit_code == 0 and f"] {code}: " in first, (name, first)
        if name == "sglang_qwen3_8b_decode":
            # its stream waits 463 ms on an event the trace does not record; the host's copy
            # only blocks behind that wait
            assert "behind a hipStreamWaitEvent" in first and "The host blocked 463 ms" in first
        if name == "vllm_decode_cuda_graphs":
            # Its first 7.8 ms the device ran nothing the trace holds, with work queued (work
            # launched before the profiler started, or a wait): judged without that stretch,
            # not called idle; busy 95% of the rest.
            assert "GPU-bound: kernels run 95% of the step" in first, first
            assert "judged in the window after its first 7.83 ms" in first, first
            assert "idle_gaps" not in out


def test_the_mode_line_names_an_unnamed_device_and_the_job(capsys):
    """vLLM's ROCm trace lists its devices with empty names; B200's is rank 0 of 8 (NCCL)."""
    real = Path(__file__).parent / "fixtures" / "real_traces"
    _, out, _ = run(capsys, real / "vllm_decode_cuda_graphs.json.gz")
    assert "on an AMD GPU of compute version 9.4, 304 CUs (MI300X?); 1 step(s)\n" in out
    _, out, _ = run(capsys, real / "b200_eager.json.gz")
    assert ("on NVIDIA B200; 1 step(s); rank 0 of 8 (nccl): pass a folder holding every rank's "
            "trace to compare the ranks") in out
    _, out, _ = run(capsys, real / "h100_bert_small.json.gz")
    assert "on NVIDIA H100 80GB HBM3; 1 step(s)\n" in out  # no distributedInfo: no job


def test_alexnet_without_profiler_steps_and_with_user_steps(capsys, tmp_path):
    code, out, _ = run(capsys, ALEXNET_TRACE, "--csv", tmp_path)
    assert code == 0 and "whole trace" in out
    assert pd.read_csv(tmp_path / "steps.csv")["kernels"].tolist() == [98]
    kernels = pd.read_csv(tmp_path / "kernels.csv")
    assert kernels.loc[kernels["kind"] == "kernel", "total_us_per_call"].sum() == pytest.approx(10728)
    # Two ranges of that name, one nested in the other: one step, its kernels counted once.
    code, out, _ = run(capsys, ALEXNET_TRACE, "--steps", r"measure\|forward")
    assert code == 0 and "1 step(s)" in out


def test_cpu_trace_written_by_the_suite(capsys, tmp_path):
    case = Case.make("matmul_add", {"M": 48, "N": 48, "K": 48}, "float32", "cpu")
    spec = run_spec(tmp_path, case, profile=ProfileSpec(True, 1, 1, 3, False, 10))
    row = measure(registry.get_op("matmul_add"), registry.get_variant("matmul_add", "eager"),
                  case, spec, None).row
    code, out, _ = run(capsys, tmp_path / row.profile.trace, "--label", "eager", "--csv",
                       tmp_path / "csv")
    assert code == 0 and "mode: cpu (no device in the trace); 3 step(s)" in out
    assert "aten::mm" in out
    steps = pd.read_csv(tmp_path / "csv" / "steps.csv")
    assert steps["kernels"].tolist() == [2, 2, 2]  # aten::mm and aten::add per call


def test_generated_trace_bigger_than_the_read_window(capsys, tmp_path):
    path = tmp_path / "big.json.gz"
    copies = write_trace(path, 3, ALEXNET_TRACE, compress=True)
    code, out, _ = run(capsys, path, "--csv", tmp_path)
    assert code == 0
    steps = pd.read_csv(tmp_path / "steps.csv")
    assert len(steps) == copies >= 3
    assert (steps["kernels"] == 98).all()  # every copy of the AlexNet forward, by correlation
    assert f"showing 20 of {copies}" in out or copies <= 20


def test_trace_speed_scales_its_targets_by_the_text_not_the_gzip(capsys, tmp_path, monkeypatch):
    """A 3 MB trace gzipped to a fraction of that is judged against 3 MB's targets."""
    from suites.tools import trace_speed
    path = tmp_path / "big.json.gz"
    write_trace(path, 3, ALEXNET_TRACE, compress=True)
    monkeypatch.setattr(trace_speed, "measure", lambda p: (0.01, 1.0, "(123 events"))
    trace_speed.main(["--trace", str(path)])
    out = capsys.readouterr().out
    text_mb = trace_speed.text_size(path) / 1e6
    assert text_mb > 2.5 and path.stat().st_size < 1e6
    assert f"({text_mb:.0f} MB, {path.stat().st_size / 1e6:.0f} MB gzipped, 123 events" in out
    assert f"targets {10 * text_mb / 1e3:.3g} s, {text_mb:.0f} MB: ok" in out


@pytest.mark.parametrize("content, message", [
    (b"not json at all", "expected one of"),
    (b'{"traceEvents": [{"ph": "X", "ts": 1', "invalid JSON"),
    (b"\x1f\x8b\x08\x00garbage", "cannot read the file"),
])
def test_malformed_files_get_one_line_errors(capsys, tmp_path, content, message):
    path = tmp_path / "bad.json"
    path.write_bytes(content)
    code, out, err = run(capsys, path)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("fusebench: error: ") and message in err


def test_missing_file(capsys, tmp_path):
    code, _, err = run(capsys, tmp_path / "nope.json")
    assert code == 2 and "no such file" in err


def test_the_command_line_says_both_times_and_keeps_the_trace_to_its_exit(capsys, monkeypatch):
    """suites.analyze ends by os._exit: the trace it read is handed on, not freed event by
    event when the command returns. Reading and analysing are timed apart."""
    from suites.traces import command
    from suites.traces.events import Trace
    kept = []
    monkeypatch.setattr(command, "outlive_the_run", kept)
    code, out, _ = run(capsys, TRITON_TRACE)
    assert code == 0 and [type(t) for t in kept] == [Trace] and kept[0].n_events == 71
    assert re.search(r"\(71 events, read in [0-9.]+ s, analysed in [0-9.]+ s\)", out), out
    monkeypatch.setattr(command, "outlive_the_run", None)  # as tests and other callers run it
    run(capsys, TRITON_TRACE)
    assert len(kept) == 1


def test_analyze_starts_without_torch():
    """Reading someone's trace needs no torch: its import alone takes seconds and 260 MB."""
    code = "import sys, suites.analyze; print('torch' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).resolve().parents[1],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


def test_malformed_events_are_skipped_and_counted(tmp_path, capsys):
    from trace_builders import event, write

    events = [event("cudaLaunchKernel", "cuda_runtime", 0, 5, correlation=1),
              event("k", "kernel", 10, 5, tid=7, correlation=1),
              event("bad", "kernel", 20, -3, tid=7, correlation=2),
              {"ph": "X", "cat": "kernel", "name": "n", "ts": float("inf"), "dur": 1},
              {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 1, "dur": 2, "args": [1, 2]}]
    path = write({"traceEvents": events, "deviceProperties": {"name": "GPU X"}},
                 tmp_path / "odd.json")
    assert main([str(path)]) == 0
    out = capsys.readouterr().out
    assert "activities) on GPU X" in out
    for why in ("1 events skipped: negative duration", "1 events skipped: a time that is not "
                "finite", "1 events skipped: args not an object (kept without them)"):
        assert why in out
    assert "GPU timeline over 1 device activities" in out


def test_a_duration_longer_than_the_trace_is_left_out_and_said(tmp_path, capsys):
    """1e12 us in a trace of a few hundred us, and 1e308 us (past any clock): left out and
    counted, each by its reason, never a 300-digit sum; the steps and the other kernels read as
    without them."""
    from trace_builders import event, gpu_step, write

    events = gpu_step(0, 0.0) + gpu_step(1, 100.0, corr_base=200)
    events += [event("k_bad", "kernel", 30.0, 1e308, tid=7, correlation=900),
               event("aten::bad", "cpu_op", 150.0, 1e12)]
    path = write({"traceEvents": events}, tmp_path / "long.json")
    assert main([str(path), "--csv", str(tmp_path / "csv")]) == 0
    out = capsys.readouterr().out
    assert ("1 events skipped: a duration longer than the trace (over 1000 times the span of "
            "its events' start times); the first: aten::bad") in out
    assert f"1 events skipped: {PAST_THE_CLOCK} (1 of them device activities" in out
    # the bad kernel is named where it is said to be left out, and nowhere else
    assert max(len(word) for word in out.split()) < 100
    assert [line.endswith("the first: k_bad") for line in out.splitlines() if "k_bad" in line] \
        == [True]
    steps = pd.read_csv(tmp_path / "csv" / "steps.csv")
    assert steps["step"].tolist() == ["ProfilerStep#0", "ProfilerStep#1"]
    assert steps["kernels"].tolist() == [1, 1] and steps["device_us"].tolist() == [5.0, 5.0]


CPU_TRACES = Path(__file__).parent / "fixtures" / "cpu_traces"
NUMBER = re.compile(r"(?<![\w.])[-+]?(?:\d+\.?\d*|\.\d+)(?:e[-+]?\d+)?|\binf\b", re.I)


def test_impossible_times_are_left_out_counted_named_and_never_stated(tmp_path, capsys):
    """An op starting at 1e308 us and a step lasting 1e302 s, in a real CPU trace: past 2**53 us
    no clock writes a time. Both left out and counted, the first named; the other steps read as
    without them, and no figure on the page is infinite or absurd (audit.finite)."""
    doc = load(CPU_TRACES / "cpu_sdpa_math_fp32.json.gz")
    events = doc["traceEvents"]
    op = next(e for e in events if e.get("name") == "aten::bmm")
    step = next(e for e in events if e.get("name") == "ProfilerStep#3")
    op["ts"], step["dur"] = 1e308, 1e308
    first = next(e["name"] for e in events if e is op or e is step)
    path = write(doc, tmp_path / "t.json")
    assert main([str(path), "--label", "sdpa", "--csv", str(tmp_path / "csv")]) == 0
    out = capsys.readouterr().out
    assert f"note: 2 events skipped: {PAST_THE_CLOCK}; the first: {first}" in out
    assert every_number_finite(NUMBER.findall(out)), [n for n in NUMBER.findall(out)
                                                      if not finite(n)]
    steps = pd.read_csv(tmp_path / "csv" / "steps.csv")
    assert steps["step"].tolist() == ["ProfilerStep#2", "ProfilerStep#4"]
    assert steps["kernels"].min() >= 20 and every_number_finite(steps.select_dtypes("number")
                                                                .to_numpy().ravel())
    findings = pd.read_csv(tmp_path / "csv" / "findings.csv")
    assert every_number_finite(NUMBER.findall(" ".join(findings["statement"])))


def test_a_start_far_from_the_trace_is_left_out_counted_and_named(tmp_path, capsys):
    """A zeroed timestamp in a trace of 8 ms whose clock reads 5.5e12 us: without step ranges
    the trace is one step, and that op would stretch it to 63 days."""
    doc = load(CPU_TRACES / "cpu_sdpa_math_fp32.json.gz")
    events = [e for e in doc["traceEvents"] if not str(e.get("name")).startswith("ProfilerStep")]
    next(e for e in events if e.get("name") == "aten::tril")["ts"] = 0.0
    path = write({**doc, "traceEvents": events}, tmp_path / "t.json")
    assert main([str(path), "--csv", str(tmp_path / "csv")]) == 0
    out = capsys.readouterr().out
    assert f"note: 1 events skipped: {FAR_START}; the first: aten::tril" in out
    [host_us] = pd.read_csv(tmp_path / "csv" / "steps.csv")["host_us"]
    assert host_us < 1e5  # the trace's 8 ms, not 63 days


@pytest.mark.parametrize("dur", [1e308, 1e12])  # past the clock; 11.6 days in a 0.3 s trace
def test_a_trace_whose_every_event_is_impossible_is_an_error_naming_it(tmp_path, dur):
    doc = load(CPU_TRACES / "cpu_sdpa_math_fp32.json.gz")
    for e in doc["traceEvents"]:
        if e.get("ph") == "X":
            e["dur"] = dur
    path = write(doc, tmp_path / "all.json")
    with pytest.raises(TraceFormatError, match=re.escape(str(path))):
        analyze(read_trace(path))


def test_entries_that_are_not_objects_are_counted(tmp_path, capsys):
    from trace_builders import event, gpu_step, write

    events = gpu_step(0, 0.0) + [3, "kernel", [event("k", "kernel", 1, 1)], None]
    assert main([str(write({"traceEvents": events}, tmp_path / "odd.json"))]) == 0
    out = capsys.readouterr().out
    assert "note: 4 events skipped: not a JSON object" in out and "1 step(s)" in out


def test_an_event_without_a_usable_duration_is_left_out_and_said_never_zero(tmp_path, capsys):
    from trace_builders import event, write

    events = [event("cudaLaunchKernel", "cuda_runtime", 0, 5, correlation=c) for c in (1, 2, 3)]
    events += [event("k", "kernel", 10, 5, tid=7, correlation=1),
               {**event("k", "kernel", 20, 5, tid=7, correlation=2), "dur": None},
               {key: v for key, v in event("k", "kernel", 30, 5, tid=7, correlation=3).items()
                if key != "dur"},
               {**event("aten::mm", "cpu_op", 1, 2), "ts": "1"}]
    path = write({"traceEvents": events}, tmp_path / "odd.json")
    assert main([str(path)]) == 0
    out = capsys.readouterr().out
    assert "2 events skipped: no duration (2 of them device activities: the busy time, kernel " \
           "counts and verdict leave them out)" in out
    assert "1 events skipped: a timestamp that is not a number" in out
    assert "GPU timeline over 1 device activities" in out  # the one kernel with a duration
    # Nothing usable at all: the error says what was left out, and why.
    only_bad = write({"traceEvents": [{**event("k", "kernel", 1, 2), "dur": "2"}]},
                     tmp_path / "bad.json")
    assert main([str(only_bad)]) == 2
    assert "nothing to analyse (events left out: 1 a duration that is not a number)" in \
        capsys.readouterr().err


def test_exact_copies_of_events_count_once(tmp_path, capsys):
    from trace_builders import load, write

    doc = load(TRITON_TRACE)
    code, once, _ = run(capsys, TRITON_TRACE)
    doc["traceEvents"] = doc["traceEvents"] * 3  # a trace merged three times
    code_thrice, thrice, _ = run(capsys, write(doc, tmp_path / "thrice.json.gz"))
    assert code == code_thrice == 0
    said = [line for line in thrice.splitlines() if "an exact copy of an earlier event" in line]
    assert len(said) == 1 and "device activities" not in said[0]
    # Every figure, kernel count and finding as in the trace read once.
    body = lambda text: [line for line in text.splitlines()[1:] if line not in said]  # noqa: E731
    assert body(thrice) == body(once)


def test_a_gpu_trace_without_its_host_side_gets_no_host_verdict(tmp_path, capsys):
    from trace_builders import load, write

    doc = load(ALEXNET_TRACE)
    doc["traceEvents"] = [e for e in doc["traceEvents"]
                          if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    code, out, _ = run(capsys, write(doc, tmp_path / "device_only.json"))
    assert code == 0
    assert "GPU timeline: none: not one of the" in out
    assert "no verdict: the trace has device activities but no host side" in out
    assert "host-bound" not in out and "overhead_bound" not in out


def test_a_folder_without_traces_or_an_empty_file_is_named_as_such(tmp_path, capsys):
    # A folder is the ranks of one job (tests/test_ranks.py): one with no trace says so.
    (tmp_path / "notes.txt").write_text("not a trace")
    assert main([str(tmp_path)]) == 2
    assert "a folder with no trace in it" in capsys.readouterr().err
    (tmp_path / "empty.json").write_text("")
    assert main([str(tmp_path)]) == 2  # its one trace, read: empty
    assert "the file is empty" in capsys.readouterr().err


def test_a_value_nested_too_deeply_is_one_line(tmp_path, capsys):
    path = tmp_path / "deep.json"
    path.write_text('{"traceEvents": [' + "[" * 100_000 + "]" * 100_000 + "]}")
    assert main([str(path)]) == 2
    err = capsys.readouterr().err
    assert "nested too deeply" in err and err.count("\n") == 1 and "Traceback" not in err


@pytest.mark.parametrize("args, message", [
    (["--steps", "zz("], "--steps 'zz(': not a regular expression"),
    (["--steps", "nothing-like-this"], "--steps 'nothing-like-this' matches no range of the "
                                       "trace; its annotations: ProfilerStep#1"),
    (["--label", "nope"], "--label 'nope' is not a range of the trace; its annotations: "
                          "ProfilerStep#1"),
    (["--csv", "/proc/no/such"], "--csv /proc/no/such: cannot make the folder"),
    (["--top", "-1"], "--top -1: the number of kernels to list must be 1 or more"),
    (["--top", "0"], "--top 0: the number of kernels to list must be 1 or more")])
def test_options_that_match_nothing_are_one_line(args, message, capsys):
    from trace_builders import TRITON_TRACE

    assert main([str(TRITON_TRACE), *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"fusebench: error: {message}") and err.count("\n") == 1
