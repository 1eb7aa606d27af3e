"""-j N: one capture decoded by N processes, conversation by conversation, merged back in frame order.

Everything protodump keeps state for lives in a conversation, so a file is cut into shards of whole conversations
(api/shards.py `split_file`), each decoded by a forked worker process. What tshark numbers across conversations in
frame order is decided once, by the planning pass that reads the frame headers: `tcp.stream`/`udp.stream`
(shards.StreamNumbers; the workers' TCP and UDP tables take each frame's number from the plan instead of counting),
the previous captured frame's time (the worker reads every frame's header, decodes only its own), and the capture's
first frame. The previous *displayed* frame depends on the other shards' display decisions when a display filter is
on: the worker then renders `frame.time_delta_displayed` (and `-t dd`) as a marker value that the parent, which sees
every displayed frame in order, replaces with the real delta.

Moving results: a worker sends, per chunk of frames (about 1 MB), each frame's output as encoded bytes with one
small record (frame number, time, length; -1: not displayed), never packet trees (lazily built, sharing frozen
subtrees and memos: they are the worker's). Measured on 10,000 frames of -T json (90 MB): the parent's whole
merge takes 0.1 s of CPU, and the workers together 4 % more than one process. A sender thread keeps the worker
decoding while the parent is busy with another worker's frames. The parent knows from the plan which
worker owns each frame, so the merge is a walk over frame numbers, not a heap. Writers need no change: a worker's
writer renders its first displayed frame twice (the first rendering has the writer's header: "[", the fields
header, the PSML preamble), and the parent uses that one only for the frame displayed first overall; the trailer is
the one of a worker that wrote.

Statistics are each worker's tap state, merged as for --dask (shards.merge_taps). Whatever cannot be cut this
way runs in one process, silently: -2, live capture, standard input, capture sets, follow and other statistics
that do not merge, --export-objects, a terminal (colours) or -l, a filter that reads the displayed delta itself,
and a capture of one conversation (nothing to share out).

Standard library only (multiprocessing with fork: the workers inherit the parsed options, filter and taps).
"""
from __future__ import annotations

import os
import queue
import signal
import sys
import threading
import time
from array import array
from dataclasses import dataclass, field

from .capture.clock import FrameClock
from .capture.conversations import UdpTable
from .capture.files import CaptureError, open_capture
from .capture.sctp import TsnTable
from .capture.tcp_analysis import MAX_CONNECTIONS, Connection, TcpTable

# frame.time_delta_displayed rendered by a worker under a display filter: replaced by the parent. No real delta
# between two frames of one capture is 246 years and these exact nanoseconds.
MARKER_NS = 7_777_777_777_123_456_789
CHUNK_BYTES = 1 << 20          # a worker sends its output in chunks of about this size ...
CHUNK_FRAMES = 2048            # ... or of this many frames
QUEUE_CHUNKS = 64              # chunks a worker keeps ready while the parent is busy (then it waits)
AUTO_MIN_BYTES = 4 << 20       # without -j: smaller files are read in one process (forking costs more)
MOST = 0.85                    # a plan whose largest shard has more of the frames than this: one process
MAX_JOBS = 255                 # (a frame's shard is a byte)


def default_jobs() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:      # not Linux
        return max(1, os.cpu_count() or 1)


# --- the workers' tables: numbers from the plan -------------------------------------------------------------------

class PlannedTcpTable(TcpTable):
    """TcpTable whose connections take the stream index the plan gave the frame (`number`, set before each
    decode): a new connection wherever one process would have started one (first segment, SYN after FIN/RST, a
    connection evicted by the table's bound across all conversations, or freed after its end: the plan frees it
    at the frame one process does, which a worker that sees only its own frames would not)."""

    number = -1

    def _connection(self, key: frozenset, ts: int, me: tuple, syn_seq: int | None) -> Connection:
        conn = self.connections.get(key)
        self.reused = False
        if conn is None or conn.stream != self.number:
            self.reused = syn_seq is not None and conn is not None and self._reuses(conn, me, syn_seq)
            if conn is None and len(self.connections) >= MAX_CONNECTIONS:
                self.connections.pop(next(iter(self.connections)))
            conn = self.connections[key] = Connection(self.number, ts)
        return conn


class PlannedUdpTable(UdpTable):
    """UdpTable whose conversations take the udp.stream the plan gave the frame (for ICMP: the quoted one's)."""

    __slots__ = ("number",)

    def __init__(self):
        super().__init__()
        self.number = -1

    def _conv(self, a: tuple, b: tuple, ts: int) -> list:
        key = (a, b) if a <= b else (b, a)
        conv = self.streams.get(key)
        if conv is None or conv[0] != self.number:
            conv = self.streams[key] = [self.number, ts, ts]
        return conv


class PlannedClock(FrameClock):
    """The capture's clock seen from a shard: the first frame and the previous captured frame come from the
    frame headers (`prev_ns`, set before each decode); the previous displayed one is the previous captured one
    without a display filter, else the marker."""

    __slots__ = ("prev_ns", "filtering")

    def __init__(self, first_ns: int, filtering: bool):
        super().__init__()
        self.first_ns, self.filtering, self.prev_ns = first_ns, filtering, None

    def stamp(self, ts: int) -> tuple:
        prev = self.prev_ns
        return (self.first_ns, prev, ts - MARKER_NS if self.filtering else prev)

    def displayed(self, ts: int, shown: bool) -> None:
        pass


def planned_tables(first_ns: int, filtering: bool):
    """(tcp, sctp, clock, udp) tables for packets_from_frames in a worker."""
    return PlannedTcpTable(), TsnTable(), PlannedClock(first_ns, filtering), PlannedUdpTable()


def planned_frames(path, picks, streams, tables, stop: int | None = None):
    """The frames of `path` at the 0-based indexes `picks` (in order), each announced to the tables with its
    plan numbers; every frame's time is read, so each knows the previous captured frame's."""
    tcp, _, clock, udp = tables
    capture = open_capture(path)
    try:
        if not picks:
            return
        j, last, prev = 0, picks[-1], None
        want = picks[0]
        for i, frame in enumerate(capture):
            if i == want:
                clock.prev_ns = prev
                tcp.number = udp.number = streams[j]
                j += 1
                yield frame
                if i == last:
                    return
                want = picks[j]
            prev = frame.ts_ns
    finally:
        capture.close()


# --- the run --------------------------------------------------------------------------------------------------

@dataclass
class Run:
    """What one read command does, as read_cmd set it up (inherited by the forked workers as is)."""

    path: str
    make_writer: object            # out -> a fresh writer of the command's output form (the command's own writer,
                                   # already made on stdout, wrote what a writer writes when made)
    dispatcher: object
    shows: object = None           # -Y, compiled
    quiet: bool = False
    count: int | None = None
    taps: list = field(default_factory=list)
    zstats: tuple = ()
    source: object = None          # cli.capture_opts.CaptureSource (-w)
    stats_format: str = "text"


def unsplittable(jobs, path, *, two_pass=False, live=False, exporter=None, line_buffered=False,
                 display_filter=None, zstats=(), write_path=None) -> bool:
    """Modes that one process must run (see the module docstring)."""
    if jobs <= 1 or two_pass or live or exporter is not None or line_buffered:
        return True
    if not isinstance(path, str) or path == "-" or not os.path.isfile(path) or write_path == "-":
        return True
    if sys.stdout.isatty():
        return True
    if any("time_delta_displayed" in (text or "") for text in (display_filter, *zstats)):
        return True
    from .analysis import stats
    from .shards import _family, MERGES
    try:
        return any(_family(stats.make_tap(arg)) not in MERGES for arg in zstats)
    except stats.StatsError:
        return True


def run(jobs: int, run: Run, explicit: bool) -> bool:
    """Run the command on `jobs` processes; False (nothing done) when one process should run it: a small file
    under the default -j, or a capture whose conversations cannot be shared out."""
    if not explicit and os.path.getsize(run.path) < AUTO_MIN_BYTES:
        return False
    if one_conversation(run.path, run.count):
        if os.environ.get("PROTODUMP_JOBS_VERBOSE"):
            print(f"protodump: -j {jobs}: one process (one conversation has most frames)", file=sys.stderr)
        return False
    from .shards import StreamNumbers, split_file
    errors = []
    numbers = StreamNumbers(None if run.dispatcher.standard_only else run.dispatcher.lifetimes)
    shards = split_file(run.path, min(jobs, MAX_JOBS), on_error=lambda _p, why: errors.append(why),
                        count=run.count, streams=numbers)
    total = sum(len(s.picks[0]) for s in shards)
    split = len(shards) >= 2 and max(len(s.picks[0]) for s in shards) <= MOST * total and not numbers.unsplittable
    if os.environ.get("PROTODUMP_JOBS_VERBOSE"):        # what the tests check
        how = (", ".join(f"shard {s.index}: {len(s.picks[0])} frames" for s in shards) if split else
               f"one process ({numbers.unsplittable or 'one conversation has most frames'})")
        print(f"protodump: -j {jobs}: {how}", file=sys.stderr)
    if not split:
        return False
    _Parent(run, shards, total, errors[0] if errors else None).go()
    return True


def one_conversation(path, count=None) -> bool:
    """Does one conversation have most of the frames? A first look at the raw headers only (IPv4 over Ethernet:
    addresses and ports where they lie, about a microsecond a frame against five for the planning pass), so that
    a capture of one conversation costs -j next to nothing. Frames it cannot read that way count as other
    conversations; a file it cannot read at all is left to the planning pass."""
    sizes: dict = {}
    n = 0
    try:
        capture = open_capture(path)
    except (CaptureError, OSError):
        return False
    try:
        for frame in capture:
            n += 1
            data = frame.data
            key = None
            if frame.linktype == 1 and data[12:14] == b"\x08\x00" and len(data) >= 38:
                at = 14 + (data[14] & 15) * 4
                a, b = data[26:30] + data[at:at + 2], data[30:34] + data[at + 2:at + 4]
                key = (data[23], a, b) if a <= b else (data[23], b, a)
            sizes[key] = sizes.get(key, 0) + 1
            if count is not None and n >= count:
                break
    except CaptureError:
        pass
    finally:
        capture.close()
    sizes.pop(None, None)
    return n > 0 and max(sizes.values(), default=0) > MOST * n


class WorkerDied(Exception):
    pass


class _Parent:
    def __init__(self, run: Run, shards, total: int, error: str | None):
        self.run, self.shards, self.total, self.error = run, shards, total, error
        self.owner = bytearray(total)           # frame number - 1 -> its shard
        for k, s in enumerate(shards):
            for i in s.picks[0]:
                self.owner[i] = k
        self.filtering = run.shows is not None
        self.sends_frames = not run.quiet or run.source.write_path is not None

    def go(self) -> None:
        import multiprocessing as mp
        ctx = mp.get_context("fork")
        run = self.run
        run.source._open_dump(None, None)          # -w: opened as the one-process path opens it
        sys.stdout.flush()
        self.forked_cpu = time.process_time()
        self.procs, self.conns = [], []
        for shard in self.shards:
            recv, send = ctx.Pipe(duplex=False)
            p = ctx.Process(target=_worker, args=(run, shard, send, self.filtering), daemon=True,
                            name=f"protodump-shard-{shard.index}")
            p.start()
            send.close()
            self.procs.append(p)
            self.conns.append(recv)
        try:
            self._merge()
        except WorkerDied as exc:
            sys.stdout.flush()
            print(f"protodump: -j: {exc}", file=sys.stderr)
            sys.exit(2)
        finally:
            for p in self.procs:
                if p.is_alive():
                    p.kill()
                p.join()
            run.source.finish()

    # --- receiving ----------------------------------------------------------------------------------------------
    def _receive(self, k: int):
        """The next message of worker k; WorkerDied when it ended without saying it was done."""
        try:
            return self.conns[k].recv()
        except (EOFError, OSError):
            pass
        p = self.procs[k]
        p.join(5)
        shard = self.shards[k]
        picks = shard.picks[0]
        how = (f"killed by signal {-p.exitcode}" if p.exitcode is not None and p.exitcode < 0
               else f"exit code {p.exitcode}")
        raise WorkerDied(f"the worker of shard {shard.index} ({len(picks)} frames from frame {picks[0] + 1}, "
                         f"{shard.conversations} conversations of {shard.paths[0]}) died ({how}): "
                         "the output is incomplete")

    def _merge(self) -> None:
        run = self.run
        out = sys.stdout.buffer
        k_n = len(self.shards)
        chunks = [None] * k_n          # per worker: (numbers, times, lengths, blob, first) being read, position
        pos = [0] * k_n
        offset = [0] * k_n
        ends = [None] * k_n            # per worker: its end message
        firsts = [None] * k_n
        written_first = False
        prev_shown = None
        pending, size = [], 0
        dump = run.source.dump
        frames = open_capture(run.path) if dump is not None else None
        try:
            frame_iter = iter(frames) if frames is not None else None
            if self.sends_frames:
                for n in range(self.total):
                    k = self.owner[n]
                    chunk = chunks[k]
                    while chunk is None or pos[k] >= len(chunk[0]):
                        msg = self._receive(k)
                        if msg[0] == "end":
                            raise WorkerDied(f"shard {self.shards[k].index} ended early")
                        if msg[0] == "error":
                            raise _failure(self.shards[k], msg[1])
                        chunk = chunks[k] = msg[1:]
                        pos[k] = offset[k] = 0
                        if chunk[4] is not None:
                            firsts[k] = chunk[4]
                    numbers, times, lengths, blob, _ = chunk
                    i = pos[k]
                    pos[k] += 1
                    length = lengths[i]
                    frame = next(frame_iter) if frame_iter is not None else None
                    if length < 0:
                        continue
                    start = offset[k]
                    offset[k] = start + length
                    ts = times[i]
                    text = blob[start:start + length]
                    if not written_first and not run.quiet:
                        written_first = True
                        text = firsts[k]
                    if self.filtering:
                        text = _patch(text, ts - prev_shown if prev_shown is not None else 0)
                        prev_shown = ts
                    if text:
                        pending.append(text)
                        size += len(text)
                        if size >= CHUNK_BYTES:
                            out.write(b"".join(pending))
                            pending, size = [], 0
                    if dump is not None:
                        run.source.passed(_Passed(frame), sys.stdout)
            for k in range(k_n):
                while ends[k] is None:
                    msg = self._receive(k)
                    if msg[0] == "error":
                        raise _failure(self.shards[k], msg[1])
                    if msg[0] == "end":
                        ends[k] = msg
            out.write(b"".join(pending))
        finally:
            if frames is not None:
                frames.close()
        # the trailer: a worker that wrote has the writer's state of a run that wrote
        trailers = [e[1] for e in ends if e[2]] or [ends[0][1]]
        if not run.quiet:
            out.write(trailers[0])
        out.flush()
        if os.environ.get("PROTODUMP_JOBS_VERBOSE"):    # CPU seconds: what two idle cores would take (tools/bench.py)
            print(f"protodump: -j cpu: before the workers {self.forked_cpu:.3f} s, parent "
                  f"{time.process_time():.3f} s, workers {' '.join(f'{e[4]:.3f}' for e in ends)} s", file=sys.stderr)
        self._finish([e[3] for e in ends])

    def _finish(self, taps) -> None:
        from .output import stats_out
        from .shards import ShardResult, merge_taps
        run = self.run
        results = [ShardResult(k, taps=t) for k, t in enumerate(taps)]
        if self.error is not None:
            print(f"protodump: {run.path}: {self.error}", file=sys.stderr)
            stats_out.write(merge_taps(run.zstats, results) if run.zstats else [], sys.stdout, run.stats_format)
            sys.stdout.flush()
            sys.exit(1)
        stats_out.write(merge_taps(run.zstats, results) if run.zstats else [], sys.stdout, run.stats_format)


class _Passed:
    __slots__ = ("frame",)

    def __init__(self, frame):
        self.frame = frame


def _failure(shard, text: str) -> WorkerDied:
    return WorkerDied(f"the worker of shard {shard.index} ({shard.paths[0]}) failed: {text}")


def _patch(text: bytes, delta_ns: int) -> bytes:
    """A frame's output with the marker of frame.time_delta_displayed replaced by the real delta."""
    from .capture.layers.common import ns_text
    from .output.text import _seconds
    if MARKER_FULL in text:
        text = text.replace(MARKER_FULL, ns_text(delta_ns).encode())
    if MARKER_COLUMN in text:
        text = text.replace(MARKER_COLUMN, f"{_seconds(delta_ns, 6):>10}".encode())
    return text


def _markers():
    from .capture.layers.common import ns_text
    from .output.text import _seconds
    return ns_text(MARKER_NS).encode(), _seconds(MARKER_NS, 6).encode()


MARKER_FULL, MARKER_COLUMN = _markers()


# --- a worker -------------------------------------------------------------------------------------------------

class _Text:
    """The file the worker's writer writes to: its text per frame."""

    def __init__(self):
        self.parts = []

    def write(self, s: str) -> int:
        self.parts.append(s)
        return len(s)

    def take(self) -> str:
        s = "".join(self.parts)
        self.parts.clear()
        return s

    def isatty(self) -> bool:
        return False

    def flush(self) -> None:
        pass


def _worker(run: Run, shard, conn, filtering: bool) -> None:
    """A forked process: decode the shard, send its frames' output in chunks, then its trailer and statistics."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)     # the parent decides
    sender = _Sender(conn)
    try:
        _decode(run, shard, sender, filtering)
    except BaseException as exc:       # anything: the parent names the shard; never a silent hole
        import traceback
        sender.put(("error", f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=-3)}"))
    sender.close()
    os._exit(0)


class _Sender:
    """Sends from a thread: the worker goes on decoding while the parent reads the other workers."""

    def __init__(self, conn):
        self.conn = conn
        self.queue: queue.Queue = queue.Queue(QUEUE_CHUNKS)
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def _loop(self):
        while True:
            msg = self.queue.get()
            if msg is None:
                return
            try:
                self.conn.send(msg)
            except OSError:             # the parent is gone (a closed pipe, a failed run)
                os._exit(0)

    def put(self, msg) -> None:
        self.queue.put(msg)

    def close(self) -> None:
        self.queue.put(None)
        self.thread.join()
        self.conn.close()


def _decode(run: Run, shard, sender: _Sender, filtering: bool) -> None:
    from .session import packets_from_frames
    from .shards import _FRAME, _phs_record, _prepare, _state
    encoding, errors = sys.stdout.encoding or "utf-8", sys.stdout.errors or "strict"
    text = _Text()
    writer = run.make_writer(text)
    writer.first_ns = shard.first_ns
    text.take()                                     # what the writer writes when made: the parent's did
    taps = run.taps
    for tap in taps:
        _prepare(tap, shard.first_ns)
    from .shards import FirstSeen
    phs_paths = [FirstSeen() if tap.kind == "phs" else None for tap in taps]
    shows, quiet = run.shows, run.quiet
    records = not quiet or run.source.write_path is not None
    tables = planned_tables(shard.first_ns, filtering)
    frames = planned_frames(shard.paths[0], shard.picks[0], shard.streams[0], tables)
    numbers, times, lengths, blobs = array("q"), array("q"), array("q"), []
    size = 0
    first = None
    wrote = False
    for packet in packets_from_frames(frames, dispatcher=run.dispatcher, tables=tables):
        number = packet.number
        _FRAME.number = number
        for tap, paths in zip(taps, phs_paths):
            tap.add(packet)
            if paths is not None:
                _phs_record(tap, packet, paths)
        shown = shows is None or shows(packet)
        if not records:
            continue
        numbers.append(number)
        times.append(packet.frame.ts_ns)
        if not shown:
            lengths.append(-1)
            continue
        data = b""
        if not quiet:
            writer.write(packet)
            if not wrote:            # the writer's first form (its header), then the form of every other frame
                wrote = True
                first = text.take().encode(encoding, errors)
                writer.write(packet)
            data = text.take().encode(encoding, errors)
        lengths.append(len(data))
        blobs.append(data)
        size += len(data)
        if size >= CHUNK_BYTES or len(numbers) >= CHUNK_FRAMES:
            sender.put(("frames", numbers, times, lengths, b"".join(blobs), first))
            numbers, times, lengths, blobs, size, first = array("q"), array("q"), array("q"), [], 0, None
    if numbers:
        sender.put(("frames", numbers, times, lengths, b"".join(blobs), first))
    writer.close()
    trailer = text.take().encode(encoding, errors)
    states = []
    for tap, paths in zip(taps, phs_paths):
        state = _state(tap)
        if paths is not None:
            state["paths"] = paths
        states.append((tap.kind, state, tap.result()))
    sender.put(("end", trailer, wrote, states, time.process_time()))
