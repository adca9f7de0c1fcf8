"""How to read the numbers, generated from the code that makes them: the column meanings of
suites/results/columns.py, with the facts they name filled in from where the code keeps them
(launch APIs, error floors, each op's FLOP and byte formulas, the overhead threshold). The
report's last section and the README's tables both come from here, so neither can drift.
"""
from __future__ import annotations

import html

from kernels import registry
from kernels.base import DTYPE_SHORT, Op
from suites.common.numbers import times
from suites.harness import round_checks as rc
from suites.harness.correctness import BASELINE_BOUND, FLOOR
from suites.harness.event_clock import SPAN_STEPS
from suites.traces.findings.step_bound import HOST_BOUND_SHARE
from suites.traces.host_parts import INIT_FACTOR, INIT_MIN_US
from suites.traces.op_kinds import LAUNCH_APIS
from suites.results.columns import LEADING, MEASUREMENTS, STATUS_MEANING, column

_IDENTITY = {c.name for c in LEADING} | {"trace", "table"}  # shown, but nothing to explain


def _per_dtype(values: dict) -> str:
    return ", ".join(f"{DTYPE_SHORT.get(d, d)} {v:g}" for d, v in values.items())


def facts(op: Op | None = None) -> dict[str, str]:
    """What the column meanings name in braces. `op`: the one op of a run report, or None for
    every op (the README)."""
    return {
        "statuses": "; ".join(f"{s.value}: {m}" for s, m in STATUS_MEANING.items()),
        "launch_apis": ", ".join(sorted(LAUNCH_APIS)),
        "span_steps": str(SPAN_STEPS),
        "error_floors": _per_dtype(FLOOR),
        "baseline_bounds": _per_dtype(BASELINE_BOUND),
        "round_checks": round_checks_text(),
        "flop_models": op.flops_formula.text if op else "each op's formula: the table below",
        "byte_models": op.bytes_formula.text if op else "each op's formula: the table below",
    }


def round_checks_text() -> str:
    return (f"contended (drops the round for every variant): a timing thread waited for a CPU "
            f"more than {rc.WAIT_LIMIT:.0%} of its share, or other processes kept more cores busy "
            f"than the timing leaves free, plus {rc.SPARE_CORES:g}, or the container's CPU quota "
            f"throttled it, or another process used the GPU, or its SM clock fell under "
            f"{rc.GPU_MIN_CLOCK_RATIO:.0%} of its maximum or a thermal limit, a hardware "
            f"slowdown or the power brake held it down (a power cap the variant's own work "
            f"reaches is its cost, named in rounds.csv); stalled (every variant's share of the "
            f"round): "
            f"{rc.STALL_SHARE:.0%} or more of the calls ran at least {rc.STALL_MIN_US / 1e3:g} ms "
            f"and 2x longer than the fastest call; off: every variant's round figure over "
            f"{rc.OFF_FACTOR:g}x away from its own median round, all the same way; slow (one "
            f"share): a median over {times(rc.SLOW_FACTOR)} the op's model time at the measured "
            f"peaks plus {rc.SLOW_ALLOWANCE_US / 1e3:g} ms. What one variant shows alone is its "
            f"own cost and stays in its figures")


def meaning(name: str, op: Op | None = None) -> str:
    return column(name).meaning.format(**facts(op))


def rules() -> list[str]:
    """The judgements the findings make, with their thresholds."""
    return [
        "A step's device window (a suite call's, or a ProfilerStep's in any trace) runs from the "
        "later of the step's host start and the end of the previous step's device work (never "
        "after its first activity) to the later of its host end and the end of its last "
        "activity; consecutive windows never overlap, and a device running behind the host is "
        "judged in its own window. Inside it, idle time with no launched activity waiting is "
        "host wait; idle time with one waiting is queued idle.",
        f"Each step gets one primary verdict. On a GPU: host-bound when the device waited for the "
        f"host at least {HOST_BOUND_SHARE:.0%} of the window, on the largest of one-time set-up "
        f"calls (initialisation: set-up calls of at least {INIT_MIN_US / 1e3:g} ms, or calls "
        f"{INIT_FACTOR:g}x their own median), blocking calls (sync), DataLoader ranges, host "
        "collectives and the rest (launch: Python, dispatch, launch calls; overhead-bound); else, "
        "when queued idle outlasts busy time, sync-bound if the host blocked half the window, "
        "otherwise device waiting; else device-bound on the largest of computation, exposed "
        "communication and exposed copies. Computation is compute-bound or memory-bound by the "
        "roofline: the op's FLOP per byte against the measured ridge point (peak FLOP/s / peak "
        "bandwidth). On a CPU the compute ops are the device: the largest of their self time, "
        "host collectives, data loading, set-up and the rest (overhead-bound).",
        "On a CPU, compile variants are built with Inductor's cpp.enable_kernel_profile, so their "
        "C++ kernels show up in the profile by name.",
    ]


def conventions_html(op: Op, names) -> str:
    """The meaning of each column in `names` (those of a report's tables) for `op`'s report."""
    items = []
    for name in dict.fromkeys(n for n in names if n not in _IDENTITY):
        c = column(name)
        unit = f" ({c.unit})" if c.unit and not c.header.endswith(c.unit) else ""
        items.append(f"<dt>{html.escape(c.header)}{html.escape(unit)}</dt>"
                     f"<dd>{html.escape(meaning(name, op))}</dd>")
    paragraphs = "".join(f"<p>{html.escape(r)}</p>" for r in rules())
    return (f"<p>Times are per call in microseconds; {html.escape(op.name)}'s parameters: "
            f"{html.escape(', '.join(op.params))}.</p><dl>{''.join(items)}</dl>{paragraphs}"
            "<p>Every column of measurements.csv is described in the README. Traces "
            "(<code>traces/*.json.gz</code>) open in "
            '<a href="https://ui.perfetto.dev">ui.perfetto.dev</a> or chrome://tracing; the '
            "key_averages tables are in <code>tables/</code>.</p>")


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def columns_markdown() -> str:
    """README: every column of measurements.csv."""
    lines = ["| column | unit | meaning |", "|---|---|---|"]
    for c in MEASUREMENTS:
        lines.append(f"| `{c.name}` | {c.unit} | {_md(meaning(c.name))} |")
        if c.name == "device":
            lines.append("| (one per parameter) | | the case's parameters, e.g. `M`, `N`, `K`; a "
                         "size, or a categorical choice such as `norm` |")
    return "\n".join(lines)


def _params(op: Op) -> str:
    named = [f"{p} ({' / '.join(op.choices[p])})" if p in op.choices else p for p in op.params]
    named += [f"{p} (optional, {d} unless swept)" for p, d in op.optional.items()]
    return ", ".join(named)


def ladder_markdown() -> str:
    """README: every suite, in ladder order, with its parameters and variants."""
    lines = ["| suite | parameters | variants (family; the first is the baseline) |",
             "|---|---|---|"]
    for op in registry.ops():
        names = [op.baseline] + [n for n in registry.variant_names(op.name) if n != op.baseline]
        variants = "; ".join(f"`{n}` ({v.family}): {v.description}"
                             for n, v in ((n, registry.get_variant(op.name, n)) for n in names))
        lines.append(f"| `{op.name}` | {_md(_params(op))} | {_md(variants)} |")
    return "\n".join(lines)


def models_markdown() -> str:
    """README: each op's FLOP and ideal-byte formulas, as the code computes them."""
    lines = ["| suite | parameters | FLOPs per call | ideal bytes per call |", "|---|---|---|---|"]
    for op in registry.ops():
        lines.append(f"| `{op.name}` | {_md(_params(op))} | {_md(op.flops_formula.text)} | "
                     f"{_md(op.bytes_formula.text)} |")
    return "\n".join(lines)


def rules_markdown() -> str:
    return "\n".join(f"- {r}" for r in rules())
