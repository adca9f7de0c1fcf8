"""The one nesting pass (suites/traces/nesting.py): events grouped per thread in nesting order,
and the walk that hands each event the frames open around it."""
import random

import pytest

from suites.traces.events import Event, sort_nesting_order
from suites.traces.nesting import by_thread, nest


def ev(name, ts, dur, tid=1, cat="cpu_op"):
    return Event(name, cat, float(ts), float(dur), 1, tid, None, None, None)


def test_by_thread_orders_parents_first_and_keeps_the_given_order_at_equal_spans():
    late, parent, child = ev("late", 5, 1), ev("parent", 0, 10), ev("child", 0, 4)
    twin_range, twin_op = ev("range", 20, 3, cat="user_annotation"), ev("op", 20, 3)
    other = ev("other thread", 0, 1, tid=2)
    threads = by_thread([twin_range, late, child, other], [twin_op, parent])
    assert [[e.name for e in events] for events in threads] == [
        ["parent", "child", "late", "range", "op"], ["other thread"]]


def test_nest_hands_each_event_the_frames_around_it_and_closes_them_innermost_first():
    events = by_thread([ev("a", 0, 10), ev("b", 1, 5), ev("launch", 2, 1, cat="cuda_runtime"),
                        ev("c", 6, 2), ev("d", 10, 1)])[0]
    seen, closed = [], []

    def enter(event, frames):
        seen.append((event.name, [f for f in frames]))
        return None if event.cat == "cuda_runtime" else event.name  # a leaf opens no frame

    nest(events, enter, closed.append)
    assert seen == [("a", []), ("b", ["a"]), ("launch", ["a", "b"]), ("c", ["a"]), ("d", [])]
    # b closes when c starts after its end; an event starting exactly at an end is no child.
    assert closed == ["b", "c", "a", "d"]


def _two_sorts(events):
    """Nesting order by its definition: longer first at equal starts, else the order given."""
    out = sorted(events, key=lambda e: e.dur, reverse=True)  # stable, as is reverse=True
    return sorted(out, key=lambda e: e.ts)


def test_nesting_order_is_start_then_longer_first_then_the_order_given():
    """sort_nesting_order sorts by start, then fixes each run of equal starts: the same order as
    the two stable sorts that define it, on lists full of ties and on lists with none."""
    rng = random.Random(1)
    for _ in range(500):
        events = [ev(f"e{i}", rng.randint(0, 6), rng.randint(0, 3))
                  for i in range(rng.randint(0, 25))]
        got = list(events)
        sort_nesting_order(got)
        assert [e.name for e in got] == [e.name for e in _two_sorts(events)]


@pytest.mark.parametrize("threads", [1, 3, 12])  # one thread, a few, more than _FEW_THREADS
def test_by_thread_groups_like_one_dict_per_thread(threads):
    rng = random.Random(threads)
    for _ in range(200):
        groups = [[ev(f"g{g}e{i}", rng.randint(0, 9), rng.randint(0, 3),
                      tid=rng.randrange(threads)) for i in range(rng.randint(0, 20))]
                  for g in range(rng.randint(1, 3))]
        expected: dict = {}
        for group in groups:
            for e in group:
                expected.setdefault((e.pid, e.tid), []).append(e)
        got = [[e.name for e in events] for events in by_thread(*groups)]
        assert got == [[e.name for e in _two_sorts(events)] for events in expected.values()]
