"""Findings about training rows, across the modes of one case (kernels/base.py MODES): made after
the sweep, from the rows alone, like measured.py's.

- backward_share: of one training step (fwd_bwd), how much is the backward: bwd's us/call over
  fwd_bwd's, where both rows are ok (else fwd_bwd minus fwd over fwd_bwd).
- fusion_pays_where: for a variant against the baseline, in which half of the step its speedup
  clears 1 by its interval: forward (fwd), backward (bwd), both, or neither. Fusion that pays in
  the forward alone may not pay in training.
- activations_saved: a variant keeps less (or more) for backward than the baseline of its case
  (activation_mb, saved_tensors): "compile keeps 2 of eager's 5 tensors: 3.1 MiB less".
- compile_partition: how torch.compile's partition of the joint graph split a training step
  (suites/harness/compile_partition.py): the tensors its forward saves for backward and the
  forward ops its backward recomputes instead, "saves 3 tensor(s) for backward (0.0703 MiB) and
  recomputes 12 forward op(s) in backward instead of saving them (aten.mul x6, ...)". Said once
  per case and variant (the partition is the same in every training mode), on the case's
  fwd_bwd row (else bwd, else fwd).
"""
from __future__ import annotations

import math

from suites.traces.findings.codes import Code, Severity
from suites.traces.findings.core import Finding, Row, column_value, is_ok

TRAINING_MODES = ("fwd", "bwd", "fwd_bwd")
# Activation memory this much apart (and at least this many bytes) is worth a finding.
ACTIVATION_FACTOR, ACTIVATION_MIN_MB = 1.10, 1 / 1024


def split_mode(case_id: str) -> tuple[str, str]:
    """(`T64-D96-rms-fp32`, `fwd_bwd`) from `T64-D96-rms-fp32-fwd_bwd`; the default mode when
    the id names none."""
    for mode in sorted(TRAINING_MODES, key=len, reverse=True):
        if case_id.endswith(f"-{mode}"):
            return case_id[: -len(mode) - 1], mode
    return case_id, "fwd_nograd"


def _finite(*values) -> bool:
    return all(isinstance(v, (int, float)) and not math.isnan(v) for v in values)


def backward_share(by_mode: dict[str, Row]):
    step, bwd, fwd = (by_mode.get(m) for m in ("fwd_bwd", "bwd", "fwd"))
    if step is None or not is_ok(step):
        return
    total = column_value(step, "mean_us")
    if bwd is not None and is_ok(bwd) and _finite(total, column_value(bwd, "mean_us")):
        part, how = column_value(bwd, "mean_us"), "the bwd row"
    elif fwd is not None and is_ok(fwd) and _finite(total, column_value(fwd, "mean_us")):
        part, how = total - column_value(fwd, "mean_us"), "fwd_bwd minus fwd"
    else:
        return
    if not total or total <= 0:
        return
    share = part / total
    yield Finding(Code.BACKWARD_SHARE, Severity.INFO,
                  f"backward is {share:.0%} of the training step ({part:.4g} us of "
                  f"{total:.4g} us per step, from {how})",
                  {"backward_share": share, "backward_us": part, "step_us": total})


def _pays(row: Row | None) -> str | None:
    """'pays' / 'costs' / 'unclear' by the speedup's interval; None without a figure."""
    if row is None or not is_ok(row):
        return None
    low, high = column_value(row, "speedup_low"), column_value(row, "speedup_high")
    if not _finite(low, high):
        return None
    return "pays" if low > 1.0 else ("costs" if high < 1.0 else "unclear")


def fusion_pays_where(by_mode: dict[str, Row]):
    fwd, bwd = by_mode.get("fwd"), by_mode.get("bwd")
    verdicts = {"forward": _pays(fwd), "backward": _pays(bwd)}
    if None in verdicts.values():
        return
    paying = [half for half, v in verdicts.items() if v == "pays"]
    where = ("in forward and backward" if len(paying) == 2 else
             f"in {paying[0]} only" if paying else "in neither half")
    speedups = ", ".join(f"{half} {column_value(row, 'speedup'):.3g}x "
                         f"({column_value(row, 'speedup_low'):.3g}-"
                         f"{column_value(row, 'speedup_high'):.3g})"
                         for half, row in (("forward", fwd), ("backward", bwd)))
    yield Finding(Code.FUSION_PAYS_WHERE, Severity.INFO,
                  f"against the baseline it pays {where}: {speedups}",
                  {"pays_forward": verdicts["forward"] == "pays",
                   "pays_backward": verdicts["backward"] == "pays"})


def activations_saved(row: Row, base: Row | None):
    if base is None or not (is_ok(row) and is_ok(base)):
        return
    mine, theirs = column_value(row, "activation_mb"), column_value(base, "activation_mb")
    n_mine, n_theirs = column_value(row, "saved_tensors"), column_value(base, "saved_tensors")
    if not _finite(mine, theirs, n_mine, n_theirs):
        return
    low, high = sorted((mine, theirs))
    if high - low < ACTIVATION_MIN_MB or high < ACTIVATION_FACTOR * max(low, 1e-12):
        return
    less = mine < theirs
    yield Finding(Code.ACTIVATIONS_SAVED, Severity.NOTICE,
                  f"keeps {n_mine:.0f} tensor(s), {mine:.3g} MiB, for backward against the "
                  f"baseline's {n_theirs:.0f}, {theirs:.3g} MiB: {abs(theirs - mine):.3g} MiB "
                  f"{'less' if less else 'more'} activation memory",
                  {"activation_mb": mine, "baseline_activation_mb": theirs,
                   "saved_tensors": n_mine, "baseline_saved_tensors": n_theirs})


def compile_partition(row: Row):
    n, saved, mb = (column_value(row, c) for c in ("recomputed_ops", "partition_saved",
                                                   "partition_saved_mb"))
    if not _finite(n, saved, mb):
        return
    ops = column_value(row, "recomputed")
    recomputes = (f"recomputes {n:.0f} forward op(s) in backward instead of saving them ({ops})"
                  if n and isinstance(ops, str) and ops else
                  f"recomputes {n:.0f} forward op(s) in backward" if n else
                  "recomputes no forward op in backward")
    graphs, bwd_ops = column_value(row, "bwd_graphs"), column_value(row, "bwd_graph_ops")
    backward = (f"; its backward: {graphs:.0f} graph(s), {bwd_ops:.0f} aten ops before fusion"
                if _finite(graphs, bwd_ops) else "")
    hooks = column_value(row, "saved_tensors")
    # What saved_tensors_hooks saw the real compiled call keep, where it is not the same: they
    # leave out the case's inputs only, the partition every input of the graph (a mask).
    seen = (f" (saved_tensors_hooks counted {hooks:.0f} on the real call, the graph's other "
            "inputs included)" if _finite(hooks) and hooks != saved else "")
    yield Finding(Code.COMPILE_PARTITION, Severity.INFO,
                  f"saves {saved:.0f} tensor(s) for backward ({mb:.3g} MiB){seen} and "
                  f"{recomputes}{backward}",
                  {"partition_saved": saved, "partition_saved_mb": mb, "recomputed_ops": n,
                   "bwd_graphs": graphs, "bwd_graph_ops": bwd_ops, "saved_tensors": hooks})


def training_findings(rows: list[Row], baseline: str) -> list[tuple[Row, Finding]]:
    """(the row it is about, the finding) for every training row the detectors flag: the
    cross-mode ones are stated on the case's fwd_bwd row (else its bwd row)."""
    out = []
    groups: dict[tuple[str, str], dict[str, Row]] = {}
    bases: dict[str, Row] = {}
    for row in rows:
        case_id, variant = column_value(row, "case_id"), column_value(row, "variant")
        base_id, mode = split_mode(case_id)
        if mode not in TRAINING_MODES:
            continue
        groups.setdefault((base_id, variant), {})[mode] = row
        if variant == baseline:
            bases[case_id] = row
    for (base_id, variant), by_mode in groups.items():
        anchor = by_mode.get("fwd_bwd") or by_mode.get("bwd") or next(iter(by_mode.values()))
        found = list(backward_share(by_mode))
        if variant != baseline:
            found += fusion_pays_where(by_mode)
        out += [(anchor, f) for f in found]
        partitioned = [r for m in ("fwd_bwd", "bwd", "fwd") if (r := by_mode.get(m)) is not None
                       and _finite(column_value(r, "recomputed_ops"))]
        if partitioned:
            out += [(partitioned[0], f) for f in compile_partition(partitioned[0])]
        if variant != baseline:
            for mode, row in by_mode.items():
                out += [(row, f) for f in activations_saved(
                    row, bases.get(column_value(row, "case_id")))]
    return out
