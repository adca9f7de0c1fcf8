"""Assemble a run's report: plots in plots/, then report.html from the tables and findings."""
from __future__ import annotations

import html
from pathlib import Path

import pandas as pd

from kernels import registry
from kernels.base import Op
from suites.common.errors import InputError
from suites.common.numbers import plain
from suites.reports.kit import page as hp
from suites.reports.kit.banner import banner_html, banner_lines
from suites.results import atomic
from suites.results.reader import RunFolder
from suites.reports.run.conventions import conventions_html
from suites.reports.run.narrative import case_lines, headline
from suites.reports.run.by_size import lines_by_size
from suites.reports.run import answer
from suites.reports.run import shared_findings as sf
from suites.reports.run import hotspots, tree_section as op_trees
from suites.reports.run.plots import answer as plot_answer
from suites.reports.run.plots import write_plots
from suites.results.columns import FINDING_COLUMNS as FINDINGS_TABLE
from suites.results.columns import AA_CONTROL, KEY, Status, headers, profile_unclean
from suites.traces.findings.codes import BOUND_CODES, CHANGE_CODES
from suites.results.tables import MEASUREMENTS_CSV

REPORT_MD = "report.md"  # the answer as text, beside report.html: what the console prints

# median us (with p10-p90), rounds, GB/s, the modelled bytes, the profile's device us and its
# device ratio (findings say when they disagree with the timing) stay in measurements.csv: the
# table must fit 1400 px with the GPU-only columns (kernel us and kernel speedup with their
# intervals, launch us, SDPA backend) filled (tests/test_report_page.py).
RESULT_COLUMNS = headers([
    "case_id", "variant", "mean_us", "mean_low_us", "mean_high_us", "speedup", "speedup_low",
    "speedup_high", "kernel_us", "kernel_low_us", "kernel_high_us", "kernel_speedup",
    "kernel_speedup_low", "kernel_speedup_high", "host_us",
    "exposed_overhead_us", "n_kernels", "launch_api_us", "tflops", "pct_peak", "peak_mem_mb",
    "backend", "first_call_ms", "scaled_err", "trace"])
NOT_RUN_COLUMNS = headers(["case_id", "variant", "status", "reason"])
FINDING_COLUMNS = headers([c for c in FINDINGS_TABLE if c != "suite"])
# Documented at the end of the report: what its tables show, and the models behind them.
EXPLAINED = [*RESULT_COLUMNS, *NOT_RUN_COLUMNS, "flops", "bytes", "tolerance"]


def _meta(env: dict) -> str:
    """The page's first line: when, where, with what; what env.json does not say is left out
    (the banner names a missing or corrupt env.json)."""
    if not env.get("device"):
        return html.escape("Machine, versions and peaks unknown: the run folder's env.json says "
                           "nothing of them.")
    device = env.get("gpu") or env.get("cpu", "")
    peaks = env.get("peaks")
    peak_text = ""
    if peaks:
        flops = ", ".join(f"{d} {plain(v)} TFLOP/s" for d, v in peaks["matmul_tflops"].items())
        probes = len(env.get("peak_probes") or [peaks])
        peak_text = (f" Measured peaks (best of {probes} probe{'s' * (probes != 1)}): {flops}; "
                     f"copy {plain(peaks['copy_gbps'])} GB/s.")
    threads = env.get("threads")
    return html.escape(
        f"{env.get('created', '')} on {env.get('device')} ({device}), {threads} "
        f"thread{'s' * (threads != 1)} ({env.get('threads_rule', 'as set')}); "
        f"torch {env.get('torch')}, triton {env.get('triton')}, commit "
        f"{env.get('fusebench_commit')}; timing preset "
        f"{(env.get('timing') or {}).get('preset')}.{peak_text}")


def _measured_section(op: Op, frame: pd.DataFrame) -> str:
    """The block, and each variant of the run with what it runs."""
    items = []
    for name in dict.fromkeys(frame["variant"]):
        if name == AA_CONTROL:
            items.append(f"{name}: a second copy of the baseline {op.baseline}, timed as a "
                         "variant of its own (timing.aa_control): the run's own A/A")
            continue
        try:
            variant = registry.get_variant(op.name, name)
        except registry.UnknownNameError:  # a row edited in, or a variant since removed
            items.append(f"{name}: not a variant of {op.name} in this version of fusebench")
            continue
        items.append(f"{name} ({variant.family}): {variant.description}")
    cases = frame["case_id"].nunique()
    return (f"<p>{html.escape(op.describe)}; {cases} cases.</p>" + hp.bullet_list(items))


def _answer_section(lines: answer.Answer, plot: Path | None) -> str:
    """The first screen: does fusion pay off, per family, and where the time goes, beside a
    small plot of the speedups (suites/reports/run/answer.py)."""
    text = (f"<p id='verdict'><b>{html.escape(lines.verdict)}</b></p>"
            + hp.bullet_list(lines.bullets)
            + (f"<p id='where'>{html.escape(lines.where)}</p>" if lines.where else ""))
    return hp.answer_block(text, plot)


def _findings_section(frame: pd.DataFrame, findings: pd.DataFrame, baseline: str,
                      name) -> str:
    """Findings that hold across cases once, with where they hold; then each case's own."""
    all_cases = list(dict.fromkeys(frame["case_id"]))
    name_of = {r["case_id"]: name(r) for _, r in frame.drop_duplicates("case_id").iterrows()}
    shared = [g for g in sf.group(findings, (*BOUND_CODES, *CHANGE_CODES))
              if len(g.cases) > 1]
    said = {(c, v, g.code) for g in shared for c, v in g.keys}
    parts = [hp.bullet_list(headline(frame, baseline))]
    if shared:
        parts.append("<h3>Across cases</h3>" + hp.bullet_list(
            f"{g.text()} ({sf.where(g, all_cases, name_of)})" for g in shared))
    only_fastest = []  # a case with nothing of its own to say: one line in a common list
    for case_id, lines in case_lines(frame, findings, baseline, said):
        if len(lines) == 1:
            only_fastest.append(f"{name_of.get(case_id, case_id)}: {lines[0]}")
        else:
            parts.append(f"<h3>{html.escape(case_id)}</h3>{hp.bullet_list(lines)}")
    if only_fastest:
        parts.append("<h3>Fastest per case</h3>" + hp.bullet_list(only_fastest))
    return "".join(parts)


def _flagged(ok: pd.DataFrame) -> pd.DataFrame:
    """% roofline above 100 is shown with a flag, never as a plain number; so are the figures
    of a profile that was not clean (suites/harness/profile_guard.py)."""
    ok = ok.assign(pct_peak=[f"{plain(v)} (above peak: see findings)" if v > 100 else v
                             for v in ok["pct_peak"]])
    if "profile_state" not in ok:
        return ok
    unclean = ok["profile_state"].map(profile_unclean)
    for column in PROFILE_FIGURES:
        if column in ok:
            ok = ok.assign(**{column: [f"{plain(v)} (profile {s.replace('_', ' ')})" if bad
                                       and v == v else v for v, s, bad in
                                       zip(ok[column], ok["profile_state"], unclean)]})
    return ok


# The figures the profile gives, marked where it was not clean.
PROFILE_FIGURES = ("host_us", "device_us", "exposed_overhead_us", "n_kernels", "launch_api_us")


def report_frame(run: RunFolder) -> pd.DataFrame:
    """The rows as every page of the report reads them (and the audit, to recompute them)."""
    frame, op = run.measurements, run.op
    if frame.empty:
        raise InputError(f"{run.folder / MEASUREMENTS_CSV}: no rows: nothing to report")
    if lacking := [c for c in ("variant", "family", "dtype", *op.params) if c not in frame]:
        raise InputError(f"{run.folder / MEASUREMENTS_CSV}: missing column(s) "
                         f"{', '.join(lacking)} of {op.name}")
    # A row there twice (the banner says so): the later one is the one the run wrote last.
    frame = frame.drop_duplicates(list(KEY), keep="last").reset_index(drop=True)
    # A 2-D case of an op with a batch axis has no B column value: it is B=1 (kernels/base.py).
    return frame.assign(**{p: frame[p].fillna(d) for p, d in op.optional.items() if p in frame})


def write_report(run_dir: Path) -> Path:
    """Plots and report.html from a run folder's files, so a report can be rebuilt at any time:
    python -m suites.report <run folder>."""
    run = RunFolder(run_dir)
    run_dir, findings, env = run.folder, run.findings, run.env
    op = run.op
    frame = report_frame(run)
    params = op.columns(frame)
    ok, not_run = frame[frame["status"] == Status.OK], frame[frame["status"] != Status.OK]
    plots = write_plots(frame, op.size_axis, params, op.baseline, run_dir / "plots",
                        run.kernels)
    small = run_dir / "plots" / "answer.png"
    name = answer.case_namer(frame, op.size_axis, params)
    small = plot_answer(ok, op.size_axis, params, op.baseline, small) if ok["speedup"].notna().any() \
        and not (ok["variant"] == op.baseline).all() else None
    by_size = lines_by_size(frame, op.size_axis, [p for p in params if p in frame],
                             op.baseline)
    trees = op_trees.trees(run.optree)
    said = answer.answer(frame, findings, op.baseline, name,
                         profiled=bool((env.get("profile") or {}).get("enabled", True)))
    sections = [
        (f"The answer: does fusion pay off against {op.baseline}, and where does the time go",
         _answer_section(said, small)),
        ("Each variant and dtype, size by size", hp.bullet_list(by_size)),
        ("What the profile says", _findings_section(frame, findings, op.baseline, name)),
        ("Plots", "".join(hp.image(p) for p in plots) or "<p>No variant ran.</p>"),
        ("Results (status ok)", hp.table(_flagged(ok), RESULT_COLUMNS,
                                         links={"trace": "Perfetto"}, ranges=hp.RANGES,
                                         drop_empty=True, sortable=True)),
        ("Not shown as results: skipped, failed, incorrect or noisy", hp.table(not_run, NOT_RUN_COLUMNS,
                                                           left=("case_id", "variant", "reason"))
         if len(not_run) else "<p>Every variant ran on every case.</p>"),
        ("All findings", hp.table(findings, FINDING_COLUMNS,
                                  left=("case_id", "variant", "code", "statement", "evidence"))),
        (f"Op tree per call, against {op.baseline}",
         op_trees.section(trees, frame, op.baseline, name)),
        ("Hotspots: the top 15 ops per call by self time", hotspots.section(trees, frame, name)),
        ("What was measured", _measured_section(op, frame)),
        ("How to read this report", conventions_html(op, EXPLAINED)),
    ]
    title = f"fusebench: {op.name} on {env.get('device')}"
    path = run_dir / "report.html"
    warnings = run.problems + banner_lines([env], frame, [(run_dir, run.state)])
    atomic.write_text(path, hp.page(title, sections, _meta(env), banner_html(warnings)))
    atomic.write_text(run_dir / REPORT_MD, answer.markdown(title, html.unescape(_meta(env)),
                                                           said, warnings))
    return path
