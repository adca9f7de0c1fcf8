"""The one nesting pass (suites/traces/nesting.py): events grouped per thread in nesting order,
and the walk that hands each event the frames open around it."""
from suites.traces.events import Event
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
