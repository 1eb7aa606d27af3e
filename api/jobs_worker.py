"""A worker of -j (api/jobs.py): a forked process that decodes the frames of its shard as the parent plans them,
renders them with the command's own writer and sends their output in chunks (api/jobs_pipes.py), then its
trailer and its statistics' state."""
from __future__ import annotations

import os
import signal
import sys
import time
from array import array
from types import SimpleNamespace
from typing import TYPE_CHECKING

from .jobs_pipes import CHUNK_BYTES, CHUNK_FRAMES, END, ERROR, FAKES, FRAMES, Sender, plan_chunks
from .planned import planned_frames, planned_tables
from .planning import NO_TIME

if TYPE_CHECKING:
    from .jobs import Run


class _Text:
    """The file the worker's writer writes to: its texts, kept as written (`write` is the list's own append: no
    Python call per write) until the frame is taken, encoded on its own. (A chunk encoded at once would be one
    large allocation, which the C library maps afresh: a page fault every 4 KiB, more than the calls it saves.)
    A writer that encodes its parts itself (output/sink.py) writes bytes to `buffer`, into the same list."""

    def __init__(self, encoding: str, errors: str):
        self.parts: list = []
        self.write = self.parts.append
        self.encoding, self.errors = encoding, errors
        parts, self.mixed = self.parts, [False]
        mixed = self.mixed

        def write_bytes(data: bytes) -> None:
            parts.append(data)
            mixed[0] = True
        self.buffer = SimpleNamespace(write=write_bytes)

    def take(self) -> bytes:
        """What was written since the last take, as bytes."""
        parts, encoding, errors = self.parts, self.encoding, self.errors
        if self.mixed[0]:
            self.mixed[0] = False
            data = b"".join([p if p.__class__ is bytes else p.encode(encoding, errors) for p in parts])
        else:
            data = "".join(parts).encode(encoding, errors)
        parts.clear()
        return data

    def isatty(self) -> bool:
        return False

    def flush(self) -> None:
        pass


def worker(run: Run, index: int, workers: int, first_ns: int, seek: bool, plan: int, out: int, filtering: bool,
           theirs: list) -> None:
    """A forked process: decode the shard as the parent plans it (`plan`: its frames, chunk by chunk), send its
    frames' output in chunks, then its trailer and statistics."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)     # the parent decides
    for fd in theirs:
        os.close(fd)
    from .reassembly.budget import PENDING, STATE
    for budget in (PENDING, STATE):                  # all the workers hold no more than one process would
        budget.share(workers)
    sender = Sender(out)
    try:
        tables = planned_tables(first_ns, filtering)
        for msg in messages(run, first_ns, planned_frames(run.path, plan_chunks(plan, sender.planned), tables, seek),
                            tables):
            sender.put(msg)
    except BaseException as exc:       # anything: the parent names the shard; never a silent hole
        import traceback
        sender.put((ERROR, f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=-3)}"))
    sender.close()
    os._exit(0)


def messages(run: Run, first_ns: int, frames, tables):
    """The shard decoded: its messages to the parent (api/jobs_pipes.py), chunk by chunk, as made."""
    from .session import packets_from_frames
    from .tap_merge import FRAME, FirstSeen, prepare, record_phs, state_of
    text = _Text(sys.stdout.encoding or "utf-8", sys.stdout.errors or "strict")
    take = text.take
    writer = run.make_writer(text)
    writer.first_ns = first_ns
    text.take()                                     # what the writer writes when made: the parent's did
    taps = run.taps
    for tap in taps:
        prepare(tap, first_ns)
    phs_paths = [FirstSeen() if tap.kind == "phs" else None for tap in taps]
    shows, quiet = run.shows, run.quiet
    records = not quiet or run.source.write_path is not None
    hidden = NO_TIME
    ends, times, pieces = array("q", (0,)), array("q"), []
    size = 0
    head = b""
    wrote = False
    from .output import lua_fakes
    # the output shows wslua's fake items: each frame's heuristic lookups go to the parent, which counts them in
    # frame order and patches a frame where this worker's count differs (output/lua_fakes.py)
    marking = lua_fakes.MARKING = bool(getattr(writer, "lua_fakes", False))
    fakes: list = []             # (frame's index in the chunk, its lookups, its runs' places)
    for packet in packets_from_frames(frames, dispatcher=run.dispatcher, tables=tables):
        FRAME.number = packet.number
        for tap, paths in zip(taps, phs_paths):
            tap.add(packet)
            if paths is not None:
                record_phs(tap, packet, paths)
        shown = shows is None or shows(packet)
        if not records:
            continue
        found = lua_fakes.lookups(packet) if marking and packet.tries else None
        if not shown:
            if found:
                fakes.append((len(times), found, ()))
            times.append(hidden)
            ends.append(size)
            continue
        times.append(packet.frame.ts_ns)
        if not quiet:
            if not wrote:            # the writer's first form (its header), then the form of every other frame
                wrote = True
                writer.write(packet)
                head = take()
                if found:
                    head = lua_fakes.unmark(head)[0]
            writer.write(packet)
            data = take()
            if found:
                data, runs = lua_fakes.unmark(data)
                fakes.append((len(times) - 1, found, runs))
            pieces.append(data)
            size += len(data)
        elif found:
            fakes.append((len(times) - 1, found, ()))
        ends.append(size)
        if size >= CHUNK_BYTES or len(times) >= CHUNK_FRAMES:
            if fakes:
                yield FAKES, fakes
                fakes = []
            yield FRAMES, ends, times, head, pieces
            ends, times, pieces, size, head = array("q", (0,)), array("q"), [], 0, b""
    if times:
        if fakes:
            yield FAKES, fakes
        yield FRAMES, ends, times, head, pieces
    writer.close()
    trailer = take()
    states = []
    for tap, paths in zip(taps, phs_paths):
        state = state_of(tap)
        if paths is not None:
            state["paths"] = paths
        states.append((tap.kind, state, tap.result()))
    yield END, (trailer, wrote, states, time.process_time())
