"""Analyse any torch.profiler trace, a user's own training trace included.

    python -m suites.analyze trace.json.gz [--csv out_dir] [--label NAME] [--dtype bfloat16]
                                           [--steps REGEX] [--top 10]

Prints the GPU timeline (TraceLens's definitions: computation, exposed communication, exposed
memcpy, busy, idle, total) for the trace, each step and each stream; per-step host time, device
time, busy fraction, kernels, launch and blocking time, the top kernels and the findings. Traces
without ProfilerStep annotations are one step (or use --steps to name your own step ranges);
CPU-only traces are analysed by their compute ops.
"""
from __future__ import annotations

import argparse
import gc
import re
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

from kernels.names import DTYPE_NAMES
from suites.common import cli
from suites.common.errors import ConfigError, InputError
from suites.common.text_table import text_table
from suites.traces.findings import FindingContext, run_detectors
from suites.traces.findings.bounds import EARLIER_SHOWN
from suites.traces.findings.codes import BOUND_CODES, Code
from suites.traces.findings.step_bound import cause_words, step_bound, unrecorded_us
from suites.traces.call_profile import CallProfile
from suites.traces.device_time import (GPU, device_name, job_line, on_gpu,
                                       unread_device_categories)
from suites.traces.occupancy import ATTENTION_NOTE, TENSOR_CORE_GEMM_NOTE, is_attention
from suites.traces.short_names import short_names
from suites.traces.gpu_timeline import (FIELDS, device_timelines, linked, named_collective,
                                        stream_timelines, timeline)
from suites.traces.steps import WHOLE_TRACE, analyze
from suites.traces.events import read_trace

MAX_STEPS_SHOWN = 20
NAN = float("nan")
# Columns of steps.csv the console leaves out (too wide for a terminal); the host's named parts
# only where no step has any (a step's data loading is never left unsaid).
CONSOLE_DROPS = ["queued_idle_us", "launch_delay_us", "cpu_ops"]
DROPPED_WHEN_ZERO = ["data_loading_us", "host_collectives_us", "earlier_work_us",
                     "unrecorded_us"]


def step_rows(profile: CallProfile) -> list[dict]:
    """One row per step: its window, what the device and the host did in it, what bounds it
    (step_bound.py; the column keeps its name, verdict)."""
    mode = profile.analysis.mode
    rows = []
    for s in profile.steps:
        bound = step_bound(s, mode)
        window = s.window
        rows.append({
            "step": s.name, "host_us": s.host_us, "window_us": s.window_us,
            "device_us": s.device_us, "busy_frac": s.busy_frac, "kernels": s.n_kernels,
            "host_wait_us": window.host_wait_us if window else NAN,
            "queued_idle_us": window.queued_idle_us if window else NAN,
            "launch_api_us": s.launch_api_us, "blocking_us": s.blocking_us,
            "setup_us": s.host.init_us, "data_loading_us": s.host.data_us,
            "host_collectives_us": s.host.collective_us,
            "launch_delay_us": s.launch_delay_us, "cpu_ops": s.n_cpu_ops,
            # busy_frac counts the device's time on work launched before the trace, device_us
            # does not: said, as is the stretch the verdict leaves out (unrecorded_us)
            "earlier_work_us": s.pre_trace_us, "unrecorded_us": _material(unrecorded_us(s), s),
            "verdict": (f"{bound.side}: {cause_words(bound.kind, s.n_cpu_ops > 0)}" if bound
                        else "-"),
        })
    return rows


def timelines(trace, profile: CallProfile) -> list[dict]:
    """timeline.csv's rows: the whole trace, each step, each stream (GPU traces only)."""
    counted, unlinked = linked(trace)  # TraceLens's rule in every scope
    whole = timeline(counted, unlinked)
    if not whole.counted:
        return []
    rows = [whole.row("trace")]
    if on_gpu(profile.analysis.mode):
        ids = {id(a) for a in counted} if unlinked else None  # else every activity counts
        for step in profile.steps:
            mine = [k for k in step.kernels if id(k) in ids] if ids is not None else step.kernels
            if mine:
                rows.append(timeline(mine, step.unlinked).row(step.name))
    rows += [t.row(scope) for scope, t in device_timelines(counted).items()]
    rows += [t.row(scope) for scope, t in stream_timelines(trace, counted).items()]
    return rows


MIN_REPEATS = 3  # occurrences of a range for it to stand for steps: a warm-up and one more is not


def _material(us: float, step) -> float:
    """A part of a step worth a column: as much of its window as the verdict says it from, else
    0, which the console drops."""
    return us if step.window_us > 0 and us >= EARLIER_SHOWN * step.window_us else 0.0


def step_ranges_hint(profile: CallProfile) -> str:
    """A trace without step ranges is one step, its set-up included; where ranges of the
    program's own repeat (a benchmark's warm-up and measured calls), they can be its steps:
    said, with the --steps that judges each."""
    steps = profile.steps
    if len(steps) != 1 or steps[0].name != WHOLE_TRACE:
        return ""
    # A range nested in one of its own name (a benchmark's outer and inner "measure") is one
    # occurrence: counted by the outermost.
    outer: dict[str, list] = defaultdict(list)
    for a in sorted(profile.analysis.trace.annotations, key=lambda a: (a.ts, -a.dur)):
        same = outer[a.name]
        if a.dur > 0 and not (same and a.end <= same[-1].end):
            same.append(a)
    repeats = {name: len(ranges) for name, ranges in outer.items()}
    time = {name: sum(a.dur for a in ranges) for name, ranges in outer.items()
            if len(ranges) >= MIN_REPEATS}
    if not time:
        return ""
    ranked = sorted(time, key=time.get, reverse=True)[:2]
    last = {name: outer[name][-1].ts for name in ranked}
    latest = max(ranked, key=last.get)  # a benchmark measures after it warms up
    listed = ", ".join(f"{repeats[name]} x {name}" for name in ranked)
    return (f"no ProfilerStep ranges: the whole trace is one step, its set-up included; ranges "
            f"of its own repeat ({listed}): --steps '{re.escape(latest)}' judges each as a step")


def unlinked_note(analysis) -> str:
    """What became of the activities without a launch event in the trace, in one statement:
    those launched before it began are kept out of the steps' own work, the others counted in
    the step they ran in."""
    n, early = analysis.unlinked_device, analysis.pre_trace_device
    said = f"{n} device activities have no launch event in the trace"
    before = ("launched before it began (they start before its first launch call, or their "
              "correlation ids precede every launch call's: earlier work, still running when "
              "the profiler started), kept out of the steps' own work, though the device was "
              "busy with them")
    counted = "counted in the step whose host span they started in"
    if early == n:
        return f"{said}: all {before}"
    if early:
        return f"{said}: {early} {before}; the other {n - early} {counted}"
    return f"{said}: {counted}"


def named_collectives_line(trace) -> list[str]:
    """Kernels that are collectives by their name but computation by TraceLens's rule: said
    under the timeline that counts them so (b200_eager's symmetric-memory all-reduce)."""
    named = [k for k in trace.device if named_collective(k)]
    if not named:
        return []
    names = Counter(k.name for k in named).most_common(3)
    listed = ", ".join(short_names([n for n, _ in names], 50))
    return [f"{len(named)} kernels are collectives by their name ({listed}): TraceLens's "
            f"definitions, which name NCCL and RCCL kernels only, count their "
            f"{sum(k.dur for k in named) / 1e3:.4g} ms as computation above"]


def timeline_lines(rows: list[dict]) -> list[str]:
    """The GPU timeline per scope, in ms; empty for a trace with no device work."""
    if not rows:
        return []
    whole = rows[0]
    shown = _first_and_last(rows)
    in_ms = [{"scope": row["scope"], **{c: row[c] / 1e3 for c in FIELDS}} for row in shown]
    columns = {"scope": "scope", **{c: c.removesuffix("_us").replace("_", " ") + " ms"
                                    for c in FIELDS}}
    lines = ["", f"GPU timeline over {whole['activities']} device activities (TraceLens's "
                 f"definitions; busy {100 * whole['busy_us'] / whole['total_us']:.1f}% of the "
                 f"{whole['total_us'] / 1e3:.4g} ms from the first to the last; a step's row "
                 "here spans its first to last device activity, the per-step table's window "
                 "runs from its start on the host):",
             text_table(in_ms, columns)]
    if whole["unlinked_activities"]:
        lines.append(f"{whole['unlinked_activities']} device activities without a launch event "
                     "in the trace are not in this timeline, as TraceLens counts (see the note "
                     "above)")
    return lines


def summary(path: Path, profile: CallProfile, findings, top: int,
            seconds: tuple[float, float], timeline_rows: list[dict] | None = None) -> str:
    """The console's page; `seconds`: (reading the trace, analysing it), each said apart, so a
    slow run shows which part to look at."""
    analysis, trace = profile.analysis, profile.analysis.trace
    device = device_name(trace.meta)
    mode = {GPU: "gpu (CUDA, ROCm or MTIA activities)",
            "cpu": "cpu (no device in the trace)"}.get(
        analysis.mode, "host only (a device whose activities the trace lacks)")
    job = job_line(trace.meta)
    lines = [f"trace: {path} ({trace.n_events} events, read in {seconds[0]:.1f} s, analysed in "
             f"{seconds[1]:.1f} s)",
             f"mode: {mode}{' on ' + device if device else ''}; {len(profile.steps)} step(s)"
             + (f"; {job}: pass a folder holding every rank's trace to compare the ranks"
                if job else "")]
    lines += skipped_lines(trace)
    for cat, count in unread_device_categories(trace).items():
        lines.append(f"note: {count} activities of category {cat} not analysed")
    if len(analysis.step_processes) > 1:
        lines.append(f"note: {len(analysis.step_processes)} processes (pids "
                     f"{', '.join(analysis.step_processes)}) are in this one file: their steps "
                     "overlap and each counts the others' work; analyse one trace per process "
                     "(a folder of them reads as the ranks of a job)")
    hint = step_ranges_hint(profile)
    if hint:
        lines.append(f"note: {hint}")
    if analysis.unlinked_device:
        lines.append(f"note: {unlinked_note(analysis)}")
    if analysis.unattributed_device:
        lines.append(f"note: {analysis.unattributed_device} device activities were launched, or "
                     "ran, outside every step and are not in the per-step figures")
    lines += timeline_lines(timeline_rows or [])
    if timeline_rows:
        lines += named_collectives_line(trace)
    if on_gpu(analysis.mode) and not timeline_rows:
        lines += ["", f"GPU timeline: none: not one of the {len(trace.device)} device activities "
                      "has a launch event in the trace, and TraceLens's definitions count only "
                      "launched ones; the steps below count them by the time they ran"]
    steps = step_rows(profile)
    dropped = set(CONSOLE_DROPS) | {c for c in DROPPED_WHEN_ZERO
                                    if not any(_number_or_0(row[c]) for row in steps)}
    if len(steps) > MAX_STEPS_SHOWN:  # a long training trace: the first steps and the last
        lines.append(f"showing {MAX_STEPS_SHOWN} of {len(steps)} steps (all of them with --csv)")
    lines += ["", "per step (us):", text_table(_first_and_last(steps),
                                                 [c for c in steps[0] if c not in dropped])
              if steps else "(no step)"]
    if len(steps) > 1:
        medians = profile.metrics()
        lines.append(f"median per step: host {medians['host_us']:.4g} us, device "
                     f"{medians['device_us']:.4g} us, {medians['n_kernels']:g} kernels, busy "
                     f"{1 - medians['idle_frac']:.0%}")
    lines += kernel_tables(profile.kernel_rows(), top)
    lines += ["", "findings:"] + ([f"  [{f.severity}] {f.code}: {f.statement}" for f in findings]
                                   or ["  (none)"])
    return "\n".join(lines)


def skipped_lines(trace) -> list[str]:
    """One note per reason events were left out: how many, how many of them were the device's,
    and the first one's name, to find it in the file."""
    lines = []
    for why, count in trace.skipped.items():
        device = trace.skipped_device.get(why)
        first = trace.skipped_first.get(why)
        lines.append(f"note: {count} events skipped: {why}" + (
            f" ({device} of them device activities: the busy time, kernel counts and verdict "
            "leave them out)" if device else "") + (f"; the first: {first}" if first else ""))
    return lines


# The console's kernel tables: time and occupancy for the top kernels, identity and achieved
# rate for the GEMMs among them (kernels.csv has every column).
TIME_COLUMNS = {"kernel": "kernel", "kind": "kind", "calls_per_call": "calls",
                "total_us_per_call": "total us", "mean_us": "mean us",
                "registers_per_thread": "regs", "shared_mem_bytes": "smem B",
                "est_occupancy_pct": "est occ %", "theoretical_occupancy_pct": "occ %",
                "occupancy_limit": "occ limited by"}
GEMM_COLUMNS = {"kernel": "GEMM kernel", "gemm_library": "library", "gemm_arch": "arch",
                "gemm_dtype": "dtype", "gemm_layout": "layout", "gemm_tile": "tile",
                "gemm_stages": "stages", "gemm_tensor_core": "TC", "gemm_shapes": "M x N x K",
                "gemm_tflops": "TFLOP/s", "gemm_flop_per_byte": "FLOP/B", "gemm_gbps": "GB/s"}


def kernel_tables(rows: list[dict], top: int) -> list[str]:
    names = short_names([str(row["kernel"]) for row in rows[:top]])
    kernels = [{**row, "kernel": name} for row, name in zip(rows, names)]
    if not kernels:
        return []
    lines = ["", f"top {len(kernels)} kernels (per step; est occ: the profiler's estimate, "
                 "occ: theoretical):",
             text_table(kernels, {k: v for k, v in TIME_COLUMNS.items() if k in kernels[0]})]
    gemms = [row for row in kernels if row.get("gemm_library") is not None]
    if gemms:
        lines += ["", "GEMM kernels among them (from their names; M x N x K from the op that "
                      "launched each, where the trace recorded shapes):",
                  text_table(gemms, GEMM_COLUMNS)]
    # The notes only under a table that shows such a kernel's occupancy (AMD traces carry none).
    shown = [row for row in rows[:top] if _known(row.get("theoretical_occupancy_pct"))]
    if any(is_attention(str(row["kernel"])) for row in shown):
        lines.append(f"note: {ATTENTION_NOTE}")
    if any(row.get("gemm_tensor_core") == "yes" for row in shown):
        lines.append(f"note: {TENSOR_CORE_GEMM_NOTE}")
    return lines


def _known(value) -> bool:
    return value is not None and value == value  # NaN != NaN


def _first_and_last(rows: list) -> list:
    """All the rows, or the first and last MAX_STEPS_SHOWN / 2 of a long list."""
    half = MAX_STEPS_SHOWN // 2
    return rows if len(rows) <= MAX_STEPS_SHOWN else rows[:half] + rows[-half:]


def _number_or_0(value) -> float:
    return 0.0 if value is None or value != value else value  # NaN != NaN


def _write_csv(path: Path, rows: list[dict], columns: list[str] | None = None) -> None:
    import pandas as pd  # here, not at the top: a run without --csv never needs it (0.25 s)
    pd.DataFrame(rows, columns=columns).to_csv(path, index=False)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m suites.analyze",
                                     description="Analyse a torch.profiler Chrome trace.")
    parser.add_argument("trace", type=Path, nargs="+",
                        help="trace .json or .json.gz; several, or a folder of them: the ranks "
                             "of one job, side by side and across (suites/traces/ranks.py)")
    parser.add_argument("--csv", type=Path, help="also write timeline.csv, steps.csv, kernels.csv, "
                                                 "findings.csv here")
    parser.add_argument("--label", help="record_function name around each call (host time = "
                                        "its span)")
    parser.add_argument("--steps", help="regex of annotation names to use as steps "
                                        "(default: ProfilerStep#N, else the whole trace)")
    parser.add_argument("--dtype", choices=list(DTYPE_NAMES), help="the run's dtype (enables the "
                                                               "tensor-cores-unused check)")
    parser.add_argument("--top", type=int, default=10, help="kernels to list")
    parser.add_argument("--suggest", action="store_true",
                        help="after the diagnosis: the op groups worth fusing, matched to "
                             "fusebench's blocks at the trace's shapes, and a Hydra experiment "
                             "that sweeps them, each group replayed alone (suites/suggest/; "
                             "python -m suites.analyze only)")
    parser.add_argument("--out", type=Path, help="--suggest's folder (default: "
                                                 "./suggested/<trace name>)")
    parser.add_argument("--scale", type=float, default=1.0,
                        help="--suggest's sweep at shapes this many times smaller, along an axis "
                             "the work is linear in (tokens, batch, heads): a GPU trace's "
                             "shapes on a CPU (suites/traces/suggest/scaling.py)")
    parser.add_argument("--no-replay", dest="replay", action="store_false",
                        help="--suggest without running each group alone beside the trace")
    return parser


def _check_names(trace, args) -> None:
    """--steps and --label must match something: a silent fall-back would analyse other ranges
    than the user asked for. The error names what the trace has."""
    names = sorted({a.name for a in trace.annotations})
    shown = ", ".join(names[:12]) + (f" and {len(names) - 12} more" if len(names) > 12 else "")
    if args.steps:
        try:
            regex = re.compile(args.steps)
        except re.error as exc:
            raise ConfigError(f"--steps {args.steps!r}: not a regular expression ({exc})") from None
        if not any(regex.search(e.name) for e in trace.annotations + trace.cpu_ops):
            raise ConfigError(f"--steps {args.steps!r} matches no range of the trace; its "
                              f"annotations: {shown or 'none'}")
    if args.label and args.label not in names:
        raise ConfigError(f"--label {args.label!r} is not a range of the trace; its annotations: "
                          f"{shown or 'none'}")


# Where analyze_trace leaves the trace it read, for a process that ends by os._exit
# (suites/analyze.py): freed when analyze_trace returns, a 1 GB trace's 5 million events took
# 0.4 s to free one by one, after everything was printed. None: freed as usual (tests, and
# callers that go on running).
outlive_the_run: list | None = None


def analyze_trace(args, suggest=None) -> None:
    """`suggest(trace, steps, args) -> lines`: --suggest's, given by the entry point that may
    import the suggest room (suites/analyze.py); the trace room may not (tests/test_layers.py)."""
    # Checked before the trace is read (a minute for a large one): --top 0 or -1 would list no
    # kernels, or all but the last, without a word.
    if args.top < 1:
        raise ConfigError(f"--top {args.top}: the number of kernels to list must be 1 or more")
    if (args.out or args.scale != 1.0) and not args.suggest:
        raise ConfigError("--out and --scale are --suggest's: give --suggest too")
    if not args.scale >= 1.0:  # NaN too
        raise ConfigError(f"--scale {args.scale}: a factor of 1 or more (the shapes are made "
                          "that many times smaller)")
    paths = trace_paths(args.trace)
    if len(paths) > 1:
        if args.suggest:
            raise ConfigError("--suggest reads one trace: give one rank's")
        analyze_ranks(paths, args)
        return
    if args.suggest and suggest is None:
        raise ConfigError("--suggest is python -m suites.analyze's (this entry reads traces "
                          "only): run it there")
    args.trace = paths[0]
    started = time.perf_counter()
    trace = read_trace(args.trace)
    if outlive_the_run is not None:
        outlive_the_run.append(trace)
    read = time.perf_counter()
    # Millions of events now live to the end: a collector that keeps walking them finds nothing
    # to free (2 s of a 1 GB trace's analysis).
    gc.freeze()
    _check_names(trace, args)
    profile = CallProfile(analyze(trace, label=args.label, step_pattern=args.steps))
    ctx = FindingContext(profile=profile, dtype=args.dtype)
    findings = run_detectors(ctx)
    rows = timelines(trace, profile)
    seconds = read - started, time.perf_counter() - read
    print(summary(args.trace, profile, findings, args.top, seconds, rows))
    if args.csv:
        _mkdir(args.csv)
        _write_csv(args.csv / "timeline.csv", rows,
                   ["scope", *FIELDS, "activities", "unlinked_activities"])
        _write_csv(args.csv / "steps.csv", step_rows(profile))
        _write_csv(args.csv / "kernels.csv", profile.kernel_rows())
        _write_csv(args.csv / "findings.csv", [f.as_row() for f in findings])
        print(f"\ncsv: {args.csv}")
    if args.suggest:  # last: its final line is the command that runs the sweep
        print("\n".join(suggest(trace, len(profile.steps), args)))


TRACE_SUFFIXES = (".json", ".json.gz")


def trace_paths(given: list[Path]) -> list[Path]:
    """The traces named: a folder stands for the traces in it (sorted by name)."""
    out = []
    for path in given:
        if path.is_dir():
            found = sorted(p for p in path.iterdir() if p.name.endswith(TRACE_SUFFIXES))
            if not found:
                raise ConfigError(f"{path}: a folder with no trace in it (.json or .json.gz)")
            out += found
        else:
            out.append(path)
    return out


def analyze_ranks(paths: list[Path], args) -> None:
    """Each trace a rank of one job: its verdict and figures side by side, then across ranks."""
    from suites.traces import ranks as across
    profiles, unread = [], []
    for path in paths:
        try:  # one rank's file that cannot be read is said, and the job read from the others
            trace = read_trace(path)
            _check_names(trace, args)
            profile = CallProfile(analyze(trace, label=args.label, step_pattern=args.steps))
        except ConfigError:  # --steps or --label: the user's, for every rank
            raise
        except (InputError, OSError) as exc:
            unread.append(exc)
            continue
        profiles.append((path, profile))
    if not profiles:
        raise unread[0]
    ranks = across.load(profiles)
    steps = across.across(ranks)
    rows = across.rank_rows(ranks, steps)
    claims = across.claims_note(ranks)
    lines = [f"note: not read, so not among the ranks below: {exc}" for exc in unread]
    lines += [f"note: {note}" for note in (claims, across.mixed_note(ranks)) if note]
    lines += [f"{len(ranks)} rank{'s' if len(ranks) > 1 else ''} "
              f"({ranks[0].backend or 'backend not recorded'}), "
              f"{len(steps)} step(s) on every rank:",
              text_table(rows, list(rows[0]) if rows else [], lambda v: f"{v:.3g}"), "",
              "per rank:"]
    per_rank_findings = []
    for r in ranks:
        found = run_detectors(FindingContext(profile=r.profile, dtype=args.dtype))
        per_rank_findings += [{"rank": r.rank, **f.as_row()} for f in found]
        primary = [f for f in found if f.code in BOUND_CODES or f.code == Code.NO_VERDICT]
        # Its own statement is one step's: named (the table's figures are over the steps).
        shown = (f", of {r.bound.step.name}" if r.bound and not r.skew
                 and "shown:" not in primary[0].statement else "")
        lines.append(f"  rank {r.rank} ({r.path.name}){shown}: " + across.skew_statement(r)
                     + (primary[0].statement if primary else "no verdict")
                     + across.waiting_note(r, steps))
    lines += ["", "across ranks:"] + [f"  {line}" for line in across.findings(ranks, steps)]
    print("\n".join(lines))
    if args.csv:
        _mkdir(args.csv)
        _write_csv(args.csv / "ranks.csv", rows)
        _write_csv(args.csv / "rank_steps.csv", [{"step": s.name, "rank": r, "window_us": s.window_us[r],
                       "collectives_us": s.collective_us.get(r, NAN),
                       "waiting_for_slowest_us": s.wait_us.get(r, NAN),
                       "pure_comm_us": s.pure_us, "slowest": s.slowest}
                      for s in steps for r in s.window_us])
        _write_csv(args.csv / "findings.csv", per_rank_findings)
        print(f"\ncsv: {args.csv}")


def _mkdir(folder: Path) -> None:
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"--csv {folder}: cannot make the folder ({exc.strerror})") from None


def main(argv=None, suggest=None) -> int:
    # A trace that cannot be read or analysed (TraceFormatError, an InputError), a bad flag
    # (ConfigError) or an unreadable path is one line and exit code 2; argparse's own errors
    # keep argparse's usage message. `suggest`: analyze_trace's.
    return cli.run_main(_parser(), lambda args: analyze_trace(args, suggest), argv)


if __name__ == "__main__":
    sys.exit(main())
