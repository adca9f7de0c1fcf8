"""The audit of a compare folder (suites/reports/compare/audit.py): 0 contradictions on real
comparisons of every kind of row, and the right check named when a page is made to lie."""
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from suites.reports.compare.audit import audit, looks_like
from suites.reports.compare.command import main
from test_compare import AA_ROWS, V0, _with_offsets, write_run

STEADY = dict(spread=0.005)
A_ROWS = [("M64", "eager", "ok", "", 100.0), ("M64", "addmm", "ok", "", 80.0),
          ("M128", "eager", "ok", "", 200.0), ("M128", "addmm", "ok", "", 150.0),
          ("M16", "eager", "ok", "", 10.0)]
B_ROWS = [("M64", "eager", "ok", "", 50.0), ("M64", "addmm", "ok", "", 120.0),
          ("M128", "eager", "ok", "", 200.0), ("M128", "addmm", "skipped", "needs a CUDA GPU", 0.0),
          ("M256", "eager", "ok", "", 400.0)]


def _compare(tmp_path, a, b, *flags) -> Path:
    out = tmp_path / "out"
    assert main([str(a), str(b), "--out", str(out), *flags]) == 0
    return out


def _every_verdict(tmp_path):
    """faster, slower, equivalent, not comparable, only in A, only in B (a drift of 1% given)."""
    a = write_run(tmp_path / "a", A_ROWS, seed=1, **STEADY)
    b = write_run(tmp_path / "b", B_ROWS, seed=2, **STEADY)
    return _compare(tmp_path, a, b, "--drift-sd", "0.01")


def _default_drift(tmp_path):
    """inconclusive rows beside a faster one, the default drift."""
    a = write_run(tmp_path / "a", A_ROWS, seed=1, **STEADY)
    b = write_run(tmp_path / "b", B_ROWS, seed=2, **STEADY)
    return _compare(tmp_path, a, b)


def _aa_control(tmp_path):
    """A drift read from an A/A control: Student's t with the control's cases as its dof."""
    a = write_run(tmp_path / "a", _with_offsets(AA_ROWS, [1.04, 1 / 1.03, 1.02, 1 / 1.04]),
                  seed=1, **STEADY)
    b_rows = [(c, v, s, r, t * (1.5 if (c, v) == ("M64", "addmm") else 1.0))
              for c, v, s, r, t in AA_ROWS]
    b = write_run(tmp_path / "b", _with_offsets(b_rows, [1 / 1.02, 1.03, 1 / 1.04, 1.02]),
                  seed=2, **STEADY)
    return _compare(tmp_path, a, b)


def _two_states(tmp_path):
    """A row held inconclusive: B's variant runs in two states of its own."""
    a = write_run(tmp_path / "a", [("T8192", "eager", "ok", "", 90_000.0)], seed=1, n_rounds=10,
                  mean=True)
    b = write_run(tmp_path / "b", [("T8192", "eager", "ok", "", 30_000.0)], seed=2, n_rounds=10,
                  mean=True)
    rounds = pd.read_csv(b / "rounds.csv")
    figures = [27575, 74894, 18803, 25729, 64055, 19265, 27889, 63582, 65058, 28500]
    rounds.assign(mean_us=figures, median_us=figures).to_csv(b / "rounds.csv", index=False)
    return _compare(tmp_path, a, b)


def _old_folder(tmp_path):
    """A real folder from before the mean against its copy: identical rounds, ratio 1."""
    return _compare(tmp_path, V0, shutil.copytree(V0, tmp_path / "again"))


@pytest.mark.parametrize("make", [_every_verdict, _default_drift, _aa_control, _two_states,
                                  _old_folder])
def test_a_real_comparison_has_no_contradiction(tmp_path, make):
    out = make(tmp_path)
    checked = audit(out)
    assert checked.found == (), checked.lines()
    assert checked.kind == "compare" and checked.tested >= 10


def test_a_compare_folder_is_told_from_others(tmp_path):
    out = _every_verdict(tmp_path)
    assert looks_like(out)
    assert not looks_like(tmp_path / "a") and not looks_like(V0)


def _codes(out) -> set[str]:
    return {c.check for c in audit(out).found}


def _edit_csv(out, change):
    frame = pd.read_csv(out / "compare.csv", keep_default_na=False, na_values=[""])
    changed = change(frame)  # a new frame, or None where `change` edited this one
    (frame if changed is None else changed).to_csv(out / "compare.csv", index=False)


def _row(frame, case, variant):
    return frame.index[(frame["case_id"] == case) & (frame["variant"] == variant)][0]


def test_a_verdict_flipped_in_compare_csv_is_named(tmp_path):
    out = _every_verdict(tmp_path)
    _edit_csv(out, lambda f: f.__setitem__("verdict", f["verdict"].replace("faster", "slower")))
    found = audit(out).found
    assert {"verdict_rule", "summary_counts", "table_rows"} <= {c.check for c in found}
    (flipped,) = [c for c in found if c.check == "verdict_rule"]
    assert flipped.where == "matmul_add M64 eager"


def test_a_count_changed_is_named(tmp_path):
    out = _every_verdict(tmp_path)
    md = out / "compare.md"
    md.write_text(md.read_text().replace("1 faster, ", "2 faster, ", 1))
    assert "summary_counts" in _codes(out) and "md_html" in _codes(out)
    out = _every_verdict(tmp_path / "again")
    _edit_csv(out, lambda f: f.drop(index=_row(f, "M16", "eager")))
    assert {"summary_counts", "table_rows"} <= _codes(out)


def test_an_mde_or_an_interval_the_numbers_do_not_give_is_named(tmp_path):
    out = _default_drift(tmp_path)
    _edit_csv(out, lambda f: f.loc.__setitem__((_row(f, "M64", "addmm"), "mde"), 0.05))
    assert "mde" in _codes(out)
    out = _default_drift(tmp_path / "again")
    _edit_csv(out, lambda f: f.loc.__setitem__((_row(f, "M64", "addmm"), "eq_low"), 0.5))
    assert "interval_order" in _codes(out)
    out = _default_drift(tmp_path / "third")
    _edit_csv(out, lambda f: f.loc.__setitem__((_row(f, "M16", "eager"), "a_us"), np.inf))
    assert _codes(out) == {"finite"}


def test_a_row_only_one_side_has_with_the_other_sides_status_is_named(tmp_path):
    out = _every_verdict(tmp_path)
    _edit_csv(out, lambda f: f.loc.__setitem__((_row(f, "M16", "eager"), "status_b"), "ok"))
    assert "row_kind" in _codes(out)


def test_a_folder_of_another_kind_is_one_error(tmp_path):
    from suites.common.errors import InputError
    with pytest.raises(InputError, match="compare.csv"):
        audit(V0)
