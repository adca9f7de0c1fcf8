"""The text of a Chrome trace (.json or .json.gz) decoded a run of events at a time: a sliding
window over the file, with msgspec's decoder where it is installed (DECODER says which) and
json's otherwise, and for what msgspec rejects (NaN, Infinity, 1e400). events.py makes the kept
events of what this yields.

msgspec decodes each event into a struct of the eight fields events.py reads (RawEvent), its
args into one of the dozen keys read (RawArgs), and skips the other values without making
objects of them, 2-3x faster than `json` (~4 s per GB here). Malformed text is read one value at a time by json, whose errors say where.
"""
from __future__ import annotations

import gzip
import json
import re
from pathlib import Path
from types import SimpleNamespace
from typing import IO, Any, Callable, Iterator

try:
    import msgspec
except ImportError:  # requirements.txt installs it; without it, traces read ~1.5x slower
    msgspec = None

from suites.common.errors import InputError

_CHUNK_CHARS = 1 << 20
_WS = " \t\r\n"
_BOM = "\ufeff"
_BOUNDARY = re.compile(r"\}[ \t\r\n]*,[ \t\r\n]*\{")  # between two elements, most often

DECODER = "json" if msgspec is None else "msgspec"  # what reads traces here
_json_list = json.JSONDecoder().decode


# The keys of an event's `args` that events.py reads (attribute -> key): its links, and what
# event_args.py keeps (a kernel's launch, a GEMM op's input shapes). msgspec skips the others
# (a kernel's stream, context, queued...; a Python frame's ids) without making objects of them.
ARG_KEYS = {"correlation": "correlation", "ext": "External id", "nbytes": "bytes",
            "grid": "grid", "block": "block", "registers": "registers per thread",
            "shared_mem": "shared memory", "blocks_per_sm": "blocks per SM",
            "warps_per_sm": "warps per SM", "occupancy": "est. achieved occupancy %",
            "device": "device", "input_dims": "Input Dims"}


class JsonEvent(SimpleNamespace):
    """An event that json decoded (a dict), its keys as attributes, as events.py reads them:
    the ones it reads default to what dict.get gives. Made by one C call, JsonEvent(**raw), in a
    third of the time of eight dict.get calls: without msgspec, reading is as fast as it was."""
    ph = ts = dur = pid = tid = args = None
    cat = name = ""


class JsonArgs:
    """An event's `args` that json decoded, as RawArgs: the keys of ARG_KEYS as attributes."""
    __slots__ = tuple(ARG_KEYS)

    def __init__(self, **values):
        for attr in ARG_KEYS:
            setattr(self, attr, values.get(attr))


def json_event(raw: dict) -> JsonEvent:
    """A dict that json decoded (without msgspec, or where it rejected the text) as the struct
    msgspec makes of it: its args a RawArgs."""
    event = JsonEvent(**raw)
    if type(event.args) is dict:
        event.args = RawArgs(**{attr: event.args.get(key) for attr, key in ARG_KEYS.items()})
    return event


if msgspec is None:
    RawEvent, RawArgs = JsonEvent, JsonArgs  # for events.py's type tests
    decode_events = decode_values = _json_list
else:
    # Every field of any type (one of a wrong type is counted in events.py, not a decode error).
    RawArgs = msgspec.defstruct("RawArgs", [(attr, Any, msgspec.field(default=None, name=key))
                                            for attr, key in ARG_KEYS.items()], gc=False)

    class RawEvent(msgspec.Struct, gc=False):  # never in a cycle: the collector can skip them
        """The fields of an event that events.py reads, each of any type (one of a wrong
        type is counted there, not a decode error), as in JsonEvent where missing; `args`
        that are not an object are kept as they are (and counted there)."""
        ph: Any = None
        cat: Any = ""
        name: Any = ""
        ts: Any = None
        dur: Any = None
        pid: Any = None
        tid: Any = None
        args: RawArgs | int | float | str | bool | None | list = None

    def _with_json_fallback(decoder) -> Callable[[str], list]:
        def decode(text: str) -> list:
            try:
                return decoder.decode(text)
            except (msgspec.DecodeError, ValueError):  # NaN, Infinity, 1e400: json reads them
                return _json_list(text)  # (and raises, where the text is malformed)
        return decode

    # An entry that is not an object is any other JSON value: counted, not a decode error.
    decode_events = _with_json_fallback(msgspec.json.Decoder(
        list[RawEvent | int | float | str | bool | None | list]))
    decode_values = _with_json_fallback(msgspec.json.Decoder())


def hashable_id(value):
    """A pid or tid as a dict key, and as a thread's name: a malformed trace may give a list
    or an object (its text, then)."""
    return value if value is None or type(value) in (int, str, float) else repr(value)


class TraceFormatError(InputError):
    """The file is not a readable Chrome trace (a bad input file, not a bad configuration); the
    message says where and why."""


def is_gzip(path: Path) -> bool:
    with open(path, "rb") as raw:
        return raw.read(2) == b"\x1f\x8b"


def _open_text(path: Path, at_byte: int = 0) -> IO[str]:
    """The file's text; from byte `at_byte` on where it is not gzip (a byte that may fall in a
    character: decoding errors are replaced, and the tail skips to a boundary anyway)."""
    if is_gzip(path):
        return gzip.open(path, "rt", encoding="utf-8", errors="replace")
    stream = open(path, "r", encoding="utf-8", errors="replace")
    if at_byte:
        stream.buffer.seek(at_byte)  # before the first read: the text layer has nothing yet
    return stream


def _last_boundary(buf: str, lo: int, hi: int) -> int | None:
    """The end of the last `}` in buf[lo:hi] that is followed by `,` and `{` (whitespace
    between them allowed): between two events, almost always (see _Reader.batch)."""
    brace = buf.rfind("{", lo + 1, hi)
    while brace > lo:
        i = brace - 1
        while i > lo and buf[i] in _WS:
            i -= 1
        if buf[i] == "," and i > lo:
            i -= 1
            while i > lo and buf[i] in _WS:
                i -= 1
            if buf[i] == "}":
                return i + 1
        brace = buf.rfind("{", lo + 1, brace)
    return None


class _Reader:
    """A sliding window over the text, with C JSON decoders on top: `decode_list` for runs of
    array elements (batch), json's for one value at a time (value), whose errors say where."""

    def __init__(self, stream: IO[str], name: str, decode_list: Callable[[str], list]):
        self.stream, self.name, self.decode_list = stream, name, decode_list
        self.buf, self.pos, self.eof, self.consumed = "", 0, False, 0
        self.decoder = json.JSONDecoder()
        self.ascii = True  # every character read so far: a character position is a byte's

    def fill(self) -> bool:
        if self.eof:
            return False
        try:
            chunk = self.stream.read(_CHUNK_CHARS)
        except (OSError, EOFError) as exc:  # a truncated or corrupt gzip stream
            raise TraceFormatError(f"{self.name}: cannot read the file: {exc}") from None
        if not chunk:
            self.eof = True
            return False
        if not self.consumed and not self.buf and chunk.startswith(_BOM):
            # A byte order mark (some Windows tools write one): not JSON, yet no reason to
            # refuse the trace. Its 3 bytes are counted, so positions stay bytes' after it.
            chunk, self.consumed = chunk[1:], len(_BOM.encode())
        if self.ascii and not chunk.isascii():  # O(1): CPython knows a str's widest char
            self.ascii = False
        # Drop what was read once it is half the window: each character is copied O(1) times.
        if self.pos > len(self.buf) // 2:
            self.consumed += self.pos
            self.buf, self.pos = self.buf[self.pos:], 0
        self.buf += chunk
        return True

    def peek(self) -> str:
        while True:
            while self.pos < len(self.buf) and self.buf[self.pos] in _WS:
                self.pos += 1
            if self.pos < len(self.buf):
                return self.buf[self.pos]
            if not self.fill():
                return ""

    def expect(self, chars: str) -> str:
        char = self.peek()
        if not char or char not in chars:
            found = repr(char) if char else "end of file"
            raise TraceFormatError(f"{self.name}: expected one of {chars!r} at character "
                                   f"{self.consumed + self.pos}, found {found}")
        self.pos += 1
        return char

    def value(self):
        self.peek()
        # Keep a margin after the value so a number is never cut at the end of the window.
        while len(self.buf) - self.pos < _CHUNK_CHARS and self.fill():
            pass
        while True:
            try:
                value, end = self.decoder.raw_decode(self.buf, self.pos)
            except RecursionError:
                raise TraceFormatError(f"{self.name}: a value nested too deeply to read at "
                                       f"character {self.consumed + self.pos}") from None
            except json.JSONDecodeError as exc:
                if self.fill():
                    continue
                raise TraceFormatError(f"{self.name}: invalid JSON at character "
                                       f"{self.consumed + exc.pos}: {exc.msg}") from None
            self.pos = end
            return value

    def window_end(self) -> int:
        """The absolute position the window reaches, with at least _CHUNK_CHARS ahead."""
        while len(self.buf) - self.pos < _CHUNK_CHARS and self.fill():
            pass
        return self.consumed + len(self.buf)

    def run_to(self, at: int) -> list | None:
        """The elements from here to absolute position `at` (in the window), decoded as a run,
        or None where the text up to there is not whole elements (see batch)."""
        self.peek()
        try:
            values = self.decode_list("[" + self.buf[self.pos:at - self.consumed] + "]")
        except (ValueError, RecursionError):
            return None
        self.pos = at - self.consumed
        return values

    def skip_to(self, at: int) -> None:
        """Move to absolute position `at` (or the end of the text), dropping what is before."""
        while self.consumed + len(self.buf) <= at:
            self.pos = len(self.buf)
            if not self.fill():
                return
        self.pos = max(self.pos, at - self.consumed)

    def next_boundary(self, tries: int = 50) -> int | None:
        """The absolute position of the first event boundary from here on (the end of a `}`
        followed by `, {`) that a run of elements decodes from (see batch), or None."""
        self.window_end()
        buf, lo = self.buf, self.pos
        for _ in range(tries):
            found = _BOUNDARY.search(buf, lo)
            if found is None:
                return None
            start = found.end() - 1  # the `{` that opens the next element
            cut = _last_boundary(buf, start, len(buf))
            if cut is not None and cut > start:
                try:
                    self.decode_list("[" + buf[start:cut] + "]")
                    return self.consumed + found.start() + 1
                except (ValueError, RecursionError):
                    pass
            lo = found.end()
        return None

    def batch(self) -> tuple[list | None, int]:
        """(the array elements from here up to an event boundary near the end of the window,
        decoded by one call of decode_list, 0) or, where that fails, (None, the absolute
        position up to which the caller decodes one element at a time). One decoder call per
        element costs a Python round trip per event: 7-25% of the reading time.

        The text from an element's start to a `}` that is followed by `, {` decodes as a list
        only if that `}` ends an element: one inside an element (in a string, or in a list of
        objects in args) leaves a string or an object open. So a wrong cut never goes unnoticed,
        and a stretch that does not decode, malformed JSON included, is read one element at a
        time as before, which raises the same errors at the same characters."""
        self.peek()
        while len(self.buf) - self.pos < _CHUNK_CHARS and self.fill():
            pass
        buf, start, hi = self.buf, self.pos, len(self.buf)
        for _ in range(3):  # `}, {` in a list of objects in args: try an earlier boundary
            cut = _last_boundary(buf, start, hi)
            if cut is None:
                break
            try:
                values = self.decode_list("[" + buf[start:cut] + "]")
            except (ValueError, RecursionError):
                hi = cut - 1
                continue
            self.pos = cut
            return values, 0
        return None, self.consumed + len(buf)


class Handoff:
    """Where the head of a trace's events ends and a second reader's tail begins (split_read.py):
    at `boundary()`, an absolute character position asked for once the head's window reaches
    `near` (the tail finds it, past `near`, and says it). The head stops there only if it is the
    end of one of the traceEvents array's own elements, which the head checks by decoding up to
    it: a position inside an element, or past the array, is refused and the head reads on."""

    def __init__(self, near: int, boundary: Callable[[], tuple[int | None, bool]]):
        """`boundary()`: (the position or None, whether it counts bytes, not characters)."""
        self.near, self._boundary = near, boundary
        self.at: int | None = None
        self.asked = self.taken = False

    def limit(self, window_end: int, ascii_so_far: bool) -> int | None:
        if not self.asked and window_end >= self.near:
            self.asked = True
            self.at, in_bytes = self._boundary()
            if in_bytes and not ascii_so_far:
                self.at = None  # a byte offset is a character position only in ASCII text
        return self.at if not self.taken else None


def _elements(reader: _Reader, handoff: Handoff | None = None) -> Iterator[list]:
    """The elements of an array from one that starts at the reader on, in lists; with a
    handoff, up to its boundary where the head can stop there (handoff.taken)."""
    slow_until = 0  # before this absolute position, one element at a time
    while True:
        batch = None
        at = handoff.limit(reader.window_end(), reader.ascii) if handoff is not None else None
        if at is not None:
            if at <= reader.consumed + reader.pos:
                handoff.at = None  # behind us: not a boundary of this array; read on
            elif at <= reader.window_end():
                batch = reader.run_to(at)
                if batch is None:
                    handoff.at = None
                else:
                    handoff.taken = True
                    yield batch
                    return
        if batch is None and reader.consumed + reader.pos >= slow_until:
            batch, slow_until = reader.batch()
        yield batch if batch is not None else [reader.value()]
        if reader.expect(",]") == "]":
            return
        if reader.peek() == "]":  # a trailing comma, as some writers leave
            reader.pos += 1
            return


def _array_batches(reader: _Reader, handoff: Handoff | None = None) -> Iterator[list]:
    """The elements of the array at the reader, in lists."""
    reader.expect("[")
    if reader.peek() == "]":
        reader.pos += 1
        return
    yield from _elements(reader, handoff)


def _open_checked(path: Path) -> IO[str]:
    if path.is_dir():
        raise TraceFormatError(f"{path}: a directory, not a trace file")
    if not path.is_file():
        raise TraceFormatError(f"{path}: no such file")
    return _open_text(path)


def _object_keys(reader: _Reader, path: Path, meta: dict | None, found: bool,
                 handoff: Handoff | None = None) -> Iterator[list]:
    """The top-level object's keys from the reader on (at a key, or at its closing brace):
    traceEvents' elements yielded, the other keys' values into meta."""
    while reader.peek() != "}":
        key = reader.value()
        if not isinstance(key, str):
            raise TraceFormatError(f"{path}: expected a key at character "
                                   f"{reader.consumed + reader.pos}")
        reader.expect(":")
        if key == "traceEvents":
            found = True
            yield from _array_batches(reader, handoff)
            if handoff is not None and handoff.taken:
                return  # the tail reads the rest, the keys after the array included
        else:
            value = reader.value()
            if meta is not None:
                meta[key] = value
        if reader.expect(",}") == "}":
            break
    if not found:
        raise TraceFormatError(f"{path}: no traceEvents array: not a Chrome trace")


# A Perfetto protobuf trace (.pftrace), an Nsight Systems report or a pickle start with bytes
# that are not text: said so, not "expected '{' at character 0, found '\x0a'".
_BINARY_HINT = ("a Perfetto protobuf trace or a profiler's report file is not read here; "
                "torch.profiler writes the JSON one with export_chrome_trace or "
                "tensorboard_trace_handler")


def _looks_binary(text: str) -> bool:
    """Whether the text's start holds a byte no JSON text has (a control character or one that
    is not UTF-8, read as U+FFFD)."""
    return any(char == "\ufffd" or (char < " " and char not in _WS) for char in text)


def raw_batches(path, meta: dict | None, decode_list: Callable[[str], list],
                handoff: Handoff | None = None) -> Iterator[list]:
    """The trace's events in lists (runs of the traceEvents array), its other top-level keys into
    meta; with a handoff, the head only, where the tail takes the rest (handoff.taken)."""
    path = Path(path)
    with _open_checked(path) as stream:
        reader = _Reader(stream, str(path), decode_list)
        first = reader.peek()
        if not first:
            raise TraceFormatError(f"{path}: the file is empty")
        if first == "[":  # the bare-array form of the Chrome trace format
            yield from _array_batches(reader, handoff)
            return
        if first != "{" and _looks_binary(reader.buf[reader.pos:reader.pos + 64]):
            raise TraceFormatError(f"{path}: not JSON text but binary data: {_BINARY_HINT}")
        reader.expect("{")
        yield from _object_keys(reader, path, meta, False, handoff)


def tail_batches(path, meta: dict | None, decode_list: Callable[[str], list], near: int,
                 tell: Callable[[int | None, bool], None]) -> Iterator[list]:
    """The tail's events: from the first event boundary past `near` (told to the head by
    `tell`, None where there is none in reach: the head then reads it all) to the end, and the
    top-level keys after the array into meta. The head checks the boundary; where it refuses
    it, it reads on, and what this yields is not used. A plain file is read from byte `near`
    on (positions count bytes: the head takes them only where its text was ASCII), a gzip one
    from its start (positions count characters)."""
    path = Path(path)
    with _open_checked(path) as first:
        bare = first.read(4096).lstrip(_WS + _BOM).startswith("[")
    in_bytes = not is_gzip(path)
    with _open_text(path, near if in_bytes else 0) as stream:
        reader = _Reader(stream, str(path), decode_list)
        if in_bytes:
            reader.consumed = near
        else:
            reader.skip_to(near)
        at = reader.next_boundary()
        tell(at, in_bytes)
        if at is None:
            return
        reader.pos = at - reader.consumed
        if reader.expect(",]") == "]":
            return
        if reader.peek() == "]":
            reader.pos += 1
        else:
            yield from _elements(reader)
        if not bare:
            if reader.expect(",}") == "}":
                return
            yield from _object_keys(reader, path, meta, True)


def iter_raw_events(path, meta: dict | None = None) -> Iterator:
    """Every entry of `traceEvents` (a dict, if the trace is well formed); other top-level keys
    go into `meta`."""
    for batch in raw_batches(path, meta, decode_values):
        yield from batch
