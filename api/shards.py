"""Shards: a capture (or a capture set) cut into pieces that decode independently, and the merge of their results.

A shard is a file of a set, or several files that share a conversation, or (one file split N ways) the frames of
some of its conversations: everything protodump keeps state for lives in a conversation (addresses and ports), so
each conversation is decoded whole by one worker. The client plans the shards (`plan`): it reads the frame
headers once, in set order, so each shard knows the set-wide number of every one of its frames, the set's first
timestamp, and what one process numbers across conversations in frame order (`tcp.stream`, `udp.stream`:
`StreamNumbers`); a worker (`run_shard`, here, in a process pool, or on a Dask worker) then decodes its file
as if it were reading the whole set: frame numbers, relative times and -c are the set's.

What comes back is small: the -T fields lines with their frame numbers (merged back in frame order), data frame
rows, and each statistic's state. Statistics are merged per kind (`merge_taps`): counts add up, first/last times
take the extremes, and every table that tshark prints in first-seen order is ordered by the set-wide frame
number at which each key first appeared, recorded in the worker by `FirstSeen` dicts. Nested orders inside one
conversation (message types of equal counts) follow shard order, exact whenever a conversation is in one file.

Plain Python, no Dask: the same shards serve `--dask` (api/dask.py) and -j (api/jobs.py, which streams any output
form back instead of fields lines).
"""
from __future__ import annotations

import heapq
import io
import os
import threading
from array import array
from collections import OrderedDict
from collections.abc import Callable
from itertools import chain, repeat
from dataclasses import dataclass, field

from .capture.files import CaptureError, open_capture
from .capture.sets import CaptureSet, expand
from .capture.mptcp_analysis import has_option as has_mptcp_option
from .capture.tcp_analysis import FIN, RST
from .reassembly.ip_fragments import IpFragments


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


def conversation(frame):
    """What ties frames together (transport and both ends, in either direction), or None (no ports: no state)."""
    from .capture.decode import decode
    return _conversation(decode(frame))


def _conversation(d):
    if d.sport is None:
        return _quoted_conversation(d)
    a, b = (d.src, d.sport), (d.dst, d.dport)
    return (d.transport, a, b) if a <= b else (d.transport, b, a)


def _quoted_conversation(d):
    """The conversation an ICMP or ICMPv6 error quotes (its TCP or UDP ports read), which the error goes with: one
    process finds the quoted segment's connection (its state and times move) and hands a quoted datagram to the
    conversation's dissector. None for any other frame without ports."""
    info = d.icmp
    if info is None:
        return None
    quoted, transport = (info.quoted_tcp, "tcp") if info.quoted_tcp is not None else (info.quoted_udp, "udp")
    if quoted is None:
        return None
    _, src, sport, dst, dport = quoted
    a, b = (src, sport), (dst, dport)
    return (transport, a, b) if a <= b else (transport, b, a)


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
        key = _conversation(d)
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


MPTCP_GROUP = ("mptcp",)   # the conversation every MPTCP subflow is planned as (Planner.step)
ENTRY = 4              # a planned frame: (frame number, where it is, tcp.stream / udp.stream, previous frame's time)
NO_TIME = -(1 << 63)   # the previous frame's time of the first frame (Shard.prevs, a planned entry)


class Planner:
    """The planning pass over one file, a chunk of frames at a time (`step`), so that -j's workers can start on
    the first chunks while the rest is planned (api/jobs.py). Each frame goes to the shard of its conversation;
    a conversation first seen in a chunk goes, largest (in the chunk) first, to the shard with the fewest frames
    so far (with a single chunk: largest conversation first to the lightest shard). Frames of no conversation go
    with the first shard.

    A planned frame is ENTRY integers: its number; where it is (`offsets=True`: its byte offset, for a reader
    that seeks; else its 0-based index); its tcp.stream / udp.stream (with `streams`, a StreamNumbers; else -1);
    the time of the frame before it in the file (NO_TIME for the first). With `offsets`, the pcapng blocks a
    reader needs to read a packet block (section headers and interface descriptions after the first section
    header) are given to every shard, in file order, as entries of number 0 at their offsets."""

    def __init__(self, path, parts: int, streams=None, count: int | None = None, offsets: bool = False):
        self.streams, self.count = streams, count
        self.parts = max(1, parts)
        self.offsets = array("q") if offsets else None
        self.capture = open_capture(path, offsets=self.offsets)
        self.reader = iter(self.capture)
        self.seekable = offsets and not self.capture.compressed
        self.ids: dict = {}                     # conversation -> its id
        self.target: list[int] = []             # per conversation id: its shard
        self.loads = [0] * self.parts           # per shard: frames so far (placing conversations)
        self.frames = [0] * self.parts          # per shard: frames so far (planned)
        self.conversations = [0] * self.parts   # per shard: conversations
        self.owner = bytearray()                # per frame: its shard
        self.n = 0
        self.prev = NO_TIME
        self.first_ns = None
        self.position = 0                       # with offsets: the byte offset of the last frame planned
        self.error: str | None = None           # a cut file: where planning stopped
        self.done = False

    def step(self, frames: int | None):
        """Plan up to `frames` more frames (None: all the rest): per shard, the array of its planned frames
        (ENTRY integers each); None once the file is planned."""
        if self.done:
            return None
        from .capture.decode import decode      # its fast paths read a plain Ethernet/IPv4 TCP or UDP header
        streams, ids, offsets = self.streams, self.ids, self.offsets
        known = len(ids)
        convs, rows = array("q"), array("q")        # this chunk: per frame, its conversation id; its entry
        structure = [] if offsets is not None else None
        limit = self.count
        n, prev = self.n, self.prev
        end = None if frames is None else n + frames
        try:
            for frame in self.reader:
                if offsets is not None:
                    if len(offsets) > 1:                    # pcapng blocks read before this frame
                        structure.append((len(rows) // ENTRY, offsets[:-1]))
                    where = offsets[-1]
                    del offsets[:]
                else:
                    where = n
                n += 1
                if self.first_ns is None:
                    self.first_ns = frame.ts_ns
                d = decode(frame, fragments=None if streams is None else streams.fragments)
                if d.sport is None:
                    key = _quoted_conversation(d)
                    cid = -1 if key is None else ids.get(key)
                    if cid is None:
                        cid = ids[key] = len(ids)
                else:                                       # (_conversation, inline)
                    a, b = (d.src, d.sport), (d.dst, d.dport)
                    key = (d.transport, a, b) if a <= b else (d.transport, b, a)
                    cid = ids.get(key)
                    if cid is None:
                        if d.transport == "tcp" and has_mptcp_option(d):
                            # MPTCP subflows are several TCP conversations sharing keys and state: one shard for
                            # them all
                            cid = ids[key] = ids.setdefault(MPTCP_GROUP, len(ids))
                        else:
                            cid = ids[key] = len(ids)
                convs.append(cid)
                rows.extend((n, where, -1 if streams is None else streams.of(d), prev))
                prev = frame.ts_ns
                if n == limit or n == end:
                    break
            else:
                self.done = True
        except CaptureError as exc:
            self.error = f"{exc} after {n} packets"
            self.done = True
        if limit is not None and n >= limit:
            self.done = True
        self.n, self.prev = n, prev
        if offsets is not None and rows:
            self.position = rows[-3]
        return self._share(known, convs, rows, structure)

    def _share(self, known: int, convs, rows, structure) -> list:
        """The chunk's frames per shard; its new conversations placed first. (Balanced by frames: weighing a
        frame by its bytes balanced the workers' time no better on the replays.)"""
        loads, target = self.loads, self.target
        chunk = {}
        for cid in convs:
            if cid >= known:
                chunk[cid] = chunk.get(cid, 0) + 1
            elif cid >= 0:                              # frames of conversations placed before
                loads[target[cid]] += 1
            else:
                loads[0] += 1
        target.extend([0] * (len(self.ids) - known))
        for cid in sorted(chunk, key=lambda c: -chunk[c]):
            k = loads.index(min(loads))
            target[cid] = k
            loads[k] += chunk[cid]
            self.conversations[k] += 1
        out = [array("q") for _ in loads]
        owner, frames = self.owner, self.frames
        marks = iter(structure or ())
        mark = next(marks, None)
        for i, cid in enumerate(convs):
            while mark is not None and mark[0] == i:    # pcapng structure blocks: every shard reads them
                for block in mark[1]:
                    for e in out:
                        e.extend((0, -1 - block, 0, 0))
                mark = next(marks, None)
            k = target[cid] if cid >= 0 else 0
            frames[k] += 1
            out[k].extend(rows[i * ENTRY:(i + 1) * ENTRY])
            owner.append(k)
        return out

    def close(self) -> None:
        self.capture.close()


BACKWARDS_NS = 1_000_000_000       # frames earlier than a frame before them by more than this: see StreamNumbers


class StreamNumbers:
    """tcp.stream and udp.stream of every frame as one process numbers them, from the headers alone: the planning
    pass of -j and --dask, whose workers each see only some conversations (api/planned.py's Planned* tables take
    these numbers). The same tables count (capture/tcp_analysis.py, capture/conversations.py: first seen, a SYN
    with a new initial sequence number, the tables' bounds), and the same conversation lifetimes
    (engine/lifetime.py) free a TCP connection a few seconds after FIN both ways or RST (api/session.py's ended
    hook; a SYN reusing the ports restarts it instead), as one process does.
    `lifetimes`: the run's engine.lifetime.Lifetimes settings (None: no game dissection, nothing is freed)."""

    def __init__(self, lifetimes=None):
        from .capture.conversations import UdpTable
        from .capture.tcp_analysis import TcpTable
        from .engine.lifetime import Lifetimes
        from .engine.streams import CONNECTION_LIMIT
        from .session import _forget_tcp
        self.tcp, self.udp = TcpTable(), UdpTable()
        self.lifetimes = None if lifetimes is None else Lifetimes(lifetimes.timeout, lifetimes.cap,
                                                                  lifetimes.linger)
        self.fins: OrderedDict = OrderedDict()   # pair -> {sender: FIN seen} (engine.streams' connections, as freed)
        self.pairs: dict = {}           # (src, sport, dst, dport) -> (pair, sender) as engine.dispatch.Stack
        self.last_ns = None
        self.forget_tcp, self.connection_limit = _forget_tcp, CONNECTION_LIMIT
        # why the workers' own conversation lifetimes would free state elsewhere than one process does (None: they
        # agree): time that runs back (one process's ended conversations then wait behind later ones), or more
        # live conversations than the cap (one process frees the oldest of all, a worker only of its own)
        self.unsplittable: str | None = None
        # IP datagrams reassembled as one process does (the frame that completes one is in its conversation); a
        # worker holding some of its fragments could not: a capture with fragments is read by one process
        self.fragments = IpFragments()

    def of(self, d) -> int:
        """The frame's stream number (-1: none); `d`: its capture.decode.Decoded, in frame order."""
        transport, number = d.transport, -1
        if (d.fragment or d.defragmented is not None) and self.unsplittable is None:
            self.unsplittable = f"an IP fragment at frame {d.frame.number}"
        if transport == "tcp":
            if d.window is not None and d.payload_offset:
                number = self.tcp.stream_of(d)
        elif transport == "udp":
            number = self.udp._conv(d.src, d.sport, d.dst, d.dport, d.frame.ts_ns)[0]
        elif (transport != "sctp" and d.icmp is not None and d.icmp.quoted_tcp is not None
              and d.icmp.quoted_tcp[0] + 20 <= d.payload_offset + len(d.payload)):
            number = self.tcp.quoted_stream(d)        # (capture.decode: TcpTable.quoted)
        elif transport != "sctp" and d.icmp is not None and d.icmp.quoted_udp is not None:
            _, src, sport, dst, dport = d.icmp.quoted_udp
            number = self.udp._conv(src, sport, dst, dport, d.frame.ts_ns)[0]
        if self.lifetimes is not None and transport in ("udp", "tcp", "sctp"):
            self._live(d, number >= 0 and transport == "tcp" and self.tcp.reused)
        return number

    def _live(self, d, reused: bool) -> None:
        """engine.dispatch.Dispatcher.dissect's part in this: what it frees before the frame (not the pair of a
        SYN that reuses its ports: `reused`), and whether the frame ends its TCP connection (engine.streams: RST,
        or FIN with FIN seen both ways)."""
        lifetimes, fins = self.lifetimes, self.fins
        if reused:
            pair = self._pair(d)[0]
            lifetimes.restart(pair)
            fins.pop(pair, None)
        ns = d.frame.ts_ns
        if self.last_ns is None or ns > self.last_ns:
            self.last_ns = ns
        elif ns < self.last_ns - BACKWARDS_NS:
            self.unsplittable = f"time runs back at frame {d.frame.number}"
        live, ending = lifetimes.live, lifetimes.ending
        if len(live) + len(ending) >= lifetimes.cap:
            self.unsplittable = f"more than {lifetimes.cap} live conversations"
        now = ns // 1_000_000_000 + (ns % 1_000_000_000) / 1e9
        if lifetimes.due(now):         # (over the cap, it frees the oldest too: then the plan is given up anyway)
            for gone in lifetimes.expired(now):
                fins.pop(gone, None)
                if lifetimes.ended_last:
                    self.forget_tcp(self.tcp, gone)
        pair, a = self._pair(d)
        lifetimes.touch(pair, now)
        if d.transport != "tcp" or d.seq is None:
            return
        seen = fins.get(pair)
        if seen is None:
            if len(fins) >= self.connection_limit:
                fins.popitem(last=False)
            seen = fins[pair] = {}
        fl = d.flags or 0
        if fl & FIN:
            seen[a] = True
        elif a not in seen:
            seen[a] = False
        if fl & RST or (fl & FIN and len(seen) == 2 and all(seen.values())):
            lifetimes.end(pair, now)

    def _pair(self, d) -> tuple:
        """(pair, sender) of the frame, as engine.dispatch.Stack names them."""
        ends = (d.src, d.sport, d.dst, d.dport)
        known = self.pairs.get(ends)
        if known is None:
            a, b = f"{d.src}:{d.sport}", f"{d.dst}:{d.dport}"
            known = self.pairs[ends] = ((a, b) if a < b else (b, a), a)
        return known



# --- first-seen order ---------------------------------------------------------------------------------------------

# the set-wide number of the frame being tapped, per thread: a `dask worker --nthreads N` runs N shards at once
_FRAME = threading.local()


class FirstSeen(dict):
    """A dict that remembers the frame number at which each key was first inserted (`.first`)."""

    def __init__(self, *args):
        super().__init__(*args)
        self.first = {k: 0 for k in self}

    def __setitem__(self, key, value):
        if key not in self:
            self.first[key] = getattr(_FRAME, "number", 0)
        super().__setitem__(key, value)

    def setdefault(self, key, default=None):
        if key not in self:
            self.first[key] = getattr(_FRAME, "number", 0)
        return super().setdefault(key, default)

    def __reduce__(self):
        return (_rebuild, (dict(self), self.first))


def _rebuild(items, first):
    d = FirstSeen(items)
    d.first = first
    return d


def _track(value):
    if type(value) is dict:
        return FirstSeen({k: _track(v) for k, v in value.items()})
    if type(value) is list and any(type(v) is dict for v in value):
        return [_track(v) for v in value]
    return value


def _prepare(tap, first_ns) -> None:
    """Before the first packet: FirstSeen tables, and the set's time origin."""
    for name, value in list(vars(tap).items()):
        if name not in ("match", "matchers"):
            setattr(tap, name, _track(value))
    if first_ns is not None and hasattr(tap, "first_ns"):
        tap.first_ns = first_ns
    if hasattr(tap, "shard"):       # what a tap keeps only for the merge (io,stat AVG: each frame's values)
        tap.shard()


def _state(tap) -> dict:
    return {k: v for k, v in vars(tap).items() if k not in ("match", "matchers")}


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
        _prepare(tap, shard.first_ns)
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
        _FRAME.number = packet.number
        for tap, paths in zip(taps, phs_paths):
            tap.add(packet)
            if paths is not None:
                _phs_record(tap, packet, paths)
        if shows is not None and not shows(packet):
            continue
        if writer is not None:
            result.lines.append((packet.number, writer.line(packet)))
        if rower is not None:
            result.rows.extend((packet.number, row) for row in rower(packet))
    for tap, paths in zip(taps, phs_paths):
        state = _state(tap)
        if paths is not None:
            state["paths"] = paths
        result.taps.append((tap.kind, state, tap.result()))
    return result


def _phs_record(tap, packet, paths: FirstSeen) -> None:
    if tap.match is not None and not tap.match(packet):
        return
    from .analysis.stats_phs import protocol_path
    path = ()
    for proto in protocol_path(packet):
        path += (proto,)
        if path not in paths:
            paths[path] = True


# --- merging statistics -------------------------------------------------------------------------------------------

def merge_taps(args, results: list[ShardResult]) -> list[dict]:
    """The statistics of the whole run: each -z argument's shard states merged, as one local run prints them."""
    from .analysis import stats
    out = []
    for n, arg in enumerate(args):
        parts = [r.taps[n] for r in results]
        if len(parts) == 1:
            out.append(parts[0][2])
            continue
        tap = stats.make_tap(arg)
        merge = MERGES.get(_family(tap))
        if merge is None:
            raise stats.StatsError(f"-z {arg}: cannot be merged across shards (run it without --dask)")
        merge(tap, [state for _, state, _ in parts])
        out.append(tap.result())
    return out


def check_mergeable(args, shards: list) -> None:
    """StatsError before any work when a statistic of `args` cannot be merged and there are several shards, or
    cannot run in a shard at all (proto,colinfo writes the Info column of the packets a run prints: a shard
    prints none, and its worker process does not know the statistic)."""
    from .analysis import stats
    for arg in args:
        family = _family(stats.make_tap(arg))
        if family == "proto,colinfo":
            raise stats.StatsError(f"-z {arg}: it writes the Info column of printed packets, which shards do not "
                                   "print (run it without --dask)")
        if len(shards) > 1 and family not in MERGES:
            raise stats.StatsError(f"-z {arg}: cannot be merged across shards (run it without --dask)")


def _family(tap) -> str:
    from .analysis.stats_game import MessageTypes, SequenceAnalysis
    from .analysis.stats_session import SessionTap
    if isinstance(tap, SessionTap):
        return "session"
    if isinstance(tap, MessageTypes):
        return "game_types"
    if isinstance(tap, SequenceAnalysis):
        return "game_seq"
    return tap.kind


def _by_first(tables: list) -> list:
    """(first frame, shard order, key, value) of every entry of several FirstSeen tables, first-seen first."""
    entries = [(t.first.get(k, 0), s, k, v) for s, t in enumerate(tables) for k, v in t.items()]
    entries.sort(key=lambda e: (e[0], e[1]))
    return entries


def _first_ns(tap, states) -> None:
    firsts = [s["first_ns"] for s in states if s.get("first_ns") is not None]
    tap.first_ns = min(firsts) if firsts else None


def _merge_conv(tap, states):
    from .analysis.stats_conv import fold_conversation
    _first_ns(tap, states)
    convs = {}
    for key, c in sorted(((k, c) for s in states for k, c in s["convs"].items()), key=_begun):
        base = convs.get(key)
        if base is None:
            convs[key] = list(c)
        else:
            fold_conversation(base, c)
    tap.convs = convs


def _merge_endpoints(tap, states):
    _first_ns(tap, states)
    ends = {}
    for key, e in sorted(((k, e) for s in states for k, e in s["ends"].items()), key=_begun):
        have = ends.get(key)
        if have is None:
            ends[key] = list(e)
        else:
            for n in range(1, 5):
                have[n] += e[n]
    tap.ends = ends


def _begun(pair):
    """A conversation's or endpoint's entry by its first frame (the first of its values)."""
    return pair[1][0]


def _merge_phs(tap, states):
    first = {}
    for s in states:
        for path, frame in s["paths"].first.items():
            first[path] = min(first.get(path, frame), frame)

    def merge(levels, prefix):
        names = sorted({n for level in levels for n in level}, key=lambda n: first.get(prefix + (n,), 0))
        out = {}
        for name in names:
            nodes = [level[name] for level in levels if name in level]
            out[name] = [sum(n[0] for n in nodes), sum(n[1] for n in nodes), merge([n[2] for n in nodes],
                                                                                    prefix + (name,))]
        return out
    tap.root = merge([s["root"] for s in states], ())


def _merge_io(tap, states):
    _first_ns(tap, states)
    tap.last_us = max(s["last_us"] for s in states)
    for column, fn in enumerate(tap.functions):      # COUNT() SUM() MIN() MAX() AVG() LOAD() columns
        if fn is not None:
            fn.merge([s["functions"][column] for s in states])
    for column, bins in enumerate(tap.bins):
        for s in states:
            for idx, (f, b) in s["bins"][column].items():
                have = bins.setdefault(idx, [0, 0])
                have[0] += f
                have[1] += b


def _merge_expert(tap, states):
    for sev in tap.items:
        entries = {}
        for _, _, key, (n, first) in _by_first([s["items"][sev] for s in states]):
            have = entries.get(key)
            entries[key] = [n, first] if have is None else [have[0] + n, min(have[1], first)]
        tap.items[sev] = dict(sorted(entries.items(), key=lambda e: e[1][1]))


def _merge_game(tap, states, add):
    convs = {}
    for _, _, key, c in _by_first([s["convs"] for s in states]):
        base = convs.get(key)
        if base is None:
            base = convs[key] = {"client": c["client"], "server": c["server"], "c2s": {}, "s2c": {}}
        swap = c["client"] != base["client"]
        for direction in ("c2s", "s2c"):
            into = base[("s2c" if direction == "c2s" else "c2s") if swap else direction]
            add(into, c[direction])
    tap.convs = convs


def _add_types(into, counts):
    for key, (n, size) in counts.items():
        have = into.setdefault(key, [0, 0])
        have[0] += n
        have[1] += size


def _add_seq(into, s):
    if not s:
        return
    if not into:
        into.update(packets=0, lost=0, duplicate=0, out_of_order=0)
    for k in into:
        into[k] += s.get(k, 0)


def _merge_sessions(tap, states):
    """Game-session statistics (enet,peers, iceball,files, players ...): a conversation lives in one shard, so
    the tables are the shards' conversations in the order of their first frames."""
    entries = [(c["first_frame"], n, key, c) for n, st in enumerate(states) for key, c in st["convs"].items()]
    entries.sort(key=lambda e: (e[0], e[1]))
    tap.convs = {}
    for _, _, key, c in entries:
        tap.convs.setdefault(key, c)
    tap.omitted_convs = sum(st["omitted_convs"] for st in states)


def _merge_echoes(tap, states):
    """icmp,srt and icmpv6,srt: the requests counted, and every answered reply's time in frame order (its
    first minimum and maximum are the first in frame order, as one process keeps them)."""
    tap.requests = sum(s["requests"] for s in states)
    tap.times = sorted((t for s in states for t in s["times"]), key=lambda t: t[1])


def _merge_sctp(tap, states):
    """sctp,stat: the chunk counts of each direction, the directions in the order of their first frames."""
    tap.packets = sum(s["packets"] for s in states)
    directions: dict = {}
    for _, _, key, counts in _by_first([s["directions"] for s in states]):
        into = directions.setdefault(key, {})
        for kind, n in counts.items():
            into[kind] = into.get(kind, 0) + n
    tap.directions = directions


def _merge_hosts(tap, states):
    """-z hosts: the header names the capture read."""
    tap.capture_name = next((s["capture_name"] for s in states if s["capture_name"]), "")


MERGES = {"conv": _merge_conv, "endpoints": _merge_endpoints, "phs": _merge_phs, "io_stat": _merge_io,
          "expert": _merge_expert, "icmp,srt": _merge_echoes, "icmpv6,srt": _merge_echoes,
          "sctp,stat": _merge_sctp, "hosts": _merge_hosts,
          "game_types": lambda tap, states: _merge_game(tap, states, _add_types),
          "game_seq": lambda tap, states: _merge_game(tap, states, _add_seq), "session": _merge_sessions}


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
