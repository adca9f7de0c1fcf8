"""A big trace read by two processes (suites/traces/split_read.py) gives what one process reads:
the same events, counts and metadata, the same errors; and where the tail process fails or its
boundary is refused, the read still completes. MIN_BYTES is set to 0 so small traces split."""
import gzip
import json
import os

import pytest

from suites.traces import events as reader
from suites.traces import split_read
from suites.traces.events import TraceFormatError, read_trace
from trace_builders import load, write

BERT = split_read.Path(__file__).parent / "fixtures/real_traces/h100_bert_small.json.gz"
LISTS = ("cpu_ops", "annotations", "runtime", "device", "overhead", "profiler_frames",
         "python_ranges")


def digest(trace) -> tuple:
    return ({name: [(e.name, e.cat, e.ts, e.dur, e.pid, e.tid, e.corr, e.ext, e.nbytes, e.info)
                    for e in getattr(trace, name)] for name in LISTS},
            trace.n_events, trace.skipped, trace.skipped_first, trace.skipped_device,
            trace.other_categories,
            json.dumps(trace.meta, sort_keys=True))


def read(path, processes: int, monkeypatch):
    """The trace read by that many processes; .tails: how many tails were read apart (1 where
    the head stopped at the tail's boundary)."""
    monkeypatch.setenv("FUSEBENCH_READ_PROCESSES", str(processes))
    monkeypatch.setattr(split_read, "MIN_BYTES", 0)
    added, real = [], reader._add_tail
    monkeypatch.setattr(reader, "_add_tail", lambda *a: (added.append(1), real(*a)))
    trace = read_trace(path)
    trace.tails = len(added)
    return trace


@pytest.fixture(scope="module")
def bert_doc():
    doc = load(BERT)
    doc["traceEvents"] = doc["traceEvents"] * 3  # copies dropped: counted alike either way
    doc["traceEvents"].append({"ph": "X", "cat": "kernel", "name": "k", "ts": 1.0})  # no dur
    doc["traceEvents"].insert(7, 42)  # not an object
    return doc


@pytest.mark.parametrize("name", ["t.json", "t.json.gz"])
def test_two_processes_read_what_one_reads(tmp_path, monkeypatch, bert_doc, name):
    if not split_read.worth_splitting(BERT) and not hasattr(os, "fork"):
        pytest.skip("no fork here")
    doc = {"traceEvents": bert_doc["traceEvents"], **{k: v for k, v in bert_doc.items()
                                                      if k != "traceEvents"}}  # keys after it
    path = write(doc, tmp_path / name)
    one, two = read(path, 1, monkeypatch), read(path, 2, monkeypatch)
    assert (one.tails, two.tails) == (0, 1) and digest(one) == digest(two)
    assert "deviceProperties" in two.meta and two.skipped[reader.DUPLICATE] > 0


def test_events_in_time_order_split_alike(tmp_path, monkeypatch, bert_doc):
    """Events written in time order: each list's head part ends before its tail part starts,
    so the two sorted parts are joined without a merge; what is read is the same."""
    doc = dict(bert_doc)
    doc["traceEvents"] = sorted((e for e in bert_doc["traceEvents"] if isinstance(e, dict)),
                                key=lambda e: (e.get("ts", 0.0), -e.get("dur", 0.0)))
    path = write(doc, tmp_path / "ordered.json")
    one, two = read(path, 1, monkeypatch), read(path, 2, monkeypatch)
    assert two.tails == 1 and digest(one) == digest(two)


def test_a_bare_array_splits_too(tmp_path, monkeypatch, bert_doc):
    path = tmp_path / "bare.json"
    path.write_text(json.dumps(bert_doc["traceEvents"]))
    two = read(path, 2, monkeypatch)
    assert two.tails == 1 and digest(read(path, 1, monkeypatch)) == digest(two)


@pytest.mark.parametrize("name, bare", [("bom.json", False), ("bom.json.gz", False),
                                        ("bom_bare.json", True)])
def test_a_byte_order_mark_before_the_trace_is_read_past(tmp_path, monkeypatch, bert_doc,
                                                         name, bare):
    """A UTF-8 byte order mark (written by some Windows tools) starts the file: the trace
    reads as without it, and still splits (its 3 bytes are counted as bytes)."""
    text = "\ufeff" + json.dumps(bert_doc["traceEvents"] if bare else bert_doc)
    path = tmp_path / name
    with (gzip.open if name.endswith(".gz") else open)(path, "wt", encoding="utf-8") as f:
        f.write(text)
    plain = write(bert_doc["traceEvents"] if bare else bert_doc, tmp_path / f"plain_{name}")
    one, two = read(path, 1, monkeypatch), read(path, 2, monkeypatch)
    assert two.tails == 1 and digest(one) == digest(two) == digest(read(plain, 1, monkeypatch))


def test_a_malformed_tail_raises_what_one_process_raises(tmp_path, monkeypatch, bert_doc):
    text = json.dumps(bert_doc)
    at = text.index('{"ph"', int(len(text) * 0.8))
    path = tmp_path / "bad.json"
    path.write_text(text[:at] + '{"ph": "X", "ts": 1,, ' + text[at + 1:])
    errors = []
    for processes in (1, 2):
        with pytest.raises(TraceFormatError) as raised:
            read(path, processes, monkeypatch)
        errors.append(str(raised.value))
    assert errors[0] == errors[1] and "invalid JSON at character" in errors[0]


def test_a_tail_process_that_dies_is_read_here(tmp_path, monkeypatch, bert_doc):
    path = write(bert_doc, tmp_path / "t.json")
    expected = digest(read(path, 1, monkeypatch))
    parent, real = os.getpid(), reader._tail_events

    def dies_in_the_child(batches, meta):
        if os.getpid() != parent:
            next(batches)  # its boundary told, the head stops there
            os._exit(9)  # then killed (out of memory, say): nothing sent back
        return real(batches, meta)

    monkeypatch.setattr(reader, "_tail_events", dies_in_the_child)
    two = read(path, 2, monkeypatch)
    assert two.tails == 1 and digest(two) == expected


def test_a_boundary_past_the_events_is_refused(tmp_path, monkeypatch, bert_doc):
    """The middle of the file lies in a list of objects after traceEvents: the tail offers a
    boundary there, the head never reaches it in the events array and reads everything."""
    doc = {"traceEvents": bert_doc["traceEvents"][:50],
           "distributedInfo": [{"rank": i, "note": "x" * 50} for i in range(5000)]}
    path = write(doc, tmp_path / "t.json")
    two = read(path, 2, monkeypatch)
    assert two.tails == 0 and digest(read(path, 1, monkeypatch)) == digest(two)


@pytest.mark.parametrize("name, tails", [("t.json", 0), ("t.json.gz", 1)])
def test_non_ascii_text_before_the_boundary(tmp_path, monkeypatch, bert_doc, name, tails):
    """The tail of a plain file counts bytes from where it seeks; before it, a name in another
    script makes bytes and characters differ, so the head refuses the boundary and reads all.
    A gzip file's tail inflates from the start and counts characters: it splits."""
    events = [dict(e) for e in bert_doc["traceEvents"] if isinstance(e, dict)]
    events[3] = {**events[3], "name": "présentation ✓ 数据"}
    path = tmp_path / name
    text = json.dumps({"traceEvents": events}, ensure_ascii=False)
    opener = gzip.open if name.endswith(".gz") else open
    with opener(path, "wt", encoding="utf-8") as f:
        f.write(text)
    two = read(path, 2, monkeypatch)
    assert two.tails == tails and digest(read(path, 1, monkeypatch)) == digest(two)
    assert any(e.name == "présentation ✓ 数据" for e in two.cpu_ops + two.annotations)
