"""A variant's own two states: found from its clean rounds' figures, kept in its figures, and
named by a finding; steady rounds with ordinary noise are not split."""
import numpy as np
import pytest

from suites.harness.contention import RoundLoad
from suites.harness.round_checks import Slot
from suites.harness.timing import summarize
from suites.harness.two_states import two_states
from suites.traces.findings.measured import row_findings


def test_two_groups_far_apart_are_two_states():
    states = two_states([10.0, 10.1, 13.0, 9.9, 13.1, 10.0, 12.9, 10.2, 13.2, 10.1])
    assert states is not None and (states.slow_rounds, states.rounds) == (4, 10)
    assert states.factor == pytest.approx(13.05 / 10.05, rel=0.01)


@pytest.mark.parametrize("sd", [0.05, 0.10, 0.15])
def test_steady_rounds_with_noise_are_one_state(sd):
    rng = np.random.default_rng(7)
    split = sum(two_states(list(10 * np.exp(rng.normal(0, sd, 10)))) is not None
                for _ in range(1000))
    assert split <= 10  # under 1% of rows: measured 0.25% at 10-15% round noise


def test_one_slow_round_or_too_few_rounds_are_not_states():
    assert two_states([10.0] * 9 + [15.0]) is None  # one round: the machine's or a stall's
    assert two_states([10.0, 15.0, 10.0]) is None


def test_the_row_keeps_both_states_and_the_finding_names_them():
    figures = [10.0, 10.1, 13.0, 9.9, 13.1, 10.0, 12.9, 10.2, 13.2, 10.1]
    slots = [Slot("v", r, 0, (f, f), RoundLoad(0.1, 0.0, 0.0)) for r, f in enumerate(figures)]
    stats = summarize(slots, rounds=len(slots))
    assert stats.mean_us == pytest.approx(np.mean(figures))  # both states in the figure
    assert (stats.slow_state_rounds, round(stats.slow_state_factor, 2)) == (4, 1.3)
    record = {"suite": "s", "case_id": "c", "variant": "v", "status": "ok", "rounds": 10,
              "mean_us": stats.mean_us, "median_us": stats.median_us,
              "slow_state_rounds": 4, "slow_state_factor": stats.slow_state_factor}
    found = [f for f in row_findings([record], "s", "base") if f["code"] == "two_states"]
    assert len(found) == 1
    assert "4 of its 10 clean rounds ran 1.30x slower" in found[0]["statement"]
    steady = summarize([Slot("v", r, 0, (10.0, 10.0), RoundLoad(0.1)) for r in range(10)])
    assert np.isnan(steady.slow_state_rounds)
