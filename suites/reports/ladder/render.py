"""The ladder as text: the same display tables rendered as markdown and as one HTML page."""
from __future__ import annotations

import html as _html
import os

import pandas as pd

from kernels.base import DEFAULT_MODE
from suites.common.numbers import count, fixed_times, missing, plain, sci
from suites.reports.ladder import answer, prediction, training
from suites.reports.ladder.loading import machine
from suites.reports.kit import page as hp
from suites.reports.kit.banner import banner_html, banner_lines
from suites.results.columns import headers

# The ladder's own columns, and measurement columns under the schema's headers.
LADDER = {"suite": "block", "dtype": "dtype", "shape": "shape", "family": "family",
          **headers(["variant", "status", "n_kernels", "device_us", "host_us", "mean_us",
                     "speedup", "speedup_low", "speedup_high", "device_ratio"]), "note": "note"}
FITS = {"variant": "variant", "dtype": "dtype", "choice": "choice", "n_shapes": "shapes",
        "overhead_us": "overhead us", "tflops": "TFLOP/s", "balance_flops": "FLOPs where work = overhead",
        "max_rel_err": "worst fit error", "fit_note": "fit note",
        "crossover": "device time > host time"}
BREAKEVEN = {**headers(["case_id", "variant", "compile_ms"]), "baseline_us": "baseline us",
             "compile_us": "compile us", "saved_us": "saved us/call", "calls": "calls",
             "verdict": "break-even"}
RUNS = {"run": "run folder", "suite": "suite", "device": "device", "created": "created",
        "timing": "timing", "peaks": "measured peaks"}
DROPPED = {**headers(["suite", "case_id", "variant"]), "run": "dropped (older) run",
           "created": "its created", "kept_run": "kept run", "kept_created": "kept created"}
TEXT_COLUMNS = ("suite", "machine", "dtype", "mode", "shape", "family", "variant", "choice", "status", "note", "fit_note",
                "crossover", "case_id", "verdict", "run", "device", "kept_run", "timing", "peaks")
TRAINING_TITLE = "## Training: each block's step at its reference shape"
PREDICTION_TITLE = "## The traced step: what each op group's variants would save"
INTRO = ("Each block of the ladder at its reference shape (the series' shape, from env.json; on a "
         "machine whose grid does not reach it, the closest shape run), one row per variant family "
         "(the fastest ok variant where a family has several). Times are per call in microseconds: "
         "mean over calls of the timing pass (what a caller pays); device us and host us from "
         "the profiled pass (on a CPU, device "
         "us is the compute ops' self time). Speedup: baseline time / variant time, paired per timing round "
         "(both timed in the same rounds of one run), with its 95% interval; device ratio: the "
         "same ratio of the profile pass's device time, a separate pass, never mixed into the "
         "speedup; the note says when the two disagree by more than 1.5x.")


def cell_text(value, column: str = "") -> str:
    """A number in the ladder's tables, by its column (suites/common/numbers.py's formats)."""
    if isinstance(value, str):  # text, an empty note included, is shown as it is
        return value
    if missing(value):
        return "-"
    if not isinstance(value, (int, float)):
        return str(value)
    if column in ("speedup", "speedup_low", "speedup_high", "device_ratio"):
        return fixed_times(value)
    if column == "max_rel_err":
        return f"{value:.0%}"
    if column in ("n_kernels", "n_shapes") or (column == "calls" and value >= 1):
        return count(value)
    if abs(value) >= 1e7 or column in ("flops", "balance_flops"):
        return sci(value)
    return plain(value)


def display(frame: pd.DataFrame, columns: dict[str, str]) -> pd.DataFrame:
    shown = pd.DataFrame({c: [cell_text(v, c) for v in frame[c]] if c in frame else "-"
                          for c in columns},
                         index=frame.index)
    if "status" in frame:
        shown["status"] = frame["status"].astype(str)  # the kit's page colours rows by it
    return shown


def ladder_columns(table: pd.DataFrame) -> dict[str, str]:
    """LADDER, with a machine column after the block when the rows come from several, and a
    mode column after the dtype when some row trains."""
    columns = dict(LADDER)
    if "mode" in table and (table["mode"] != DEFAULT_MODE).any():
        columns = {k: v for c in columns.items()
                   for k, v in ([c, ("mode", "mode")] if c[0] == "dtype" else [c])}
    if not table["machine"].astype(bool).any():
        return columns
    return {"suite": columns["suite"], "machine": "machine",
            **{k: v for k, v in columns.items() if k != "suite"}}


def ladder_display(table: pd.DataFrame) -> pd.DataFrame:
    """The shape and how it was chosen, on the first row of each (block, dtype) only."""
    shown = display(table, ladder_columns(table))
    first = ~table.duplicated([k for k in ("suite", "dtype", "mode", "machine") if k in table])
    notes = table["shape_note"].where(table["shape_note"] != "reference shape", "reference")
    shown["shape"] = (table["shape"] + " (" + notes + ")").where(first, "")
    shown["suite"] = table["suite"].where(first, "")
    return shown


def runs_frame(collection) -> pd.DataFrame:
    out = []
    for run in collection.runs:
        env, peaks = run.env, run.env.get("peaks") or {}
        flops = ", ".join(f"{d} {plain(v)} TFLOP/s"
                          for d, v in (peaks.get("matmul_tflops") or {}).items())
        out.append({"run": os.path.relpath(run.path, collection.root),
                    "suite": env.get("suite", "?"),
                    "device": machine(env),
                    "created": env.get("created", "-"),
                    "timing": (env.get("timing") or {}).get("preset", "-"),
                    "peaks": (f"{flops}; copy {plain(peaks['copy_gbps'])} GB/s"
                              if peaks.get("copy_gbps") else "not calibrated")})
    return pd.DataFrame(out, columns=list(RUNS))


def md_table(shown: pd.DataFrame, columns: dict[str, str]) -> str:
    def cell(v) -> str:
        return str(v).replace("|", "\\|").replace("\n", " ")
    lines = ["| " + " | ".join(columns.values()) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(cell(r[c]) for c in columns) + " |" for _, r in shown.iterrows()]
    return "\n".join(lines)


def _dropped_text(collection) -> str:
    n = len(collection.dropped)
    if not n:
        return "No (suite, case, variant) appears in more than one run folder."
    return (f"{n} row(s) appeared in more than one run folder; the newest (env.json created) is "
            "kept; the older ones are left out of every table and listed under Duplicates dropped "
            "in ladder.md and ladder.html.")


def _dropped_display(collection) -> pd.DataFrame:
    dropped = collection.dropped.copy()
    for column in ("run", "kept_run"):
        dropped[column] = [os.path.relpath(p, collection.root) for p in dropped[column]]
    return display(dropped, DROPPED)


def _has_training(ladder) -> bool:
    return ladder.training is not None and len(ladder.training) > 0


def answer_lines(ladder) -> tuple[str, list[str]]:
    """The headline and the answer's lines: each block's fused forms, then its training step;
    for a sweep suggested from a trace, the trace's step first (what fusing its groups saves)."""
    head, lines = answer.lines(ladder.table)
    if _has_training(ladder):
        lines += training.lines(ladder.training, ladder.baselines)
    if ladder.prediction is not None:
        lines = [head] + prediction.lines(ladder.prediction) + lines
        head = prediction.headline(ladder.prediction)
    return head, lines


def summary(ladder) -> str:
    """What collect prints: the answer, the ladder table, the training rungs and each suite's
    sentences."""
    c = ladder.collection
    head, lines = answer_lines(ladder)
    parts = [f"> {line}" for line in _banner(c)]
    parts += ["## The answer", "", head, "", *[f"- {line}" for line in lines], ""]
    parts += ["## Ladder: each block at its reference shape", "",
             md_table(ladder_display(ladder.table), ladder_columns(ladder.table)), ""]
    if _has_training(ladder):
        shown, headers = training.display(ladder.training, ladder.baselines)
        parts += [TRAINING_TITLE, "", training.INTRO, "", md_table(shown, headers), ""]
    if ladder.prediction is not None:
        parts += [PREDICTION_TITLE, "", prediction.INTRO, "",
                  md_table(display(ladder.prediction, prediction.COLUMNS),
                           prediction.COLUMNS), ""]
    for part in ladder.suites:
        parts += [f"### {part.title} (baseline: {part.baseline})", ""]
        parts += [f"- {s}" for s in part.sentences] + [""]
    parts.append(_dropped_text(ladder.collection))
    return "\n".join(parts)


def markdown(ladder, out_dir) -> str:
    c = ladder.collection
    parts = ["# fusebench ladder", "", INTRO, "", summary(ladder), ""]
    if len(c.dropped):
        parts += ["## Duplicates dropped", "", md_table(_dropped_display(c), DROPPED), ""]
    for part in ladder.suites:
        parts += [f"## {part.title}", "",
                  "### Overhead fit: us/call = overhead + FLOPs / throughput",
                  "", md_table(display(part.fits, FITS), FITS), "",
                  "### Compile break-even", "",
                  md_table(display(part.breakeven, BREAKEVEN), BREAKEVEN) if len(part.breakeven)
                  else "No compile variant in this suite.", ""]
        parts += [f"![{p.stem}]({os.path.relpath(p, out_dir)})" for p in part.plots] + [""]
    parts += ["## Run folders", "", md_table(display(runs_frame(c), RUNS), RUNS), ""]
    return "\n".join(parts)


def _suite_section(part) -> str:
    body = [hp.bullet_list(part.sentences),
            "<h3>Overhead fit: us/call = overhead + FLOPs / throughput</h3>",
            hp.table(display(part.fits, FITS), FITS, left=TEXT_COLUMNS),
            "<h3>Compile break-even</h3>",
            hp.table(display(part.breakeven, BREAKEVEN), BREAKEVEN, left=TEXT_COLUMNS)
            if len(part.breakeven) else "<p>No compile variant in this suite.</p>"]
    body += [hp.image(p) for p in part.plots]
    return "".join(body)


def _answer_section(ladder) -> str:
    """Does fusion pay off, block by block, beside the plot of the speedups; id=answer and
    id=verdict as in a run's report (the browser test finds them there)."""
    head, lines = answer_lines(ladder)
    text = (f"<p id='verdict'><b>{_html.escape(head)}</b></p>" + hp.bullet_list(lines))
    return hp.answer_block(text, ladder.answer_plot)


def html(ladder) -> str:
    c = ladder.collection
    sections = [("The answer: does fusion pay off, block by block", _answer_section(ladder)),
                ("Ladder: each block at its reference shape",
                 f"<p>{_html.escape(INTRO)}</p>"
                 + hp.table(ladder_display(ladder.table), ladder_columns(ladder.table),
                            left=TEXT_COLUMNS, sortable=True)
                 + f"<p>{_html.escape(_dropped_text(c))}</p>")]
    if _has_training(ladder):
        shown, headers = training.display(ladder.training, ladder.baselines)
        sections.append((TRAINING_TITLE.lstrip("# "),
                         f"<p>{_html.escape(training.INTRO)}</p>"
                         + hp.table(shown, headers, left=TEXT_COLUMNS + ("pays",),
                                    sortable=True)))
    if ladder.prediction is not None:
        sections.append((PREDICTION_TITLE.lstrip("# "),
                         f"<p>{_html.escape(prediction.INTRO)}</p>"
                         + hp.table(display(ladder.prediction, prediction.COLUMNS),
                                    prediction.COLUMNS, left=TEXT_COLUMNS + ("replay",),
                                    sortable=True)))
    if len(c.dropped):
        sections.append(("Duplicates dropped",
                         hp.table(_dropped_display(c), DROPPED, left=TEXT_COLUMNS)))
    sections += [(f"{p.title} (baseline: {p.baseline})", _suite_section(p)) for p in ladder.suites]
    sections.append(("Run folders", hp.table(display(runs_frame(c), RUNS), RUNS, left=TEXT_COLUMNS)))
    meta = _html.escape(f"{len(c.runs)} run folder(s) under {c.root}; "
                        f"{len(c.rows)} rows; suites: {', '.join(c.suites)}")
    banner = banner_html(_banner(c))
    return hp.page("fusebench ladder", sections, meta, banner)


def _banner(c) -> list[str]:
    """The banner's lines: what does not add up in a run folder, then the machine state."""
    problems = c.missing + [p for r in c.runs for p in r.problems]
    return problems + banner_lines([r.env for r in c.runs], c.rows,
                                   [(r.path, r.state) for r in c.runs])
