"""-j N: one capture decoded by N processes, conversation by conversation, merged back in frame order.

Everything protodump keeps state for lives in a conversation, so a file is shared out by whole conversations, each
worker (a forked process) decoding its own. What tshark numbers across conversations in frame order is decided
once, by the planning pass over the frame headers (api/shards.py `Planner`): `tcp.stream`/`udp.stream`
(shards.StreamNumbers; the workers' TCP and UDP tables take each frame's number from the plan instead of counting),
the previous captured frame's time, and the capture's first frame. The previous *displayed* frame depends on the
other shards' display decisions when a display filter is on: the worker then renders `frame.time_delta_displayed`
(and `-t dd`) as a marker value that the parent, which sees every displayed frame in order, replaces.

The plan is streamed: the first LOOK frames are planned before forking (one process when one conversation has
most of them, and still has up to a twentieth of the file: a capture of one conversation costs that look only);
the workers then start on them while the parent plans the rest a chunk at a time and sends each worker its frames
(number, byte offset, stream number, previous frame's time): a worker seeks to its own frames, reading no other
(pcapng: and the section headers and interface descriptions it needs; gzip cannot be sought: read through). If
the plan later finds that one process must read the file (time running back, too many live conversations), the
workers are stopped before anything is written.

Moving results: plain pipes (widened to 256 KB), length-prefixed. A worker sends, per chunk of frames (about
256 KB), each frame's end offset and time (NO_TIME: not displayed) and the frames' output as encoded bytes, never
packet trees (lazily built, sharing frozen subtrees and memos: they are the worker's), written with writev from a
sender thread so the worker goes on decoding: up to 64 MB ahead while the parent plans (it merges only once the
whole plan says the file can be shared out), 4 MB after (what is sent soon after it is made is still in the
cache). The parent reads each chunk's frame ends and times into a buffer of its own per worker (no pickling), and
as it knows from the plan which worker owns each frame, it moves a run of one worker's consecutive frames from that
worker's pipe to the output with splice(2), never through its own memory (read and written where the output takes
no splice; frame by frame, the chunk read whole, under -Y or -w). Measured on 20,000 frames of -T json
(45 MB): the parent's merge takes 0.06 s of CPU. Writers need no change: a worker's writer renders its first
displayed frame twice (the first rendering has the writer's header: "[", the fields header, the PSML preamble), and
the parent uses that one only for the frame displayed first overall; the trailer is the one of a worker that wrote.

Statistics are each worker's tap state, merged as for --dask (shards.merge_taps). The byte budgets
(reassembly/budget.py) are shared: each worker holds 1/N. Whatever cannot be cut this way runs in one process,
silently: -2, live capture, standard input, capture sets, follow and other statistics that do not merge,
--export-objects, a terminal (colours) or -l, a filter that reads the displayed delta itself, `-T ek` and `-T pdml`
(the plugin's fake items follow the heuristic lists' order, which every earlier frame moves), and a capture of one
conversation (nothing to share out).

Standard library only (multiprocessing with fork: the workers inherit the parsed options, filter and taps).
"""
from __future__ import annotations

import errno
import os
import queue
import re
import signal
import struct
import sys
import threading
import time
from array import array
from collections import deque
from dataclasses import dataclass, field

from .capture.clock import FrameClock
from .capture.conversations import UdpTable
from .capture.files import CaptureError, open_capture
from .capture.sctp import TsnTable
from .capture.tcp_analysis import MAX_CONNECTIONS, Connection, TcpTable
from .shards import NO_TIME

# frame.time_delta_displayed rendered by a worker under a display filter: replaced by the parent. No real delta
# between two frames of one capture is 246 years and these exact nanoseconds.
MARKER_NS = 7_777_777_777_123_456_789
CHUNK_BYTES = 256 << 10        # a worker sends its output in chunks of about this size ...
CHUNK_FRAMES = 2048            # ... or of this many frames
QUEUE_PLANNING = 256           # chunks a worker keeps ready while the parent still plans (it merges only then) ...
QUEUE_CHUNKS = 16              # ... and then, while the parent is busy (then it waits). Kept small (4 MB, not 64):
                               # output sent soon after it is made is still in the cache (the workers' CPU on 40,000
                               # frames of -T json: 8 % less in five alternated runs under load), and -j 2 -T json's
                               # largest process peaks at 50 MB, not 87
AUTO_MIN_BYTES = 4 << 20       # without -j: smaller files are read in one process (forking costs more)
MOST = 0.85                    # a plan whose largest shard has more of the frames than this: one process
MAX_JOBS = 255                 # (a frame's shard is a byte)
LOOK = 2048                    # frames planned before forking: one process when one conversation has most of them
LOOK_SHARE = 20                # ... and so far, up to a twentieth of the file
ONE = "one conversation has most frames"
CHUNK_PLAN = 2048              # then the plan is sent to the workers in chunks of this many frames
PIPE_BYTES = 256 << 10         # (a chunk in one write)


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


def planned_frames(path, chunks, tables, seek: bool = True):
    """The frames of `path` that a shard's plan names, each announced to the tables with its plan numbers.
    `chunks`: arrays of planned frames (api/shards.py Planner, ENTRY integers each), in order; `seek`: their
    places are byte offsets, read by seeking (else the file is read through, as a gzip file must be). Entries of
    frame number 0 are pcapng blocks the reader needs (interface descriptions, section headers)."""
    tcp, _, clock, udp = tables
    if seek:
        todo: deque = deque()

        def jumps():
            for chunk in chunks:
                it = iter(chunk)
                for number, where, stream, prev in zip(it, it, it, it):
                    if number:
                        todo.append((number, stream, prev))
                    yield where
        capture = open_capture(path, jumps=jumps())
        frames = capture
    else:
        capture = open_capture(path)

        def frames():
            reader = iter(capture)
            for chunk in chunks:
                it = iter(chunk)
                for number, _, stream, prev in zip(it, it, it, it):
                    if number:
                        todo.append((number, stream, prev))
                        for frame in reader:
                            if frame.number == number:
                                yield frame
                                break
        todo = deque()
        frames = frames()
    try:
        for frame in frames:
            number, stream, prev = todo.popleft()
            frame.number = number
            clock.prev_ns = None if prev == NO_TIME else prev
            tcp.number = udp.number = stream
            yield frame
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
                 display_filter=None, zstats=(), write_path=None, fake_items=False) -> bool:
    """Modes that one process must run (see the module docstring). fake_items: the output shows the plugin's
    `_ws.lua.fake` items (EK, PDML), whose number on a conversation's first packet follows the order Wireshark's
    heuristic lists took from every earlier frame (a heuristic that wins moves to the front), which no worker sees."""
    if jobs <= 1 or two_pass or live or exporter is not None or line_buffered or fake_items:
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
    under the default -j, or a capture whose conversations cannot be shared out.

    The plan's first LOOK frames are planned before forking: when one shard would have most of them (one
    conversation), or what one process numbers cannot be planned, one process reads the file, at the cost of
    that look only. The workers then start on the first chunk while the parent plans the rest (api/shards.py
    Planner), a chunk at a time, and sends each its frames' places, so a worker seeks to its own frames."""
    if not explicit and os.path.getsize(run.path) < AUTO_MIN_BYTES:
        return False
    from .shards import Planner, StreamNumbers
    numbers = StreamNumbers(None if run.dispatcher.standard_only else run.dispatcher.lifetimes)
    try:
        planner = Planner(run.path, min(jobs, MAX_JOBS), streams=numbers, count=run.count, offsets=True)
    except (CaptureError, OSError):
        return False
    look, chunk = LOOK, CHUNK_PLAN
    if os.environ.get("PROTODUMP_JOBS_PLAN"):          # "LOOK,CHUNK": the tests' small chunks
        look, chunk = map(int, os.environ["PROTODUMP_JOBS_PLAN"].split(","))
    first = planner.step(look)
    why = _one_process(planner, numbers)
    size = os.path.getsize(run.path)
    while why == ONE and not planner.done and planner.position * LOOK_SHARE < size:
        # one conversation so far: look on, up to a share of the file, before saying so (a capture may start
        # with one session before the others join)
        first = [a + b for a, b in zip(first, planner.step(look))]
        why = _one_process(planner, numbers)
    if why is not None:
        planner.close()
        _say(jobs, f"one process ({why})")
        return False
    return _Parent(run, planner, numbers, jobs, chunk).go(first)


def _one_process(planner, numbers) -> str | None:
    """Why the plan so far says one process should read the file (None: share it out)."""
    if numbers.unsplittable:
        return numbers.unsplittable
    frames = planner.frames
    if sum(1 for n in frames if n) < 2 or max(frames) > MOST * planner.n:
        return ONE
    return None


def _say(jobs: int, what: str) -> None:
    if os.environ.get("PROTODUMP_JOBS_VERBOSE"):        # what the tests check
        print(f"protodump: -j {jobs}: {what}", file=sys.stderr)


class WorkerDied(Exception):
    pass


class _Parent:
    def __init__(self, run: Run, planner, numbers, jobs: int, chunk: int):
        self.run, self.planner, self.numbers, self.jobs = run, planner, numbers, jobs
        self.chunk_frames = chunk          # frames planned per chunk sent
        self.filtering = run.shows is not None
        self.sends_frames = not run.quiet or run.source.write_path is not None

    def go(self, first: list) -> bool:
        """Fork the workers, plan the rest of the file as they decode, merge; False (the workers stopped,
        nothing written) when the plan finds that one process must read the file after all."""
        import gc
        import multiprocessing as mp
        ctx = mp.get_context("fork")
        run, planner = self.run, self.planner
        sys.stdout.flush()
        gc.freeze()                    # the workers' collections leave the parent's objects (and pages) alone
        self.forked_cpu = time.process_time()
        self.procs, self.inboxes, plans = [], [], []
        ran = False
        try:
            for k in range(planner.parts):
                out_r, out_w = os.pipe()
                plan_r, plan_w = os.pipe()
                for fd in (out_r, plan_w):
                    _widen(fd)
                # the worker closes what it inherits of the other workers' pipes (else a dead peer's pipe stays open)
                theirs = [i.fd for i in self.inboxes] + plans + [out_r, plan_w]
                p = ctx.Process(target=_worker, args=(run, k, planner.parts, planner.first_ns, planner.seekable,
                                                      plan_r, out_w, self.filtering, theirs), daemon=True,
                                name=f"protodump-shard-{k}")
                p.start()
                os.close(out_w)
                os.close(plan_r)
                self.procs.append(p)
                self.inboxes.append(_Inbox(out_r))
                plans.append(plan_w)
            self._plan(plans, first)
            self.planned_cpu = time.process_time()
            why = _one_process(planner, self.numbers) if self.numbers.unsplittable else None
            if why is not None:
                self._stop()
                _say(self.jobs, f"one process ({why})")
                return False
            _say(self.jobs, ", ".join(f"shard {k}: {n} frames" for k, n in enumerate(planner.frames)))
            self.owner, self.total, self.error = planner.owner, planner.n, planner.error
            ran = True
            run.source._open_dump(None, None)          # -w: opened as the one-process path opens it
            self._merge()
        except WorkerDied as exc:
            sys.stdout.flush()
            print(f"protodump: -j: {exc}", file=sys.stderr)
            sys.exit(2)
        finally:
            gc.unfreeze()
            planner.close()
            self._stop()
            for inbox in self.inboxes:
                os.close(inbox.fd)
            if ran:                                     # (else the one-process path runs with it)
                run.source.finish()
        return True

    def _plan(self, plans: list, chunk: list) -> None:
        """Send each worker its frames, a chunk of the plan at a time (a worker that died is found by the merge)."""
        planner = self.planner
        live = list(plans)
        while chunk is not None:
            for k, entries in enumerate(chunk):
                if entries and live[k] is not None:
                    try:
                        _send(live[k], [_SIZE.pack(len(entries) * entries.itemsize), entries])
                    except OSError:
                        live[k] = None
            if self.numbers.unsplittable:
                break
            chunk = planner.step(self.chunk_frames)
        for fd in plans:
            try:
                _send(fd, [_SIZE.pack(0)])               # the end of the plan
            except OSError:
                pass
            os.close(fd)

    def _stop(self) -> None:
        for p in self.procs:
            if p.is_alive():
                p.kill()
            p.join()
        self.procs = []

    # --- receiving ----------------------------------------------------------------------------------------------
    def _receive(self, k: int):
        """The next message of worker k (see _Sender); WorkerDied when it ended without saying it was done, or
        failed."""
        try:
            msg = self.inboxes[k].read()
        except (EOFError, OSError):
            msg = None
        if msg is not None and msg[0] == _ERROR:
            raise WorkerDied(f"the worker of {self._shard(k)} failed: {msg[1]}")
        if msg is not None:
            return msg
        self._dead(k)

    def _dead(self, k: int):
        """WorkerDied: worker k's pipe ended without its end message."""
        p = self.procs[k]
        p.join(5)
        how = (f"killed by signal {-p.exitcode}" if p.exitcode is not None and p.exitcode < 0
               else f"exit code {p.exitcode}")
        raise WorkerDied(f"the worker of {self._shard(k)} died ({how}): the output is incomplete")

    def _shard(self, k: int) -> str:
        """The shard, for a message: its frames, from which frame, its conversations, its file."""
        planner = self.planner
        first = planner.owner.find(bytes([k])) + 1
        return (f"shard {k} ({planner.frames[k]} frames from frame {first}, {planner.conversations[k]} "
                f"conversations of {os.path.abspath(self.run.path)})")

    def _merge(self) -> None:
        """Every frame's output in frame order. Without a display filter or -w, a run of consecutive frames of one
        worker is one slice of its chunk (the plan says who owns each frame); else frame by frame."""
        run = self.run
        self.out = _Out()
        k_n = len(self.inboxes)
        self.chunks = [None] * k_n          # per worker: the chunk being read (times, head, blob, ends: _Inbox)
        self.pos = [0] * k_n                # ... and the next frame in it
        ends = [None] * k_n                 # per worker: its end message
        if self.sends_frames:
            if self.filtering or run.source.dump is not None or run.quiet:
                self._frame_by_frame()
            else:
                self._runs()
        for k in range(k_n):
            while ends[k] is None:
                msg = self._receive(k)
                if msg[0] == _END:
                    ends[k] = msg[1]
        self.out.flush()
        # the trailer: a worker that wrote has the writer's state of a run that wrote
        trailers = [e[0] for e in ends if e[1]] or [ends[0][0]]
        if not run.quiet:
            sys.stdout.buffer.write(trailers[0])
        sys.stdout.flush()
        if os.environ.get("PROTODUMP_JOBS_VERBOSE"):    # CPU seconds: what two idle cores would take (tools/bench.py)
            print(f"protodump: -j cpu: before the workers {self.forked_cpu:.3f} s, planned {self.planned_cpu:.3f} s, "
                  f"parent {time.process_time():.3f} s, workers {' '.join(f'{e[3]:.3f}' for e in ends)} s",
                  file=sys.stderr)
        self._finish([e[2] for e in ends])

    def _chunk(self, k: int):
        """Worker k's next chunk of frames (what is pending is written first: it may lie in k's buffer)."""
        self.out.flush()
        msg = self._receive(k)
        if msg[0] != _FRAMES:
            raise WorkerDied(f"{self._shard(k)} ended early")
        chunk = self.chunks[k] = msg[1:]
        self.pos[k] = 0
        return chunk

    def _runs(self) -> None:
        """Each run's bytes go from the worker's pipe to the output by splice(2), which the kernel moves without
        copying them through the parent (about 0.09 s of CPU on 335 MB of -T json); where the output cannot take
        a splice, they are read and written."""
        out, chunks, pos, chunk_of = self.out, self.chunks, self.pos, self._chunk
        self.splicing = out.fd is not None and hasattr(os, "splice")
        for inbox in self.inboxes:
            inbox.leave_blob = True
        first = True
        for run in _RUNS.finditer(self.owner):
            k = run.group()[0]
            count = run.end() - run.start()
            while count:
                chunk = chunks[k]
                if chunk is None or pos[k] == len(chunk[0]):
                    chunk = chunk_of(k)
                i = pos[k]
                take = min(count, len(chunk[0]) - i)
                ends = chunk[3]
                if first:               # the writer's first form of the first frame (the header with it)
                    first = False
                    out.add(chunk[1])
                    self._pass(k, ends[i + 1] - ends[i], drop=True)
                    i += 1
                    take -= 1
                    count -= 1
                    pos[k] += 1
                if take:
                    self._pass(k, ends[i + take] - ends[i])
                pos[k] += take
                count -= take

    def _pass(self, k: int, n: int, drop: bool = False) -> None:
        """The next n bytes of worker k's pipe to the output (drop: read and left out)."""
        fd, out = self.inboxes[k].fd, self.out
        try:
            if self.splicing and not drop and n:
                out.flush()
                try:
                    while n:
                        moved = os.splice(fd, out.fd, n)
                        if not moved:
                            raise EOFError
                        n -= moved
                    return
                except OSError as exc:
                    if exc.errno not in (errno.EINVAL, errno.ENOSYS):     # (not a pipe's fault: stdout's)
                        raise
                    self.splicing = False       # an output that takes no splice (O_APPEND on older kernels)
            data = _read(fd, n)
        except EOFError:
            self._dead(k)
        if not drop:
            out.add(data)

    def _frame_by_frame(self) -> None:
        run, out, chunks, pos, chunk_of, owner = self.run, self.out, self.chunks, self.pos, self._chunk, self.owner
        quiet, filtering = run.quiet, self.filtering
        first = not quiet
        prev_shown = None
        dump = run.source.dump
        frames = open_capture(run.path) if dump is not None else None
        try:
            frame_iter = iter(frames) if frames is not None else None
            for n in range(self.total):
                k = owner[n]
                chunk = chunks[k]
                if chunk is None or pos[k] == len(chunk[0]):
                    chunk = chunk_of(k)
                times, head, blob, ends = chunk
                i = pos[k]
                pos[k] = i + 1
                frame = next(frame_iter) if frame_iter is not None else None
                ts = times[i]
                if ts == NO_TIME:              # not displayed
                    continue
                if not quiet:
                    text = head if first else blob[ends[i]:ends[i + 1]]
                    first = False
                    if filtering:
                        text = _patch(bytes(text), ts - prev_shown if prev_shown is not None else 0)
                        prev_shown = ts
                    out.add(text)
                if dump is not None:
                    run.source.passed(_Passed(frame), sys.stdout)
        finally:
            if frames is not None:
                frames.close()

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
    """The file the worker's writer writes to: its texts, kept as written (`write` is the list's own append: no
    Python call per write) until the frame is taken, encoded on its own. (A chunk encoded at once would be one
    large allocation, which the C library maps afresh: a page fault every 4 KiB, more than the calls it saves.)"""

    def __init__(self):
        self.parts: list = []
        self.write = self.parts.append

    def take(self) -> str:
        s = "".join(self.parts)
        self.parts.clear()
        return s

    def isatty(self) -> bool:
        return False

    def flush(self) -> None:
        pass


def _worker(run: Run, index: int, workers: int, first_ns: int, seek: bool, plan: int, out: int, filtering: bool,
            theirs: list) -> None:
    """A forked process: decode the shard as the parent plans it (`plan`: its frames, chunk by chunk), send its
    frames' output in chunks, then its trailer and statistics."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)     # the parent decides
    for fd in theirs:
        os.close(fd)
    from .reassembly.budget import PENDING, STATE
    for budget in (PENDING, STATE):                  # all the workers hold no more than one process would
        budget.share(workers)
    sender = _Sender(out)
    try:
        tables = planned_tables(first_ns, filtering)
        _decode(run, first_ns, planned_frames(run.path, _plan_chunks(plan, sender.planned), tables, seek), tables,
                sender)
    except BaseException as exc:       # anything: the parent names the shard; never a silent hole
        import traceback
        sender.put((_ERROR, f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=-3)}"))
    sender.close()
    os._exit(0)


# --- between the processes: plain pipes, length-prefixed messages ---------------------------------------------------
#
# A chunk of a worker's output is: a header (_HEAD: _FRAMES, frames n, bytes of the head, bytes of the blob), then
# n + 1 offsets into the blob where each frame's output ends (int64), each frame's time (int64; NO_TIME: not
# displayed), the head (the writer's first form of the worker's first displayed frame, or nothing), the blob. The
# parent reads it into a buffer of its own per worker, reused from chunk to chunk, and writes slices of it: no
# pickling, no copy but the pipe's. The end (trailer, statistics) and a failure are pickled (_END, _ERROR).

_FRAMES, _END, _ERROR = 1, 2, 3
_HEAD = struct.Struct("<qqqq")
_SIZE = struct.Struct("<q")
_RUNS = re.compile(rb"(.)\1*", re.S)     # runs of frames of one worker, in the plan's owner bytes


def _send(fd: int, parts: list) -> None:
    """Write every part (bytes-like) to the pipe."""
    for at in range(0, len(parts), 1000):           # (IOV_MAX is 1024)
        group = parts[at:at + 1000]
        done = os.writev(fd, group)
        total = sum(memoryview(p).nbytes for p in group)
        if done < total:                            # (a signal, or a non-blocking pipe)
            rest = memoryview(b"".join(group))[done:]
            while rest:
                rest = rest[os.write(fd, rest):]


def _read_into(fd: int, view: memoryview) -> None:
    got = 0
    while got < len(view):
        n = os.readv(fd, [view[got:]])
        if n == 0:
            raise EOFError
        got += n


def _read(fd: int, n: int) -> bytes:
    buf = bytearray(n)
    _read_into(fd, memoryview(buf))
    return bytes(buf)


class _Inbox:
    """One worker's messages, as the parent reads them."""

    def __init__(self, fd: int):
        self.fd = fd
        self.buf = bytearray()
        self.leave_blob = False        # a chunk's frames' bytes are left in the pipe (blob None): the merge moves them

    def read(self):
        import pickle
        kind, n, head, blob = _HEAD.unpack(_read(self.fd, _HEAD.size))
        if kind != _FRAMES:
            return kind, pickle.loads(_read(self.fd, blob))
        if self.leave_blob:
            blob = 0
        need = 16 * n + 8 + head + blob
        if len(self.buf) < need:       # (the old buffer may still be exported: a new one)
            self.buf = bytearray(max(need, 2 * len(self.buf)))
        view = memoryview(self.buf)[:need]
        _read_into(self.fd, view)
        at = 8 * (n + 1)
        ends, times = view[:at].cast("q"), view[at:at + 8 * n].cast("q")
        at += 8 * n
        return _FRAMES, times, bytes(view[at:at + head]), view[at + head:] if blob else None, ends


class _Out:
    """The parent's output: slices gathered, then written at once (writev: no joining)."""

    def __init__(self):
        self.parts, self.size = [], 0
        try:
            self.fd = sys.stdout.fileno()
        except (AttributeError, OSError, ValueError):   # (not a real file)
            self.fd = None

    def add(self, data) -> None:
        if data:
            self.parts.append(data)
            self.size += len(data)
            if self.size >= CHUNK_BYTES:
                self.flush()

    def flush(self) -> None:
        if not self.parts:
            return
        if self.fd is None:
            sys.stdout.buffer.write(b"".join(self.parts))
        else:
            _send(self.fd, self.parts)
        self.parts, self.size = [], 0


class _Sender:
    """Sends from a thread: the worker goes on decoding while the parent reads the other workers."""

    def __init__(self, fd: int):
        self.fd = fd
        self.queue: queue.Queue = queue.Queue(QUEUE_PLANNING)
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def _loop(self):
        import pickle
        while True:
            msg = self.queue.get()
            if msg is None:
                return
            if msg[0] == _FRAMES:
                _, ends, times, head, pieces = msg
                parts = [_HEAD.pack(_FRAMES, len(times), len(head), ends[-1]), ends, times, head, *pieces]
            else:
                data = pickle.dumps(msg[1], pickle.HIGHEST_PROTOCOL)
                parts = [_HEAD.pack(msg[0], 0, 0, len(data)), data]
            try:
                _send(self.fd, parts)
            except OSError:             # the parent is gone (a closed pipe, a failed run)
                os._exit(0)

    def put(self, msg) -> None:
        self.queue.put(msg)

    def planned(self) -> None:
        """The parent has planned the file and merges from now on: keep fewer chunks ready."""
        with self.queue.mutex:
            self.queue.maxsize = QUEUE_CHUNKS

    def close(self) -> None:
        self.queue.put(None)
        self.thread.join()
        os.close(self.fd)


def _plan_chunks(fd: int, planned=None):
    """The worker's plan as the parent sends it: read by a thread, so the parent never waits for a worker busy
    decoding (or blocked sending to the parent, which is still planning). `planned()` is called at its end."""
    chunks: queue.Queue = queue.Queue()

    def receive():
        try:
            while True:
                (size,) = _SIZE.unpack(_read(fd, _SIZE.size))
                if not size:
                    break
                chunks.put(_read(fd, size))
            if planned is not None:
                planned()
        except (EOFError, OSError):             # the parent is gone
            os._exit(0)
        chunks.put(None)
    threading.Thread(target=receive, daemon=True).start()
    while True:
        data = chunks.get()
        if data is None:
            return
        entries = array("q")
        entries.frombytes(data)
        yield entries


def _widen(fd: int) -> None:
    """A pipe that holds a chunk of output (or a worker's whole plan) in one write: fewer wake-ups either side."""
    import fcntl
    try:
        fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, PIPE_BYTES)
    except (OSError, AttributeError):       # over the user's pipe quota, or not Linux: the default size
        pass


def _decode(run: Run, first_ns: int, frames, tables, sender: _Sender) -> None:
    from .session import packets_from_frames
    from .shards import _FRAME, _phs_record, _prepare, _state
    encoding, errors = sys.stdout.encoding or "utf-8", sys.stdout.errors or "strict"
    text = _Text()
    parts, take, join = text.parts, text.take, "".join
    writer = run.make_writer(text)
    writer.first_ns = first_ns
    text.take()                                     # what the writer writes when made: the parent's did
    taps = run.taps
    for tap in taps:
        _prepare(tap, first_ns)
    from .shards import FirstSeen
    phs_paths = [FirstSeen() if tap.kind == "phs" else None for tap in taps]
    shows, quiet = run.shows, run.quiet
    records = not quiet or run.source.write_path is not None
    hidden = NO_TIME
    ends, times, pieces = array("q", (0,)), array("q"), []
    size = 0
    head = b""
    wrote = False
    for packet in packets_from_frames(frames, dispatcher=run.dispatcher, tables=tables):
        _FRAME.number = packet.number
        for tap, paths in zip(taps, phs_paths):
            tap.add(packet)
            if paths is not None:
                _phs_record(tap, packet, paths)
        shown = shows is None or shows(packet)
        if not records:
            continue
        if not shown:
            times.append(hidden)
            ends.append(size)
            continue
        times.append(packet.frame.ts_ns)
        if not quiet:
            if not wrote:            # the writer's first form (its header), then the form of every other frame
                wrote = True
                writer.write(packet)
                head = take().encode(encoding, errors)
            writer.write(packet)
            data = join(parts).encode(encoding, errors)
            parts.clear()
            pieces.append(data)
            size += len(data)
        ends.append(size)
        if size >= CHUNK_BYTES or len(times) >= CHUNK_FRAMES:
            sender.put((_FRAMES, ends, times, head, pieces))
            ends, times, pieces, size, head = array("q", (0,)), array("q"), [], 0, b""
    if times:
        sender.put((_FRAMES, ends, times, head, pieces))
    writer.close()
    trailer = text.take().encode(encoding, errors)
    states = []
    for tap, paths in zip(taps, phs_paths):
        state = _state(tap)
        if paths is not None:
            state["paths"] = paths
        states.append((tap.kind, state, tap.result()))
    sender.put((_END, (trailer, wrote, states, time.process_time())))
