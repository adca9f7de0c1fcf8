"""gpu_check's summary: a short text for the end of stdout (the lease returns its last 12,000
characters) and summary.txt, which adds every row; both made from the recorded rows alone, so
the summary of a run killed half-way says what it had."""
from __future__ import annotations

from collections import Counter
from pathlib import Path

from suites.tools.gpu_check_record import BAD, STATUSES, Recorder, fit, table
from suites.common.numbers import span
from suites.common.text import cut

MAX_PROBLEMS = 20  # failed/deadline rows listed in the short text; summary.txt lists all


def _counts(counter: Counter) -> str:
    return ", ".join(f"{counter[s]} {s}" for s in STATUSES if counter.get(s)) or "no rows"


def _head(rec: Recorder, deadlines: dict) -> list[str]:
    env = {r["item"]: r for r in rec.rows if r["section"] == "environment"}
    versions, gpu = env.get("versions", {}), env.get("gpu", {})
    lines = [f"gpu_check: {gpu.get('gpu', 'no GPU')} (sm {gpu.get('capability', '-')}, "
             f"{gpu.get('sm_count', '-')} SMs, {gpu.get('free_gib', '-')} GiB free) | torch "
             f"{versions.get('torch', '?')} triton {versions.get('triton', '?')} cuda "
             f"{versions.get('cuda', '-')} | event clock step "
             f"{gpu.get('event_resolution_us', '-')} us",
             f"rows: {_counts(rec.counts())} | exit {rec.exit_code()}"]
    for section in deadlines:
        rows = [r for r in rec.rows if r["section"] == section]
        if rows:
            took = rec.section_s.get(section)
            lines.append(f"  {section:<11} {_counts(rec.counts(section))}; "
                         + (f"{took:.0f} s, " if took is not None else "")
                         + f"deadline {deadlines[section]:.0f} s")
    return lines


def _configs(rows: list[dict]) -> list[str]:
    """Per kernel and key: how many configs passed, failed, were pruned or not reached."""
    groups: dict[str, Counter] = {}
    for r in rows:
        group = ("variants, the autotuner's pick" if r["item"].endswith(" autotuned")
                 else r["item"].split(" [")[0])
        groups.setdefault(group, Counter())[r["status"]] += 1
    return [fit(f"  {_counts(c):<34} {group}") for group, c in groups.items()]


def _kernels(rows: list[dict]) -> list[str]:
    shown = [dict(r, bench=r["item"].rsplit(" ", 1)[0], variant=r["item"].rsplit(" ", 1)[-1],
                  diff=r.get("diff_vs_library"), ratio=_with_interval(r)) for r in rows]
    return table(shown, ["bench", "variant", "status", "kernel_us", "tflops", "ratio", "target",
                         "diff"])


def _with_interval(row: dict):
    """A paired ratio with its 95% interval (`1.02 (0.98-1.05)`), or the value as recorded."""
    ratio, low, high = row.get("ratio"), row.get("ratio_low"), row.get("ratio_high")
    if not isinstance(ratio, float) or not isinstance(low, float) or low != low:
        return ratio
    return f"{ratio:.3f} ({span(low, high)})"


def _structure(rows: list[dict]) -> list[str]:
    facts = [dict(r, run=r["item"].split(" ")[0], variant=r["item"].rsplit(" ", 1)[-1],
                  ours=r.get("n_kernels")) for r in rows if "series_kernels" in r]
    if not facts:
        return ["  (no run at the series' shapes finished)"]
    return table(facts, ["run", "variant", "series_kernels", "ours", "agrees", "series_saw",
                         "status"])


def _suites(rows: list[dict]) -> list[str]:
    runs = [r for r in rows if " " not in r["item"]]
    per_run = [f"  {r['item']}: {r['status']}"
               + (f", {r['rows']} of {r['planned']} rows in {r['folder']}" if "rows" in r else "")
               + (f": {r['error']}" if r.get("error") else "") for r in runs]
    return per_run + ["kernels per call, the series' and ours (reference shapes):"] + \
        _structure(rows)


def short(rec: Recorder, deadlines: dict) -> str:
    lines = _head(rec, deadlines)
    by_section = {s: [r for r in rec.rows if r["section"] == s] for s in deadlines}
    if by_section.get("configs"):
        lines += ["", "== configs: Triton kernels and autotune configs vs float64 reference"]
        lines += _configs(by_section["configs"])
    if by_section.get("kernels"):
        lines += ["", "== kernels: kernel time (us), ratio = library / Triton"]
        lines += _kernels(by_section["kernels"])
    if by_section.get("suites"):
        lines += ["", "== suites: the harness end to end"] + _suites(by_section["suites"])
    problems = [r for r in rec.rows if r["status"] in BAD]
    if problems:
        lines += ["", f"== not ok ({len(problems)})"]
        lines += ["  " + cut(f"{r['section']}: {r['item']}: {r['status']}: {r.get('error') or ''}",
                             98) for r in problems[:MAX_PROBLEMS]]
        if len(problems) > MAX_PROBLEMS:
            lines.append(f"  ... {len(problems) - MAX_PROBLEMS} more in summary.txt")
    return "\n".join(lines)


def write(rec: Recorder, out: Path, deadlines: dict) -> str:
    """summary.txt (the short text, then every row) rewritten whole; returns the short text."""
    text = short(rec, deadlines)
    everything = [text, "", "== every row (results.jsonl has all their fields)"]
    for r in rec.rows:
        detail = r.get("error") or r.get("note") or ""
        everything.append(f"{r['section']:<11} {r['status']:<8} {r['item']}"
                          + (f"  {detail}" if detail else ""))
    path = Path(out) / "summary.txt"
    tmp = path.with_suffix(".tmp")
    tmp.write_text("\n".join(everything) + "\n")
    tmp.replace(path)  # whole or not at all: a kill mid-write leaves the previous one
    return text
