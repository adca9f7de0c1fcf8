"""The self-checks of suites/tools/honest_numbers.py judge their own figures: a figure past its
target is marked on its line and the command exits 1 (its runs are not made here: minutes)."""
from suites.tools import honest_numbers


def test_a_timer_ratio_past_its_band_is_marked_missed():
    line, met = honest_numbers.timer_line(1024, [1.07, 1.085, 1.09])
    assert met is False and line.endswith("median ratio 1.085 (target 0.95-1.05): MISSED")
    line, met = honest_numbers.timer_line(64, [0.97, 1.02, 1.0])
    assert met is True and line.endswith("(target 0.9-1.1)")
    line, met = honest_numbers.timer_line(64, [])  # every round skipped: nothing to judge
    assert met is None and line.endswith(": not judged")


def test_a_missed_target_makes_the_exit_status_1(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(honest_numbers, "check_timer", lambda out, threads: False)
    assert honest_numbers.main(["--checks", "timer", "--out", str(tmp_path)]) == 1
    assert capsys.readouterr().out.strip().endswith("MISSED its target: timer (exit 1)")
    monkeypatch.setattr(honest_numbers, "check_timer", lambda out, threads: True)
    assert honest_numbers.main(["--checks", "timer", "--out", str(tmp_path)]) == 0
