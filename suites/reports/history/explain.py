"""Why a series changed: the two runs on either side of the change, diffed in words, and the most
likely cause said first.

The runs: the last run surely before the change's place and the first surely after it
(series.Found: for a step placed at one run, the series' run before it and that run; where the
data cannot tell some runs apart, the runs around that span, so what changed anywhere in it is
named; for the gate's flag, around the run where the level the newest run sits at began); for a
counter, the last run with the old value and the first with the new. The leading item's key
and values are kept with the explanation (cause_key, cause_before, cause_after) for
regressions.json and the audit. What is compared, everything a run folder stores:

- the machine and the software: env.json's versions (torch, triton, CUDA, driver, python), the
  machine (GPU or CPU model, CPU capability, platform), clocks, the thread count and its rule,
  the timing preset and settings, the fusebench commit;
- the run's config (run.json's, else .hydra/config.yaml): any other setting that differs;
- the row's profile: kernels.csv's rows of that (case, variant), kernels that appeared,
  vanished, are launched a different number of times a call, or changed their build (the GEMM
  identity: library, arch, layout, dtype, tile, stages, tensor cores; registers, shared memory,
  grid and block), and the kernels' time; measurements.csv's counters (kernels and ops per call,
  graphs, graph breaks, recompiles, Inductor's kernels, what autograd saves, the SDPA backend)
  and figures (exposed overhead, launch time, peak and activation memory, the correctness
  error, the row's status);
- the case: whether every variant moved alike or this one alone (series.Scope).

The ranking. A difference is a candidate cause when it is something the user changed or
upgraded that can move a time (env.json's and the config's keys on causes.py's allow-list:
never a lock wait, a date, a path or any other bookkeeping), and a mechanism when it is what the
row did differently (its profile). Candidates are ranked by kind: a version (torch, triton,
CUDA, driver, python) first, then clocks, the machine, the threads (second only to a version
where the whole case moved: the thread count moves every variant), the timing settings, the
fusebench commit (ahead of the settings where the variant alone moved: its own code), a
measured peak that moved by half or more, other config. Mechanisms: the row's status, its
kernels replaced, appeared or vanished, their build, the counters, kernels' calls, then
overhead, memory and the error. The first line joins the top candidate and the top
mechanism with the size of the change ("torch 2.12 -> 2.13: `aten::addmm` now launches
`cutlass_80_...` instead of `sm90_xmma_...`; time per call +18%, kernel time +17%"). With no
candidate, the mechanism leads; with neither, the scope decides: the whole case moved alike and
nothing stored differs points at the machine's state (a neighbour's job, memory placement, the
clock); this variant alone moved with nothing stored differing is said as unexplained by what
the runs store. The rest of the differences follow, one line each.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import pandas as pd

from suites.common.numbers import plain
from suites.reports.history import causes
from suites.reports.history import counters as counter_module
from suites.reports.history.loading import Key, Run

GEMM = ("gemm_library", "gemm_arch", "gemm_layout", "gemm_dtype", "gemm_tile", "gemm_stages",
        "gemm_tensor_core", "registers_per_thread", "shared_mem_bytes", "grid", "block",
        "launch_configs")
# measurements.csv's figures said when they moved by more than (relative, absolute).
FIGURES = (("exposed_overhead_us", "exposed overhead", "us", 0.10, 0.5),
           ("launch_api_us", "launch API time", "us", 0.10, 0.5),
           ("peak_mem_mb", "peak memory", "MiB", 0.05, 0.01),
           ("activation_mb", "activation memory", "MiB", 0.05, 0.01))

CAUSE_SCORE = {"version": 100, "clocks": 95, "machine": 92, "threads": 75, "settings": 80,
               "commit": 65, "config": 50}
PEAK_SCORE = 70  # a measured peak that moved: evidence of the machine, below anything set
MECHANISM_SCORE = {"status": 98, "kernels": 90, "build": 88, "counter": 85, "calls": 84,
                   "overhead": 60, "memory": 40, "error": 35}
STRONG = 80  # a mechanism from here up may lead the first line on its own


@dataclass(frozen=True)
class Item:
    kind: str      # a CAUSE_SCORE or MECHANISM_SCORE kind
    text: str
    score: float
    key: str = ""  # what changed: a causes.py key (`torch`, `timing.preset`), `counter:<name>`,
    before: object = None  # `kernels`, `status`...; and its value on either side
    after: object = None


@dataclass
class Explanation:
    first: str                       # the most likely cause, one line
    lines: list[str] = field(default_factory=list)  # the rest, most telling first
    cause: str = ""                  # the first line's kind: version, threads, ..., machine state
    before: str = ""                 # the runs compared (labels)
    after: str = ""
    cause_key: str = ""              # the leading item's key and values (Item), for machines
    cause_before: object = None
    cause_after: object = None

    def text(self) -> str:
        return "\n".join([self.first] + [f"- {line}" for line in self.lines])


def _shown(value) -> str:
    if isinstance(value, float):
        return plain(value) if not value.is_integer() else str(int(value))
    if isinstance(value, dict):
        return ", ".join(f"{k}={v}" for k, v in value.items())
    return str(value)


def _change(label: str, before, after) -> str:
    return f"{label} {_shown(before) if before not in (None, '') else '(none)'} -> " \
           f"{_shown(after) if after not in (None, '') else '(none)'}"


def _rule_kind(rule) -> str:
    """`auto: 1 = usable cores ...` -> auto; `set: timing.threads` -> set."""
    return str(rule).split(":")[0].strip() if rule is not None else ""


def _differs(a, b) -> bool:
    return a != b and (a is not None or b is not None)


def env_items(a: dict, b: dict, scope: str) -> list[Item]:
    """What env.json says differs between the runs, each a candidate cause: only the keys
    causes.py lists (what can move a time), never a lock wait, a date or a path."""
    items = []
    for key in causes.ENV:
        va, vb = a.get(key), b.get(key)
        if isinstance(va, (dict, list)) or isinstance(vb, (dict, list)) or not _differs(va, vb):
            continue
        if key == "threads_rule" and _rule_kind(va) == _rule_kind(vb):
            continue  # the same rule in other words (its wording changed with fusebench)
        kind = causes.env_kind(key)
        score = CAUSE_SCORE[kind]
        if kind == "threads" and scope in ("case", "mixed"):
            score = 97  # a thread count moves every variant: the case moved as a whole
        if kind == "commit" and scope in ("variant", "alone"):
            score = 90  # the variant alone moved: its own code
        items.append(Item(kind, _change(causes.env_label(key), va, vb), score, key, va, vb))
    ta, tb = a.get("timing") or {}, b.get("timing") or {}
    if isinstance(ta, dict) and isinstance(tb, dict):
        for key in causes.TIMING:
            if _differs(ta.get(key), tb.get(key)):
                score = CAUSE_SCORE["settings"] + (1 if key == "preset" else 0)
                items.append(Item("settings", _change(f"timing {key}", ta.get(key), tb.get(key)),
                                  score, f"timing.{key}", ta.get(key), tb.get(key)))
    pa, pb = causes.flat_peaks(a.get(causes.PEAKS)), causes.flat_peaks(b.get(causes.PEAKS))
    for key in sorted(pa.keys() & pb.keys()):
        if causes.peak_moved(pa[key], pb[key]):
            label = "peak " + key[len(causes.PEAKS) + 1:].replace(".", " ")
            items.append(Item("machine", f"{label} {plain(pa[key])} -> {plain(pb[key])}",
                              PEAK_SCORE, key, pa[key], pb[key]))
    return items


def _flat(config, prefix="") -> dict:
    out = {}
    if isinstance(config, dict):
        for key, value in config.items():
            out.update(_flat(value, f"{prefix}{key}."))
    else:
        out[prefix[:-1]] = config
    return out


def config_items(a: dict, b: dict) -> list[Item]:
    """Settings of the runs' configs that differ and move a time (causes.CONFIG; timing is
    env.json's, as resolved)."""
    fa, fb = _flat(a), _flat(b)
    return [Item("config", _change(key, fa.get(key), fb.get(key)), CAUSE_SCORE["config"],
                 f"config.{key}", fa.get(key), fb.get(key))
            for key in causes.CONFIG if _differs(fa.get(key), fb.get(key))]


def _kernels(run: Run, key: Key) -> pd.DataFrame:
    frame = run.files.kernels
    if frame.empty:
        return frame
    mine = frame[(frame["suite"] == key[0]) & (frame["case_id"] == key[1])
                 & (frame["variant"] == key[2])]
    return mine.drop_duplicates("kernel", keep="first").set_index("kernel")


def _cell(value) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)) or value == "":
        return ""
    return _shown(value)


def kernel_items(a: Run, b: Run, key: Key) -> tuple[list[Item], float]:
    """The row's kernels before and after, and the kernels' time ratio (NaN: not known)."""
    ka, kb = _kernels(a, key), _kernels(b, key)
    if ka.empty and kb.empty:
        return [], math.nan
    items = []
    gone = [k for k in ka.index if k not in kb.index]
    came = [k for k in kb.index if k not in ka.index]
    op = key[2]
    if len(gone) == 1 and len(came) == 1:
        items.append(Item("kernels", f"{op} now launches `{came[0]}` instead of `{gone[0]}`",
                          MECHANISM_SCORE["kernels"], "kernels", gone[0], came[0]))
    else:
        if came:
            items.append(Item("kernels", f"{op} now launches " + ", ".join(f"`{k}`" for k in
                                                                           came),
                              MECHANISM_SCORE["kernels"], "kernels"))
        if gone:
            items.append(Item("kernels", f"{op} no longer launches " +
                              ", ".join(f"`{k}`" for k in gone), MECHANISM_SCORE["kernels"] - 1,
                              "kernels"))
    for name in [k for k in ka.index if k in kb.index]:
        ca, cb = ka.at[name, "calls_per_call"], kb.at[name, "calls_per_call"]
        if _cell(ca) != _cell(cb):
            items.append(Item("calls", f"`{name}` x{_cell(ca)} -> x{_cell(cb)} a call",
                              MECHANISM_SCORE["calls"], "kernels", ca, cb))
        builds = [f"{c} {_cell(ka.at[name, c]) or '-'} -> {_cell(kb.at[name, c]) or '-'}"
                  for c in GEMM if c in ka.columns and c in kb.columns
                  and _cell(ka.at[name, c]) != _cell(kb.at[name, c])]
        if builds:
            items.append(Item("build", f"`{name}`: " + ", ".join(builds),
                              MECHANISM_SCORE["build"], "kernels"))
    ta = pd.to_numeric(ka.get("total_us_per_call"), errors="coerce").sum() if len(ka) else 0
    tb = pd.to_numeric(kb.get("total_us_per_call"), errors="coerce").sum() if len(kb) else 0
    return items, (tb / ta if ta > 0 and tb > 0 else math.nan)


def _missing(value) -> bool:
    return value is None or value == "" or (isinstance(value, float) and math.isnan(value))


def row_items(a: dict, b: dict) -> list[Item]:
    """The row's own counters and figures that differ."""
    items = []
    if a.get("status") != b.get("status"):
        reason = f" ({b.get('reason')})" if b.get("reason") else ""
        items.append(Item("status", _change("status", a.get("status"), b.get("status"))
                          + reason, MECHANISM_SCORE["status"], "status", a.get("status"),
                          b.get("status")))
    for name in counter_module.COLUMNS:
        va, vb = a.get(name), b.get(name)
        if not (_missing(va) and _missing(vb)) and va != vb and not (_missing(va) or
                                                                    _missing(vb)):
            items.append(Item("counter", _change(name, va, vb), MECHANISM_SCORE["counter"],
                              f"counter:{name}", va, vb))
    for name, label, unit, rel, absolute in FIGURES:
        va, vb = a.get(name, math.nan), b.get(name, math.nan)
        if _missing(va) or _missing(vb):
            continue
        if abs(vb - va) > absolute and abs(vb - va) > rel * max(abs(va), 1e-12):
            kind = "overhead" if name.endswith("_us") else "memory"
            items.append(Item(kind, f"{label} {plain(va)} -> {plain(vb)} {unit}",
                              MECHANISM_SCORE[kind], name, va, vb))
    ea, eb = a.get("max_abs_err", math.nan), b.get("max_abs_err", math.nan)
    if not (_missing(ea) or _missing(eb)) and ea > 0 and eb > 0 and \
            max(ea / eb, eb / ea) >= 2:
        items.append(Item("error", f"max abs error {ea:.2g} -> {eb:.2g} (against float64)",
                          MECHANISM_SCORE["error"], "max_abs_err", ea, eb))
    return items


def _percent(ratio: float) -> str:
    return f"{(ratio - 1) * 100:+.0f}%" if math.isfinite(ratio) else "?"


def size_text(found, baseline: str) -> str:
    """The change's size: the step's ratio in the view it is best told by."""
    view, ratio = found.ratio()
    if not math.isfinite(ratio):
        return ""
    if view == "relative":
        text = f"{_percent(ratio)} against {baseline} (x{ratio:.3g}, paired rounds)"
        if "time" in found.steps:
            text += f", time per call {_percent(found.steps['time'].ratio)}"
        return text
    how = "newest run against its baseline's median" if found.gates and not found.steps \
        else "time per call"
    return f"{how} {_percent(ratio)} (x{ratio:.3g})"


def _short_scope(scope, variant: str) -> str:
    if scope is None:
        return ""
    case = "the whole case moved the same way, unevenly" if scope.uneven else \
        "the whole case moved alike"
    return {"case": case, "variant": f"{variant} alone moved",
            "others": f"the case's other variants moved, {variant} did not",
            "mixed": "the case's variants moved differently", "alone": ""}[scope.kind]


def explain(series, found, runs: list[Run]) -> Explanation:
    """The explanation of one change (series.Found) of a series (series.Series)."""
    # The two runs that surely lie on either side (the last before the place, or its span, and
    # the first after it): what differs between them is what changed where the change lies.
    before, after = runs[found.before_run], runs[found.after_run]
    key = series.key[:3]
    scope = found.scope.kind if found.scope is not None else ""
    candidates = env_items(before.env, after.env, scope) + config_items(before.config,
                                                                        after.config)
    kernels, kernel_ratio = kernel_items(before, after, key)
    row_a, row_b = before.rows.get(key, {}), after.rows.get(key, {})
    mechanisms = kernels + row_items(row_a, row_b)
    counted = {m.text for m in mechanisms}
    for event in found.counters:  # a counter the row columns did not say (the kernel set...)
        if event.name == counter_module.KERNEL_SET and any(m.kind == "kernels"
                                                           for m in mechanisms):
            continue
        text = event.text()
        if text not in counted and event.name not in counter_module.COLUMNS \
                and event.name != counter_module.STATUS:
            mechanisms.append(Item("counter", text,
                                   MECHANISM_SCORE["counter"] + counter_module.weight(event.name),
                                   f"counter:{event.name}", event.before, event.after))
    candidates.sort(key=lambda i: -i.score)
    mechanisms.sort(key=lambda i: -i.score)
    size = size_text(found, series.baseline)
    if math.isfinite(kernel_ratio) and abs(kernel_ratio - 1) >= 0.02 and (
            found.steps or found.gates):
        size = (size + ", " if size else "") + f"kernel time {_percent(kernel_ratio)}"
    head = [candidates[0].text] if candidates else []
    if len(candidates) > 1 and candidates[1].kind == candidates[0].kind == "version":
        head.append(candidates[1].text)
    # A strong mechanism (the row's status, kernels, their build, counters) says what the row
    # did differently; a figure that moved (overhead, memory, error) may only be the change
    # itself seen again, so it follows a cause but never stands for one.
    strong = [m for m in mechanisms if m.score >= STRONG]
    what = strong[0].text if strong else _short_scope(found.scope, series.variant)
    if not what and mechanisms:
        what = mechanisms[0].text
    leading = candidates[0] if candidates else (strong[0] if strong else None)
    if candidates:
        first = ", ".join(head) + (f": {what}" if what else "")
        cause = candidates[0].kind
    elif strong:
        first, cause = what, strong[0].kind
    elif found.scope is not None and found.scope.kind == "case":
        first = ("machine state: no version, setting, kernel or counter differs, and the whole "
                 "case moved alike")
        cause = "machine state"
    else:
        first = ("no version, setting, kernel or counter differs" + (f"; {what}" if what else ""))
        cause = "unexplained"
    if size:
        first += f"; {size}"
    lines = []
    if found.scope is not None:
        lines.append(found.scope.text(series.variant))
    shown = {first}
    for item in candidates[1:] + mechanisms:
        if item.text not in shown and item.text not in head and item.text != what:
            lines.append(item.text)
            shown.add(item.text)
    for view, step in found.steps.items():
        lines.append(f"{view}: x{step.ratio:.3g} (95% {step.low:.3g}-{step.high:.3g}, "
                     f"p {step.p_value:.2g}), {plain(step.before)} -> {plain(step.after)}"
                     + (" us/call" if view == "time" else f" of {series.baseline}'s time"))
    for view, verdict in found.gates.items():
        lines.append(f"gate ({view}): {gate_text(verdict, series.thresholds)}")
    if found.reason:
        lines.append(found.reason)
    for event in found.counters:
        text = f"counter: {event.text()}"
        if text not in lines:
            lines.append(text)
    return Explanation(first, lines, cause, before.label(), after.label(),
                       leading.key if leading else "", leading.before if leading else None,
                       leading.after if leading else None)


def gate_text(verdict, thresholds) -> str:
    """The newest run's verdict in words: the gate's (its z against the baseline), or a change
    point's at the newest run (its own test)."""
    if verdict.source == "step":
        return (f"newest run {verdict.state}: a change point at it, x{verdict.ratio:.3g} of the "
                f"level before (z {verdict.z:.1f}; practical threshold "
                f"{thresholds.min_change:.0%})")
    z = f"z {verdict.z:.1f}" if math.isfinite(verdict.z) else \
        "its baseline's runs identical: no spread to score against"
    return (f"newest run {verdict.state}, x{verdict.ratio:.3g} of the median of the {verdict.n} "
            f"runs before it ({z}; thresholds |z| > {thresholds.z:g} and "
            f"{thresholds.min_change:.0%})")


def explain_all(judged) -> int:
    """Every change of every series explained (found.explanation set); how many."""
    count = 0
    runs = judged.history.runs
    for series in judged.series:
        for found in series.found:
            found.explanation = explain(series, found, runs)
            count += 1
    return count
