"""The planning pass of -j and --dask: which shard each frame goes to (`Planner`: a file shared out by whole
conversations, a chunk of frames at a time), and what one process numbers across conversations in frame order,
from the frame headers alone (`StreamNumbers`: tcp.stream and udp.stream, with the conversation lifetimes that
free a TCP connection). A frame's conversation: its transport and both ends, or for an ICMP or ICMPv6 error the
conversation it quotes (`conversation`, `decoded_conversation`)."""
from __future__ import annotations

from array import array
from collections import OrderedDict

from .capture.files import CaptureError, open_capture
from .capture.mptcp_analysis import has_option as has_mptcp_option
from .capture.tcp_analysis import FIN, RST
from .reassembly.ip_fragments import IpFragments


def conversation(frame):
    """What ties frames together (transport and both ends, in either direction), or None (no ports: no state)."""
    from .capture.decode import decode
    return decoded_conversation(decode(frame))


def decoded_conversation(d):
    """`conversation` of a frame already decoded (capture.decode.Decoded)."""
    if d.sport is None:
        return quoted_conversation(d)
    a, b = (d.src, d.sport), (d.dst, d.dport)
    return (d.transport, a, b) if a <= b else (d.transport, b, a)


def quoted_conversation(d):
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
                    key = quoted_conversation(d)
                    cid = -1 if key is None else ids.get(key)
                    if cid is None:
                        cid = ids[key] = len(ids)
                else:                                       # (decoded_conversation, inline)
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
