"""Ranges written as begin/end ('B'/'E') event pairs (suites/traces/begin_end.py) read as the
complete ('X') events they stand for: the same ops, steps and verdict, by one process or two;
what cannot be paired is counted and said, never dropped without a word."""
import os

import pytest

from suites.traces import events as reader
from suites.traces import split_read
from suites.traces.begin_end import BAD_TIME, UNENDED_BEGIN, UNMATCHED_END
from suites.traces.command import main
from suites.traces.events import read_trace
from trace_builders import write

LISTS = ("cpu_ops", "annotations", "runtime", "device")


def _ranges(steps=6):
    """(name, cat, ts, dur, tid, args) of a CPU job's steps: a step, an op and one nested in it
    on the main thread, an op on a second thread that starts where another ends."""
    out = []
    for i in range(steps):
        t0 = i * 1000.0
        out += [(f"ProfilerStep#{i}", "user_annotation", t0, 900.0, 1, {}),
                ("aten::linear", "cpu_op", t0 + 10, 600.0, 1, {"External id": i}),
                ("aten::mm", "cpu_op", t0 + 20, 500.0, 1, {}),
                ("aten::add", "cpu_op", t0 + 700, 50.0, 1, {}),
                ("aten::copy_", "cpu_op", t0 + 100, 200.0, 2, {}),
                ("aten::mul", "cpu_op", t0 + 300, 100.0, 2, {})]
    return out


def _complete(ranges):
    return [{"ph": "X", "name": n, "cat": c, "ts": ts, "dur": d, "pid": 1, "tid": tid,
             "args": a} for n, c, ts, d, tid, a in ranges]


def _begin_end(ranges):
    """The same ranges as pairs, in time order per thread (an end before a begin at one
    instant); ends without a name, as writers may leave them."""
    marks = []
    for n, c, ts, d, tid, a in ranges:
        marks.append((ts, 1, {"ph": "B", "name": n, "cat": c, "ts": ts, "pid": 1, "tid": tid,
                              "args": a}))
        marks.append((ts + d, 0, {"ph": "E", "ts": ts + d, "pid": 1, "tid": tid}))
    return [m[2] for m in sorted(marks, key=lambda m: (m[0], m[1]))]


def _events(trace) -> dict:
    return {name: [(e.name, e.cat, e.ts, e.dur, e.pid, e.tid, e.ext, e.self_us)
                   for e in getattr(trace, name)] for name in LISTS}


def test_pairs_read_as_the_complete_events_they_stand_for(tmp_path, capsys):
    ranges = _ranges()
    x = read_trace(write({"traceEvents": _complete(ranges)}, tmp_path / "x.json"))
    be = read_trace(write({"traceEvents": _begin_end(ranges)}, tmp_path / "be.json"))
    assert _events(be) == _events(x) and len(be.cpu_ops) == 30 and len(be.annotations) == 6
    assert be.n_events == 2 * len(ranges) and not be.skipped and be.begin_end == []
    # The verdict is the same too: the steps' compute ops are found.
    for name in ("x.json", "be.json"):
        assert main([str(tmp_path / name)]) == 0
    x_out, be_out = capsys.readouterr().out.split("trace: ")[1:]
    assert x_out.split("\n", 1)[1] == be_out.split("\n", 1)[1]
    assert "6 step(s)" in be_out and "compute-bound" in be_out


def test_what_cannot_be_paired_is_counted_and_said(tmp_path, capsys):
    events = _begin_end(_ranges(steps=2))
    events.insert(0, {"ph": "E", "ts": 0.5, "pid": 1, "tid": 3})  # nothing open on thread 3
    events.append({"ph": "B", "name": "aten::mm", "cat": "cpu_op", "ts": 5000.0, "pid": 1,
                   "tid": 1})  # never ended
    events.append({"ph": "B", "name": "aten::mm", "cat": "cpu_op", "ts": "soon", "pid": 1,
                   "tid": 1})
    path = write({"traceEvents": events}, tmp_path / "t.json")
    trace = read_trace(path)
    assert trace.skipped == {UNMATCHED_END: 1, UNENDED_BEGIN: 1, BAD_TIME: 1}
    assert len(trace.cpu_ops) == 10
    assert main([str(path)]) == 0
    out = capsys.readouterr().out
    assert f"note: 1 events skipped: {UNMATCHED_END}" in out and UNENDED_BEGIN in out


def test_two_processes_pair_what_one_pairs(tmp_path, monkeypatch):
    """Pairs that the boundary between the head's text and the tail's splits are paired."""
    if not hasattr(os, "fork"):
        pytest.skip("no fork here")
    path = write({"traceEvents": _begin_end(_ranges(steps=400))}, tmp_path / "t.json")
    monkeypatch.setattr(split_read, "MIN_BYTES", 0)
    monkeypatch.setenv("FUSEBENCH_READ_PROCESSES", "1")
    one = read_trace(path)
    monkeypatch.setenv("FUSEBENCH_READ_PROCESSES", "2")
    tails, add_tail = [], reader._add_tail
    monkeypatch.setattr(reader, "_add_tail", lambda trace, tail, meta: (
        tails.append([e.ph for e in tail["begin_end"]]), add_tail(trace, tail, meta)))
    two = read_trace(path)
    assert len(tails) == 1 and tails[0].count("B") != tails[0].count("E")  # pairs split
    assert _events(two) == _events(one) and len(two.cpu_ops) == 2000
    assert (two.n_events, two.skipped) == (one.n_events, one.skipped) == (4800, {})


def test_an_end_that_names_its_range_closes_that_range(tmp_path):
    """A step that opens inside a Python frame and outlives it (h100_bert_small's ProfilerStep#6
    opens in record_function's enter frame): ends that repeat their names pair as written;
    unnamed ends close the latest open begin, as the format says."""
    def doc(named):
        def end(name, ts):
            return {"ph": "E", "ts": ts, "pid": 1, "tid": 1, **({"name": name} if named else {})}
        return {"traceEvents": [
            {"ph": "B", "name": "enter", "cat": "python_function", "ts": 0, "pid": 1, "tid": 1},
            {"ph": "B", "name": "ProfilerStep#0", "cat": "user_annotation", "ts": 10, "pid": 1,
             "tid": 1},
            end("enter", 50),
            {"ph": "X", "name": "aten::mm", "cat": "cpu_op", "ts": 60, "dur": 100, "pid": 1,
             "tid": 1},
            end("ProfilerStep#0", 900)]}
    named = read_trace(write(doc(True), tmp_path / "n.json"))
    assert [(a.name, a.ts, a.dur) for a in named.annotations] == [("ProfilerStep#0", 10, 890)]
    unnamed = read_trace(write(doc(False), tmp_path / "u.json"))
    assert [(a.name, a.ts, a.dur) for a in unnamed.annotations] == [("ProfilerStep#0", 10, 40)]
