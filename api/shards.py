"""Shards: a capture (or a capture set) cut into pieces that decode independently, and their results merged.

A shard is a file of a set, or several files that share a conversation, or (one file split N ways) the frames of
some of its conversations: everything protodump keeps state for lives in a conversation (addresses and ports), so
each conversation is decoded whole by one worker. The client plans the shards (`plan`): it reads the frame
headers once, in set order, so each shard knows the set-wide number of every one of its frames, the set's first
timestamp, and what one process numbers across conversations in frame order (`tcp.stream`, `udp.stream`:
api/planning.py `StreamNumbers`); a worker (`run_shard`, here, in a process pool, or on a Dask worker) then
decodes its file as if it were reading the whole set: frame numbers, relative times and -c are the set's.

What comes back is small: the -T fields lines with their frame numbers (merged back in frame order: `merge_lines`),
data frame rows (`merge_rows`), and each statistic's state, merged by api/tap_merge.py (`merge_taps`).

Plain Python, no Dask: the same shards serve `--dask` (api/dask.py) and -j (api/jobs.py, which streams any output
form back instead of fields lines).
"""
from __future__ import annotations

import heapq
import io
import os
from array import array
from collections.abc import Callable
from itertools import chain, repeat
from dataclasses import dataclass, field

from .capture.files import CaptureError, open_capture
from .capture.sets import CaptureSet, expand
from .planning import ENTRY, NO_TIME, Planner, StreamNumbers, decoded_conversation
from .tap_merge import FRAME, FirstSeen, prepare, record_phs, state_of


@dataclass
class Job:
    """What every shard of a run does (the same for all shards; sent once per shard, it is small)."""

    prefs: dict = field(default_factory=dict)
    decode_as: dict = field(default_factory=dict)
    filter: str | None = None               # -Y
    stats: tuple = ()                       # -z arguments
    fields: tuple = ()                      # -T fields -e ...
    field_options: tuple = ()               # -E ...
    count: int | None = None                # -c: frames of the set, in set order
    rows: tuple | None = None               # data frame columns (protodump.frames), or None
    per_pdu: bool = False


@dataclass
class Shard:
    """Files of a set that share no conversation with any other shard (usually one file), or the frames of some
    whole conversations of one file (`plan(..., split=N)`: what -j needs too).

    numbers: per file, the set-wide number of each of its (picked) frames (None: one file, its own numbering)."""

    index: int
    paths: list
    numbers: list | None = None
    first_ns: int | None = None             # the set's first timestamp (relative times), None: the file's own
    picks: list | None = None               # per file: the 0-based indexes of the frames to decode (None: all)
    streams: list | None = None             # per file: each pick's tcp.stream / udp.stream (StreamNumbers)
    conversations: int = 0                  # how many (split_file)
    prevs: list | None = None               # per file: each pick's previous frame's time in set order (NO_TIME: none)

    def __str__(self) -> str:
        return f"shard {self.index} ({', '.join(self.paths)})"


@dataclass
class ShardResult:
    index: int
    frames: int = 0
    lines: list = field(default_factory=list)       # (frame number, -T fields line)
    rows: list = field(default_factory=list)        # (frame number, data frame row)
    taps: list = field(default_factory=list)        # per -z argument: (kind, state dict, result of this shard)
    error: str | None = None


def plan(paths, concatenate: bool = False, on_error: Callable[[str, str], None] | None = None,
         split: int = 1, prefs: dict | None = None) -> list[Shard]:
    """The shards of a capture or a capture set; unreadable files are named through on_error and left out.

    Files whose frames share a conversation (the same addresses and ports) go into one shard, so every
    conversation is decoded whole, in set order, by one worker. One file is one shard, or with split=N up to N
    shards of whole conversations (`split_file`). Every frame is given its tcp.stream / udp.stream as one
    process numbers them (`StreamNumbers`; `prefs`: the run's -o, for the conversation lifetimes)."""
    from .capture.decode import decode
    files = expand([paths] if isinstance(paths, (str, bytes)) or not hasattr(paths, "__iter__") else paths)
    streams = StreamNumbers(_lifetimes(prefs))
    if len(files) == 1:
        return split_file(files[0], max(1, split), on_error, streams=streams, prevs=True)
    capture_set = CaptureSet(files, concatenate=concatenate, on_error=on_error)
    numbers = [array("q") for _ in files]
    stream_numbers = [array("q") for _ in files]
    prevs = [array("q") for _ in files]        # frame.time_delta: the previous frame of the set may be another file's
    prev = NO_TIME
    group = list(range(len(files)))            # union-find over files
    owner: dict = {}                           # conversation -> a file that has it
    first_ns = None

    def root(i):
        while group[i] != i:
            group[i] = group[group[i]]
            i = group[i]
        return i
    n = 0
    for index, frame in capture_set.indexed():
        n += 1
        if first_ns is None:
            first_ns = frame.ts_ns
        numbers[index].append(n)
        prevs[index].append(prev)
        prev = frame.ts_ns
        d = decode(frame, fragments=streams.fragments)
        stream_numbers[index].append(streams.of(d))
        key = decoded_conversation(d)
        if key is None:
            continue
        other = owner.setdefault(key, index)
        if other != index:
            group[root(index)] = root(other)
    shards: dict[int, list[int]] = {}
    for i in range(len(files)):
        if capture_set.counts[i]:
            shards.setdefault(root(i), []).append(i)
    return [Shard(k, [os.path.abspath(files[i]) for i in members], [numbers[i] for i in members], first_ns,
                  streams=[stream_numbers[i] for i in members], prevs=[prevs[i] for i in members])
            for k, members in enumerate(shards.values())]


def _lifetimes(prefs: dict | None):
    """The conversation lifetimes a run with these -o preferences keeps (engine/lifetime.py)."""
    from .dissectors import PROTOCOLS
    from .engine.dispatch import Dispatcher, Settings
    return Dispatcher(PROTOCOLS, Settings(dict(prefs or {}), {})).lifetimes


def split_file(path, parts: int, on_error=None, count: int | None = None, streams=None,
               prevs: bool = False) -> list[Shard]:
    """One file as up to `parts` shards of whole conversations, balanced by frames (largest conversation first
    to the lightest shard); frames of no conversation go with the first shard. A cut file's readable frames are
    planned and the cut is named through on_error ("... after N packets", as the read command says it).
    count: only the first `count` frames (-c). streams: a `StreamNumbers`, to give each pick its stream number.
    prevs: give each pick its previous frame's time (Shard.prevs; -j's workers read it from the file instead)."""
    planner = Planner(path, parts, streams=streams, count=count)
    picks = [array("q") for _ in range(planner.parts)]
    numbers = [array("q") for _ in picks]
    times = [array("q") for _ in picks]
    while True:
        entries = planner.step(None)
        if entries is None:
            break
        for k, e in enumerate(entries):
            picks[k].extend(e[0::ENTRY])                 # (frame numbers: the indexes are one less)
            numbers[k].extend(e[2::ENTRY])
            if prevs:
                times[k].extend(e[3::ENTRY])
    if planner.error is not None and on_error is not None:
        on_error(str(path), planner.error)
    if streams is not None and streams.unsplittable and len(picks) > 1:      # (--dask: one shard, in frame order)
        rows = sorted(zip(chain.from_iterable(picks), chain.from_iterable(numbers),
                          chain.from_iterable(times) if prevs else repeat(0)))
        picks, numbers, times = ([array("q", column)] for column in zip(*rows))
        planner.conversations = [sum(planner.conversations)]
    full = os.path.abspath(path)
    return [Shard(k, [full], [p], planner.first_ns, [array("q", (i - 1 for i in p))],
                  [numbers[k]] if streams is not None else None, planner.conversations[k],
                  [times[k]] if prevs else None)
            for k, p in enumerate(picks) if p]


# --- a worker's part ----------------------------------------------------------------------------------------------

def _file_frames(path, numbers, picks, count, result: ShardResult):
    capture = open_capture(path)
    j = 0
    try:
        for i, frame in enumerate(capture):
            if picks is not None:
                if j >= len(picks):
                    break
                if i != picks[j]:
                    continue
            elif numbers is not None and j >= len(numbers):
                break
            if numbers is not None:
                frame.number = numbers[j]
            j += 1
            if count is not None and frame.number > count:
                break                    # a file's numbers only grow
            yield frame
    except CaptureError as exc:
        if numbers is None:        # a set's planning already named the file
            result.error = str(exc)
    finally:
        capture.close()


def _frames(shard: Shard, job: Job, result: ShardResult, tables=None):
    """The shard's frames in set order, with their set-wide numbers (and their stream numbers announced to the
    planned `tables`, api/planned.py)."""
    if shard.numbers is None:
        return _file_frames(shard.paths[0], None, None, job.count, result)
    picks = shard.picks or [None] * len(shard.paths)
    files = [_file_frames(p, n, k, job.count, result) for p, n, k in zip(shard.paths, shard.numbers, picks)]
    if tables is None:
        return files[0] if len(files) == 1 else heapq.merge(*files, key=lambda frame: frame.number)
    prevs = shard.prevs or [repeat(NO_TIME) for _ in files]
    numbered = [zip(f, s, t) for f, s, t in zip(files, shard.streams, prevs)]
    pairs = numbered[0] if len(numbered) == 1 else heapq.merge(*numbered, key=lambda pair: pair[0].number)
    return _announced(pairs, tables)


def _announced(pairs, tables):
    tcp, _, clock, udp = tables
    for frame, stream, prev in pairs:
        tcp.number = udp.number = stream
        clock.prev_ns = None if prev == NO_TIME else prev
        yield frame


def run_shard(shard: Shard, job: Job) -> ShardResult:
    """Decode one shard: its -T fields lines, data frame rows and statistics' state."""
    from .analysis import stats
    from .analysis.filter import compile_filter
    from .dissectors import PROTOCOLS
    from .engine.dispatch import Dispatcher, Settings
    from .output import fields_out
    from .session import packets_from_frames

    result = ShardResult(shard.index)
    dispatcher = Dispatcher(PROTOCOLS, Settings(dict(job.prefs), dict(job.decode_as)))
    shows = compile_filter(job.filter) if job.filter else None
    taps = stats.make_taps(job.stats)
    for tap in taps:
        prepare(tap, shard.first_ns)
        if hasattr(tap, "prime"):      # io,stat functions: the fields a filter of the run names (as one process)
            tap.prime([job.filter, *job.stats])
    phs_paths = [FirstSeen() if tap.kind == "phs" else None for tap in taps]
    writer = fields_out.make_writer(io.StringIO(), job.fields, job.field_options, PROTOCOLS) if job.fields else None
    rower = None
    if job.rows is not None:
        from .frames import row_maker
        rower = row_maker(job.rows, job.per_pdu)
    tables = None
    if shard.streams is not None:          # tcp.stream / udp.stream as one process numbers them
        from .planned import planned_tables
        # frame.time_relative and frame.time_delta from the set's first frame and each frame's previous one
        tables = planned_tables(shard.first_ns, False)
    for packet in packets_from_frames(_frames(shard, job, result, tables), dispatcher=dispatcher, tables=tables):
        result.frames += 1
        FRAME.number = packet.number
        for tap, paths in zip(taps, phs_paths):
            tap.add(packet)
            if paths is not None:
                record_phs(tap, packet, paths)
        if shows is not None and not shows(packet):
            continue
        if writer is not None:
            result.lines.append((packet.number, writer.line(packet)))
        if rower is not None:
            result.rows.extend((packet.number, row) for row in rower(packet))
    for tap, paths in zip(taps, phs_paths):
        state = state_of(tap)
        if paths is not None:
            state["paths"] = paths
        result.taps.append((tap.kind, state, tap.result()))
    return result


def merge_lines(results: list[ShardResult]) -> list[str]:
    """-T fields lines of all shards, in set frame order."""
    return [line for _, line in heapq.merge(*(r.lines for r in results), key=_number)]


def merge_rows(results: list[ShardResult]) -> list[tuple]:
    """Data frame rows of all shards, in set frame order (a PDU's rows stay in layer order)."""
    return [row for _, row in heapq.merge(*(r.rows for r in results), key=_number)]


def _number(entry):
    return entry[0]


def run_local(shards: list[Shard], job: Job) -> list[ShardResult]:
    """Every shard in this process (what a worker would do), in order."""
    return [run_shard(shard, job) for shard in shards]
