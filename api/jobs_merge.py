"""The parent's side of -j (api/jobs.py) once the workers run: their messages received (api/jobs_pipes.py),
their frames' output merged in frame order (a run of one worker's frames moved by splice(2) where it can be,
else frame by frame, with the displayed delta's marker replaced), their trailer and statistics merged."""
from __future__ import annotations

import errno
import os
import re
import sys
import time
from functools import lru_cache

from .capture.files import open_capture
from .jobs_pipes import CHUNK_BYTES, END, ERROR, FAKES, FRAMES, read_exact, send_all
from .planned import MARKER_NS
from .planning import NO_TIME

_RUNS = re.compile(rb"(.)\1*", re.S)     # runs of frames of one worker, in the plan's owner bytes


class WorkerDied(Exception):
    pass


class Merger:
    """Receives and merges what the workers send; api/jobs_parent.py's Parent forks them and sets what this reads:
    run, planner, procs and inboxes (one per worker), owner (the plan's worker byte per frame), total, error,
    filtering, sends_frames, forked_cpu and planned_cpu."""

    def _receive(self, k: int):
        """The next message of worker k (see Sender); WorkerDied when it ended without saying it was done, or
        failed."""
        try:
            msg = self.inboxes[k].read()
        except (EOFError, OSError):
            msg = None
        if msg is not None and msg[0] == ERROR:
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
        self.out = Out()
        k_n = len(self.inboxes)
        self.chunks = [None] * k_n          # per worker: the chunk being read (times, head, blob, ends: Inbox)
        self.pos = [0] * k_n                # ... and the next frame in it
        self.fakes = [{}] * k_n             # ... and its frames' heuristic lookups: {index: (lookups, runs)}
        self.marked = [None] * k_n          # ... their indexes not yet merged, the next one last
        self.replay = None                  # the heuristic lists' order at each frame (output/lua_fakes.py)
        self.patched = 0                    # frames whose fake items were counted again
        ends = [None] * k_n                 # per worker: its end message
        if self.sends_frames:
            if self.filtering or run.source.dump is not None or run.quiet:
                self._frame_by_frame()
            else:
                self._runs()
        for k in range(k_n):
            while ends[k] is None:
                msg = self._receive(k)
                if msg[0] == END:
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
            print(f"protodump: -j {len(self.inboxes)}: {self.patched} frames' fake items recounted", file=sys.stderr)
        self._finish([e[2] for e in ends])

    def _chunk(self, k: int):
        """Worker k's next chunk of frames (what is pending is written first: it may lie in k's buffer)."""
        self.out.flush()
        msg = self._receive(k)
        marks = {}
        while msg[0] == FAKES:
            marks.update((i, (found, runs)) for i, found, runs in msg[1])
            msg = self._receive(k)
        self.fakes[k] = marks
        self.marked[k] = sorted(marks, reverse=True) if marks else None     # (popped from the end, in order)
        if msg[0] != FRAMES:
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
                    out.add(self._fixed(k, i, chunk[1], len(chunk[1]) - (ends[i + 1] - ends[i])))
                    self._pass(k, ends[i + 1] - ends[i], drop=True)
                    i += 1
                    take -= 1
                    count -= 1
                    pos[k] += 1
                marked = self.marked[k]
                while take and marked and marked[-1] < i + take:     # frames with heuristic lookups
                    at = marked.pop()
                    if at >= i:
                        fixes = self._fixes(k, at)
                        if fixes:
                            self._pass(k, ends[at] - ends[i])
                            self._pass(k, ends[at + 1] - ends[at], fixes=fixes)
                            take -= at + 1 - i
                            count -= at + 1 - i
                            pos[k] += at + 1 - i
                            i = at + 1
                if take:
                    self._pass(k, ends[i + take] - ends[i])
                pos[k] += take
                count -= take

    def _fixes(self, k: int, i: int) -> list:
        """Frame i of worker k's chunk: its heuristic lookups replayed in frame order (every frame that has
        some, in order), and its runs of fake items whose count differs from the worker's (lua_fakes.Replay.fix)."""
        found = self.fakes[k].get(i)
        if found is None:
            return []
        if self.replay is None:
            from .output.lua_fakes import Replay
            self.replay = Replay(self.run.dispatcher)
        fixes = self.replay.fix(*found)
        self.patched += bool(fixes)
        return fixes

    def _fixed(self, k: int, i: int, text, shift: int = 0):
        """Frame i's text with its fake items counted as one process would (shift: where the frame starts)."""
        fixes = self._fixes(k, i)
        if not fixes:
            return text
        from .output.lua_fakes import patch
        return patch(bytes(text), fixes, shift)

    def _pass(self, k: int, n: int, drop: bool = False, fixes=None) -> None:
        """The next n bytes of worker k's pipe to the output (drop: read and left out; fixes: a frame's runs of
        fake items to patch, lua_fakes.patch)."""
        fd, out = self.inboxes[k].fd, self.out
        try:
            if self.splicing and not drop and n and not fixes:
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
            data = read_exact(fd, n)
        except EOFError:
            self._dead(k)
        if fixes:
            from .output.lua_fakes import patch
            data = patch(data, fixes)
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
                if ts == NO_TIME:              # not displayed (its heuristic lookups still count)
                    self._fixes(k, i)
                    continue
                if not quiet:
                    text = self._fixed(k, i, head, len(head) - (ends[i + 1] - ends[i])) if first \
                        else self._fixed(k, i, blob[ends[i]:ends[i + 1]])
                    first = False
                    if filtering:
                        text = _patch(bytes(text), ts - prev_shown if prev_shown is not None else 0)
                        prev_shown = ts
                    out.add(text)
                else:
                    self._fixes(k, i)
                if dump is not None:
                    run.source.passed(_Passed(frame), sys.stdout)
        finally:
            if frames is not None:
                frames.close()

    def _finish(self, taps) -> None:
        run = self.run
        if self.error is not None:
            print(f"protodump: {run.path}: {self.error}", file=sys.stderr)
        if run.zstats:          # (the modules only then: the parent's last moments are the run's wall time)
            from .output import stats_out
            from .shards import ShardResult
            from .tap_merge import merge_taps
            results = [ShardResult(k, taps=t) for k, t in enumerate(taps)]
            stats_out.write(merge_taps(run.zstats, results), sys.stdout, run.stats_format)
        if self.error is not None:
            sys.stdout.flush()
            sys.exit(1)


class Out:
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
            send_all(self.fd, self.parts)
        self.parts, self.size = [], 0


class _Passed:
    __slots__ = ("frame",)

    def __init__(self, frame):
        self.frame = frame


def _patch(text: bytes, delta_ns: int) -> bytes:
    """A frame's output with the marker of frame.time_delta_displayed replaced by the real delta."""
    from .capture.layers.common import ns_text
    from .output.text import SECONDS, column_seconds
    full, column = _markers(SECONDS["hms"])     # (-u was set before the run)
    if full in text:
        text = text.replace(full, ns_text(delta_ns).encode())
    if column in text:
        text = text.replace(column, f"{column_seconds(delta_ns, 6):>10}".encode())
    return text


@lru_cache(maxsize=2)
def _markers(hms: bool) -> tuple[bytes, bytes]:
    """The marker's text in frame.time_delta_displayed and in the Time column (-u s or hms)."""
    from .capture.layers.common import ns_text
    from .output.text import column_seconds
    return ns_text(MARKER_NS).encode(), column_seconds(MARKER_NS, 6).encode()
