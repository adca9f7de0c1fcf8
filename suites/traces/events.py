"""Read a torch.profiler (Kineto) Chrome trace, .json or .json.gz, as a stream of events.

Traces of real training jobs run to 1 GB; `json.load` of one holds the whole document as Python
objects (several times the file size). Here the `traceEvents` array is decoded from a sliding
text window, a run of events at a time by one call of a C decoder (trace_text.py: msgspec's,
else json's), and only the fields the analysis uses are kept, in structs made in C (msgspec's;
slotted objects without it) with shared (interned) names, categories and thread ids: about 160
bytes per kept event. `python -m suites.tools.trace_speed` measures it. Decoding is two fifths
of the reading time (~5 s per GB with msgspec); making the kept events, sorting them and
dropping copies is the rest. Without msgspec, reading takes ~1.5x as long. Every event is
decoded, python_function ones included: skipping them by their text would let malformed JSON
in them pass unnoticed, and checking their text with a regular expression is slower than
decoding it.
"""
from __future__ import annotations

import gc
import re
import sys
from dataclasses import dataclass, field
from itertools import compress, count, islice
from operator import add, attrgetter, eq
from pathlib import Path
from typing import Any

from suites.traces import begin_end, split_read
from suites.traces.event_times import (CLOCK_LIMIT_US, STEP_PREFIX, count_skipped,
                                       drop_impossible, read_problem)
from suites.traces.event_args import GEMM_OPS, event_info
# Read here, and by whoever reads a trace's raw events or its errors:
from suites.traces.trace_text import (DECODER, RawArgs, RawEvent, TraceFormatError,  # noqa: F401
                                     decode_events, hashable_id, iter_raw_events, json_event,
                                     raw_batches)

try:
    import msgspec
except ImportError:  # requirements.txt installs it; without it, a slotted class (below)
    msgspec = None

# Device-side activities: what "kernels per call" counts on a GPU. MTIA writes its device's
# activities as `mtia_ccp_events` (Kineto aliases them to its kernel type; HTA reads them as
# kernels): read as kernels, its `dma*` ones as copies (gpu_timeline.kind).
DEVICE_CATS = frozenset({"kernel", "gpu_memcpy", "gpu_memset", "mtia_ccp_events"})
# Other backends' runtime calls link their activities by correlation id the same way (Intel
# XPU, out-of-tree PrivateUse1 devices, MTIA): read, so those activities are linked, not lost.
RUNTIME_CATS = frozenset({"cuda_runtime", "cuda_driver", "xpu_runtime", "xpu_driver",
                          "privateuse1_runtime", "privateuse1_driver", "mtia_runtime"})
CPU_OP_CATS = frozenset({"cpu_op", "operator"})  # `operator` in traces of older torch versions
ANNOTATION_CATS = frozenset({"user_annotation"})
# Kineto's own activity (`Activity Buffer Request`, `Lazy Function Loading`...): read, so the
# device's idle time the profiler caused is told from the program's (profiler_artifacts.py).
OVERHEAD_CAT = "overhead"
# Of the Python frames (traces recorded with_stack), the long ones are kept (PYTHON_RANGE_MIN_US)
# and the profiler's own stop: the device sync inside it is the profiler's flush
# (profiler_artifacts.py). Not the __exit__ of
# torch/autograd/profiler.py: record_function's has the same name. A suffix test first: every
# python_function event's name is checked, and most end otherwise.
_PROFILER_FRAME_END = "): stop_trace"
_PROFILER_FRAME = re.compile(r"torch/profiler/profiler\.py\(\d+\): stop_trace$")
# Python frames this long or longer are kept (the host code a device may wait on); the many
# shorter ones are counted, not kept: a with_stack trace holds millions.
PYTHON_RANGE_MIN_US = 1000.0
# Older Kineto wrote capitalised categories (Kernel, Memcpy, Memset, Runtime, Driver); they are
# read as today's names, so an old trace is analysed like a new one.
_CATEGORY_ALIASES = {"memcpy": "gpu_memcpy", "memset": "gpu_memset", "runtime": "cuda_runtime",
                     "driver": "cuda_driver"}

_ARGS_NOT_OBJECT = "args not an object (kept without them)"
_NOT_AN_OBJECT = "not a JSON object (a number, string, list or null in traceEvents)"
# What the reader takes for a number, as exact types (the decoder makes no subclasses): bool is
# not a number.
_NUMBER_TYPES = frozenset({int, float})

_EVENT_DOC = """One complete ('X') event, reduced to what the analysis reads. `self_us` (a cpu op's
duration minus its direct children's) and `op` (the name of the innermost cpu op around it) are
set by nesting (steps.nest_cpu_events), None before; `info` holds a kernel's launch or a GEMM op's
input shapes (event_args.py); `nbytes` a memcpy's or memset's size."""
# An Event's fields: those it is made with, in this order, then those set later (None before).
_GIVEN = ("name", "cat", "ts", "dur", "pid", "tid", "corr", "ext", "nbytes")
_LATER = ("self_us", "op", "info")


def _end(event) -> float:
    return event.ts + event.dur


def _repr(event) -> str:
    return f"Event({event.cat}:{event.name!r} ts={event.ts} dur={event.dur} corr={event.corr})"


_METHODS = {"__doc__": _EVENT_DOC, "end": property(_end), "__repr__": _repr}

if msgspec is not None:
    # A struct made in C, untracked by the collector (an event refers to strings, numbers and
    # tuples only: never in a cycle): made 8x as fast as a slotted object's Python __init__,
    # 16 bytes smaller, the same attribute speed; compared and hashed by identity, as objects.
    Event = msgspec.defstruct("Event", [*_GIVEN, *((name, Any, None) for name in _LATER)],
                              module=__name__, namespace=_METHODS, gc=False, eq=False)
else:
    def _init(self, name, cat, ts, dur, pid, tid, corr, ext, nbytes):
        # One statement per field: packing and unpacking tuples costs a quarter more.
        self.name = name
        self.cat = cat
        self.ts = ts
        self.dur = dur
        self.pid = pid
        self.tid = tid
        self.corr = corr
        self.ext = ext
        self.nbytes = nbytes
        self.self_us = self.op = self.info = None

    Event = type("Event", (), {**_METHODS, "__slots__": _GIVEN + _LATER, "__init__": _init,
                               "__module__": __name__})


@dataclass
class Trace:
    path: str
    cpu_ops: list[Event] = field(default_factory=list)
    annotations: list[Event] = field(default_factory=list)  # ProfilerStep#N, record_function
    overhead: list[Event] = field(default_factory=list)  # the profiler's own (OVERHEAD_CAT)
    profiler_frames: list[Event] = field(default_factory=list)  # its stop (_PROFILER_FRAME)
    # Python frames (with_stack) of PYTHON_RANGE_MIN_US or more: where the host ran the program's
    # own code (a video's preprocessing), named by the frame
    python_ranges: list[Event] = field(default_factory=list)
    runtime: list[Event] = field(default_factory=list)  # cudaLaunchKernel, cuLaunchKernel, ...
    device: list[Event] = field(default_factory=list)  # kernels, memcpy, memset
    meta: dict = field(default_factory=dict)  # top-level keys other than traceEvents
    n_events: int = 0
    skipped: dict = field(default_factory=dict)  # why -> events left out as malformed
    skipped_first: dict = field(default_factory=dict)  # why -> the first such event's name
    # why -> how many of the skipped were device activities (lost from the device's figures;
    # exact copies are not: each is counted once)
    skipped_device: dict = field(default_factory=dict)
    # category -> complete events of a category the analysis does not read (python_function,
    # cuda_profiler_range, another accelerator's activities...): reported, never silently lost
    other_categories: dict = field(default_factory=dict)
    # Begin and end ('B', 'E') events as read, in file order: made complete events once the
    # whole trace is read (begin_end.py), then emptied
    begin_end: list = field(default_factory=list)


DUPLICATE = "an exact copy of an earlier event (same name, category, times, thread and ids)"


def _drop_copies(events: list[Event], trace: "Trace") -> list[Event]:
    """`events` (in nesting order) without exact copies: a trace merged twice, or written by a
    tool that repeats events, would count each kernel, copy and op again. Copies share a start
    and a duration, so only a run of events with equal (ts, dur), adjacent after sorting, is
    compared: most events start a run of one, and cost two float comparisons."""
    kept: list[Event] = []
    previous, seen = None, None
    for event in events:
        if previous is None or event.ts != previous.ts or event.dur != previous.dur:
            previous, seen = event, None
            kept.append(event)
            continue
        if seen is None:  # the run's second event: its first one's key
            seen = {_copy_key(previous)}
        key = _copy_key(event)
        if key in seen:
            count_skipped(trace, DUPLICATE, event.name)
            continue
        seen.add(key)
        kept.append(event)
    return kept


def _copy_key(event: Event) -> tuple:
    return (event.name, event.cat, event.pid, event.tid, event.corr,
            event.ext)


_START, _DURATION = attrgetter("ts"), attrgetter("dur")


def starts(events: list[Event]) -> list[float]:
    return list(map(_START, events))


def ends(events: list[Event]):
    """Each event's end, at C speed (a property call per event is slow for millions)."""
    return map(add, map(_START, events), map(_DURATION, events))


def sort_nesting_order(events: list[Event]) -> None:
    """Sort in place by start, the longer first at equal starts (a parent before its child);
    events with equal start and duration keep their order. One stable sort by start (fast on
    the near-sorted lists a trace gives), then each run of equal starts, found at C speed,
    sorted by duration: a Python key function per event was a tenth of a big trace's analysis,
    and a second whole sort by duration a tenth of its reading."""
    events.sort(key=_START)
    times = list(map(_START, events))
    tied = list(compress(count(), map(eq, times, islice(times, 1, None))))  # i: ts[i] == ts[i+1]
    i = 0
    while i < len(tied):
        lo = hi = tied[i]
        while i + 1 < len(tied) and tied[i + 1] == hi + 1:
            i += 1
            hi += 1
        i += 1
        run = events[lo:hi + 2]
        run.sort(key=_DURATION, reverse=True)  # reverse keeps equal keys in their order
        events[lo:hi + 2] = run


def read_trace(path) -> Trace:
    """Load the events of a trace that the analysis needs; see the module docstring."""
    trace = Trace(path=str(path))
    collecting = gc.isenabled()
    # Millions of new Events, none in a reference cycle, would trigger full collections that
    # walk all of them and find nothing (a fifth of the reading time).
    gc.disable()
    try:
        _read_events(path, trace)
    finally:
        if collecting:
            gc.enable()
    if trace.n_events == 0:
        raise TraceFormatError(f"{path}: the trace has no events")
    return trace


def _kind(raw_cat, buckets: dict) -> tuple[str, list | None, bool]:
    """(category, the list its events go to or None, on the GPU's timeline) of a `cat` value."""
    cat = str(raw_cat).lower()
    cat = sys.intern(_CATEGORY_ALIASES.get(cat, cat))
    return cat, buckets.get(cat), cat.startswith("gpu_")


_LISTS = ("cpu_ops", "annotations", "runtime", "device", "overhead", "profiler_frames",
          "python_ranges")
_COUNTS = ("skipped", "skipped_device", "other_categories")


def _read_events(path, trace: Trace) -> None:
    if split_read.worth_splitting(Path(path)):
        batches, tail = split_read.split_batches(path, trace.meta, decode_events, _tail_events)
        _keep(batches, trace)
        for name in _LISTS:  # while the tail process sorts its part
            sort_nesting_order(getattr(trace, name))
        heads = {name: len(getattr(trace, name)) for name in _LISTS}
        found = tail()
        if found is not None:
            _add_tail(trace, *found)
        for name, n in heads.items():  # two sorted runs: merged where they overlap in time
            events = getattr(trace, name)
            if 0 < n < len(events) and events[n].ts <= events[n - 1].ts:
                sort_nesting_order(events)
    else:
        _keep(raw_batches(path, trace.meta, decode_events), trace)
        for name in _LISTS:
            sort_nesting_order(getattr(trace, name))
    if trace.begin_end:
        _add_begin_end(trace)
    drop_impossible(trace, _LISTS)  # event_times.py
    for name in _LISTS:
        setattr(trace, name, _drop_copies(getattr(trace, name), trace))


def _add_begin_end(trace: Trace) -> None:
    """The trace's begin/end pairs kept as its complete events are, each counted once (the
    pair was counted as two events as it was read)."""
    made = begin_end.pair(trace.begin_end, trace.skipped)
    trace.begin_end = []
    sizes = {name: len(getattr(trace, name)) for name in _LISTS}
    _keep([made], trace)
    trace.n_events -= len(made)
    for name, n in sizes.items():
        if len(getattr(trace, name)) > n:
            sort_nesting_order(getattr(trace, name))


# The tail process sends an Event's fields one list per field (pickled and made into Events
# at C speed, where a tuple per event took twice as long each way): those it is made with,
# then its info.
_SENT_FIELDS = [attrgetter(name) for name in (*_GIVEN, "info")]


def _tail_events(batches, meta: dict) -> dict:
    """What the tail process (split_read.py) sends back: its kept events, sorted (here, while
    the head sorts its own), as one list per field; its counts and the keys after the events."""
    part = Trace(path="")
    _keep(batches, part)
    lists = {}
    for name in _LISTS:
        events = getattr(part, name)
        sort_nesting_order(events)
        lists[name] = [list(map(field, events)) for field in _SENT_FIELDS]
    return {"lists": lists, "n_events": part.n_events, "begin_end": part.begin_end,
            "skipped_first": part.skipped_first,
            **{name: getattr(part, name) for name in _COUNTS}}


def _add_tail(trace: Trace, tail: dict, meta: dict) -> None:
    trace.n_events += tail["n_events"]
    trace.begin_end.extend(tail["begin_end"])  # after the head's: in file order
    for name in _COUNTS:
        counts = getattr(trace, name)
        for key, n in tail[name].items():
            counts[key] = counts.get(key, 0) + n
    for why, first in tail["skipped_first"].items():  # the head's, earlier in the file, first
        trace.skipped_first.setdefault(why, first)
    lists = tail.pop("lists")
    for name in _LISTS:
        *fields, infos = lists.pop(name)  # each list's columns freed once its events are made
        made = list(map(Event, *fields))
        for event, info in zip(made, infos):
            if info is not None:
                event.info = info
        getattr(trace, name).extend(made)
    for key, value in meta.items():
        trace.meta.setdefault(key, value)


def _keep(batches, trace: Trace) -> None:
    """Each event of the batches that the analysis reads made an Event in its list."""
    buckets = {}
    for cat in DEVICE_CATS:
        buckets[cat] = trace.device
    for cat in RUNTIME_CATS:
        buckets[cat] = trace.runtime
    for cat in CPU_OP_CATS:
        buckets[cat] = trace.cpu_ops
    for cat in ANNOTATION_CATS:
        buckets[cat] = trace.annotations
    buckets[OVERHEAD_CAT] = trace.overhead
    # One shared object per distinct name, category and int pid/tid: a decoded string or int
    # is a new object per event (50-80 bytes each).
    names: dict = {}
    kinds: dict = {}  # raw `cat` string -> _kind()
    ids: dict = {}
    infos: dict = {}  # event_args.py's tuples, shared
    annotations, other, skipped = trace.annotations, trace.other_categories, trace.skipped
    begin_ends = trace.begin_end
    device, skipped_device = trace.device, trace.skipped_device
    clock, numbers = CLOCK_LIMIT_US, _NUMBER_TYPES
    for batch in batches:
        trace.n_events += len(batch)
        # This loop runs once per event (millions): hence local names and no helper calls on
        # the common path; where a value has an unusual type, the general code decides.
        for raw in batch:
            if type(raw) is dict:  # decoded by json: see DECODER
                raw = json_event(raw)
            elif type(raw) is not RawEvent:
                skipped[_NOT_AN_OBJECT] = skipped.get(_NOT_AN_OBJECT, 0) + 1  # said, never lost
                continue
            ph = raw.ph
            if ph != "X":
                if ph == "B" or ph == "E":  # paired once the whole trace is read (begin_end.py)
                    begin_ends.append(raw)
                continue
            raw_cat = raw.cat
            kind = kinds.get(raw_cat) if type(raw_cat) is str else None
            if kind is None:
                kind = _kind(raw_cat, buckets)
                if type(raw_cat) is str:
                    kinds[raw_cat] = kind
            cat, bucket, on_gpu = kind
            name = raw.name
            # Older traces emit steps as cpu ops; the copy of each step that newer ones put on
            # the GPU's timeline (gpu_user_annotation) is not a step of its own. (Only a str
            # name can start so: str() of any other JSON value starts otherwise.)
            if not on_gpu and type(name) is str and name.startswith(STEP_PREFIX):
                bucket = annotations
            elif bucket is None:
                other[cat] = other.get(cat, 0) + 1
                if cat != "python_function" or type(name) is not str:
                    continue
                if name.endswith(_PROFILER_FRAME_END) and _PROFILER_FRAME.search(name):
                    bucket = trace.profiler_frames  # counted above too: a python_function event
                elif type(raw.dur) in numbers and raw.dur >= PYTHON_RANGE_MIN_US:
                    bucket = trace.python_ranges  # the program's own code (host_parts.py)
                else:
                    continue
            ts, dur = raw.ts, raw.dur
            # Comparisons NaN and infinities fail; times past the clock (event_times.py) too.
            if not (type(ts) in numbers and type(dur) in numbers and dur >= 0
                    and -clock <= ts and ts + dur <= clock):
                problem = read_problem(ts, dur)  # left out, and counted: a reader is told why
                count_skipped(trace, problem, name)
                if bucket is device:
                    skipped_device[problem] = skipped_device.get(problem, 0) + 1
                continue
            args = raw.args
            if type(args) is RawArgs:
                corr, ext, nbytes = args.correlation, args.ext, args.nbytes
                corr = corr if type(corr) in numbers else None
                ext = ext if type(ext) in numbers else None
                nbytes = nbytes if type(nbytes) in numbers else None
            else:
                if args is not None:
                    skipped[_ARGS_NOT_OBJECT] = skipped.get(_ARGS_NOT_OBJECT, 0) + 1
                corr = ext = nbytes = None
            try:
                interned = names[name]
            except KeyError:
                interned = names[name] = sys.intern(str(name))
            except TypeError:  # a list or an object for a name: kept as its text
                interned = sys.intern(str(name))
            pid, tid = raw.pid, raw.tid
            if type(pid) is int:
                pid = ids.setdefault(pid, pid)
            elif type(pid) is not str:  # a list or an object: its text, so threads group
                pid = hashable_id(pid)
            if type(tid) is int:
                tid = ids.setdefault(tid, tid)
            elif type(tid) is not str:
                tid = hashable_id(tid)
            event = Event(interned, cat, float(ts), float(dur), pid, tid, corr, ext, nbytes)
            if (cat == "kernel" or interned in GEMM_OPS) and type(args) is RawArgs:
                event.info = event_info(cat, interned, args, infos)
            bucket.append(event)
