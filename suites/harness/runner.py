"""Run a spec: probe the peaks, then each case (its variants prepared, timed together in
interleaved rounds, profiled), its rows appended to the tables as it finishes; re-measure later
the cases whose rounds were contended; probe the peaks again and keep the best; derive, find,
and write the tables whole. One case at a time on one device.

Nothing measured is lost: a case's rows are on disk when the next case starts (journal.py),
written before its profiles are read, and a trace reader, detector or derived column that
raises is a step_failed finding on its row, never a lost run (guarded_steps.py). A signal stops
the run after the case in flight (stopping.py); then, or when the harness itself fails, the
tables are written whole over the cases that finished and run.json says the run was
interrupted or failed."""
from __future__ import annotations

import json
import sys
import time
from dataclasses import asdict, dataclass, replace

import pandas as pd
import torch

from kernels import registry
from suites.traces.findings import find_all
from suites.harness.guarded_steps import FailureLines, derive_rows, once_each, read
from suites.traces.findings.measured import ROW_CODES, row_findings
from suites.harness.calibration import best_peaks, calibrate
from suites.harness.case_run import CaseOutcome, remeasure, run_case
from suites.harness.compile_pool import limit_compile_pool
from suites.harness.contention import LoadMeter
from suites.harness.device_lock import exclusive_device
from suites.harness.environment import busy_machine_warning, describe, rounds_summary
from suites.harness.launch_floor import recorded_floors
from suites.harness.memory_probe import MemoryGuard
from suites.harness import triton_counters_step
from suites.harness.progress import CaseWork, Progress, case_cost
from suites.harness.stopping import Interrupted, stop_if_asked
from suites.harness.cuda_graphs import keep_cupti_between_sessions
from suites.harness.gpu_state import clock_limits
from suites.results import atomic
from suites.results.columns import AA_CONTROL, KEY
from suites.results.journal import COMPLETE, FAILED, INTERRUPTED, RunState
from suites.results.resume import Previous, read_previous
from suites.traces.findings.row_bound import kept_row_bounds
from suites.results.tables import (FINDINGS_CSV, KERNELS_CSV, MEASUREMENTS_CSV, ROUNDS_CSV,
                                   SAMPLES_CSV, append_readings, append_tables, write_tables)
from suites.results.tables import OPTREE_CSV
from suites.harness.spec import RunSpec


@dataclass
class RunResult:
    spec: RunSpec
    env: dict
    frame: pd.DataFrame
    findings: list[dict]  # findings.csv's rows
    seconds: float


def _start(spec: RunSpec, stream) -> dict:
    torch.set_num_threads(spec.timing.threads)  # recorded on every row, and in env.json
    op = registry.get_op(spec.suite.name)
    replaying = any(registry.get_variant(op.name, name).replays for name in spec.suite.variants)
    keep_cupti_between_sessions(torch.device(spec.device).type, replaying)
    # Before anything compiles or is timed: no Inductor worker pool starting during the rounds.
    compile_threads = limit_compile_pool()
    env = describe(spec.device, spec.timing.threads)
    env["threads_rule"] = spec.timing.threads_rule
    env["inductor_compile_threads"] = compile_threads
    warning = busy_machine_warning(spec.timing.threads, torch.device(spec.device).type,
                                   env["cores_used_by_others"])
    if warning:
        print(warning, file=stream)
        env["warning"] = warning
    env.update(suite=spec.suite.name, reference=dict(spec.suite.reference),
               timing=asdict(spec.timing), profile=asdict(spec.profile))
    # What findings measure overhead against, and the profile guard the profiler's own cost.
    env["launch_floors"] = recorded_floors(spec.device, spec.profile.enabled)
    if spec.calibrate:
        env["peak_probes"] = [calibrate(spec.device, spec.suite.dtypes)]
        env["peaks"] = env["peak_probes"][0]
    return env


def case_work(spec: RunSpec) -> CaseWork:
    """How the harness spends one variant of a case, for the progress line's estimate: the
    timing budget or its minimum of calls, and the calls outside the timing (the first, the
    warm-up, the check, one untimed per round, the profiled steps)."""
    t, p = spec.timing, spec.profile
    profiled = p.wait + p.warmup + p.active if p.enabled else 0
    return CaseWork(t.budget_s, t.min_samples,
                    2 + max(t.warmup_calls, t.compile_warmup_calls) + t.rounds + profiled)


def aa_control(baseline):
    """The run's A/A control: the baseline once more, prepared and timed as a variant of its own
    (its own call, its own tensors from prepare), so the two differ by nothing but the run."""
    return replace(baseline, name=AA_CONTROL,
                   description=f"a second copy of the baseline {baseline.name} (timing.aa_control):"
                               " the run's own A/A")


def _round_tables(outcomes: list[CaseOutcome], spec: RunSpec) -> tuple[list, list]:
    """samples.csv's and rounds.csv's rows: what the timing rounds measured."""
    samples, rounds = [], []
    for outcome in outcomes:
        for slot in outcome.slots:
            keys = dict(zip(KEY, (spec.suite.name, outcome.case.id, slot.variant)))
            samples += [{**keys, "round": slot.round, "sample": i, "time_us": t}
                        for i, t in enumerate(slot.samples_us)]
            load = slot.load
            rounds.append({**keys, "round": slot.round, "position": slot.position,
                           "n_samples": len(slot.samples_us),
                           "calls_per_sample": slot.calls_per_sample, "mean_us": slot.mean_us,
                           "median_us": slot.median_us, "kernel_mean_us": slot.kernel_mean_us,
                           "faults_per_call": slot.faults_per_call,
                           "wait_frac": load.wait_frac, "others_cores": load.others_cores,
                           "gpu_other_processes": load.gpu_other_processes,
                           "sm_clock_ratio": load.sm_clock_ratio,
                           "sm_clock_mhz": load.sm_clock_mhz,
                           "clock_limits": "; ".join(clock_limits(load.clock_reasons or 0)),
                           "state": slot.state, "reason": slot.reason})
    return samples, rounds


def _profile_tables(outcomes: list[CaseOutcome], spec: RunSpec) -> tuple[list, list, list]:
    """kernels.csv's, findings.csv's and optree.csv's rows: what the profiles give, each trace
    reader and detector guarded, so one that raises is a step_failed finding on its row
    (guarded_steps.py) and the rest still come."""
    kernels, findings, optree = [], [], []
    for outcome in outcomes:
        base = next((r for r in outcome.rows if r.variant == spec.suite.baseline), None)
        base_profile = outcome.profiles.get(spec.suite.baseline)
        for row in outcome.rows:
            keys, failed = dict(zip(KEY, (spec.suite.name, outcome.case.id, row.variant))), []
            profile = outcome.profiles.get(row.variant)
            if profile is not None:
                kernels += [{**keys, "dtype": outcome.case.dtype, **k} for k in read(
                    profile.kernel_rows, "kernels.csv: trace reader kernel_rows", keys, failed)]
                optree += [{**keys, **node} for node in read(
                    profile.op_tree, "optree.csv: trace reader op_tree", keys, failed)]
            findings += failed + [{**keys, **f} for f in find_all(
                row.record(), profile, base.record() if base is not None else None,
                base_profile)]
    return kernels, findings, optree


def run(spec: RunSpec, stream=sys.stderr) -> RunResult:
    """The whole run, holding its device alone (device_lock.py): a second run on the same
    device waits for this one rather than measure it."""
    say = lambda line: print(line, file=stream, flush=True)  # noqa: E731
    with exclusive_device(spec.device, spec.out_dir, say) as waited:
        return _run(spec, stream, waited)


def _run(spec: RunSpec, stream, waited_s: float) -> RunResult:
    started = time.perf_counter()
    env = _start(spec, stream)
    if waited_s:
        env["waited_for_device_s"] = round(waited_s, 1)
    spec.out_dir.mkdir(parents=True, exist_ok=True)
    atomic.write_text(spec.out_dir / "env.json", json.dumps(env, indent=2))

    op = registry.get_op(spec.suite.name)
    variants = [registry.get_variant(op.name, name) for name in spec.suite.variants]
    if spec.timing.aa_control:
        variants.append(aa_control(registry.get_variant(op.name, spec.suite.baseline)))
    cases = spec.cases()
    previous = read_previous(spec.out_dir, len(variants), ROW_CODES) if spec.resume \
        else Previous()
    state = RunState(spec.out_dir, planned=len(cases) * len(variants), config=spec.config,
                     done=len(previous.rows), job=spec.job)
    state.save()
    if spec.resume:  # the kept cases alone, whole; the rest is measured and appended
        _write(spec, previous.rows, previous.tables)
        cases = [c for c in cases if c.id not in previous.cases]
    progress = Progress(len(cases) * len(variants), enabled=spec.progress, stream=stream,
                        costs=[case_cost(op, case, env.get("peaks")) for case in cases],
                        work=case_work(spec))
    meter = LoadMeter(torch.device(spec.device).type, torch.device(spec.device).index or 0)
    outcomes: list[CaseOutcome] = []
    lines = FailureLines(lambda line: print(line, file=stream, flush=True))
    memory = MemoryGuard(spec.memory_probe)
    try:
        for case in cases:
            progress.start(case.id, len(variants))
            outcome = run_case(op, variants, case, spec, meter, env.get("peaks"), memory,
                               env.get("launch_floors"))
            if memory.records:  # the probes made so far (none for a sweep of ordinary cases)
                env["memory_probes"] = memory.records
            progress.finish(outcome.rows)
            outcomes.append(outcome)
            _journal(outcome, spec, env, lines)
            state.advance(len(outcome.rows))
            stop_if_asked()  # a signal during the case: it finished, and is on disk
        # Contention comes and goes: a case that could not get enough clean rounds is timed
        # again once, after every other case, when the burst that spoiled it has had time to
        # pass.
        for outcome in [o for o in outcomes if o.needs_remeasure()]:
            progress.again(outcome.case.id)
            remeasure(outcome, op, variants, spec, meter, env.get("peaks"))
            progress.finish(outcome.rows)
            stop_if_asked()
        if spec.calibrate:  # again, and the best of both: a probe under load reads low
            _probe_again(spec, env)
        stop_if_asked()
    except (Interrupted, KeyboardInterrupt, SystemExit) as exc:
        _finish(outcomes, spec, env, started, previous, state, lines)
        state.end(INTERRUPTED, f"{_stopped_by(exc)} after {state.done} of {state.planned} rows")
        raise
    except BaseException as exc:  # the harness failed: keep what it measured, then fail
        _finish(outcomes, spec, env, started, previous, state, lines)
        state.end(FAILED, f"{type(exc).__name__}: {exc}")
        raise
    result = _finish(outcomes, spec, env, started, previous, state, lines)
    state.end(COMPLETE)
    return result


def after_the_answer(result: RunResult, stream=sys.stderr) -> None:
    """Work after the rows, the report and the answer: compiles that cannot change a
    measurement or fail the run (the Triton counters), so they never delay the answer."""
    counters = triton_counters_step.record(result.spec, stream)
    if counters:
        result.env["triton_counters"] = counters
        atomic.write_text(result.spec.out_dir / "env.json", json.dumps(result.env, indent=2))


def _stopped_by(exc: BaseException) -> str:
    if isinstance(exc, Interrupted):
        return exc.name
    if isinstance(exc, SystemExit):  # submitit's exit from its signal handler
        return (f"SystemExit({exc.code}) from the launcher (a cluster job preempted or out of "
                "time, which the launcher requeues)")
    return "SIGINT"


def _journal(outcome: CaseOutcome, spec: RunSpec, env: dict, lines: FailureLines) -> None:
    """A finished case on disk: its rows (derived with the peaks known so far), samples and
    rounds first; then what its profiles give (kernels, findings, op trees), read only once the
    rows are safe, so a trace reader or detector that fails costs no more than its own output.
    derive() comes first, guarded, so the journaled rows have their throughput columns."""
    failed = derive_rows(outcome.rows, env.get("peaks"))
    samples, rounds = _round_tables([outcome], spec)
    append_tables(spec.out_dir, outcome.rows, [], samples, rounds, [])
    kernels, findings, optree = _profile_tables([outcome], spec)
    findings = failed + findings
    lines.show(findings)
    append_readings(spec.out_dir, kernels, findings, optree)


def _probe_again(spec: RunSpec, env: dict) -> None:
    try:
        env["peak_probes"].append(calibrate(spec.device, spec.suite.dtypes))
        env["peaks"] = best_peaks(env["peak_probes"])
    except Exception as exc:  # the sweep's rows matter more than a second probe
        env["peak_probe_error"] = f"the end-of-run probe failed ({exc}); the first one stands"


def _finish(outcomes: list[CaseOutcome], spec: RunSpec, env: dict, started: float,
            previous: Previous, state: RunState, lines: FailureLines) -> RunResult:
    """Derive, find, and write every table whole over the cases that finished (and, on a
    resumed run, those the interrupted run had finished); a step that fails is a finding, as
    in the journal (_journal), so the tables are written whatever the traces held."""
    rows = previous.rows + [row for o in outcomes for row in o.rows]
    order = {case.id: i for i, case in enumerate(spec.cases())}  # a resumed run: sweep order
    rows.sort(key=lambda row: order.get(row.case_id, len(order)))
    failed = derive_rows(rows, env.get("peaks"))
    samples, rounds = _round_tables(outcomes, spec)
    kernels, findings, optree = _profile_tables(outcomes, spec)
    kept = previous.tables
    samples, rounds = kept.get(SAMPLES_CSV, []) + samples, kept.get(ROUNDS_CSV, []) + rounds
    kernels, optree = kept.get(KERNELS_CSV, []) + kernels, kept.get(OPTREE_CSV, []) + optree
    kept_findings = kept_row_bounds(kept.get(FINDINGS_CSV, []),
                                    [row.record() for row in previous.rows])
    findings = kept_findings + failed + findings
    findings = once_each(findings + row_findings([row.record() for row in rows],
                                                 spec.suite.name, spec.suite.baseline,
                                                 env.get("launch_floors")))
    lines.show(findings)
    env["rounds"] = rounds_summary(rounds, outcomes)
    atomic.write_text(spec.out_dir / "env.json", json.dumps(env, indent=2))
    frames = _write(spec, rows, {SAMPLES_CSV: samples, ROUNDS_CSV: rounds, KERNELS_CSV: kernels,
                                 FINDINGS_CSV: findings, OPTREE_CSV: optree})
    state.written(frames)
    return RunResult(spec, env, frames[MEASUREMENTS_CSV], findings, time.perf_counter() - started)


def _write(spec: RunSpec, rows, tables: dict[str, list]) -> dict[str, pd.DataFrame]:
    return write_tables(spec.out_dir, rows, tables.get(KERNELS_CSV, []),
                        tables.get(SAMPLES_CSV, []), tables.get(ROUNDS_CSV, []),
                        tables.get(FINDINGS_CSV, []), optree_rows=tables.get(OPTREE_CSV, []))
